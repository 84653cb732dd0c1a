"""The one redaction every message and trace goes through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from curator.core.redact import MASK, has_url_credentials, redact


def test_url_credentials_are_masked_and_the_host_kept() -> None:
    text = "GET http://user:hunter2@models.example:8080/catalogue.json failed"
    assert redact(text) == f"GET http://{MASK}@models.example:8080/catalogue.json failed"
    assert has_url_credentials("http://user:pw@host")
    assert has_url_credentials("https://token@host/x")
    assert not has_url_credentials("http://127.0.0.1:8000/v1")


def test_authorization_values_and_secret_parameters_are_masked() -> None:
    assert redact("Authorization: Bearer sk-abc123") == f"Authorization: Bearer {MASK}"
    assert redact("https://h/x?api_key=s3cret&n=1") == f"https://h/x?api_key={MASK}&n=1"
    assert redact("password=hunter2") == f"password={MASK}"


def test_text_without_secrets_is_unchanged() -> None:
    text = "the server at http://127.0.0.1:8080/v1/models answered 404"
    assert redact(text) == text


_secret = st.text(
    alphabet=st.characters(
        whitelist_categories=("L", "N"), whitelist_characters="-._~!$&'()*+,;=:%"
    ),
    min_size=1,
    max_size=30,
)


@given(user=_secret, password=_secret, prefix=st.text(max_size=20), port=st.integers(1, 65535))
def test_no_generated_credential_survives(user: str, password: str, prefix: str, port: int) -> None:
    url = f"https://{user}:{password}@host.example:{port}/path"
    out = redact(f"{prefix} {url} trailing")
    assert f"{user}:{password}@" not in out
    assert f"{MASK}@host.example:{port}/path" in out


def test_a_generic_name_is_masked_only_as_a_query_parameter() -> None:
    """``key=`` in a sentence is a word, not a secret: "expected KEY=VALUE" stays readable,
    while ``?key=…`` in a URL is masked."""
    assert redact("expected KEY=VALUE, got 'n_ctx'") == "expected KEY=VALUE, got 'n_ctx'"
    assert redact("token=abc in the docs") == "token=abc in the docs"
    assert redact("https://h/m.gguf?token=abc&x=1") == f"https://h/m.gguf?token={MASK}&x=1"
    assert redact("client_secret=s3") == f"client_secret={MASK}"

"""The one redaction every message and trace goes through."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curator.core.secret_forms as secret_forms
from curator.core.redact import MASK, has_url_credentials, redact
from curator.core.secret_forms import (
    MIN_SECRET_CHARS,
    PREFIX_CHARS,
    SecretHold,
    remember_secret,
    scrubbed,
)


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


# -- remembered secrets, however they come back ------------------------------------------

_key = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
    min_size=MIN_SECRET_CHARS,
    max_size=120,
).filter(lambda k: len(" ".join(k.split())) >= MIN_SECRET_CHARS)


@pytest.fixture
def remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets remembered in a test are forgotten after it (they are the process's)."""
    monkeypatch.setattr(secret_forms, "_SECRETS", set())
    monkeypatch.setattr(secret_forms, "_FORMS", ())


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    key=_key,
    form=st.sampled_from(["raw", "percent", "plus", "json", "collapsed"]),
    cut=st.integers(min_value=PREFIX_CHARS, max_value=200),
    before=st.text(max_size=20),
)
def test_a_remembered_key_is_masked_in_every_form_and_at_every_cut(
    remembered: None, key: str, form: str, cut: int, before: str
) -> None:
    secret_forms._SECRETS.clear()
    secret_forms._FORMS = ()
    remember_secret(key)
    written = {
        "raw": key,
        "percent": quote(key, safe=""),
        "plus": quote_plus(key, safe=""),
        "json": json.dumps(key)[1:-1],
        "collapsed": " ".join(key.split()),
    }[form]
    shown = written[:cut]
    if len(shown) < MIN_SECRET_CHARS:
        return
    out = redact(f"{before}got '{shown}...'")
    assert shown[:PREFIX_CHARS] not in out
    assert scrubbed({"id": [f"x{shown}"], shown: 1}) == {"id": [f"x{MASK}"], MASK: 1}


@pytest.mark.parametrize(
    "text",
    [
        "?api_token=Vx7Q",
        "&private_token=Vx7Q",
        "#token=Vx7Q",
        "?X-Amz-Signature=Vx7Q",
        "&X-Amz-Credential=Vx7Q",
        "?hf_token=Vx7Q",
        "?auth=Vx7Q",
        "&sig=Vx7Q",
        "?pass=Vx7Q",
        "?pwd=Vx7Q",
        "?session=Vx7Q",
        "?code=Vx7Q",
        "?apiKey=Vx7Q",
        "?aws_secret_access_key=Vx7Q",
        "refresh_token=Vx7Q",
        "id_token=Vx7Q",
        "access_key=Vx7Q",
        "secret_key=Vx7Q",
        "jwt=Vx7Q",
        "sslpassword=Vx7Q",
        "--password=Vx7Q",
        "--api-key=Vx7Q",
        "-password=Vx7Q",
        "?access%5Ftoken=Vx7Q",
        ";jsessionid=Vx7Q",
        "?hmac=Vx7Q",
        "db_pwd=Vx7Q",
        "http://ana:p@ss-Vx7Q@host/m.gguf",
        "--token=Vx7Q",
        "?bearer=Vx7Q",
        "?passcode=Vx7Q",
        "apitoken=Vx7Q",
        "?user[password]=Vx7Q",
        "?%70assword=Vx7Q",
        '"password": "Vx7Q"',
        "postgresql://POSTGRES:Vx7Q@db/x",
        "password='Vx7Q with spaces'",
        'password = "Vx7Q Vx7Q"',
        "x_pwd=Vx7Q",
    ],
)
def test_every_secret_parameter_name_is_masked(text: str) -> None:
    out = redact(f"see {text} end")
    assert "Vx7Q" not in out and MASK in out and out.endswith(" end")


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=128",
        "n_ctx=4096",
        "expected KEY=VALUE",
        "token=abc in the docs",
        "sslmode=require",
        "limit=5",
        "prompt_tokens=7",
        "sort_key=date",
        "primary_key=id",
        "cache_key=abc",
        "key_path=/etc/x",
        "token_count=5",
        "session_count=3",
        "auth_method=basic",
        "pass_count=2",
        "signatures_count=4",
        "meeting-secretary=Ana",
        "PWD=/home/ana",
        "no database at fp/sort_key=date.sqlite",
        "write postgresql://USER@HOST:PORT/NAME",
        "postgresql://USER:PASSWORD@HOST/NAME",
        "https://h/p?country_code=US&key_id=7&pin_count=2&sort_key=date",
        "password =\n\nNext heading",
    ],
)
def test_names_that_hold_no_secret_stay_readable(text: str) -> None:
    assert redact(text) == text


def test_a_key_streamed_a_few_characters_at_a_time_is_never_shown(remembered: None) -> None:
    """What a model writes reaches the live output piece by piece: the pieces that may
    begin the key wait for the rest, so no piece of it is given on."""
    key = "sk-TokKey1234567890abcd"
    remember_secret(key)
    text = f"the key {key} always; again {key[:15]}"
    hold, shown = SecretHold(), []
    for i in range(0, len(text), 3):
        shown.append(hold.feed(text[i : i + 3]))
    shown.append(hold.flush())
    assert "".join(shown) == f"the key {MASK} always; again {MASK}"
    assert all(key[:PREFIX_CHARS] not in "".join(shown[: i + 1]) for i in range(len(shown)))


@pytest.mark.parametrize(
    "written",
    [
        lambda k: k.replace("/", "\\/"),
        lambda k: k.replace("/", "%2f"),
        lambda k: k.upper(),
        lambda k: html.escape(k),
        lambda k: base64.b64encode(k.encode()).decode(),
        lambda k: k[:20] + "\\u0026" + k[21:],
    ],
    ids=["json-slash", "lower-hex", "capitals", "html", "base64", "escape-inside"],
)
def test_no_more_than_the_first_characters_of_a_key_written_otherwise_show(
    remembered: None, written: Callable[[str], str]
) -> None:
    key = "wJalrXUtnFEMI/K7MDENG/bPxR&CYEXAMPLEKEY"
    remember_secret(key)
    out = redact(f"answered '{written(key)}' here")
    assert out.endswith("' here") and MASK in out
    shown = out.split("'")[1].replace(MASK, "")
    assert len(shown) < 4, out


def test_an_answer_nested_deeper_than_python_recurses_is_refused_not_a_crash(
    remembered: None,
) -> None:
    remember_secret("sk-NestKey1234567890")
    deep: object = "x"
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        scrubbed(deep)


_streamed = st.sampled_from(list('ab-kS3İ /"&x'))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.text(alphabet=_streamed, min_size=8, max_size=30), min_size=1, max_size=3),
    filler=st.lists(st.text(alphabet=_streamed, max_size=12), max_size=6),
    cuts=st.lists(st.integers(0, 200), max_size=30),
    upper=st.booleans(),
)
def test_streamed_text_shows_exactly_the_whole_text_masked_and_never_a_key(
    remembered: None, keys: list[str], filler: list[str], cuts: list[int], upper: bool
) -> None:
    """Short keys, keys that begin or end like each other, periodic keys, capitals and
    letters whose lower case is longer, split anywhere: what the live output shows, piece
    by piece, is a beginning of the whole text masked as one, and never a key's start."""
    secret_forms._SECRETS.clear()
    secret_forms._FORMS = ()
    for key in keys:
        remember_secret(key)
    parts = []
    for i, words in enumerate(filler):
        key = keys[i % len(keys)]
        parts += [words, key.upper() if upper else key]
    text = "".join(parts)
    points = sorted({c for c in cuts if c < len(text)})
    hold, shown = SecretHold(), ""
    for a, b in zip([0, *points], [*points, len(text)], strict=True):
        shown += hold.feed(text[a:b])
        assert not any(
            secret_forms._lower(k)[:PREFIX_CHARS] in secret_forms._lower(shown) for k in keys
        )
    assert shown + hold.flush() == secret_forms.mask_secrets(text)


def test_a_quoted_secret_left_open_is_masked_to_the_line_end() -> None:
    assert redact('password="Vx7Q and more\nnext line') == "password=***\nnext line"


@pytest.mark.parametrize(
    "key",
    [
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "ghp_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb",
        "hf_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb",
        "AKIAABCDEFGHIJKLMNOP",
        "xoxb-1234567890-abcdef",
    ],
)
def test_a_key_of_a_known_shape_is_masked_wherever_it_stands(key: str) -> None:
    """No name says it is a secret ("invalid choice: 'sk-...'", "model sk-... not found")."""
    for text in (key, f"invalid choice: '{key}'", f"model {key} not found", f"({key})"):
        assert key not in redact(text) and MASK in redact(text)


def test_words_like_key_shapes_stay() -> None:
    for text in ("sk-learn", "risk-free-rate-of-return", "the ask-for-help channel", "hf_small"):
        assert redact(text) == text

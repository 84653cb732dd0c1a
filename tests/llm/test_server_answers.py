"""A server's wrong answers, a wrong URL or key: one line naming the URL, never a traceback.

Each case used to end in an internal exception (exit 3) or, for credentials in
``--server``, in silently dropping them; here each is a :class:`ServerError` (exit 2 on
the CLI) that names the server's URL, and the field when a field was wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curator.cli import main
from curator.core.server_url import server_base_url
from curator.llm.http_backend import HttpBackend, ServerError, ServerLimits
from curator.llm.server_choice import choose_server
from curator.store.db import Store
from curator.store.models import Run
from curator.store.settings import SettingsError, set_setting
from tests.llm.hostile_server import (
    HostileServer,
    Responder,
    answer,
    event,
    hostile_server,
    raw,
    tokenizer_routes,
)

LIMITS = ServerLimits(answer_s=5.0, token_s=0.01)


@pytest.fixture(scope="module")
def shared() -> Iterator[HostileServer]:
    with hostile_server() as found:
        yield found


@pytest.fixture
def server(shared: HostileServer) -> HostileServer:
    shared.reset()
    return shared


def _top(value: Any) -> Responder:
    return answer({"choices": [{"text": "n", "logprobs": {"top_logprobs": [{"n": value}]}}]})


def _fails(server: HostileServer, action: str = "classify") -> str:
    with pytest.raises(ServerError) as caught:
        backend = HttpBackend(server.url, limits=LIMITS, retries=0)
        try:
            if action == "classify":
                backend.classify("p", "episode", ("noise", "constitutional"))
            else:
                backend.complete("p", "x", max_tokens=4)
        finally:
            backend.close()
    text = str(caught.value)
    assert "\n" not in text and server.url in text
    return text


@pytest.mark.parametrize(
    ("routes", "action", "field"),
    [
        ({"GET /v1/models": answer({"data": 5})}, "classify", "data"),
        ({"GET /v1/models": answer({"data": [{"id": 7}]})}, "classify", "data[0].id"),
        ({"GET /v1/models": answer([1, 2])}, "classify", "not an object"),
        (
            {"GET /props": answer({"default_generation_settings": [1]})},
            "classify",
            "default_generation_settings",
        ),
        (
            {"GET /props": answer({"default_generation_settings": {"n_ctx": "lots"}})},
            "classify",
            "default_generation_settings.n_ctx",
        ),
        (
            {"GET /props": answer(b'{"default_generation_settings": {"n_ctx": NaN}}')},
            "classify",
            "default_generation_settings.n_ctx",
        ),
        (
            {"GET /props": answer({"default_generation_settings": {"n_ctx": 1e300}})},
            "classify",
            "default_generation_settings.n_ctx",
        ),
        (
            {"GET /props": answer({"default_generation_settings": {}, "chat_template": 3})},
            "classify",
            "chat_template",
        ),
        ({"POST /tokenize": answer({"tokens": ["a"]})}, "classify", "tokens"),
        ({"POST /tokenize": answer({"tokens": [-1]})}, "classify", "tokens"),
        (
            {"POST /v1/completions": answer({"choices": [{"text": "n"}], "usage": "x"})},
            "classify",
            "logprobs",
        ),
        ({"POST /v1/completions": answer({"choices": {}})}, "classify", "choices"),
        ({"POST /v1/completions": answer({"choices": []})}, "classify", "choices"),
    ],
)
def test_a_wrong_field_is_one_line_naming_it(
    server: HostileServer, routes: dict[str, Responder], action: str, field: str
) -> None:
    server.reset({**tokenizer_routes(), **routes})
    text = _fails(server, action)
    assert field in text


@pytest.mark.parametrize("value", ["NaN", "-Infinity", "Infinity", "1e308", "-1e308", '"x"'])
def test_invalid_log_probabilities_blame_the_server_not_the_model_file(
    server: HostileServer, value: str
) -> None:
    body = b'{"choices": [{"text": "n", "logprobs": {"top_logprobs": [{"n": %s}]}}]}' % (
        value.encode()
    )
    server.reset({**tokenizer_routes(), "POST /v1/completions": answer(body)})
    text = _fails(server)
    assert "sent invalid log-probabilities" in text and "damaged" not in text


@pytest.mark.parametrize(
    "usage",
    [b'"many"', b"[1]", b'{"prompt_tokens": "many"}', b'{"prompt_tokens": NaN}'],
    ids=["usage-text", "usage-list", "prompt-tokens-text", "prompt-tokens-nan"],
)
def test_a_wrong_usage_in_any_answer_is_one_line(server: HostileServer, usage: bytes) -> None:
    scored = b'{"choices": [{"text": "n", "logprobs": {"top_logprobs": [{"n": -0.1}]}}],'
    server.reset(
        {**tokenizer_routes(), "POST /v1/completions": answer(scored + b'"usage": ' + usage + b"}")}
    )
    assert "usage" in _fails(server)
    unscored = b'{"choices": [{"text": "noise"}], "usage": ' + usage + b"}"
    server.reset({"POST /v1/completions": answer(unscored)})
    assert "usage" in _fails(server)
    streamed = b'data: {"choices": [{"text": "a"}], "usage": ' + usage + b"}\n\n"
    server.reset({"POST /v1/completions": raw(lambda: [streamed])})
    assert "usage" in _fails(server, "complete")


def test_a_stream_event_of_the_wrong_shape_is_one_line(server: HostileServer) -> None:
    server.reset({"POST /v1/completions": raw(lambda: [b'data: {"choices": [{"text": 5}]}\n\n'])})
    assert "event.choices[0].text" in _fails(server, "complete")
    server.reset({"POST /v1/completions": raw(lambda: [event("a"), b"data: [1]\n\n"])})
    assert "not an object" in _fails(server, "complete")


def test_a_tokenizer_that_returns_nothing_for_a_label_is_one_line(server: HostileServer) -> None:
    server.reset({**tokenizer_routes(), "POST /tokenize": answer({"tokens": []})})
    assert "no tokens" in _fails(server)


# -- the base URL as servers document it -------------------------------------------------


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", "/", ""])
def test_the_base_url_is_accepted_with_or_without_v1(server: HostileServer, suffix: str) -> None:
    server.reset({"POST /v1/completions": raw(lambda: [event("hi", "stop")])})
    backend = HttpBackend(server.url + suffix, limits=LIMITS)
    try:
        assert backend.url == server.url
        assert backend.complete("p", "x", max_tokens=4).text == "hi"
    finally:
        backend.close()
    assert "GET /v1/models" in server.requests
    assert not any("/v1/v1" in r for r in server.requests)


def test_an_http_error_names_the_full_url(server: HostileServer) -> None:
    server.reset({"GET /v1/models": answer({"error": "no"}, status=500)})
    assert f"answered 500 to {server.url}/v1/models" in _fails(server)
    server.reset({"GET /v1/models": answer({"error": "no"}, status=404)})
    assert f"answered 404 to {server.url}/v1/models" in _fails(server)


def test_base_url_normalisation() -> None:
    assert server_base_url(" http://h:8000/v1/ ") == "http://h:8000"
    assert server_base_url("https://h/api/v1") == "https://h/api"
    assert server_base_url("http://[::1]:80/v1") == "http://[::1]:80"
    assert server_base_url("http://h/v10") == "http://h/v10"


# -- URLs and keys refused everywhere they are accepted -------------------------------------


def _demo_db(tmp_path: Path) -> Path:
    path = tmp_path / "d.sqlite"
    Store(path).close()
    return path


BAD_URLS = [
    ("http://user:pw@127.0.0.1:8000", "must not contain a user name or password"),
    ("http://:pw@127.0.0.1:8000/v1", "must not contain a user name or password"),
    ("http://127.0.0.1:99999", "not a valid URL"),
    ("http://[::1", "not a valid URL"),
    ("ftp://127.0.0.1", "must start with http://"),
    ("http://h:8000/?key=secret", "must not have a query"),
]


@pytest.mark.parametrize(("url", "why"), BAD_URLS)
def test_a_bad_server_url_is_refused_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    db = _demo_db(tmp_path)
    assert main(["--db", str(db), "classify", "--server", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curator: error: --server") and why in err
    assert len(err.strip().splitlines()) == 1
    assert "pw" not in err and "secret" not in err
    if "user name" in why:
        assert "--api-key" in err and "keyring" in err
    store = Store(db)
    try:
        assert Run.select().count() == 0
    finally:
        store.close()


@pytest.mark.parametrize(("url", "why"), BAD_URLS)
def test_a_bad_server_url_is_refused_from_the_environment_and_settings(
    tmp_path: Path, url: str, why: str
) -> None:
    with pytest.raises(ServerError, match=r"^\$CURATOR_SERVER ") as caught:
        choose_server("local", None, None, environ={"CURATOR_SERVER": url})
    assert why in str(caught.value) and "pw" not in str(caught.value)
    with pytest.raises(ServerError, match="saved model server URL"):
        choose_server("server", url, None, environ={})
    with pytest.raises(ServerError, match=why):
        HttpBackend(url)
    store = Store(tmp_path / "s.sqlite")
    try:
        with pytest.raises(SettingsError, match=why):
            set_setting(store, "server_url", url)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("abc\ndef", "line break"),
        ("abc ", "space or line break"),
        (" abc", "space or line break"),
        ("sk-\u00e9t\u00e9", "non-ASCII"),
        ("sk-\u2013dash", "non-ASCII"),
        ("ab\x00c", "control character"),
    ],
)
def test_an_unsendable_api_key_is_one_line_and_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: HostileServer, key: str, why: str
) -> None:
    db = _demo_db(tmp_path)
    assert main(["--db", str(db), "classify", "--server", server.url, "--api-key", key]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1 and "--api-key" in err
    assert key.strip() not in err
    with pytest.raises(ServerError, match=why):
        choose_server(
            "local", None, None, environ={"CURATOR_SERVER": server.url, "CURATOR_API_KEY": key}
        )
    with pytest.raises(ServerError, match=why):
        HttpBackend(server.url, api_key=key)
    assert server.requests == []  # refused before any request


def test_server_error_messages_are_redacted_and_one_line() -> None:
    text = str(ServerError("failed at http://me:hunter2@h/x\nAuthorization: Bearer sk-1"))
    assert "hunter2" not in text and "sk-1" not in text and "\n" not in text


def test_deadline_environment_variables_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ServerLimits.from_env({"CURATOR_SERVER_TIMEOUT": "7"}).answer_s == 7.0
    assert ServerLimits.from_env({"CURATOR_SERVER_TOKEN_TIME": "0.5"}).token_s == 0.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(ServerError, match=r"\$CURATOR_SERVER_TIMEOUT must be"):
            ServerLimits.from_env({"CURATOR_SERVER_TIMEOUT": bad})


def test_a_long_model_list_is_shortened_in_the_message(server: HostileServer) -> None:
    ids = [{"id": f"model-{i}-" + "x" * 100} for i in range(50)]
    server.reset({"GET /v1/models": answer({"data": ids})})
    with pytest.raises(ServerError) as caught:
        HttpBackend(server.url, model="nope", limits=LIMITS)
    text = str(caught.value)
    assert "model 'nope' is not served" in text and "and 40 more" in text
    assert len(text) < 1000


def test_credentials_in_the_environments_server_url_are_refused_by_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_SERVER", "http://me:hunter2@127.0.0.1:8000/v1")
    assert main(["--db", str(_demo_db(tmp_path)), "classify"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curator: error: $CURATOR_SERVER must not contain a user name")
    assert "hunter2" not in err and len(err.strip().splitlines()) == 1


def test_probes_a_server_does_not_answer_are_given_up_quickly_and_said(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that lists its models but is silent on ``/props``, ``/api/version`` and
    ``/extras/tokenize``: each probe waited the full answer deadline (three of them: six
    minutes by default, with nothing said), then the run was scored as a server without a
    tokenizer without a word. Now each probe has its own short wait, and a probe that got
    no answer is a note (a refusal, such as a 404, is simply "not served")."""
    import time

    from curator.llm import http_backend

    monkeypatch.setattr(http_backend, "PROBE_S", 0.4)
    release = threading.Event()

    def silent(handler: Any, _request: bytes) -> None:
        release.wait(10)

    paths = ["/props", "/api/version", "/extras/tokenize"]
    server.reset({f"{'POST' if 'tokenize' in p else 'GET'} {p}": silent for p in paths})
    started = time.monotonic()
    try:
        backend = HttpBackend(server.url, limits=ServerLimits(answer_s=30.0))
    finally:
        release.set()
    assert time.monotonic() - started < 10  # three probes of 0.4 s, not three of 30 s
    try:
        assert backend.kind == "openai" and len(backend.notes) == 3
        for note, path in zip(backend.notes, paths, strict=True):
            assert f"did not answer {server.url}{path} within 0.4 s" in note
            assert note.endswith("read as not served, so the server's kind may be wrong")
    finally:
        backend.close()
    server.reset()  # refused (404): not served, nothing to say
    quiet = HttpBackend(server.url)
    try:
        assert quiet.notes == []
    finally:
        quiet.close()


def test_a_key_given_on_the_command_line_is_noted_once_the_server_took_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], server: HostileServer
) -> None:
    """``--api-key`` shows in ``ps`` and the shell's history: said, with the private ways;
    a key or model the server refuses stays the one error line (no note before it)."""
    db = _demo_db(tmp_path)
    key = "sk-zq7notevalue"
    main(["--db", str(db), "classify", "--server", server.url, "--api-key", key, "--limit", "1"])
    err = capsys.readouterr().err
    assert "a key given by --api-key shows in the process list" in err
    assert "$CURATOR_API_KEY" in err and key not in err
    args = ["--server", server.url, "--api-key", key, "--server-model", "nope"]
    assert main(["--db", str(db), "classify", *args]) == 2
    err = capsys.readouterr().err
    assert "is not served" in err and len(err.strip().splitlines()) == 1

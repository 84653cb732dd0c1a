"""Second round of attacks on the model-server client, with cases the first round did not list.

Each class of the first round (base URL normalisation, URLs refused before use, secrets
kept out of messages, one-line messages from hostile answers) is attacked again with new
members of the class, against a real loopback server (:mod:`tests.llm.hostile_server`):
``/V1`` in capitals, a space or tab inside the host or port, port 0, an API key the server
echoes back in a field the client quotes, model ids carrying terminal escapes or bidi
overrides, and a gzip answer that expands far past the byte budget.
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.core.redact import MASK, shown_url
from curator.core.secret_forms import PREFIX_CHARS
from curator.core.server_url import server_base_url, server_url_problem
from curator.llm.http_backend import HttpBackend, ServerError, ServerLimits
from curator.llm.server_choice import choose_server
from tests.llm.hostile_server import (
    HostileServer,
    Responder,
    answer,
    event,
    hostile_server,
    raw,
    tokenizer_routes,
)

SHORT = ServerLimits(connect_s=2.0, answer_s=2.0, token_s=0.01, template_s=1.0)
KEY = "sk-live-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with hostile_server() as found:
        yield found


def _readable(message: str) -> bool:
    """One line a terminal shows as it is: no control or bidi-format character."""
    return not any(unicodedata.category(c) in ("Cc", "Cf") for c in message)


# -- base URL ------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["/V1", "/V1/", "/v1/", "/v1//"])
def test_a_v1_suffix_in_any_case_is_the_same_server(server: HostileServer, suffix: str) -> None:
    backend = HttpBackend(server.url + suffix, limits=SHORT)
    try:
        assert backend.url == server.url and backend.model == "m"
    finally:
        backend.close()
    assert server.requests[0] == "GET /v1/models"


def test_an_uppercase_scheme_is_the_same_server(server: HostileServer) -> None:
    backend = HttpBackend("HTTP" + server.url[len("http") :], limits=SHORT)
    try:
        assert backend.url == server.url
    finally:
        backend.close()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1 :8080",
        "http://127.0.0.1:80\t80",
        "http://127.0.0.1:8080\n/v1",
        "http://127.0.\u00a00.1:8080",
        "http://127.0.0.1:8080/\x00v1",
        "http://127.0.0.1:0",
    ],
)
def test_a_url_with_blanks_inside_or_port_0_is_refused_before_any_request(url: str) -> None:
    """urlsplit drops a tab or newline silently and keeps a space in the host: the URL
    used would not be the URL given (or would fail as "connection refused")."""
    problem = server_url_problem(url)
    assert problem is not None and "\n" not in problem and "\t" not in problem
    with pytest.raises(ServerError) as caught:
        HttpBackend(url, limits=SHORT)
    assert "connection refused" not in str(caught.value)


def test_blanks_around_the_url_are_not_inside_it(server: HostileServer) -> None:
    assert server_url_problem(f"  {server.url}/v1 \n") is None
    backend = HttpBackend(f"  {server.url}/v1 \n", limits=SHORT)
    backend.close()
    assert backend.url == server.url


def test_an_ipv6_address_keeps_its_brackets() -> None:
    assert server_url_problem("http://[fe80::1]:8080/v1") is None
    assert server_base_url("http://[FE80::1]:8080/v1") == "http://[fe80::1]:8080"


@pytest.mark.parametrize("url", ["http://[fe80::1%25eth0]:8080/v1", "http://[::1%lo]:8080"])
def test_an_ipv6_zone_id_is_refused_in_one_line(url: str) -> None:
    """The HTTP client cannot connect to an address with a zone: accepted, it failed as
    "connection refused", which sent the user looking at the wrong thing."""
    problem = server_url_problem(url)
    assert problem is not None and "zone" in problem


def test_a_host_that_does_not_resolve_is_not_called_refused() -> None:
    with pytest.raises(ServerError) as caught:
        HttpBackend("http://no-such-host.invalid:8080", limits=SHORT)
    message = str(caught.value)
    assert "connection refused" not in message and "no-such-host.invalid" in message
    assert "not found" in message


@pytest.mark.parametrize(
    "url", ["http://us%65r:pw@h:1", "http://h\\@evil:1", "http://:pw@h:1", "http://@h:1"]
)
def test_hidden_userinfo_is_refused(url: str) -> None:
    problem = server_url_problem(url)
    assert problem is not None and "user name or password" in problem and "pw" not in problem


# -- secrets the server echoes ----------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [KEY, f"Bearer {KEY}", {"authorization": f"Bearer {KEY}"}, f"bad key {KEY}!"],
    ids=["bare", "bearer", "json-header", "in-a-sentence"],
)
def test_an_api_key_echoed_by_the_server_never_reaches_a_message(
    server: HostileServer, value: object
) -> None:
    server.reset({"GET /props": answer({"default_generation_settings": {"n_ctx": value}})})
    with pytest.raises(ServerError, match="n_ctx") as caught:
        HttpBackend(server.url, api_key=KEY, limits=SHORT)
    assert KEY not in str(caught.value) and KEY[:12] not in str(caught.value)


LONG_KEY = "sk-proj-" + "A1b2C3d4" * 12


def _echo_forms(key: str) -> list[str]:
    return [
        f"model-for-{key}",
        f"m-{quote(key, safe='')}",
        f"m-{json.dumps(key)}",
        f"m-{' '.join(key.split())}",
    ]


@pytest.mark.parametrize("key", [KEY, LONG_KEY, 'sk-ab+cd/ef=gh"ij\\kl  1234'])
def test_a_model_id_that_echoes_the_key_in_any_form_is_masked_wherever_it_goes(
    server: HostileServer, key: str
) -> None:
    """A model id is quoted in messages, stored on runs and printed by `curator run`:
    it enters the program with the key masked, in every form the server may write it,
    before anything cuts it short."""
    for echoed in _echo_forms(key):
        server.reset({"GET /v1/models": answer({"data": [{"id": echoed}]})})
        backend = HttpBackend(server.url, api_key=key, limits=SHORT)
        try:
            assert key[:12] not in backend.model and MASK in backend.model
        finally:
            backend.close()
        with pytest.raises(ServerError, match="is not served") as caught:
            HttpBackend(server.url, api_key=key, model="other", limits=SHORT)
        assert key[:12] not in str(caught.value)
        assert json.dumps(key)[1:13] not in str(caught.value)


def test_a_long_key_echoed_in_a_field_the_message_cuts_short_shows_none_of_it(
    server: HostileServer,
) -> None:
    server.reset({"GET /props": answer({"default_generation_settings": {"n_ctx": LONG_KEY}})})
    with pytest.raises(ServerError, match="n_ctx") as caught:
        HttpBackend(server.url, api_key=LONG_KEY, limits=SHORT)
    assert LONG_KEY[:12] not in str(caught.value)


def test_a_key_generated_across_several_stream_events_is_masked_in_the_text(
    server: HostileServer,
) -> None:
    """Generated text is stored in traces and printed by `curator run`: a key the model
    writes, token by token, is masked in the whole text, not only within one event."""
    pieces = [KEY[i : i + 3] for i in range(0, len(KEY), 3)]
    stream = [event("remember "), *(event(p) for p in pieces), event(" now", "stop")]
    server.reset({**tokenizer_routes(), "POST /v1/completions": raw(lambda: stream)})
    backend = HttpBackend(server.url, api_key=KEY, limits=SHORT)
    try:
        done = backend.complete("p", "x", max_tokens=64)
    finally:
        backend.close()
    assert done.text == f"remember {MASK} now"


def test_a_key_the_model_repeats_in_a_loop_is_masked_live_in_the_loop_and_in_the_text(
    server: HostileServer,
) -> None:
    """The live output (the Runs pane), the loop record (stored in the trace and fed to
    the next step) and the text all come from the same pieces, masked as they stream."""
    line = f"- The key is {KEY}.\n"
    text = line * 80
    stream = [event(text[i : i + 3]) for i in range(0, len(text), 3)]
    server.reset({**tokenizer_routes(), "POST /v1/completions": raw(lambda: stream)})
    backend = HttpBackend(server.url, api_key=KEY, limits=SHORT)
    live: list[str] = []
    try:
        done = backend.complete("p", "x", max_tokens=2_000, on_token=live.append)
    finally:
        backend.close()
    assert done.stop_reason == "loop" and done.loop is not None
    for shown in ("".join(live), done.text, done.loop.unit, done.loop.describe()):
        assert KEY[:PREFIX_CHARS] not in shown and MASK in shown, shown
    assert done.text[: done.loop.start] + done.loop.unit in done.text + done.loop.unit


# -- hostile text in messages ---------------------------------------------------------


@pytest.mark.parametrize(
    "model_id",
    ["\x1b[2J\x1b[31mgone", "bell\x07", "back\x08\x08\x08", "\u202eevil", "zero\u200bwidth"],
)
def test_model_ids_with_escapes_are_shown_escaped(server: HostileServer, model_id: str) -> None:
    server.reset({"GET /v1/models": answer({"data": [{"id": model_id}]})})
    with pytest.raises(ServerError, match="is not served") as caught:
        HttpBackend(server.url, model="other", limits=SHORT)
    message = str(caught.value)
    assert _readable(message) and "\n" not in message


@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=80))
def test_every_server_error_is_one_readable_line(text: str) -> None:
    """Whatever text a server makes a message quote, the message is one readable line."""
    message = str(ServerError(f"the model server said {text}"))
    assert "\n" not in message and "\r" not in message and _readable(message)


# -- bombs ------------------------------------------------------------------------------------


def test_a_gzip_bomb_is_stopped_by_the_decoded_byte_budget(server: HostileServer) -> None:
    """200 KB on the wire, 200 MB decoded: the budget counts what would be kept."""
    bomb = gzip.compress(b" " * (200 << 20))

    def respond(handler: BaseHTTPRequestHandler, _request: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(bomb)))
        handler.end_headers()
        handler.wfile.write(bomb)

    server.reset({"GET /v1/models": respond})
    small = ServerLimits(connect_s=2.0, answer_s=5.0, answer_bytes=1 << 20)
    with pytest.raises(ServerError, match="more than 1,048,576 bytes"):
        HttpBackend(server.url, limits=small)


# -- environment variables with blanks -------------------------------------------------------


@pytest.mark.parametrize("blank", ["", " ", "\t", " \n "])
def test_a_blank_server_variable_is_unset(blank: str) -> None:
    """``export CURATOR_SERVER=" "`` (or a blank line from an env file) means no server,
    as an empty one does: not "must start with http://"."""
    env = {"CURATOR_SERVER": blank, "CURATOR_API_KEY": blank}
    assert choose_server("local", None, None, environ=env, use_saved=False) is None
    assert (
        ServerLimits.from_env({"CURATOR_SERVER_TIMEOUT": blank, "CURATOR_SERVER_TOKEN_TIME": blank})
        == ServerLimits()
    )


def test_a_blank_api_key_variable_is_unset(server: HostileServer) -> None:
    env = {"CURATOR_SERVER": f" {server.url}/v1\n", "CURATOR_API_KEY": "  "}
    choice = choose_server("local", None, None, environ=env)
    assert choice is not None and choice.api_key is None


def test_server_variables_with_blanks_around_a_value_use_the_value() -> None:
    limits = ServerLimits.from_env(
        {"CURATOR_SERVER_TIMEOUT": " 7 ", "CURATOR_SERVER_TOKEN_TIME": "\t2\n"}
    )
    assert limits.answer_s == 7.0 and limits.token_s == 2.0


# -- lying transports -------------------------------------------------------------------------


def _send(*parts: bytes) -> Responder:
    """Raw bytes on the socket, as they are (status line and headers included)."""

    def respond(handler: BaseHTTPRequestHandler, _request: bytes) -> None:
        handler.close_connection = True
        for part in parts:
            handler.wfile.write(part)
            handler.wfile.flush()

    return respond


_STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"


@pytest.mark.parametrize(
    "reply",
    [
        _STREAM_HEAD + b"Transfer-Encoding: chunked\r\n\r\n1000\r\ndata: {}\n",  # short chunk
        _STREAM_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",  # unreadable size
        _STREAM_HEAD + b'Content-Length: 100000\r\n\r\ndata: {"choices": []}\n',  # cut
        _STREAM_HEAD + b"\r\n",  # headers, then the connection closes
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n",  # a huge header
        b"garbage that is no HTTP at all\r\n\r\n",
    ],
    ids=[
        "short-chunk",
        "bad-chunk-size",
        "cut-body",
        "headers-then-close",
        "huge-header",
        "no-http",
    ],
)
def test_a_lying_transport_under_a_stream_is_one_line(server: HostileServer, reply: bytes) -> None:
    server.reset({"POST /v1/completions": _send(reply)})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        with pytest.raises(ServerError) as caught:
            backend.complete("p", "x", max_tokens=4)
    finally:
        backend.close()
    assert "\n" not in str(caught.value) and "/v1/completions" in str(caught.value)


def test_a_gzip_bomb_in_a_stream_is_stopped_by_the_stream_budget(server: HostileServer) -> None:
    bomb = gzip.compress(b": " + b" " * (100 << 20) + b"\n")
    head = _STREAM_HEAD + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb)
    server.reset({"POST /v1/completions": _send(head, bomb)})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        with pytest.raises(ServerError, match="byte budget"):
            backend.complete("p", "x", max_tokens=4)
    finally:
        backend.close()


def test_an_http_1_0_answer_without_length_is_capped(server: HostileServer) -> None:
    """No Content-Length, no chunks: the body ends when the server closes, i.e. never."""
    server.reset({"GET /v1/models": _send(b"HTTP/1.0 200 OK\r\n\r\n", *([b"{" * 65536] * 64))})
    small = ServerLimits(connect_s=2.0, answer_s=5.0, answer_bytes=1 << 20)
    with pytest.raises(ServerError, match="more than 1,048,576 bytes"):
        HttpBackend(server.url, limits=small)


@pytest.mark.parametrize(
    "chunk",
    [
        b'data: {"choices": [{"text": "", "index": 0}]}\n\n',  # tokens that are not counted
        b'data: {"choices": []}\n\n',
        b"data: {}\n\n",
    ],
    ids=["empty-text", "no-choices", "empty-event"],
)
def test_an_endless_stream_of_empty_events_stops(server: HostileServer, chunk: bytes) -> None:
    """Events without text add no token, so the token count never stops them: the byte
    budget or the deadline must, or the answer is refused outright."""
    server.reset({"POST /v1/completions": _send(_STREAM_HEAD + b"\r\n", *([chunk] * 200_000))})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        with pytest.raises(ServerError) as caught:
            backend.complete("p", "x", max_tokens=4)
    finally:
        backend.close()
    assert "\n" not in str(caught.value)


@settings(max_examples=200, deadline=None)
@given(
    middle=st.text(alphabet=st.sampled_from(list("ab/#?: %\t.-\\")), max_size=12),
    scheme=st.sampled_from(["http://", "HTTPS://", "", "ftp://"]),
    path=st.sampled_from(["", "/v1", "/x?y=1"]),
)
def test_no_password_survives_in_a_refusal_however_malformed(
    middle: str, scheme: str, path: str
) -> None:
    """A password with characters that end the user part early for a URL parser ("/",
    "#", "?", a space) is still never quoted by a refusal of the URL."""
    url = f"{scheme}me:Qx7{middle}Qx7@example.org:8080{path}"
    assert "Qx7" not in shown_url(url, 1000)
    problem = server_url_problem(url)
    assert problem is not None and "Qx7" not in problem

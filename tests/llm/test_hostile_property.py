"""Property: whatever a server answers, a call succeeds or fails with one ServerError line.

Hypothesis writes the answers of a real loopback server (``hostile_server``): the JSON of
every endpoint the backend reads, with any field replaced by a value of the wrong type,
NaN, infinity, a huge number or nesting; wrong status codes with any ``Retry-After``;
bodies that are not JSON; streams of garbage events. Every call (connect, classify,
generate) must then either succeed or raise :class:`ServerError` with one line that names
the server, and return within its deadline: never another exception type, never a hang.
Also here: every URL and API key either passes the shared checks or gets one line that
never repeats a password.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.core.server_url import api_key_problem, server_base_url, server_url_problem
from curator.llm.http_backend import HttpBackend, ServerError, ServerLimits
from tests.llm.hostile_server import HostileServer, Responder, answer, hostile_server, raw

LIMITS = ServerLimits(connect_s=2.0, answer_s=0.3, token_s=0.01)
BOUND_S = 15.0  # every call's deadline is far below this; only a hang reaches it
KEYS = [
    "data", "id", "choices", "text", "logprobs", "top_logprobs", "token_logprobs", "usage",
    "prompt_tokens", "tokens", "content", "default_generation_settings", "n_ctx",
    "finish_reason", "token", "logprob",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 0.0, -0.0, 5e-324]),
    st.text(max_size=12),
)
hostile = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner, max_size=3),
    ),
    max_leaves=8,
)


def _or_hostile(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the valid value, sometimes anything."""
    return st.one_of(valid, valid, hostile)


labels_top = st.dictionaries(
    st.sampled_from(["n", "c", "u", " "]), _or_hostile(st.floats(-30, 0)), min_size=0, max_size=3
)
completion = st.fixed_dictionaries(
    {
        "choices": _or_hostile(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "text": _or_hostile(st.sampled_from(["noise", "constitutional", "n"])),
                        "logprobs": _or_hostile(
                            st.fixed_dictionaries(
                                {
                                    "top_logprobs": _or_hostile(st.lists(labels_top, max_size=2)),
                                    "token_logprobs": _or_hostile(
                                        st.lists(st.floats(-30, 0), max_size=2)
                                    ),
                                }
                            )
                        ),
                        "finish_reason": _or_hostile(st.sampled_from([None, "stop", "length"])),
                    }
                ),
                max_size=2,
            )
        ),
        "usage": _or_hostile(
            st.one_of(st.none(), st.fixed_dictionaries({"prompt_tokens": st.integers(0, 999)}))
        ),
    }
)
models = st.fixed_dictionaries(
    {"data": _or_hostile(st.lists(st.fixed_dictionaries({"id": _or_hostile(st.text())})))}
)
props = st.fixed_dictionaries(
    {
        "default_generation_settings": _or_hostile(
            st.fixed_dictionaries({"n_ctx": _or_hostile(st.integers(16, 8192))})
        )
    }
)
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


@st.composite
def responder(draw: st.DrawFn, body: st.SearchStrategy[Any]) -> Responder:
    """An answer: mostly 200 with the drawn JSON; else another status, or not JSON."""
    status = draw(st.sampled_from([200, 200, 200, 200, 404, 429, 500, 503]))
    headers = {"Retry-After": draw(header_text)} if draw(st.booleans()) else {}
    if draw(st.integers(0, 9)) == 0:
        return answer(draw(st.binary(max_size=40)), status, headers)
    value = draw(st.one_of(body, body, body, hostile))
    return answer(json.dumps(value).encode(), status, headers)


@st.composite
def stream(draw: st.DrawFn) -> Responder:
    """A stream of events: valid ones, hostile JSON, garbage lines; maybe no [DONE]."""
    lines: list[bytes] = []
    for value in draw(st.lists(st.one_of(completion, hostile), max_size=5)):
        lines.append(b"data: " + json.dumps(value).encode() + b"\n\n")
    if draw(st.booleans()):
        lines.append(draw(st.binary(max_size=30)))
    if draw(st.booleans()):
        lines.append(b"data: [DONE]\n\n")
    return raw(lambda: lines)


def _tokenizer(hostile_answer: Any) -> Responder:
    def tokenize(handler: Any, request: bytes) -> None:
        if hostile_answer is not None:
            answer(json.dumps(hostile_answer).encode())(handler, request)
            return
        content = json.loads(request).get("content", "")
        answer({"tokens": [ord(c) for c in content]})(handler, request)

    return tokenize


def _detokenizer(handler: Any, request: bytes) -> None:
    tokens = json.loads(request).get("tokens", [])
    answer({"content": "".join(chr(t) for t in tokens)})(handler, request)


@st.composite
def routes(draw: st.DrawFn) -> dict[str, Responder]:
    found: dict[str, Responder] = {"GET /v1/models": draw(responder(models))}
    if draw(st.booleans()):  # llama-server: /props and a tokenizer
        found["GET /props"] = draw(responder(props))
        tokens = draw(st.one_of(st.none(), st.none(), hostile))
        found["POST /tokenize"] = _tokenizer(tokens)
        found["POST /detokenize"] = _detokenizer
    found["POST /v1/completions"] = draw(responder(completion))
    return found


@pytest.fixture(scope="module")
def server() -> Iterator[HostileServer]:
    with hostile_server() as found:
        yield found


def _survives(call: Any) -> Any:
    """Run ``call`` bounded in time; it returns or raises a one-line ServerError."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(("ok", call()))
        except BaseException as exc:
            box.append(("error", exc))

    start = time.monotonic()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BOUND_S)
    assert not worker.is_alive(), "a call hung past its deadline"
    assert time.monotonic() - start < BOUND_S
    kind, value = box[0]
    if kind == "ok":
        return value
    assert isinstance(value, ServerError), f"{type(value).__name__}: {value}"
    text = str(value)
    assert text and "\n" not in text
    raise value


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(found=routes(), streamed=stream())
def test_every_call_succeeds_or_fails_in_one_line(
    server: HostileServer, found: dict[str, Responder], streamed: Responder
) -> None:
    server.reset(found)
    try:
        backend = _survives(lambda: HttpBackend(server.url, limits=LIMITS, retries=1))
    except ServerError:
        return
    try:
        try:
            scores = _survives(
                lambda: backend.classify("p", "episode", ("noise", "constitutional"))
            )
        except ServerError:
            pass
        else:
            assert scores.label in ("noise", "constitutional")
            assert abs(sum(scores.probabilities.values()) - 1) < 1e-6
        server.routes["POST /v1/completions"] = streamed
        try:
            done = _survives(lambda: backend.complete("p", "x", max_tokens=3))
        except ServerError:
            pass
        else:
            assert done.tokens_out <= 3
    finally:
        backend.close()


# -- URLs and keys ------------------------------------------------------------------------

url_text = st.one_of(
    st.text(max_size=40),
    st.builds(
        lambda scheme, user, host, port, path: f"{scheme}://{user}{host}{port}{path}",
        st.sampled_from(["http", "https", "ftp", "HTTP", ""]),
        st.one_of(
            st.just(""),
            st.builds(lambda u, p: f"{u}:{p}@", st.text("abc%:", max_size=4), st.just("pw123")),
            st.builds(lambda u: f"{u}@", st.text("abc%", max_size=4)),
        ),
        st.sampled_from(["127.0.0.1", "[::1]", "[::1", "h", "", "h.example"]),
        st.one_of(st.just(""), st.builds(lambda n: f":{n}", st.integers(-5, 100_000))),
        st.sampled_from(
            [
                "",
                "/",
                "/v1",
                "/v1/",
                "/api/v1",
                "/x?key=pw123",
                "/#pw123",
                "/\x1b[31m",
                "/a b",
                "/\x00",
            ]
        ),
    ),
)


@settings(max_examples=300, deadline=None)
@given(url=url_text)
def test_every_url_is_usable_or_refused_in_one_line(url: str) -> None:
    problem = server_url_problem(url, "--server")
    if problem is not None:
        assert problem.startswith("--server ") and "\n" not in problem
        for secret in ("pw123@", "key=pw123"):  # a password, a secret parameter
            assert secret not in url or secret not in problem
        return
    base = server_base_url(url)
    assert "@" not in base and not base.endswith("/v1") and not base.endswith("/")
    assert server_base_url(base) == base
    assert server_url_problem(base) is None
    httpx.URL(base + "/v1/models")  # the client accepts what was accepted


@settings(max_examples=300, deadline=None)
@given(key=st.text(max_size=20))
def test_every_api_key_is_sendable_or_refused_without_being_shown(key: str) -> None:
    problem = api_key_problem(key)
    if problem is None:
        if key:
            request = httpx.Request("GET", "http://h/", headers={"Authorization": f"Bearer {key}"})
            assert request.headers["authorization"] == f"Bearer {key}"
        return
    assert "\n" not in problem and (len(key.strip()) < 3 or key.strip() not in problem)

"""Nothing a model server does can hold a call past its deadline or its budget.

Each test sets short limits through :class:`ServerLimits` (the same parameter the CLI
fills from ``$CURATOR_SERVER_TIMEOUT``) and runs the call on a thread joined with a
bound far above those limits: before the deadlines existed each of these calls hung for
as long as the server kept going (minutes to forever), so a hang fails the test instead
of the suite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from curator.llm.backend import stop_after_token
from curator.llm.http_backend import HttpBackend, ServerError, ServerLimits
from curator.llm.server_http import retry_wait
from tests.llm.hostile_server import (
    HostileServer,
    answer,
    event,
    forever,
    hostile_server,
    raw,
    tokenizer_routes,
)

SHORT = ServerLimits(connect_s=2.0, answer_s=0.5, token_s=0.01, template_s=1.0)
HANG = 20.0  # the join bound: far above every deadline here, far below "forever"
_T = TypeVar("_T")


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with hostile_server() as found:
        yield found


def _bounded(call: Callable[[], _T]) -> _T:
    """``call()`` on a thread; a call still running after HANG seconds fails the test."""
    box: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:
            box.append((False, exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG)
    assert not worker.is_alive(), "the call hung past every deadline"
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def _one_line(exc: pytest.ExceptionInfo[ServerError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


def test_classify_against_a_trickling_server_stops_at_its_deadline(server: HostileServer) -> None:
    """One byte every 0.1 s never trips a per-read timeout; the total deadline does."""
    server.reset({"POST /v1/completions": raw(forever(b" "), delay=0.1)})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        with pytest.raises(ServerError) as caught:
            _bounded(lambda: backend.classify("p", "episode", ("a", "b")))
    finally:
        backend.close()
    text = _one_line(caught)
    assert f"{server.url}/v1/completions" in text and "deadline" in text


def test_a_stream_that_never_ends_is_cut_at_max_tokens(server: HostileServer) -> None:
    """The server ignores max_tokens and streams forever: the client counts and stops."""
    server.reset({"POST /v1/completions": raw(forever(event("tok ")))})
    backend = HttpBackend(server.url, limits=ServerLimits(answer_s=10.0))
    try:
        done = _bounded(lambda: backend.complete("p", "x", max_tokens=7))
    finally:
        backend.close()
    assert done.tokens_out == 7 and done.stop_reason == "length"
    assert done.text == "tok " * 7


def test_a_stream_of_newlines_stops_at_its_deadline(server: HostileServer) -> None:
    server.reset({"POST /v1/completions": raw(forever(b"\n"), delay=0.05)})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        with pytest.raises(ServerError) as caught:
            _bounded(lambda: backend.complete("p", "x", max_tokens=10))
    finally:
        backend.close()
    assert "deadline" in _one_line(caught)


@pytest.mark.parametrize(
    "chunk",
    [b": keep-alive comment " * 100 + b"\n", b"x" * 4096],  # many lines; one endless line
    ids=["comments", "one-endless-line"],
)
def test_a_stream_past_its_byte_budget_is_refused(server: HostileServer, chunk: bytes) -> None:
    server.reset({"POST /v1/completions": raw(forever(chunk))})
    backend = HttpBackend(server.url, limits=ServerLimits(answer_s=30.0))
    try:
        with pytest.raises(ServerError) as caught:
            _bounded(lambda: backend.complete("p", "x", max_tokens=4))
    finally:
        backend.close()
    assert "byte budget" in _one_line(caught)


def test_a_too_large_answer_is_refused(server: HostileServer) -> None:
    limits = ServerLimits(answer_bytes=1000)
    server.reset({"GET /v1/models": answer({"data": [{"id": "m" * 5000}]})})
    with pytest.raises(ServerError) as caught:
        _bounded(lambda: HttpBackend(server.url, limits=limits))
    assert "more than 1,000 bytes" in _one_line(caught)


def test_slow_headers_stop_at_the_deadline(server: HostileServer) -> None:
    """The answer's status line itself never comes: connecting is bounded too."""

    def silent(handler: Any, _request: bytes) -> None:
        threading.Event().wait(HANG * 2)

    server.reset({"GET /v1/models": silent})
    with pytest.raises(ServerError) as caught:
        _bounded(lambda: HttpBackend(server.url, limits=SHORT))
    assert f"{server.url}/v1/models" in _one_line(caught)


NESTED = (
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"
)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        (NESTED, "took longer than 1 s"),
        ("{{ 'x'|center(2000000000) }}", "memory"),
        ("{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}", "larger than"),
        ("{# " + "z" * 300_000 + " #}", "larger than"),
    ],
    ids=["nested-loops", "memory", "huge-output", "huge-source"],
)
def test_a_pathological_chat_template_is_refused(
    server: HostileServer, template: str, why: str
) -> None:
    server.reset(tokenizer_routes(template))
    with pytest.raises(ServerError) as caught:
        _bounded(lambda: HttpBackend(server.url, limits=SHORT))
    text = _one_line(caught)
    assert f"the chat template served at {server.url}/props is refused" in text
    assert why in text


def test_a_served_chat_template_within_budget_is_used(server: HostileServer) -> None:
    template = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    server.reset(tokenizer_routes(template))
    backend = _bounded(lambda: HttpBackend(server.url, limits=SHORT))
    try:
        assert backend.kind == "llama-server"
        assert backend.chat_prefix("S", "U") == "<|system|>S<|end|><|user|>U"
        assert backend.template.tail == "<|end|><|assistant|>"
    finally:
        backend.close()


@pytest.mark.parametrize(
    ("header", "wait"),
    [("-5", 0.5), ("nan", 0.5), ("inf", 0.5), ("1e308", 30.0), ("soon", 0.5), ("2", 2.0)],
)
def test_retry_after_is_a_bounded_number_of_seconds(header: str, wait: float) -> None:
    assert retry_wait(header, 0.5) == wait


def test_a_busy_server_with_a_negative_retry_after_is_retried(server: HostileServer) -> None:
    """``Retry-After: -5`` used to reach ``time.sleep(-5)`` (ValueError, exit 3)."""
    busy = answer({"error": "busy"}, status=429, headers={"Retry-After": "-5"})
    server.reset({"POST /v1/completions": busy})
    backend = HttpBackend(server.url, limits=ServerLimits(answer_s=1.0), retries=1)
    try:
        with pytest.raises(ServerError) as caught:
            _bounded(lambda: backend.classify("p", "x", ("a", "b")))
    finally:
        backend.close()
    assert "answered 429" in _one_line(caught)
    assert server.requests.count("POST /v1/completions") == 2  # retried once


def test_a_retry_wait_past_the_deadline_gives_up_at_once(server: HostileServer) -> None:
    busy = answer({"error": "busy"}, status=503, headers={"Retry-After": "30"})
    server.reset({"POST /v1/completions": busy})
    backend = HttpBackend(server.url, limits=SHORT, retries=3)
    try:
        with pytest.raises(ServerError, match="is busy"):
            _bounded(lambda: backend.classify("p", "x", ("a", "b")))
    finally:
        backend.close()
    assert server.requests.count("POST /v1/completions") == 1


def test_one_stop_rule_for_every_generation_loop() -> None:
    """The in-process loops and the HTTP stream stop by the same rule: cancel, then budget."""
    assert stop_after_token(2, 3, None) is None
    assert stop_after_token(3, 3, None) == "length"
    assert stop_after_token(1, 3, lambda: True) == "cancelled"
    assert stop_after_token(3, 3, lambda: True) == "cancelled"


def test_the_servers_own_stop_on_the_last_allowed_token_is_kept(server: HostileServer) -> None:
    server.reset({"POST /v1/completions": raw(lambda: [event("a"), event("b", "stop")])})
    backend = HttpBackend(server.url, limits=SHORT)
    try:
        done = _bounded(lambda: backend.complete("p", "x", max_tokens=2))
        cut = _bounded(lambda: backend.complete("p", "x", max_tokens=1))
    finally:
        backend.close()
    assert (done.text, done.stop_reason) == ("ab", "stop")
    assert (cut.text, cut.stop_reason) == ("a", "length")

"""A generation that loops is stopped there, in both backends, and says so.

The demo model, asked to list heartbeats, writes "1. 1000000..." until its budget is
spent: a real loop of the real model, stopped by the in-process backend and by the HTTP
backend against a real llama-cpp-python server on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from curator.llm.backend import Backend
from curator.llm.http_backend import HttpBackend
from curator.llm.llama_cpp_backend import LlamaCppBackend
from tests.llm.llama_server import API_KEY

pytestmark = pytest.mark.llm

ASK = "List the heartbeats: heartbeat seq=9, heartbeat seq=9, heartbeat seq=9,"
BUDGET = 160


@pytest.fixture
def http_backend(llama_server: str) -> Iterator[HttpBackend]:
    backend = HttpBackend(llama_server, api_key=API_KEY, n_ctx=2048)
    yield backend
    backend.close()


def _prefix(backend: Backend) -> str:
    return backend.chat_prefix("You are a helpful assistant.", "")


def _assert_stopped_in_the_loop(backend: Backend) -> None:
    seen: list[str] = []
    done = backend.complete(_prefix(backend), ASK, max_tokens=BUDGET, on_token=seen.append)
    assert done.stop_reason == "loop", done.text
    assert done.tokens_out < BUDGET * 2 // 3  # stopped early, not at the budget
    assert done.loop is not None and "repeated '0'" in done.loop.describe()
    assert done.text.endswith("0" * 40) and "".join(seen) == done.text


def test_the_in_process_backend_stops_a_loop(demo_backend: LlamaCppBackend) -> None:
    _assert_stopped_in_the_loop(demo_backend)


def test_the_in_process_backend_stops_a_loop_when_sampling(
    demo_backend: LlamaCppBackend,
) -> None:
    """llama-cpp-python's own sampling loop (the retry temperature, or eager grammars)."""
    demo_backend.lazy_grammar = False
    try:
        _assert_stopped_in_the_loop(demo_backend)
    finally:
        demo_backend.lazy_grammar = True


def test_without_the_stop_the_loop_runs_to_the_budget(demo_backend: LlamaCppBackend) -> None:
    """The same call with ``stop_loops=False``: the model does not end the loop itself."""
    budget = BUDGET * 2 // 3
    done = demo_backend.complete(_prefix(demo_backend), ASK, max_tokens=budget, stop_loops=False)
    assert done.stop_reason == "length" and done.tokens_out == budget and done.loop is None


def test_the_http_backend_stops_a_loop_and_abandons_the_request(
    http_backend: HttpBackend,
) -> None:
    _assert_stopped_in_the_loop(http_backend)
    # the server is free at once for the next request
    after = http_backend.complete(_prefix(http_backend), "Say hi.", max_tokens=4)
    assert after.tokens_out >= 1


def test_both_backends_write_the_same_text_at_repeat_penalty_one(
    demo_backend: LlamaCppBackend, http_backend: HttpBackend
) -> None:
    """llama.cpp's server defaults to a repeat penalty of 1.1: the HTTP backend sends the
    1.0 it is asked for, so the two backends loop (and stop) alike."""
    local = demo_backend.complete(_prefix(demo_backend), ASK, max_tokens=BUDGET)
    remote = http_backend.complete(_prefix(http_backend), ASK, max_tokens=BUDGET)
    assert remote.text == local.text and remote.stop_reason == local.stop_reason == "loop"

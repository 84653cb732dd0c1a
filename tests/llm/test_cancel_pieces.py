"""A cancel is seen within a bounded amount of work, whatever the machine's speed.

The prompt is evaluated in pieces sized by the speed measured on this machine
(:mod:`curator.llm.llama_prompt`); a slow machine is made here by asking for pieces of
almost no time (a real model, real evaluation: only the target changes). The HTTP
backend's cancel closes the connection itself, so the server stops at once even while it
is still evaluating the prompt and sends nothing.
"""

from __future__ import annotations

import itertools
import select
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.llm.backend import StopRequested
from curator.llm.http_backend import HttpBackend
from curator.llm.llama_prompt import MIN_PIECE, PieceTimer, batch_bounds, next_cut

LABELS = ["constitutional", "noise", "uncategorized"]


@pytest.fixture(scope="module")
def classify_prefix(demo_backend) -> str:
    return str(demo_backend.chat_prefix("Label the text.", "Text:\n"))


LONG = "The tomato plants had brown patches on the lower leaves again. " * 30


# -- the pieces: pure rules -------------------------------------------------------------


@settings(deadline=None, max_examples=300)
@given(
    start=st.integers(0, 2000),
    length=st.integers(1, 3000),
    n_batch=st.integers(2, 1024),
    sizes=st.lists(st.integers(-3, 1200), min_size=1, max_size=20),
)
@example(start=0, length=513, n_batch=512, sizes=[128])
@example(start=5, length=1, n_batch=512, sizes=[128])
@example(start=0, length=3, n_batch=2, sizes=[1])
def test_pieces_cover_the_prompt_in_the_servers_batches(
    start: int, length: int, n_batch: int, sizes: list[int]
) -> None:
    """Whatever sizes are asked for, the pieces cover the prompt exactly, stay inside
    ``Llama.generate``'s batches, hold at most the size asked for (one more to avoid a
    one-token piece) and are never one token unless the server's batch is."""
    end = start + length
    pos, i = start, 0
    while pos < end:
        size = sizes[i % len(sizes)]
        cut = next_cut(pos, start, end, n_batch, size)
        batch_end = min(end, start + ((pos - start) // n_batch + 1) * n_batch)
        assert pos < cut <= batch_end
        assert cut - pos <= max(MIN_PIECE, size) + 1
        if cut - pos == 1:
            assert batch_end - pos == 1  # the server's own batch of one token
        pos, i = cut, i + 1
    assert pos == end


def test_fixed_pieces_are_the_servers_batches_cut() -> None:
    assert batch_bounds(7, 7 + 600, 512, 512) == [(7, 519), (519, 607)]
    assert batch_bounds(0, 257, 512, 128) == [(0, 128), (128, 257)]
    assert batch_bounds(0, 513, 512, 128)[-2:] == [(384, 512), (512, 513)]


@settings(deadline=None, max_examples=300)
@given(
    target=st.floats(1e-6, 5.0),
    costs=st.lists(
        st.tuples(st.integers(1, 512), st.floats(0.0, 30.0, allow_nan=False)),
        min_size=1,
        max_size=12,
    ),
    n_batch=st.integers(2, 2048),
)
@example(target=0.2, costs=[(128, 6.4)], n_batch=512)  # the busy two-core machine
@example(target=0.2, costs=[(128, 0.0)], n_batch=512)
@example(target=2.0, costs=[(2, 2.2250738585072014e-308)], n_batch=2)
def test_a_piece_fits_the_target_at_the_latest_measured_speed(
    target: float, costs: list[tuple[int, float]], n_batch: int
) -> None:
    """After any history of measured pieces, the next piece at the latest (slowest
    recent) speed stays within the target, unless it is the smallest piece there is."""
    timer = PieceTimer(target)
    for tokens, seconds in costs:
        timer.record(tokens, seconds)
        size = timer.size(n_batch)
        assert MIN_PIECE <= size <= max(MIN_PIECE, n_batch)
        latest = seconds / tokens
        assert size == MIN_PIECE or size * latest <= target * (1 + 1e-9)


def test_a_piece_timer_starts_small_and_grows_on_a_fast_machine() -> None:
    timer = PieceTimer(0.2)
    assert timer.size(512) == 16  # nothing measured yet
    timer.record(16, 0.0016)  # 0.1 ms a token
    assert timer.size(512) == 512
    timer.record(512, 512 * 0.05)  # the machine got busy: 50 ms a token (4 tokens)
    assert timer.size(512) == MIN_PIECE  # never below the floor that keeps throughput


# -- the in-process backend: the real model ----------------------------------------------


@pytest.mark.llm
def test_a_cancel_is_checked_before_every_piece_of_a_slow_prompt(
    demo_backend, classify_prefix: str
) -> None:
    """On a machine where any piece is too slow, a check comes after every smallest
    piece, and no token is evaluated after the check that saw the cancel."""
    saved = demo_backend.piece_timer
    demo_backend.piece_timer = PieceTimer(target_s=1e-9)
    demo_backend.piece_timer.record(1, 1.0)  # measured: a second a token
    demo_backend.llm.reset()
    seen: list[int] = []

    def stop() -> bool:
        seen.append(demo_backend.llm.n_tokens)
        return len(seen) > 12

    try:
        with pytest.raises(StopRequested):
            demo_backend.classify(classify_prefix, LONG, LABELS, should_stop=stop)
        steps = [b - a for a, b in itertools.pairwise(seen)]
        assert len(steps) == 12 and all(0 < s <= MIN_PIECE + 1 for s in steps)
        assert demo_backend.llm.n_tokens == seen[-1]  # nothing evaluated after the cancel
        done = demo_backend.complete(
            classify_prefix, LONG + " again", max_tokens=8, should_stop=stop
        )
        assert done.stop_reason == "cancelled" and done.tokens_out == 0
    finally:
        demo_backend.piece_timer = saved
    after = demo_backend.classify(classify_prefix, LONG, LABELS)
    assert after.label in LABELS  # the backend stays usable


@pytest.mark.llm
def test_pieces_follow_the_measured_speed(demo_backend, classify_prefix: str) -> None:
    """With the default target, each piece is what the timer allowed at its check."""
    demo_backend.llm.reset()
    marks: list[tuple[int, int]] = []

    def watch() -> bool:
        marks.append((demo_backend.llm.n_tokens, demo_backend.piece_timer.size(512)))
        return False

    demo_backend.classify(classify_prefix, LONG, LABELS, should_stop=watch)
    assert len(marks) >= 2  # the first piece is small: at least one more check
    for (before, allowed), (after, _) in itertools.pairwise(marks):
        assert 0 < after - before <= allowed + 1


# -- the HTTP backend: the connection itself is closed ----------------------------------


class _Silent(BaseHTTPRequestHandler):
    """A server still evaluating a long prompt: headers, then nothing, until the client
    goes away (it records when it noticed) or 30 s pass."""

    arrived: threading.Event
    disconnected: threading.Event

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b'{"data": [{"id": "silent"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        self.arrived.set()
        sock: socket.socket = self.connection
        ready, _, _ = select.select([sock], [], [], 30)
        if ready and sock.recv(1, socket.MSG_PEEK) == b"":
            self.disconnected.set()
        self.close_connection = True


@pytest.fixture
def silent_server() -> Iterator[tuple[str, threading.Event, threading.Event]]:
    arrived, gone = threading.Event(), threading.Event()
    handler = type("Handler", (_Silent,), {"arrived": arrived, "disconnected": gone})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", arrived, gone
    server.shutdown()
    server.server_close()


def test_a_cancel_closes_the_connection_while_the_server_is_silent(
    silent_server: tuple[str, threading.Event, threading.Event],
) -> None:
    """The server sends nothing while it evaluates the prompt; a cancel must close the
    connection then, not when the next byte arrives (the server would keep computing)."""
    url, arrived, gone = silent_server
    backend = HttpBackend(url)
    cancel = threading.Event()
    result: list[object] = []
    worker = threading.Thread(
        target=lambda: result.append(
            backend.complete("hello", max_tokens=8, should_stop=cancel.is_set)
        )
    )
    try:
        worker.start()
        assert arrived.wait(10)  # the request is in flight, the server silent
        cancel.set()
        worker.join(timeout=10)
        assert getattr(result[0], "stop_reason", None) == "cancelled"
        assert gone.wait(10)  # the server saw the client go (it would wait 30 s)
    finally:
        backend.close()

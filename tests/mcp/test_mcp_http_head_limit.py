"""``curator mcp --http``: a request's line and headers are cut at ``MAX_HEAD_BYTES``.

httptools (the default parser) has no cap of its own and builds a header's value by
concatenation: one 128 MiB header held the event loop for about 28 s (every other client
stalled), 64 MiB of short headers took a gigabyte of memory, before the bearer token was
looked at. h11 caps a head itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import time
from typing import Any
from urllib.parse import urlparse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.mcp_server.http import MAX_HEAD_BYTES
from tests.mcp.protocol_driver import FakeTransport, connect, hang_up
from tests.mcp.test_mcp_http import call

Start = Any


def _exchange(url: str, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection; all the server answers until it closes."""
    parts = urlparse(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
        # Refused before the whole head went out: the answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        answer = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
        return answer


def _head(url: str, extra: bytes) -> bytes:
    port = urlparse(url).port
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n" % port
    ) + extra


@pytest.mark.parametrize(
    "extra",
    [
        b"X-Big: " + b"a" * (4 << 20) + b"\r\n",  # one long header
        b"X-h: v\r\n" * (512 << 10),  # many short ones (4 MiB)
    ],
    ids=["one-long-header", "many-headers"],
)
def test_an_oversized_head_is_refused_and_the_server_keeps_serving(
    http_server: Start, extra: bytes
) -> None:
    server = http_server()
    answer = _exchange(server.url, _head(server.url, extra) + b"Content-Length: 2\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert b"over 64 KiB" in answer
    status = call(server, lambda client: client.call_tool("memory_status", {}))
    assert "episodes" in status.structured_content
    assert server.process.poll() is None


def _drive(chunks: list[bytes], pause: float = 0.0) -> tuple[FakeTransport, list[Any]]:
    """``chunks`` fed, one read each, to a fresh connection, then the loop left to run for
    ``pause`` s: the transport and the scopes the app was called with."""
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def main() -> FakeTransport:
        transport = FakeTransport()
        protocol = connect(app, transport)
        for chunk in chunks:
            if transport.is_closing():
                break
            protocol.data_received(chunk)
        await asyncio.sleep(pause)
        hang_up(protocol, transport)
        return transport

    return asyncio.run(main()), seen


def _feed(head_size: int, body_size: int, cuts: list[int]) -> tuple[FakeTransport, list[Any]]:
    """A request with a head of ``head_size`` bytes and a body of ``body_size``, fed to
    the protocol cut at ``cuts``; the transport and the scopes the app was called with."""
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nX-Pad: " % body_size
    pad = max(0, head_size - len(head) - 4)
    data = head + b"a" * pad + b"\r\n\r\n" + b"b" * body_size
    edges = [0, *sorted({c % (len(data) + 1) for c in cuts} | {len(data)})]
    return _drive([data[a:b] for a, b in itertools.pairwise(edges) if b > a])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head_size=st.one_of(
        st.integers(100, MAX_HEAD_BYTES // 2), st.integers(MAX_HEAD_BYTES * 2, MAX_HEAD_BYTES * 4)
    ),
    body_size=st.integers(0, 300_000),
    cuts=st.lists(st.integers(0, 600_000), max_size=12),
)
def test_a_head_is_refused_exactly_when_over_the_cap_however_it_arrives(
    head_size: int, body_size: int, cuts: list[int]
) -> None:
    """Heads well under the cap are served whatever their body and however the bytes are
    cut into reads; heads well over it get 431 and the connection closed, the app never
    called. (Near the cap, a read that also carries body bytes may tip either way.)"""
    transport, seen = _feed(head_size, body_size, cuts)
    if head_size <= MAX_HEAD_BYTES // 2:
        assert not transport.written.startswith(b"HTTP/1.1 431"), transport.written[:100]
        assert len(seen) == 1
    else:
        assert transport.written.startswith(b"HTTP/1.1 431 "), transport.written[:100]
        assert transport.closed and seen == []


def _after_a_pause(
    monkeypatch: pytest.MonkeyPatch, data: bytes, pause: float = 0.3
) -> tuple[FakeTransport, list[Any]]:
    """``data`` fed to a fresh connection, then the server left alone for ``pause`` s
    with a read deadline of 0.05 s."""
    from curator.mcp_server import http

    monkeypatch.setattr(http, "REQUEST_READ_S", 0.05)
    monkeypatch.setattr(http, "FIRST_BYTE_S", 0.05)
    return _drive([data] if data else [], pause)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # a connection that says nothing
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Le",  # half a head
    ],
    ids=["nothing", "half-a-head"],
)
def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_closed(
    monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    """A peer sending a head a byte at a time held its connection (and a file
    descriptor) for as long as it liked: the keep-alive limit counts only between
    requests."""
    transport, seen = _after_a_pause(monkeypatch, data)
    assert transport.written.startswith(b"HTTP/1.1 408 "), transport.written[:100]
    assert b"not received within 0.05 s" in transport.written
    assert transport.closed_by_server and seen == []


def test_a_body_that_does_not_arrive_in_time_closes_the_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
    transport, _ = _after_a_pause(monkeypatch, head + b"{" * 10)
    assert transport.closed_by_server
    assert not transport.written.startswith(b"HTTP/1.1 408")  # the app owns the answer


def test_a_request_that_arrives_in_time_is_served_and_not_cut_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline is lifted once the request is in: a keep-alive connection idle after
    its answer is the keep-alive limit's business."""
    request = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    transport, seen = _after_a_pause(monkeypatch, request)
    assert len(seen) == 1
    assert transport.written.startswith(b"HTTP/1.1 204 ")
    assert b"408" not in transport.written
    assert not transport.closed_by_server


def test_sigterm_stops_a_server_whose_peer_stopped_in_the_middle_of_a_body(
    http_server: Start,
) -> None:
    """The peer holds a request open (its head in, its body not); the server still stops
    within its shutdown grace, not at the peer's pleasure."""
    import signal

    server = http_server()
    parts = urlparse(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(_head(server.url, b"Content-Length: 100\r\n\r\n{"))
        time.sleep(0.5)  # the request reaches the app, which waits for the rest
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=20)  # the peer holds on forever: any stop is the grace's

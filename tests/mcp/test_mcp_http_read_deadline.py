"""``curator mcp --http``: the read deadline on keep-alive and pipelined connections.

Bytes that begin no request (CR and LF between requests, which httptools skips) cancelled
uvicorn's keep-alive limit while no read deadline was set: one ``\\r\\n`` after an answer
held the connection for ever. And the deadline of a pipelined request ran while the server
itself held that request up (behind a call still running): a partial second request had
its 408 written before the first one's answer, which was then lost, and a second request
whose body the server had not read yet closed the connection under the first call.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.mcp_server import http
from tests.mcp.protocol_driver import FakeTransport, connect, hang_up

DEADLINE_S = 0.05


def _serve(
    monkeypatch: pytest.MonkeyPatch,
    feeds: list[tuple[float, bytes]],
    *,
    call_s: float = 0.0,
    keep_alive_s: float = 0.1,
    total_s: float = 0.6,
    read_s: float = DEADLINE_S,
) -> FakeTransport:
    """Each ``(at, data)`` fed at ``at`` s (later while reading is paused) to a connection
    whose app echoes the body after ``call_s`` s; the transport after ``total_s`` s."""
    monkeypatch.setattr(http, "REQUEST_READ_S", read_s)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await asyncio.sleep(call_s)
        headers = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def main() -> FakeTransport:
        transport = FakeTransport()
        protocol = connect(app, transport, timeout_keep_alive=keep_alive_s)
        loop = asyncio.get_running_loop()
        start = loop.time()
        pending = list(feeds)
        while loop.time() - start < total_s:
            due = pending and loop.time() - start >= pending[0][0]
            if due and not transport.paused and not transport.closed:
                protocol.data_received(pending.pop(0)[1])
            await asyncio.sleep(0.005)
        hang_up(protocol, transport)
        return transport

    return asyncio.run(main())


def _request(body: bytes) -> bytes:
    return b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(stray=st.text(st.sampled_from("\r\n"), min_size=1, max_size=6).map(str.encode))
def test_bytes_between_requests_do_not_keep_a_connection_open_for_ever(
    monkeypatch: pytest.MonkeyPatch, stray: bytes
) -> None:
    transport = _serve(monkeypatch, [(0.0, _request(b"{}")), (0.02, stray)], total_s=0.5)
    assert transport.written.startswith(b"HTTP/1.1 200 ")
    assert transport.closed_by_server  # by the read deadline, not held for ever


def test_a_partial_pipelined_request_does_not_take_the_answer_of_the_one_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first request arrived whole; its call outlasts the second one's deadline."""
    transport = _serve(
        monkeypatch, [(0.0, _request(b"one") + b"POST /mcp HTT")], call_s=0.2, total_s=0.5
    )
    assert transport.written.startswith(b"HTTP/1.1 200 OK\r\n"), transport.written[:80]
    assert transport.writes[1] == b"one"
    assert transport.written.endswith(b"not received within 0.05 s")  # then its own 408
    assert transport.closed_by_server


def test_a_call_is_not_cut_by_a_pipelined_request_whose_body_the_server_has_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second request's body is held back by the server (reading paused until the
    first call answers), not by its peer: both are answered."""
    second_head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
    transport = _serve(
        monkeypatch,
        [(0.0, _request(b"one")), (0.02, second_head), (0.03, b"two")],
        call_s=0.2,
        total_s=0.8,
    )
    assert transport.writes[1:2] == [b"one"], transport.writes
    assert transport.writes[3:4] == [b"two"], transport.writes
    assert b"408" not in transport.written


def test_a_connection_that_sends_nothing_is_closed_after_its_first_byte_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thousand such connections held every descriptor a default limit allows for the
    whole request deadline (30 s), failing the agent's calls; now each goes after
    :data:`http.FIRST_BYTE_S`, and a request that begins in time has the whole deadline."""
    monkeypatch.setattr(http, "FIRST_BYTE_S", 0.05)
    silent = _serve(monkeypatch, [], total_s=0.4, read_s=5.0)
    assert silent.closed_by_server and b"408" in silent.written


def test_a_request_begun_in_time_is_not_cut_by_the_first_byte_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http, "FIRST_BYTE_S", 0.1)
    feeds = [(0.02, _request(b"{}")[:10]), (0.3, _request(b"{}")[10:])]
    transport = _serve(monkeypatch, feeds, total_s=0.5, read_s=5.0)
    assert transport.written.startswith(b"HTTP/1.1 200") and b"408" not in transport.written


def test_the_server_raises_its_own_limit_on_open_files() -> None:
    """Checked in a child whose soft limit starts at 256 (a process cannot lower and
    raise its own for a test without changing the test runner's)."""
    import subprocess
    import sys

    code = (
        "import resource; from curator.mcp_server.http import raise_open_files_limit as r\n"
        "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "print(r(4096), hard)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got, hard = (int(v) for v in done.stdout.split())
    assert got == min(4096, hard) and got > 256

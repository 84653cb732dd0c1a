"""A body that is not a JSON-RPC message gets one sentence over HTTP, as over stdio.

The SDK's transport answered such a body (a batch, ``params`` that is a list, a request
without a method) with pydantic's report: a dozen lines and links, under ``-32602``.
"""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.mcp_server.http_errors import NOT_A_MESSAGE, OneSentenceErrors

Counts = Callable[[Path], dict[str, int]]
Start = Callable[..., Any]

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
NEAR_MISSES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2, None]),
        "id": st.none() | st.integers() | st.text(max_size=4) | st.booleans() | st.floats(),
        "method": st.sampled_from(["initialize", "tools/call", "tools/list", 5, None, ""]),
        "params": JSON,
        "result": JSON,
        "error": JSON,
    },
)


def test_bodies_that_are_no_message_get_one_sentence(
    http_server: Start, memory_db: Path, table_counts: Counts
) -> None:
    server = http_server()
    before = table_counts(memory_db)

    with httpx.Client(timeout=30) as http:

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(value=JSON | NEAR_MISSES)
        @example(value=[])
        @example(value={"jsonrpc": "2.0"})
        @example(value={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []})
        @example(value={"jsonrpc": "1.0", "id": 1, "method": "initialize"})
        def check(value: Any) -> None:
            answer = http.post(server.url, content=json.dumps(value), headers=HEADERS)
            if answer.status_code < 400:
                return  # a message after all (a notification, say): not this test's
            assert answer.headers["content-type"].startswith("application/json")
            error = answer.json()["error"]
            assert "\n" not in error["message"] and len(error["message"]) < 300, error
            assert "pydantic" not in error["message"], error

        check()
        # the report the SDK used to give, now the sentence JSON-RPC asks for
        answer = http.post(server.url, content=b"[]", headers=HEADERS)
        assert answer.status_code == 400
        assert answer.json()["error"] == {"code": -32600, "message": NOT_A_MESSAGE}
        assert int(answer.headers["content-length"]) == len(answer.content)
    assert table_counts(memory_db) == before


def _relay(status: int, content_type: bytes, chunks: list[bytes]) -> list[dict[str, Any]]:
    """What :class:`OneSentenceErrors` sends on for an app that answers ``chunks``."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for i, chunk in enumerate(chunks):
            more = i < len(chunks) - 1
            await send({"type": "http.response.body", "body": chunk, "more_body": more})

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    anyio.run(OneSentenceErrors(app), {"type": "http"}, receive, send)
    return sent


def _body(sent: list[dict[str, Any]]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@settings(max_examples=100, deadline=None)
@given(
    status=st.sampled_from([200, 202, 400, 404, 413, 500]),
    content_type=st.sampled_from([b"application/json", b"text/plain", b"text/event-stream"]),
    body=st.binary(max_size=200) | st.just(b"x" * 200_000),
    cuts=st.lists(st.integers(0, 200_000), max_size=4),
)
def test_anything_but_a_multi_line_error_passes_byte_for_byte(
    status: int, content_type: bytes, body: bytes, cuts: list[int]
) -> None:
    """A body cut anywhere into chunks: the same bytes come out, in as many chunks or
    one, and the last says it is the last."""
    edges = sorted({0, *(c for c in cuts if c < len(body)), len(body)})
    chunks = [body[a:b] for a, b in itertools.pairwise(edges)] or [b""]
    sent = _relay(status, content_type, chunks)
    assert _body(sent) == body
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == status
    assert sent[-1].get("more_body", False) is False


def test_the_transports_report_in_chunks_becomes_one_sentence() -> None:
    message = "Validation error: 4 validation errors for union[...]\nJSONRPCRequest\n  x"
    report = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": message}}
    raw = json.dumps(report).encode()
    sent = _relay(400, b"application/json; charset=utf-8", [raw[:10], raw[10:]])
    found = json.loads(_body(sent))
    assert found["error"] == {"code": -32600, "message": NOT_A_MESSAGE}
    headers = dict(sent[0]["headers"])
    assert int(headers[b"content-length"]) == len(_body(sent))


@pytest.mark.parametrize(
    "body",
    [
        # another error keeps its code and words (a valid request's, say)
        json.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "a\nb"}}),
        "[" * 100_000 + "]" * 100_000,  # past the parser's depth: passed on, not raised
        '{"error": {"message": "Validation error: x"}, "n": ' + "9" * 5000 + "}",
    ],
)
def test_other_error_bodies_pass_as_they_came(body: str) -> None:
    raw = body.encode()
    assert _body(_relay(400, b"application/json", [raw])) == raw


@pytest.mark.parametrize(
    "protocol",
    [
        "",  # an older client's request: the SDK reads its body in the transport
        # the modern protocol's headers: its body is read in the application, whose
        # exception uvicorn's own handler wrote as "Exception in ASGI application"
        "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
        "Mcp-Name: record_episode\r\n",
    ],
    ids=["plain", "modern headers"],
)
def test_a_client_gone_mid_request_leaves_no_traceback(http_server: Start, protocol: str) -> None:
    """Hung up before the body was all sent (or any of it): the SDK logged each as a
    server error with a traceback; the server now says nothing and goes on serving."""
    server = http_server()
    host, port = server.url.split("//")[1].split("/")[0].rsplit(":", 1)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        f"{protocol}Content-Length: 1000\r\n\r\n"
    ).encode()
    for sent in (b"", b'{"jsonrpc": "2.0", '):
        with socket.create_connection((host, int(port))) as peer:
            peer.sendall(head + sent)
            time.sleep(0.2)  # the server is reading the body when the peer goes
    answer = httpx.post(server.url, content=b"[]", headers=HEADERS, timeout=30)
    assert answer.status_code == 400  # still serving
    server.process.terminate()
    _, stderr = server.process.communicate(timeout=30)
    assert "Traceback" not in stderr and "ClientDisconnect" not in stderr, stderr[-2000:]


def test_a_call_cut_at_shutdown_is_one_line_not_a_traceback(http_server: Start) -> None:
    """SIGTERM while a peer is still sending a body: the call is cut when the shutdown's
    grace runs out, and uvicorn wrote its CancelledError's traceback (30 lines) after its
    own one-line account."""
    server = http_server()
    assert httpx.post(server.url, content=b"[]", headers=HEADERS, timeout=30).status_code == 400
    host, port = server.url.split("//")[1].split("/")[0].rsplit(":", 1)
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
        "Mcp-Name: record_episode\r\nContent-Length: 1000\r\n\r\n"
    ).encode()  # the modern protocol's: its body is read in the application
    with socket.create_connection((host, int(port))) as peer:
        peer.sendall(head + b'{"jsonrpc": "2.0", ')
        time.sleep(0.3)  # the server is reading the body
        server.process.terminate()
        _, stderr = server.process.communicate(timeout=60)
    assert "graceful shutdown exceeded" in stderr  # the cut is said, once
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr[-2000:]

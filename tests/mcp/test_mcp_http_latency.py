"""The HTTP transport answers at once: no answer waits on a delayed TCP acknowledgement.

A server socket without ``TCP_NODELAY`` holds the second small write of an answer (the
body after the headers) until the client acknowledges the first, and a client delays its
acknowledgement by up to 40 ms: every call then took 40 ms whatever the server did, and
eight clients with eight calls in flight each recorded about 60 episodes a second while the
server was mostly idle. asyncio turns ``TCP_NODELAY`` on only for sockets it recognises as
TCP (protocol ``IPPROTO_TCP``), so the listening socket must be made so, and carry the
option itself for the connections it accepts.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.mcp_server.http import bind
from curator.store.db import Store
from curator.store.demo import create_demo
from tests.mcp.conftest import child_env, curator_command
from tests.processes import stop

Counts = Callable[[Path], dict[str, int]]
Start = Callable[..., Any]


def _accepted(listener: socket.socket) -> socket.socket:
    """One connection accepted by ``listener`` from a client of this test."""
    host, port = listener.getsockname()[:2]
    client = socket.create_connection((host, port), timeout=10)
    try:
        conn, _ = listener.accept()
    finally:
        client.close()
    return conn


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_accepted_connections_send_without_delay(host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        listener = bind(host, 0)
    except Exception as exc:  # a machine without an IPv6 loopback
        pytest.skip(f"cannot listen on {host}: {exc}")
    with listener:
        assert listener.proto == socket.IPPROTO_TCP  # asyncio's own test for TCP_NODELAY
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        with _accepted(listener) as conn:
            assert conn.proto == socket.IPPROTO_TCP
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


@settings(max_examples=10, deadline=None)
@given(host=st.sampled_from(["127.0.0.1", "localhost", "127.0.0.2", "127.1.2.3"]))
@example(host="localhost")
def test_every_loopback_form_binds_a_no_delay_tcp_socket(host: str) -> None:
    """Whatever loopback form HOST takes, the listener is TCP and sends without delay."""
    with bind(host, 0) as listener:
        assert listener.type == socket.SOCK_STREAM
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


# -- answers as one JSON document ---------------------------------------------------------

MODERN = "2026-07-28"
"""The protocol revision the SDK's client speaks: one self-contained POST per call."""


def _envelope(name: str) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": name, "version": "1"},
    }


def _headers(accept: str, tool: str) -> dict[str, str]:
    """The routing headers the revision asks for beside the body."""
    return {
        "Accept": accept,
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }


def _tool_call(ident: int, tool: str, arguments: dict[str, Any], name: str) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments, "_meta": _envelope(name)}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def test_a_tool_call_is_answered_as_one_json_document(
    http_server: Start, memory_db: Path, table_counts: Counts
) -> None:
    """The answer is ``application/json``, not an event stream opened per call (a task,
    a stream and a disconnect watcher per request): a client that accepts only JSON is
    served, and the recorded episode carries the name from the call's envelope."""
    server = http_server("--rate", "0")
    before = table_counts(memory_db)["episode"]
    headers = _headers("application/json", "record_episode")
    with httpx.Client(timeout=60) as http:
        body = _tool_call(7, "record_episode", {"text": "answered as plain JSON"}, "json-agent")
        response = http.post(server.url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    answer = response.json()
    assert answer["id"] == 7
    result = json.loads(answer["result"]["content"][0]["text"])
    assert result["created"] is True
    assert result["source"] == "json-agent"
    assert table_counts(memory_db)["episode"] == before + 1


@settings(max_examples=8, deadline=None)
@given(
    tool=st.sampled_from(["memory_status", "get_knowledge", "search_knowledge", "no_such"]),
    accept=st.sampled_from(["application/json", "application/json, text/event-stream"]),
)
@example(tool="no_such", accept="application/json")
def test_every_answer_is_json_whatever_the_tool_or_accept(
    json_server: Any, tool: str, accept: str
) -> None:
    """Reads, errors and unknown tools alike come back as one JSON document."""
    arguments = {"query": "disk"} if tool == "search_knowledge" else {}
    headers = _headers(accept, tool)
    with httpx.Client(timeout=60) as http:
        response = http.post(
            json_server.url, json=_tool_call(3, tool, arguments, "reader"), headers=headers
        )
    assert response.headers["content-type"].startswith("application/json"), response.text
    answer = response.json()
    assert answer["id"] == 3
    assert ("result" in answer) != ("error" in answer)
    if tool == "no_such":
        failed = "error" in answer or answer["result"].get("isError")
        assert failed
    else:
        assert not answer["result"].get("isError"), answer


@pytest.fixture(scope="module")
def json_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One server for the property above (Hypothesis runs many examples per test)."""
    db = tmp_path_factory.mktemp("json") / "memory.db"
    store = Store(db)
    create_demo(store)
    store.close()
    process = subprocess.Popen(
        curator_command(db, "--http", "127.0.0.1:0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert process.stderr is not None
    url = None
    for line in process.stderr:
        found = re.search(r"serving on (http://\S+/mcp)", line)
        if found:
            url = found.group(1)
            break
    try:
        assert url is not None, f"the server stopped before serving (exit {process.wait()})"
        yield SimpleNamespace(url=url)
    finally:
        stop(process)
        process.stderr.close()


def test_a_call_whose_client_hangs_up_at_once_is_still_committed(
    http_server: Start, memory_db: Path
) -> None:
    """The whole request sent, the connection closed before any answer: the episode is
    still recorded (the answer has no one to go to), once."""
    server = http_server("--rate", "0")
    host, port = re.match(r"http://([\d.]+):(\d+)/", server.url).groups()  # type: ignore[union-attr]
    text = "recorded for a client that hung up"
    body = json.dumps(_tool_call(9, "record_episode", {"text": text}, "gone")).encode()
    head = "".join(
        f"{k}: {v}\r\n" for k, v in _headers("application/json", "record_episode").items()
    )
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"{head}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
    # No answer can say when the hung-up call is done: look until it is in (30 s at most).
    found: list[Any] = []
    for _ in range(600):
        store = Store(memory_db, read_only=True)
        try:
            found = store.execute("SELECT source FROM episode WHERE text = ?", (text,))
        finally:
            store.close()
        if found:
            break
        time.sleep(0.05)
    assert found == [("gone",)]


# -- an idle connection outlives the client's own idle expiry ----------------------------

CLIENT_IDLE_EXPIRY_S = 5.0
"""How long httpx (the SDK client's HTTP library) keeps an idle connection for reuse."""


def _exchange(conn: socket.socket, request: bytes) -> bytes:
    """Send one request on ``conn`` and read its whole answer (b"" when it was closed)."""
    conn.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_a_connection_idle_as_long_as_the_client_keeps_it_is_still_served(
    http_server: Start,
) -> None:
    """The server keeps an idle connection longer than the client would: with both at
    5 s, a client reusing a connection at 4.99 s met the server closing it, and the
    call failed with a read error (seen with eight SDK clients on a busy machine)."""
    server = http_server()
    host, port = re.match(r"http://([\d.]+):(\d+)/", server.url).groups()  # type: ignore[union-attr]
    body = json.dumps(_tool_call(1, "memory_status", {}, "idle")).encode()
    head = "".join(
        f"{k}: {v}\r\n" for k, v in _headers("application/json", "memory_status").items()
    )
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"{head}Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        assert _exchange(conn, request).startswith(b"HTTP/1.1 200")
        time.sleep(CLIENT_IDLE_EXPIRY_S + 1.0)  # nothing to await: idleness is the case
        assert _exchange(conn, request).startswith(b"HTTP/1.1 200")

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

import socket

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.mcp_server.http import bind


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

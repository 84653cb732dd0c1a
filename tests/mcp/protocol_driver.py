"""The HTTP server's real protocol class (:func:`curator.mcp_server.http.http_protocol`)
driven in process: a test double stands in for the socket only, so a test controls
exactly which bytes arrive in which read, and when."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from curator.mcp_server import http


class FakeTransport(asyncio.Transport):
    """Records what the server writes, whether it closed, and whether reading is paused."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.writes: list[bytes] = []
        self.closed = False
        self.closed_by_server = False
        self.paused = False

    def write(self, data: Any) -> None:
        if not self.closed:  # a closed transport sends nothing more
            self.writes.append(bytes(data))
            self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 1), "sockname": ("127.0.0.1", 2)}.get(name, default)

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def connect(app: Any, transport: FakeTransport, **config: Any) -> Any:
    """A connection of the real protocol to ``app`` (call inside a running loop)."""
    import uvicorn
    from uvicorn.server import ServerState

    protocol_class = http.http_protocol()
    if protocol_class == "h11":
        pytest.skip("httptools is not installed")
    settings = uvicorn.Config(app, http=protocol_class, lifespan="off", log_level="error", **config)
    settings.load()
    protocol = protocol_class(config=settings, server_state=ServerState(), app_state={})
    protocol.connection_made(transport)
    return protocol


def hang_up(protocol: Any, transport: FakeTransport) -> None:
    """Note whether the server closed the connection, then close it from the peer's side
    (the connection's timers stop)."""
    transport.closed_by_server = transport.closed
    if not transport.closed:
        protocol.connection_lost(None)

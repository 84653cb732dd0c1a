"""Serving over stdio, where a line that is not a JSON-RPC message gets an answer too.

The SDK's stdio transport hands a line it cannot read (not JSON, a batch, a message of no
known shape) to the server as an exception, and the server logs it and answers nothing:
a client waiting for its reply then waits for ever. JSON-RPC asks for an error with a
null id (``-32700`` for text that is not JSON, ``-32600`` for anything else); HTTP
already answers so. :func:`serve_stdio` sits between the transport and the server and
writes that error for each such line; every readable message passes as it was.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import ErrorData, JSONRPCError
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def is_blank_line(exc: Exception) -> bool:
    """Whether the unreadable line was empty or blank: a keep-alive, not a message."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    found = errors[0].get("input") if errors else None
    return isinstance(found, str) and not found.strip()


def unreadable_answer(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the transport could not read as a message."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if errors and errors[0].get("type") == "json_invalid":
        return JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=ErrorData(code=PARSE_ERROR, message="Parse error: the line is not JSON"),
        )
    return JSONRPCError(
        jsonrpc="2.0",
        id=None,
        error=ErrorData(
            code=INVALID_REQUEST,
            message="Invalid Request: not a JSON-RPC 2.0 message object (one a line, no batches)",
        ),
    )


def _stream_pair() -> tuple[Any, Any]:
    """The kind of stream the SDK's transports hand a server (carrying each message's
    context), or anyio's plain one where a later SDK moved it: the same messages pass."""
    try:
        from mcp.shared._context_streams import create_context_streams
    except ImportError:
        return anyio.create_memory_object_stream[SessionMessage | Exception](0)
    return create_context_streams[SessionMessage | Exception](0)


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (the SDK's ``MCPServer``) over stdio until the client's input ends."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None:  # a later SDK: serve as it does, unanswered lines and all
        await server.run_stdio_async()
        return
    async with stdio_server() as (from_client, to_client):
        send, receive = _stream_pair()

        async def pass_on() -> None:
            async with send:
                async for item in from_client:
                    if isinstance(item, Exception):
                        if not is_blank_line(item):
                            await to_client.send(SessionMessage(unreadable_answer(item)))
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(pass_on)
            await lowlevel.run(receive, to_client, lowlevel.create_initialization_options())

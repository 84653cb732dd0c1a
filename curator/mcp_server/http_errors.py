"""The HTTP transport's refusal of a body that is no JSON-RPC message is one sentence.

The SDK's streamable HTTP transport answers a body that is JSON but not a JSON-RPC
message (a batch, ``params`` that is a list, a missing ``method``) with pydantic's whole
report: a dozen lines naming the SDK's internal union of message types, with links to
pydantic's documentation, under ``-32602`` (invalid params). JSON-RPC calls that an
invalid request (``-32600``), and the stdio transport already says so in one sentence
(:mod:`curator.mcp_server.stdio`). :class:`OneSentenceErrors` rewrites such an answer on
its way out; every other response passes untouched, byte for byte and chunk by chunk.

A client that goes away before its request has arrived is no error of the server's, yet
the SDK logged each as one with a traceback on stderr (``ClientDisconnect``);
:func:`quiet_departed_clients` keeps those records out of the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from mcp.types import INVALID_REQUEST

NOT_A_MESSAGE = (
    "Invalid Request: not a JSON-RPC 2.0 message (one object a request, with "
    '"jsonrpc": "2.0", a method, an id, and params that are an object; no batches)'
)
SDK_REPORT = "Validation error:"
"""How the transport's report on a body of no known message shape begins: only that is
rewritten (another error, a valid request's, keeps its code and its words)."""
MAX_HELD_BYTES = 64 * 1024
"""The most of an error's body held to be read: the SDK's reports are a few KiB."""


class OneSentenceErrors:
    """ASGI middleware: the transport's report on a body that is no JSON-RPC message
    becomes one sentence."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}
        body = bytearray()

        async def watching(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind == "http.response.start" and _may_need_rewriting(message):
                held["start"] = message
                return
            if kind != "http.response.body" or "start" not in held:
                await send(message)
                return
            body.extend(message.get("body", b""))
            more = bool(message.get("more_body", False))
            if more and len(body) <= MAX_HELD_BYTES:
                return
            start = held.pop("start")
            if more:  # too long to be the transport's report: it goes out as it came
                await send(start)
                await send({"type": "http.response.body", "body": bytes(body), "more_body": True})
                return
            data = _rewritten(bytes(body))
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ]
            headers.append((b"content-length", str(len(data)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": data, "more_body": False})

        await self.app(scope, receive, watching)


def _may_need_rewriting(start: dict[str, Any]) -> bool:
    """An error status with a JSON body: what the transport's refusals look like."""
    if int(start.get("status", 200)) < 400:
        return False
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bytes(value).split(b";")[0].strip().lower() == b"application/json"
    return False


def _rewritten(body: bytes) -> bytes:
    """``body`` with the transport's report on a body that is no message made one
    sentence; anything else (another error, another JSON document) as it was."""
    try:
        found = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return body
    error = found.get("error") if isinstance(found, dict) else None
    if not isinstance(error, dict):
        return body
    message = error.get("message")
    if not isinstance(message, str) or not message.startswith(SDK_REPORT):
        return body
    error["code"], error["message"] = INVALID_REQUEST, NOT_A_MESSAGE
    return json.dumps(found).encode()


class _DepartedClients(logging.Filter):
    """Drops a record whose exception is a client gone before its request arrived."""

    def __init__(self, kinds: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        found = record.exc_info[1] if record.exc_info else None
        return not isinstance(found, self.kinds)


def quiet_departed_clients() -> None:
    """Keep the tracebacks for clients that hung up mid-request, and for a call cut at
    shutdown (a peer still sending its body when SIGTERM's grace ran out: uvicorn's own
    line says it, "Cancel 1 running task(s), timeout graceful shutdown exceeded", and a
    record cut there was committed whole or not at all) off every handler of the
    root logger (where the SDK's ``configure_logging`` puts its own) and of uvicorn's (its
    own handler writes "Exception in ASGI application" when the exception leaves the
    application: the modern protocol's requests read their body there). Called once
    uvicorn's ``Config`` has set up its logging, whose handlers it replaces."""
    kinds: tuple[type[BaseException], ...] = (asyncio.CancelledError,)
    try:
        from starlette.requests import ClientDisconnect
    except ImportError:  # a later starlette: its own name for it unknown
        pass
    else:
        kinds += (ClientDisconnect,)
    for name in ("", "uvicorn", "uvicorn.error"):
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, _DepartedClients) for f in handler.filters):
                handler.addFilter(_DepartedClients(kinds))

"""Serving over stdio, where a line that is not a JSON-RPC message gets an answer too.

The SDK's stdio transport hands a line it cannot read (not JSON, a batch, a message of no
known shape) to the server as an exception, and the server logs it and answers nothing:
a client waiting for its reply then waits for ever. JSON-RPC asks for an error with a
null id (``-32700`` for text that is not JSON, ``-32600`` for anything else); HTTP
already answers so. :func:`serve_stdio` sits between the transport and the server and
writes that error for each such line. Two kinds of line the SDK mishandles are answered
here too: JSON its parser refuses (a lone surrogate, nesting past its depth:
:func:`read_anyway`) and a request without a usable id, which it reads as a notification
(:func:`request_without_id`). Every other message passes as it was.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def read_anyway(exc: Exception) -> tuple[str, Any]:
    """A line the SDK's parser refused but JSON allows: a ``\\ud800`` escape, a lone
    surrogate, which Python's parser reads and pydantic's does not; or nesting deeper
    than pydantic's parser goes. What to do with it:

    - ``("pass", message)``: an ``initialize`` whose client name or version holds a lone
      surrogate (cleaned, as a client's name always is);
    - ``("answer", error)``: a request holding one anywhere, nested more than
      :data:`MAX_NESTING` levels, or of no known shape: refused under its own id where
      it has one that can be written back;
    - ``("drop", None)``: the same from a notification or a response, which JSON-RPC
      never answers;
    - ``("unreadable", None)``: a line that is not JSON at all.

    Such a message is refused whole rather than passed on: a lone surrogate is no text,
    and the server could not even write an answer that quotes it (its id, a method or a
    resource's name), so it would stop; and reading deeper nesting would exhaust the
    interpreter's stack, which stopped it too."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    line = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" else None
    if not isinstance(line, str | bytes):
        return "unreadable", None
    try:
        found = json.loads(line)
    except RecursionError:  # deeper than Python's parser goes: a request or not, unknown
        return "answer", _invalid(None, f"nested more than {MAX_NESTING} levels deep")
    except ValueError:
        return "unreadable", None
    request = isinstance(found, dict) and "method" in found and "id" in found
    given = _echoable(found.get("id")) if isinstance(found, dict) else None
    depth, lone = _inspect(found)
    if depth <= MAX_NESTING and isinstance(found, dict) and found.get("method") == "initialize":
        params = found.get("params")  # nested no deeper than MAX_NESTING: safe to clean
        if isinstance(params, dict) and isinstance(params.get("clientInfo"), dict):
            params["clientInfo"] = _without_lone_surrogates(params["clientInfo"])
            depth, lone = _inspect(found)
    problem = (
        f"nested more than {MAX_NESTING} levels deep"
        if depth > MAX_NESTING
        else LONE_SURROGATE
        if lone
        else None
    )
    if problem is None:
        try:
            return "pass", jsonrpc_message_adapter.validate_python(found, by_name=False)
        except ValidationError:
            problem = "not a JSON-RPC 2.0 message object"
    if isinstance(found, dict) and not request and ("method" in found or "id" in found):
        return "drop", None  # a notification or a response: never answered
    return "answer", _invalid(given, problem)


LONE_SURROGATE = (
    "the message holds a lone surrogate (a \\ud800-\\udfff escape not in a pair), which is "
    "not Unicode; nothing was done"
)
MAX_NESTING = 250
"""The deepest nesting of a message read here: about where the SDK's own parser stops
(pydantic's refuses a line nested 254 levels), so a message is read or refused alike
whichever parser reads it."""


def _inspect(value: Any) -> tuple[int, bool]:
    """How deep ``value`` nests (counted up to just past :data:`MAX_NESTING`) and whether
    a text in it (a key or a value) holds a lone surrogate; without recursion."""
    deepest, lone, stack = 0, False, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            # the walk goes on: the depth is what makes cleaning a name safe
            lone = lone or _SURROGATE.search(item) is not None
        elif isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > MAX_NESTING:
                return deepest, lone
            pairs = item.items() if isinstance(item, dict) else ((None, v) for v in item)
            for key, child in pairs:
                stack.append((child, depth + 1))
                if key is not None:
                    stack.append((key, depth + 1))
    return deepest, lone


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def request_without_id(message: Any) -> JSONRPCError | None:
    """The answer to a request whose id is missing or neither a string nor an integer
    (``1.5``, ``true``, ``null``): the SDK reads it as a notification and drops it, and
    its sender would wait for ever. Every notification's method starts with
    ``notifications/``; a request's method never does."""
    if isinstance(message, JSONRPCNotification) and not message.method.startswith("notifications/"):
        return _invalid(None, "a request needs an id that is a string or an integer")
    return None


def _echoable(given: Any) -> str | int | None:
    """``given`` as an answer's id if it is one JSON-RPC allows and that can be written
    (a string with a lone surrogate cannot), else None."""
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    if isinstance(given, str) and _SURROGATE.search(given) is None:
        return given
    return None


def _invalid(given: str | int | None, why: str) -> JSONRPCError:
    return JSONRPCError(
        jsonrpc="2.0",
        id=given,
        error=ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: {why}"),
    )


def _stream_pair() -> tuple[Any, Any]:
    """The kind of stream the SDK's transports hand a server (carrying each message's
    context), or anyio's plain one where a later SDK moved it: the same messages pass."""
    try:
        from mcp.shared._context_streams import create_context_streams
    except ImportError:
        return anyio.create_memory_object_stream[SessionMessage | Exception](0)
    return create_context_streams[SessionMessage | Exception](0)


EOF_GRACE_S = 30.0
"""After the client's input ends, how long requests already read may take to be answered
before the server stops: a script that writes its requests and closes its end of the pipe
gets every answer (the server stopped at once, and about half went unanswered)."""


class _NotingAnswers:
    """The server's write stream, noting which requests have been answered."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.waiting: set[str | int] = set()

    async def send(self, item: Any) -> None:
        await self.inner.send(item)  # taken by the writer: only now is it answered
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            self.waiting.discard(message.id)

    async def __aenter__(self) -> _NotingAnswers:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self.inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (the SDK's ``MCPServer``) over stdio until the client's input ends
    and the requests read before then are answered (at most :data:`EOF_GRACE_S`)."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if lowlevel is None:  # a later SDK: serve as it does, unanswered lines and all
        await server.run_stdio_async()
        return
    async with stdio_server() as (from_client, raw_to_client):
        send, receive = _stream_pair()
        to_client = _NotingAnswers(raw_to_client)

        async def pass_on() -> None:
            async with send:
                await _forward(from_client, send, to_client)
                with anyio.move_on_after(EOF_GRACE_S):
                    while to_client.waiting:
                        await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            group.start_soon(pass_on)
            await lowlevel.run(receive, to_client, lowlevel.create_initialization_options())


async def _forward(from_client: Any, send: Any, to_client: _NotingAnswers) -> None:
    """Pass the client's messages on until its input ends, answering what is refused."""
    async for item in from_client:
        if isinstance(item, Exception):
            if is_blank_line(item):
                continue
            what, found = read_anyway(item)
            if what == "pass":
                _note_request(found, to_client)
                await send.send(SessionMessage(found))
            elif what != "drop":
                await to_client.send(SessionMessage(found or unreadable_answer(item)))
        elif (refused := request_without_id(item.message)) is not None:
            await to_client.send(SessionMessage(refused))
        else:
            _note_request(item.message, to_client)
            await send.send(item)


def _note_request(message: Any, to_client: _NotingAnswers) -> None:
    """A request now waits for its answer; one the client cancels waits no more (the
    server answers no cancelled request)."""
    if isinstance(message, JSONRPCRequest):
        to_client.waiting.add(message.id)
    elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
        params = message.params if isinstance(message.params, dict) else {}
        with contextlib.suppress(TypeError):  # an id that is no id: nothing was waiting
            to_client.waiting.discard(params.get("requestId"))

"""A real loopback HTTP server whose every answer the test writes: slow, endless, wrong.

A fault injection by design: the faults it shows (a byte every few seconds, a stream that
never ends, ``usage: "many"``, a NaN log-probability, a chat template that loops for
hours) are what a broken or hostile model server sends, and no real server can be made to
send them on demand. Everything between the client and these bytes is real: sockets,
HTTP, the backend's own parsing.

``routes`` maps ``"METHOD /path"`` to a responder called with the request handler and the
request's body; a path without a route answers 404. The default routes are a minimal
OpenAI-compatible server with one model and no tokenizer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[BaseHTTPRequestHandler, bytes], None]


def answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Responder:
    """A complete answer: ``value`` as JSON (bytes are sent as they are)."""
    body = value if isinstance(value, bytes) else json.dumps(value).encode()

    def respond(handler: BaseHTTPRequestHandler, _request: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, text in (headers or {}).items():
            handler.send_header(name, text)
        handler.end_headers()
        handler.wfile.write(body)

    return respond


def raw(chunks: Callable[[], Iterable[bytes]], delay: float = 0.0) -> Responder:
    """A 200 answer without a length whose body is ``chunks()``, one every ``delay`` s,
    until they run out or the client goes away."""

    def respond(handler: BaseHTTPRequestHandler, _request: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        handler.close_connection = True
        try:
            for chunk in chunks():
                handler.wfile.write(chunk)
                handler.wfile.flush()
                if delay:
                    time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up: what the tests want

    return respond


def forever(chunk: bytes, limit: int = 100_000) -> Callable[[], Iterator[bytes]]:
    """The same chunk again and again (``limit`` times: the test never waits that long)."""
    return lambda: (chunk for _ in range(limit))


def event(text: str, finish: str | None = None) -> bytes:
    choice = {"text": text, "index": 0, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


def tokenizer_routes(template: str | None = None) -> dict[str, Responder]:
    """llama-server's endpoints: ``/props``, a tokenizer of one token per character and
    completions whose top log-probabilities favour "n"."""

    def tokenize(handler: BaseHTTPRequestHandler, request: bytes) -> None:
        content = json.loads(request).get("content", "")
        answer({"tokens": [ord(c) for c in content]})(handler, request)

    def detokenize(handler: BaseHTTPRequestHandler, request: bytes) -> None:
        tokens = json.loads(request).get("tokens", [])
        answer({"content": "".join(chr(t) for t in tokens)})(handler, request)

    props: dict[str, Any] = {"default_generation_settings": {"n_ctx": 4096}}
    if template is not None:
        props["chat_template"] = template
    top = {"text": "n", "logprobs": {"top_logprobs": [{"n": -0.2, "c": -1.8, "u": -3.0}]}}
    return {
        "GET /props": answer(props),
        "POST /tokenize": tokenize,
        "POST /detokenize": detokenize,
        "POST /v1/completions": answer({"choices": [top], "usage": {"prompt_tokens": 7}}),
    }


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass

    def _route(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        server: HostileServer = self.server  # type: ignore[assignment]
        server.requests.append(f"{method} {self.path}")
        respond = server.routes.get(f"{method} {self.path}")
        if respond is None:
            self.send_error(404)
            return
        respond(self, body)

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: dict[str, Responder] = {}
        self.requests: list[str] = []
        self.reset()

    def reset(self, routes: dict[str, Responder] | None = None) -> None:
        """The default routes (one model, no tokenizer), updated with ``routes``."""
        self.routes = {"GET /v1/models": answer({"data": [{"id": "m"}]}), **(routes or {})}
        self.requests = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def hostile_server() -> Iterator[HostileServer]:
    server = HostileServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()

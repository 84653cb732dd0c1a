"""A loopback HTTP server for download tests: serves one file, honours Range, can misbehave."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class ServerState:
    data: bytes
    drop_after: int | None = None
    """Close the connection after sending this many body bytes (once), mid-response."""
    throttle_s: float = 0.0
    """Pause this long after each 64 KiB sent (a slow server, for cancel tests)."""
    ranges: list[str | None] = field(default_factory=list)
    """The Range header of every request (None when absent), in order."""


class _Handler(BaseHTTPRequestHandler):
    state: ServerState

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        state = self.server.state  # type: ignore[attr-defined]
        if self.path != "/model.gguf":
            self.send_error(404)
            return
        header = self.headers.get("Range")
        state.ranges.append(header)
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", header or "")
        if match:
            start = int(match.group(1))
            if start >= len(state.data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(state.data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header(
                "Content-Range", f"bytes {start}-{len(state.data) - 1}/{len(state.data)}"
            )
        else:
            self.send_response(200)
        body = state.data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        try:
            if state.drop_after is not None:
                cut, state.drop_after = state.drop_after, None
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            if state.throttle_s:
                for i in range(0, len(body), 1 << 16):
                    self.wfile.write(body[i : i + (1 << 16)])
                    time.sleep(state.throttle_s)
                return
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client cancelled: expected in the tests


@contextmanager
def serve(data: bytes) -> Iterator[tuple[str, ServerState]]:
    """Yield (base URL, state) of a server on 127.0.0.1 serving ``data`` at /model.gguf."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    state = ServerState(data)
    server.state = state  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

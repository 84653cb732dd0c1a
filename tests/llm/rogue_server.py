"""A loopback HTTP server that answers downloads the way broken servers and proxies do.

Each request is answered by a function of the requested ``Range`` start (None without a
``Range`` header) returning a :class:`Reply`: any status, any headers (or none), a body
that may be cut, padded with endless garbage, or dripped slowly, and headers that may be
dripped too. The connection is closed after every answer, so a body without
``Content-Length`` ends where the server stops.
"""

from __future__ import annotations

import re
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    garbage: int = 0
    """Bytes of garbage sent after ``body`` (the answer of a server gone wrong)."""
    drip: int = 0
    """Send the body ``drip`` bytes at a time, ``pause_s`` apart (0: all at once)."""
    pause_s: float = 0.0
    header_pause_s: float = 0.0
    """Send the status line and headers one byte at a time, this far apart."""
    give_up_s: float = 10.0
    """A dripping answer closes the connection after this long (a test never hangs)."""


Responder = Callable[[int | None], Reply]


@dataclass
class Log:
    ranges: list[int | None] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)


def honest(data: bytes) -> Responder:
    """A correct server: 206 with the exact range asked for, 416 past the end, else 200."""

    def respond(start: int | None) -> Reply:
        if start is None:
            return Reply(200, {"Content-Length": str(len(data))}, data)
        if start >= len(data):
            return Reply(416, {"Content-Range": f"bytes */{len(data)}", "Content-Length": "0"})
        body = data[start:]
        return Reply(
            206,
            {
                "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}",
                "Content-Length": str(len(body)),
            },
            body,
        )

    return respond


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        respond: Responder = self.server.respond  # type: ignore[attr-defined]
        log: Log = self.server.log  # type: ignore[attr-defined]
        found = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        start = int(found.group(1)) if found else None
        log.ranges.append(start)
        log.authorizations.append(self.headers.get("Authorization"))
        reply = respond(start)
        head = f"HTTP/1.1 {reply.status} Answer\r\nConnection: close\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items()) + "\r\n"
        deadline = time.monotonic() + reply.give_up_s
        try:
            if reply.header_pause_s:
                for byte in head.encode():
                    if time.monotonic() > deadline:
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.header_pause_s)
            else:
                self.wfile.write(head.encode())
            step = reply.drip or len(reply.body) or 1
            for i in range(0, len(reply.body), step):
                if reply.drip and time.monotonic() > deadline:
                    return
                self.wfile.write(reply.body[i : i + step])
                self.wfile.flush()
                if reply.pause_s:
                    time.sleep(reply.pause_s)
            sent = 0
            while sent < reply.garbage:
                block = min(1 << 16, reply.garbage - sent)
                self.wfile.write(b"\xa5" * block)
                sent += block
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: expected
        finally:
            self.close_connection = True


@contextmanager
def rogue(respond: Responder) -> Iterator[tuple[str, Log]]:
    """Yield (URL of the file, request log) of a server answering with ``respond``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    log = Log()
    server.respond = respond  # type: ignore[attr-defined]
    server.log = log  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/model.gguf", log
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def tiny_gguf(payload: int, seed: int = 7) -> bytes:
    """A valid GGUF header (no tensors) followed by ``payload`` bytes of varied data.

    Small enough for many Hypothesis examples; ``read_gguf_info`` accepts it, so only the
    download's own checks decide. With no tensors a truncated copy still looks valid:
    exactly the file that a wrong resume would save unnoticed.
    """
    key = b"general.name"
    value = b"tiny"
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    header += struct.pack("<Q", len(key)) + key + struct.pack("<I", 8)
    header += struct.pack("<Q", len(value)) + value
    body = bytes((i * 31 + seed + (i >> 8)) % 251 for i in range(payload))
    return header + body

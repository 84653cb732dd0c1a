"""The streamable HTTP transport: where it listens and who may talk to it.

Loopback (127.0.0.1, ::1, localhost) is the default and needs no token: only programs of
this machine reach it, and the SDK's DNS-rebinding check keeps web pages out. Any other
address reaches the network, so every request must carry ``Authorization: Bearer TOKEN``;
the token is generated on first use into a file only its user can read (mode 0600) in the
app's data folder, and a token file others can read is refused rather than trusted. A
request without the token, or with a wrong one, gets 401 and one sentence; nothing of it
reaches the server.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import ipaddress
import json
import os
import re
import secrets
import socket
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.mcp_server.http_errors import OneSentenceErrors, quiet_departed_clients

if TYPE_CHECKING:
    import asyncio

TOKEN_FILE_NAME = "mcp-token"

KEEP_ALIVE_S = 30
"""How long an idle connection is kept open. Longer than clients keep one for reuse
(httpx, the SDK client's HTTP library, 5 s): a server closing at the same moment a client
reuses the connection fails that call with a read error, so the client must always be the
one to give up an idle connection first."""

MAX_HEAD_BYTES = 64 * 1024
"""The most a request's line and headers may take: an MCP call's are well under 2 KiB.
h11 has such a cap of its own; httptools has none, and it builds a header's value by
concatenation, so one long header cost CPU with the square of its length (128 MiB: 28 s
of the event loop, every other client stalled) and many short ones about 17 times their
size in memory, all before the bearer token is checked."""

SHUTDOWN_GRACE_S = 5
"""On SIGTERM or Ctrl+C, how long calls in progress may take to finish before they are
cut: a peer that stops in the middle of a body would otherwise keep the server up until
its read deadline, and one on the standard library's parser (which has none) for ever. A
record cut there is either committed or not at all (one transaction), and a retry of it
changes nothing."""

FIRST_BYTE_S = 5.0
"""How long a new connection may stay silent before its first byte: a client sends its
request as soon as it connects, and a thousand connections that send nothing held every
file descriptor a default limit of 1,024 allows, failing the agent's calls for as long
as :data:`REQUEST_READ_S`."""

OPEN_FILES = 65536
"""The soft limit on open files the server raises itself to (never past the hard one):
each connection holds a descriptor, and the common default of 1,024 is soon taken."""

REQUEST_READ_S = 30.0
"""The most a request may take to arrive, from its first byte (or from the connection's
opening) to its last: a peer that sends a head or a body a byte at a time, or opens a
connection and sends nothing, is closed then (408 while its head is incomplete), instead
of holding a connection, and a file descriptor, for as long as it likes. The keep-alive
limit only counts between requests."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port); port 0 picks a free one.

    HOST is an IP address or ``localhost``: a name could resolve to any address, and
    whether the bearer token is needed depends on which.
    """
    host, sep, port_text = text.rpartition(":")
    if (
        not sep
        or not host
        or not (port_text.isascii() and port_text.isdigit())
        or int(port_text) > 65535
    ):
        raise CuratorError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise CuratorError(
                f"--http wants an IP address or localhost as HOST, not {host[:60]!r}"
            ) from None
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: it may resolve to anything
        return False


def default_token_file() -> Path:
    """``mcp-token`` next to the default database, in the app's data folder."""
    from curator.store.db_choice import default_db_path

    return default_db_path().parent / TOKEN_FILE_NAME


MAX_TOKEN_FILE_BYTES = 1024
"""A token file holds one token and a line end: anything longer is not one."""
TOKEN_RULE = re.compile(r"[!-~]{16,512}")
"""A token: one line of 16 to 512 printable ASCII characters, no space (a generated one
is 43 of letters, digits, ``-`` and ``_``)."""


def _others_may_write(folder: os.stat_result) -> bool:
    """Whether users other than this one may replace a file in ``folder``: anyone (unless
    the folder is sticky, as ``/tmp``, where only a file's owner may), or a group other
    than this user's own (a umask of 002 makes folders writable by the user's private
    group, which holds the user alone)."""
    if folder.st_mode & stat.S_ISVTX:
        return False
    if folder.st_mode & 0o002:
        return True
    return bool(folder.st_mode & 0o020) and folder.st_gid != os.getegid()


def load_or_create_token(path: Path) -> str:
    """The bearer token kept in ``path``, generated (mode 0600) when the file is missing.

    Refused, in one sentence that never shows what the file holds: a link (never followed:
    it could lead to a private key), anything but a regular file, a file of another user
    or one others may read or write, a folder others may write in (they could replace
    the file), and content that is no token.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = path.parent.stat()
    except OSError as exc:
        raise CuratorError(f"the token file {path} cannot be kept there ({exc.strerror})") from None
    if _others_may_write(folder):
        raise CuratorError(  # judged first: nothing is left in such a folder
            f"the folder of the token file {path} can be written by other users; keep the "
            "token in a folder only you can write"
        )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        link = exc.errno == errno.ELOOP
        reason = "is a link; it must be a file of its own" if link else exc.strerror
        raise CuratorError(f"the token file {path} {reason}") from None
    try:
        found = os.fstat(fd)  # on the descriptor: a folder cannot even be wrapped as a file
        if not stat.S_ISREG(found.st_mode):
            raise CuratorError(f"the token file {path} is not a regular file")
        if found.st_uid != os.geteuid():
            raise CuratorError(
                f"the token file {path} belongs to another user (uid {found.st_uid}); "
                "delete it to get a new token of your own"
            )
        if found.st_mode & 0o077:
            raise CuratorError(
                f"the token file {path} can be read by other users (mode "
                f"{stat.S_IMODE(found.st_mode):o}); run chmod 600 on it"
            )
        raw = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_TOKEN_FILE_BYTES:
        raw = b"\xff"  # a token file is one line: more than this is none
    try:
        token: str | None = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        token = None
    if token == "":
        raise CuratorError(f"the token file {path} is empty; delete it to get a new token")
    if token is None or not TOKEN_RULE.fullmatch(token):
        raise CuratorError(
            f"the token file {path} does not hold a token (one line of 16 to 512 printable "
            "characters, no space); delete it to get a new token"
        )
    return token


class BearerTokenGate:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer TOKEN`` gets 401."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = [v for k, v in scope.get("headers") or () if k.lower() == b"authorization"]
        if len(given) == 1 and self._accepts(given[0]):
            await self.app(scope, receive, send)
            return
        if len(given) > 1:
            reason = "more than one Authorization header"
        else:
            reason = "a wrong bearer token" if given else "no bearer token"
        body = json.dumps(
            {"error": f"refused: {reason}; send Authorization: Bearer TOKEN from the token file"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _accepts(self, value: bytes) -> bool:
        """``Bearer TOKEN``, the scheme in any case (RFC 9110, 11.1), the token exact."""
        scheme, _, token = value.partition(b" ")
        # compared whatever the scheme, so the time taken says nothing about the token
        same = hmac.compare_digest(token, self._expected)
        return same and scheme.lower() == b"bearer"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), so the bound port is known before serving.

    It is made a TCP socket by protocol (``IPPROTO_TCP``, not 0) and carries
    ``TCP_NODELAY``, which the connections it accepts inherit: asyncio turns the option on
    only for sockets whose protocol says TCP, and without it each answer's body waited for
    the client's delayed acknowledgement of its headers (up to 40 ms a call, whatever the
    server did).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    except OSError as exc:
        raise CuratorError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, kind, proto = infos[0][:3]
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind(infos[0][4])
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CuratorError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def loopback_security(host: str) -> Any:
    """The Host and Origin check of a server reached only from this machine, which asks
    for no token: a web page whose name a DNS rebinding points at the address must not
    reach it. The SDK turns the check on by itself only for three spellings of loopback
    (``127.0.0.1``, ``localhost``, ``::1``); every other one (``127.0.0.2``,
    ``0:0:0:0:0:0:0:1``, ``LOCALHOST``) was served to any Host, without a token."""
    from mcp.server.transport_security import TransportSecuritySettings

    forms = {host, host.lower()}
    with contextlib.suppress(ValueError):  # an address: its short and its full spelling too
        address = ipaddress.ip_address(host)
        forms |= {address.compressed, address.exploded}
    spelled = {f"[{form}]" if ":" in form else form for form in forms}
    names = sorted({"127.0.0.1", "localhost", "[::1]", *spelled})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in names for form in (name, f"{name}:*")],
        allowed_origins=[form for name in names for form in (f"http://{name}", f"http://{name}:*")],
    )


def serve_http(
    server: Any, host: str, port: int, *, token: str | None, announce: Any = None
) -> None:
    """Serve ``server`` (an MCPServer) over streamable HTTP at ``/mcp`` until interrupted.

    The bound address goes to stderr as ``curator mcp: serving on http://HOST:PORT/mcp``
    (port 0 picks a free port: a script or test reads it from there).
    """
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    if is_loopback(host):
        security = loopback_security(host)
    else:
        # Reached by its network name or address: the token is the check, not the Host.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # Answers as one JSON document: no tool here sends progress on the way, and an event
    # stream per call costs a task, a memory stream and a disconnect watcher per request
    # (about an eighth of the server's CPU per recorded episode); a client that accepts
    # only JSON is served too. A client that goes away mid-call no longer cancels it: a
    # record it started is still committed (idempotent, so its retry changes nothing).
    app: Any = OneSentenceErrors(
        server.streamable_http_app(host=host, transport_security=security, json_response=True)
    )
    if token is not None:
        app = BearerTokenGate(app, token)
    raise_open_files_limit()
    sock = bind(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    line = f"curator mcp: serving on http://{shown}:{bound_port}/mcp"
    if token is not None:
        line += " (bearer token required)"
    print(announce or line, file=sys.stderr, flush=True)
    # No proxy stands in front (and the client's address is used for nothing), and no
    # access log is kept: each was a step on every request for nothing.
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        proxy_headers=False,
        access_log=False,
        http=http_protocol(),
    )
    quiet_departed_clients()  # on the handlers the Config has just set up
    with contextlib.closing(sock):
        anyio.run(
            lambda: uvicorn.Server(config).serve(sockets=[sock]),
            backend_options=event_loop_options(),
        )


def raise_open_files_limit(wanted: int = OPEN_FILES) -> int:
    """Raise this process's soft limit on open files towards ``wanted`` (never past the
    hard limit, never lower than it was); the limit now in force (-1: unknown, as on a
    system without the limits)."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def event_loop_options() -> dict[str, bool]:
    """anyio's asyncio options: uvloop's event loop where it is installed.

    uvloop with httptools (which :func:`http_protocol` picks where installed) takes 12 to
    14 % off the server's CPU per recorded episode (``benchmarks/RESULTS-mcp-record.md``);
    without it (Windows, or an environment that lacks it) the standard loop serves the
    same.
    """
    try:
        import uvloop  # noqa: F401  (named here so that the frozen bundle carries it)
    except ImportError:
        return {}
    return {"use_uvloop": True}


def http_protocol() -> Any:
    """uvicorn's httptools protocol with a request's head cut at :data:`MAX_HEAD_BYTES`
    (answered 431 and closed) and its arrival at :data:`REQUEST_READ_S` (408 or closed),
    or ``"h11"`` where httptools cannot be imported."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return "h11"

    class HeadLimitedHttpTools(HttpToolsProtocol):
        # The head is checked twice: while it is still incomplete, by the bytes read for
        # it (which keeps httptools from ever accumulating more than a read past the cap),
        # and once it is complete, by its parsed size (a read that completes a head may
        # also carry a body or the next request, so its length says nothing then).
        # The read deadline is set when the connection opens and when a request's first
        # byte arrives, and lifted when its last byte has.
        _head_bytes = 0
        _in_head = True
        _refused = False
        _read_deadline: asyncio.TimerHandle | None = None
        _deadline_s = REQUEST_READ_S

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._set_read_deadline(FIRST_BYTE_S)  # its first byte resets it (a request's)

        def connection_lost(self, exc: Exception | None) -> None:
            self._lift_read_deadline()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            self._set_read_deadline()
            super().on_message_begin()

        def data_received(self, data: bytes) -> None:
            if self._in_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if self._in_head and self._head_bytes > MAX_HEAD_BYTES:
                self._refuse_head()
            elif self._in_head and self._read_deadline is None and not self._serving():
                # Bytes between requests that begin none (httptools skips CR and LF
                # there) cancelled uvicorn's keep-alive limit: without a deadline the
                # connection would be held for ever.
                self._set_read_deadline()

        def on_headers_complete(self) -> None:
            self._in_head = False
            self._head_bytes = 0
            size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
            if self._refused or size > MAX_HEAD_BYTES:
                self._refuse_head()
                return
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            if not self._refused:
                super().on_body(body)

        def on_message_complete(self) -> None:
            self._lift_read_deadline()
            if not self._refused:
                self._in_head = True
                super().on_message_complete()

        def _set_read_deadline(self, seconds: float | None = None) -> None:
            self._lift_read_deadline()
            self._deadline_s = REQUEST_READ_S if seconds is None else seconds
            self._read_deadline = self.loop.call_later(self._deadline_s, self._read_too_slow)

        def _lift_read_deadline(self) -> None:
            if self._read_deadline is not None:
                self._read_deadline.cancel()
                self._read_deadline = None

        def _serving(self) -> bool:
            """Whether an earlier request's call is still running on this connection."""
            return self.cycle is not None and not self.cycle.response_complete

        def _read_too_slow(self) -> None:
            self._read_deadline = None
            if self.transport.is_closing():
                return
            if self.flow.read_paused or (self._in_head and self._serving()):
                # The server holds this request up, not the peer: a pipelined request
                # waits (its reading paused) for the call before it, which must not be
                # cut, nor answered with this request's 408. Its time starts again.
                self._set_read_deadline()
                return
            if self._in_head:  # nothing answered yet on this request: say why
                self._refused = True
                what = f"request not received within {self._deadline_s:g} s"
                self._answer_and_close(b"408 Request Timeout", what)
            else:  # the app has the request: it sees the peer go
                self.transport.close()

        def _refuse_head(self) -> None:
            if self._refused or self.transport.is_closing():
                return
            self._refused = True
            what = f"request line and headers over {MAX_HEAD_BYTES // 1024} KiB"
            self._answer_and_close(b"431 Request Header Fields Too Large", what)

        def _answer_and_close(self, status: bytes, text: str) -> None:
            msg = text.encode()
            self.transport.write(
                b"HTTP/1.1 " + status + b"\r\n"
                b"content-type: text/plain; charset=utf-8\r\n"
                b"content-length: " + str(len(msg)).encode() + b"\r\n"
                b"connection: close\r\n\r\n" + msg
            )
            self.transport.close()

    return HeadLimitedHttpTools

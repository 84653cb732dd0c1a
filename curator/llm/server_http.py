"""HTTP to a model server with a deadline on every request and a budget on every stream.

httpx's timeouts are per read: a peer that trickles one byte every few seconds, or a
stream that never ends, never trips them, and a run would wait forever. So every
exchange here has a *total* deadline (:class:`ServerLimits`): a fixed allowance for the
answer to start plus a per-token allowance for what the request may generate, always
finite. The request runs on a helper thread while the calling thread waits on a queue
with the deadline and ``should_stop``; the helper checks the same deadline between reads
and gives up, so an abandoned request ends soon after (within one read timeout) and its
connection is closed. A stream is also bounded in bytes, and the caller counts tokens
itself: a server that ignores ``max_tokens`` is cut off at ``max_tokens``.

Every failure becomes one :class:`ServerError`: one line, with credentials masked by
:func:`curator.core.redact.redact`, naming the full URL that was asked.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from curator.core.redact import one_line, redact
from curator.core.secret_forms import remember_secret, scrubbed
from curator.errors import CuratorError
from curator.llm.backend import StopCheck
from curator.llm.http_client import http_client, proxy_in_use

SERVER_ENV = "CURATOR_SERVER"
API_KEY_ENV = "CURATOR_API_KEY"
TIMEOUT_ENV = "CURATOR_SERVER_TIMEOUT"
TOKEN_TIME_ENV = "CURATOR_SERVER_TOKEN_TIME"
RETRY_STATUS = (429, 503)
POLL_S = 0.05  # how often a waiting call looks at should_stop
MAX_RETRY_WAIT_S = 30.0


class ServerError(CuratorError):
    """The model server could not be used (one line, exit code 2).

    The message is made one line and redacted here, the one place every HTTP failure
    passes through, so no error path can leak a password or a key into a message, nor a
    hostile server's terminal escapes (quoted model ids, field values) reach a terminal.
    """

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(redact(one_line(message)))


class Cancelled(Exception):
    """should_stop turned true while a request was in flight."""


@dataclass(frozen=True)
class ServerLimits:
    """How long and how much one request may take (defaults in the README).

    A request that may generate ``n`` tokens must be answered completely within
    ``answer_s + n * token_s`` seconds; a stream may send at most
    ``stream_bytes + n * token_bytes`` bytes; any other answer at most ``answer_bytes``.
    """

    connect_s: float = 10.0
    answer_s: float = 120.0
    token_s: float = 1.0
    answer_bytes: int = 16 << 20
    stream_bytes: int = 64 << 10
    token_bytes: int = 8 << 10
    template_s: float = 5.0
    """How long a served chat template may take to render before it is refused."""
    template_bytes: int = 256 << 10
    """How large a served chat template (and its rendering) may be."""

    def deadline_s(self, max_tokens: int = 1) -> float:
        """The total seconds a request generating up to ``max_tokens`` may take."""
        return self.answer_s + max(1, max_tokens) * self.token_s

    def stream_cap(self, max_tokens: int) -> int:
        """The most bytes a stream of ``max_tokens`` tokens may send."""
        return self.stream_bytes + max(1, max_tokens) * self.token_bytes

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerLimits:
        """The defaults, with ``$CURATOR_SERVER_TIMEOUT`` (answer_s) and
        ``$CURATOR_SERVER_TOKEN_TIME`` (token_s) when set; a bad value is a ServerError."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, field in ((TIMEOUT_ENV, "answer_s"), (TOKEN_TIME_ENV, "token_s")):
            text = env.get(name)
            if not text or not text.strip():  # blank: unset, as for the download variables
                continue
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if not (0 < value <= 86400):
                raise ServerError(f"${name} must be a number of seconds (0 to 86400)")
            values[field] = value
        return cls(**values)


@dataclass(frozen=True)
class Reply:
    """A complete, size-checked answer: status, headers and body."""

    status: int
    headers: httpx.Headers
    body: bytes


def retry_wait(value: str | None, default: float) -> float:
    """Seconds to wait for a ``Retry-After`` header: a number of seconds within
    [0, 30]; anything else (a date, negative, NaN, garbage) means ``default``."""
    try:
        seconds = float(value) if value is not None else default
    except ValueError:
        return default
    if not math.isfinite(seconds) or seconds < 0:
        return default
    return min(MAX_RETRY_WAIT_S, seconds)


def status_message(status: int, url: str, path: str, model: str) -> str | None:
    """What an HTTP status means for the user, naming the full URL; None for 200."""
    if status == 200:
        return None
    where = f"{url}{path}"
    if status in (401, 403):
        return f"the model server at {where} refused the API key ({status})"
    if status == 404 and path.startswith("/v1/completions"):
        return f"the model server at {where} has no model {model!r} (404)"
    return f"the model server answered {status} to {where}"


def transport_message(where: str, exc: Exception) -> str:
    via = proxy_in_use(where)
    if via and isinstance(exc, httpx.ConnectError | httpx.ProxyError):
        # the proxy's own host may be the one not found or refusing: its words, as said
        reason = str(exc)[:120] or "connection refused"
        return f"cannot reach the model server at {where}{via}: {reason}"
    return _transport_reason(where, exc) + via


def _transport_reason(where: str, exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        reason = str(exc)
        if "name" in reason.lower() or "getaddrinfo" in reason:  # EAI_NONAME, EAI_AGAIN...
            host = urlsplit(where).hostname or where
            return f"cannot reach the model server at {where}: the host {host} was not found"
        if "refused" in reason.lower() or not reason:
            return f"cannot reach the model server at {where}: connection refused"
        return f"cannot reach the model server at {where}: {reason[:120]}"
    if isinstance(exc, httpx.TimeoutException):
        return f"the model server at {where} timed out ({type(exc).__name__})"
    return f"the connection to the model server at {where} failed: {type(exc).__name__}"


class Connection:
    """One server's HTTP client with deadlines, byte caps and retries (module docstring)."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        limits: ServerLimits,
        *,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url
        self.limits = limits
        self.retries = retries
        self.model = ""
        """The model id (for the message of a 404 from /v1/completions)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        remember_secret(api_key)  # a server may echo it in any field a message quotes
        self._client = http_client(
            ServerError,
            base_url=url,
            headers=headers,
            timeout=httpx.Timeout(limits.answer_s, connect=limits.connect_s),
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def check(self, reply: Reply, path: str) -> None:
        """Raise the ServerError an HTTP status other than 200 means."""
        problem = status_message(reply.status, self.url, path, self.model)
        if problem is not None:
            raise ServerError(problem)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        max_tokens: int = 1,
        should_stop: StopCheck | None = None,
        within_s: float | None = None,
    ) -> Reply:
        """One request, retried on 429/503, answered in full within its deadline (or
        ``within_s``: a probe that a server may not serve at all)."""
        allowed = self.limits.deadline_s(max_tokens) if within_s is None else within_s
        deadline = time.monotonic() + allowed
        late = self._late(path, max_tokens) if within_s is None else self._late_by(path, within_s)
        delay = 0.5
        for attempt in range(self.retries + 1):
            reply: Reply = _wait_for(
                self._fetcher(method, path, body, deadline), deadline, should_stop, late
            )
            if reply.status in RETRY_STATUS and attempt < self.retries:
                wait = retry_wait(reply.headers.get("retry-after"), delay)
                if time.monotonic() + wait > deadline:
                    break
                _sleep(wait, should_stop)
                delay *= 2
                continue
            return reply
        raise ServerError(
            f"the model server at {self.url} is busy: it answered {reply.status} to "
            f"{self.url}{path} until the deadline"
        )

    def stream(
        self,
        path: str,
        body: Any,
        *,
        max_tokens: int,
        should_stop: StopCheck | None = None,
    ) -> Generator[dict[str, Any], None, None]:
        """The server-sent events of a streaming request, as JSON objects.

        Ends at ``data: [DONE]`` or the end of the body; raises ServerError past the
        deadline or the byte cap. Closing the iterator abandons the request: its
        connection is shut down at once (:func:`_hang_up`), also while the server is
        silent (evaluating the prompt), and the server then stops generating.
        """
        limits = self.limits
        deadline = time.monotonic() + limits.deadline_s(max_tokens)
        cap = limits.stream_cap(max_tokens)
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        closing = threading.Event()
        held: list[httpx.Response] = []
        lock = threading.Lock()
        where = f"{self.url}{path}"

        def run() -> None:
            try:
                with self._client.stream("POST", path, json=body) as response:
                    with lock:
                        if closing.is_set():
                            return
                        held.append(response)
                    if response.status_code != 200:
                        data = response.read()[: limits.answer_bytes]
                        events.put(("status", Reply(response.status_code, response.headers, data)))
                        return

                    def chunks() -> Iterator[bytes]:
                        for chunk in response.iter_bytes():
                            if closing.is_set() or time.monotonic() > deadline:
                                return  # leaving the block closes the response
                            yield chunk

                    for line in _lines(chunks(), cap, where):
                        if closing.is_set():
                            return
                        if line.startswith(b"data:"):
                            events.put(("data", line[5:].strip()))
                events.put(("end", None))
            except ServerError as exc:
                events.put(("error", exc))
            except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
                events.put(("error", ServerError(transport_message(where, exc))))
            except BaseException as exc:  # handed to the waiting thread as it is
                events.put(("error", exc))

        threading.Thread(target=run, name="curator-http-stream", daemon=True).start()
        seen = False
        try:
            while True:
                kind, value = _next(events, deadline, should_stop, self._late(path, max_tokens))
                if kind == "status":
                    self.check(value, path)
                if kind == "end":
                    if not seen:
                        raise ServerError(f"malformed response from {where}: not a stream")
                    return
                if kind == "error":
                    raise value
                seen = True
                if value == b"[DONE]":
                    return
                yield _event(value, where)
        finally:
            with lock:
                closing.set()
            for response in held:
                _hang_up(response)

    # -- internals ---------------------------------------------------------------------

    def _late(self, path: str, max_tokens: int = 1) -> str:
        return self._late_by(path, self.limits.deadline_s(max_tokens))

    def _late_by(self, path: str, seconds: float) -> str:
        return (
            f"the model server at {self.url} did not answer {self.url}{path} within "
            f"{seconds:g} s (the request's deadline)"
        )

    def _fetcher(self, method: str, path: str, body: Any, deadline: float) -> Callable[[], Reply]:
        where = f"{self.url}{path}"
        cap = self.limits.answer_bytes

        def fetch() -> Reply:
            try:
                with self._client.stream(method, path, json=body) as response:
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > cap:
                            raise ServerError(
                                f"the model server sent more than {cap:,} bytes for {where}"
                            )
                        if time.monotonic() > deadline:
                            raise ServerError(f"the model server at {where} was too slow")
                        chunks.append(chunk)
                    return Reply(response.status_code, response.headers, b"".join(chunks))
            except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
                raise ServerError(transport_message(where, exc)) from None

        return fetch


def _lines(chunks: Iterator[bytes], cap: int, where: str) -> Iterator[bytes]:
    """The lines of a byte stream, at most ``cap`` bytes in all (a ServerError beyond)."""
    buffer = bytearray()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > cap:
            raise ServerError(
                f"the model server sent more than {cap:,} bytes in the stream from {where} "
                "(the stream's byte budget)"
            )
        if b"\n" not in chunk:
            buffer += chunk
            continue
        buffer += chunk
        *lines, rest = bytes(buffer).split(b"\n")
        buffer = bytearray(rest)
        for line in lines:
            yield line.rstrip(b"\r")
    if buffer:
        yield bytes(buffer)


def _event(payload: bytes, where: str) -> dict[str, Any]:
    try:
        event = json.loads(payload)
    except (ValueError, RecursionError):
        raise ServerError(f"malformed response from {where}: a stream event is not JSON") from None
    if not isinstance(event, dict):
        raise ServerError(f"malformed response from {where}: a stream event is not an object")
    try:
        return scrubbed(event)  # no remembered key enters the program from an answer
    except RecursionError:
        raise ServerError(
            f"malformed response from {where}: a stream event nested too deeply"
        ) from None


def _next(
    box: queue.Queue[tuple[str, Any]], deadline: float, should_stop: StopCheck | None, late: str
) -> tuple[str, Any]:
    """The next item of ``box``, waiting at most until ``deadline``."""
    while True:
        if should_stop is not None and should_stop():
            raise Cancelled
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ServerError(late)
        try:
            return box.get(timeout=min(POLL_S, remaining))
        except queue.Empty:
            continue


def _wait_for(
    call: Callable[[], Reply], deadline: float, should_stop: StopCheck | None, late: str
) -> Reply:
    """``call()`` on a helper thread; this one waits for it until ``deadline``.

    A blocked read cannot be interrupted from the thread doing it, so the request runs
    elsewhere and a cancel or the deadline returns at once; the abandoned request gives
    up at its next read (it checks the same deadline) and its result is dropped.
    """
    if should_stop is not None and should_stop():
        raise Cancelled
    box: queue.Queue[tuple[str, Any]] = queue.Queue()

    def run() -> None:
        try:
            box.put(("ok", call()))
        except BaseException as exc:  # handed to the waiting thread
            box.put(("error", exc))

    threading.Thread(target=run, name="curator-http", daemon=True).start()
    kind, value = _next(box, deadline, should_stop, late)
    if kind == "error":
        raise value
    assert isinstance(value, Reply)
    return value


def _hang_up(response: httpx.Response) -> None:
    """Shut the response's connection down from another thread than the one reading it.

    Closing the response would wait for that thread, and closing a socket does not wake
    a thread blocked reading it; a shutdown does (the read ends at once), and the server
    sees the client gone while it is still silent.
    """
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: nothing left to hang up
            sock.shutdown(socket.SHUT_RDWR)


def _sleep(seconds: float, should_stop: StopCheck | None) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if should_stop is not None and should_stop():
            raise Cancelled
        time.sleep(min(POLL_S, left))

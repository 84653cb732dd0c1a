"""A watchdog beside each download request: deadline, stall rule and cancel, all enforced.

A socket timeout only bounds the wait for *one* read, so a server that sends one byte
every 20 seconds never trips it and a download can run for hours. The watchdog runs on
its own thread, watches the whole request, and when it must stop it shuts the request's
socket down, which wakes the blocked read at once:

* ``deadline``: the answer's headers have not arrived ``first_byte_s`` after the request
  started (connecting included);
* ``stall``: after the headers, fewer than ``min_rate_bps`` bytes per second arrived over
  a ``stall_window_s`` window (windows are consecutive; total silence is a stall too);
* ``cancel``: the user's cancel event was set (the GUI's Cancel then works even while the
  server sends nothing).

The socket is learned through httpx's ``trace`` request extension (the
``connection.connect_tcp.complete`` event carries the new network stream); the download's
client keeps no idle connections, so every request opens its own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

from curator.llm.download_rules import DownloadLimits

TICK_S = 0.05


class Watchdog:
    """Watches one request; :attr:`reason` says why it stopped it (None: it did not)."""

    def __init__(self, limits: DownloadLimits, cancel: threading.Event | None) -> None:
        self.limits = limits
        self.cancel = cancel
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._started = time.monotonic()
        self._answered_at: float | None = None
        self._window_start = 0.0
        self._window_bytes = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="download-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx ``trace`` extension: remember every socket the request opens."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                stop = self.reason is not None
            if stop:
                self._shutdown()

    def answered(self) -> None:
        """The headers arrived: from now on the stall rule applies instead of the deadline."""
        with self._lock:
            now = time.monotonic()
            self._answered_at = now
            self._window_start = now

    def received(self, n: int) -> None:
        with self._lock:
            self._window_bytes += n

    def _run(self) -> None:
        while not self._done.wait(TICK_S):
            reason = self._check(time.monotonic())
            if reason is not None:
                with self._lock:
                    self.reason = reason
                self._shutdown()
                return

    def _check(self, now: float) -> str | None:
        if self.cancel is not None and self.cancel.is_set():
            return "cancel"
        with self._lock:
            if self._answered_at is None:
                return "deadline" if now - self._started >= self.limits.first_byte_s else None
            elapsed = now - self._window_start
            if elapsed < self.limits.stall_window_s:
                return None
            if self._window_bytes < self.limits.min_rate_bps * elapsed:
                return "stall"
            self._window_start, self._window_bytes = now, 0
            return None

    def _shutdown(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):  # already closed: nothing left to wake
                sock.shutdown(socket.SHUT_RDWR)

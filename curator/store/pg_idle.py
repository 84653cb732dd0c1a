"""PostgreSQL connections kept for the next thread instead of closed after each job.

peewee keeps one connection per thread, and the window runs each database job on a thread
of its own that closes its connection when it ends. Against SQLite that costs nothing;
against a server every job paid a new connection: a TCP handshake, TLS where it is used,
authentication and a new server process. On loopback that was 5 ms a job; across a
network it is several round trips, and the window makes a job for every page it shows
and every search it runs. So such a thread hands its connection back
(:meth:`curator.store.db.Store.hand_back`) instead of closing it, and the next thread that
connects takes it if it is fit. Any other ``close()`` closes, as before: a store closed
by the thread that opened it leaves no session behind.

A connection is kept only when nothing of its use can reach the next user:

- no transaction is open on it (its status is idle, not in a transaction or failed);
- it is neither closed nor broken, and was not given up for want of an answer;
- it never ran a session ``SET`` (a lock wait of its own), which the next job would
  inherit without knowing;
- its socket is quiet: an idle connection has nothing to read, and one that has (the
  server's message that it ended the session, a hang-up) is closed instead.

At most :data:`KEPT` are kept, each for at most :data:`IDLE_FOR_S` (a connection left
idle for long may have been cut by something on the way that neither side was told of).
A connection taken while its server was ending it is not a new danger: the first
statement finds out, and a read (or a transaction not yet begun) is sent again on a new
connection, as for a long-lived thread's own connection (:mod:`pg_connection`).
:meth:`IdleConnections.close_all` closes the kept ones when the store is done with
(:meth:`curator.store.db.Store.dispose`).
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable
from typing import Any

KEPT = 4
"""Idle connections kept at most per database: the window runs a few reads at once."""
IDLE_FOR_S = 60.0
"""How long a kept connection may wait before it is closed instead of handed out."""


def socket_quiet(conn: Any) -> bool:
    """Whether ``conn``'s socket has nothing to read and has not hung up (polled without
    waiting). Where the platform cannot poll, a socket counts as quiet: the first
    statement on it finds out instead."""
    poll = getattr(select, "poll", None)
    if poll is None:
        return True
    hang_up = getattr(select, "POLLRDHUP", 0)
    try:
        poller = poll()
        poller.register(conn.pgconn.socket, select.POLLIN | hang_up)
        return not poller.poll(0)
    except Exception:  # no socket any more
        return False


class IdleConnections:
    """The connections of one database that wait, idle, for the next thread."""

    def __init__(self, fit: Callable[[Any], bool], kept: int = KEPT) -> None:
        self._fit = fit
        self._kept = kept
        self._lock = threading.Lock()
        self._idle: list[tuple[Any, float]] = []  # (connection, when it was kept)

    def take(self) -> Any | None:
        """A kept connection still fit to use (the most recently kept), or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn, since = self._idle.pop()
            if time.monotonic() - since <= IDLE_FOR_S and self._fit(conn):
                return conn
            _close_quietly(conn)

    def keep(self, conn: Any) -> bool:
        """Keep ``conn`` for the next thread if it is fit and there is room; False: the
        caller closes it."""
        if not self._fit(conn):
            return False
        with self._lock:
            if len(self._idle) >= self._kept:
                return False
            self._idle.append((conn, time.monotonic()))
        return True

    def close_all(self) -> None:
        """Close every kept connection (those in use are their threads' to close)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _since in idle:
            _close_quietly(conn)

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()

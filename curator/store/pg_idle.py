"""PostgreSQL connections kept for the next thread instead of closed after each job.

peewee keeps one connection per thread, and the window runs each database job on a thread
of its own that closes its connection when it ends. Against SQLite that costs nothing;
against a server every job paid a new connection: a TCP handshake, TLS where it is used,
authentication and a new server process. On loopback that was 5-6 ms a job; across a
network it is several round trips, and the window makes a job for every page it shows
and every search it runs. So such a thread hands its connection back
(:meth:`curator.store.db.Store.hand_back`) instead of closing it, and the next thread that
connects takes it if it is fit. Any other ``close()`` closes, as before: a store closed
by the thread that opened it leaves no session behind.

A connection is kept only when nothing of its job can reach the next one:

- no transaction is open on it (its status is idle, not in a transaction or failed), it
  is neither closed nor broken, and it was not given up for want of an answer;
- its socket is quiet: an idle connection has nothing to read, and one that has (the
  server's message that it ended the session, a hang-up) is closed instead;
- ``DISCARD ALL`` then empties its session, as a new one would be: settings a job made
  (``SET``, ``set_config``) go back to the connection's own (those of the URL and the
  store, given when it was made), and temporary tables, session locks, ``LISTEN``
  registrations and prepared statements go (a statement psycopg prepared before another
  session changed a column's type failed on every later use: "cached plan must not
  change result type"; psycopg prepares none on a kept connection, whose cache of them
  it would not always clear). A connection on which that fails, or that does not answer
  it within :data:`EMPTIED_WITHIN_S`, is closed. It costs one round trip a job, against
  the several of a new connection.

At most :data:`KEPT` are kept. One that has waited more than :data:`IDLE_FOR_S` is
closed by a timer soon after, so that a window left open and idle holds no server
session (each is a server process, and a server allows only so many). It is also passed
over and closed when it would be handed out: the idle time is counted on the platform's
boot-time clock, which goes on while the machine is suspended and the timer's may not,
and something on the way may have cut it meanwhile without either side being told. A
connection the server ended while it was kept, without the socket saying so yet, is no
new danger: the first statement finds out, and a read (or a transaction not yet begun)
is sent again on a new connection, as for a long-lived thread's own connection
(:mod:`pg_connection`); a server that stops answering it is given up at the statement's
deadline, as any connection is. :meth:`IdleConnections.close_all` closes the kept ones
when the store is done with (:meth:`curator.store.db.Store.dispose`), and from then on
keeps none: a job still running then closes its connection when it ends.
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
"""How long a kept connection may wait, idle, before it is closed."""
SWEEPER_NAME = "curator-pg-idle-sweep"
"""The name of the timer's thread (one at most per database while connections are kept)."""
SWEEP_AFTER_S = 1.0
"""How long after a kept connection's time is up the timer looks: a margin, since the
timer waits on one clock and the idle time is counted on another."""
EMPTIED_WITHIN_S = 5.0
"""How long ``DISCARD ALL`` may go unanswered before the connection is closed instead:
the job's result waits for it (a frozen server would otherwise hold it for the whole
statement deadline)."""


def _now() -> float:
    """Seconds on Linux's boot-time clock, which goes on while the machine is suspended;
    elsewhere the monotonic clock, which may stop then."""
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    if boot is not None:
        return time.clock_gettime(boot)
    return time.monotonic()


HANG_UP = getattr(select, "POLLRDHUP", 0)
"""The peer's hang-up, where the platform reports it apart."""


def socket_events(conn: Any) -> int | None:
    """What waits on ``conn``'s socket (``POLLIN``, a hang-up, an error), polled without
    waiting: 0 when nothing, ``POLLNVAL`` when it has no socket any more; None where the
    platform cannot poll."""
    poll = getattr(select, "poll", None)
    if poll is None:
        return None
    try:
        poller = poll()
        poller.register(conn.pgconn.socket, select.POLLIN | HANG_UP)
        events = 0
        for _, mask in poller.poll(0):
            events |= mask
        return events
    except Exception:  # no socket any more
        return select.POLLNVAL


def socket_quiet(conn: Any) -> bool:
    """Whether ``conn``'s socket has nothing to read and has not hung up. Where the
    platform cannot poll, a socket counts as quiet: the first statement on it finds out
    instead."""
    return socket_events(conn) in (None, 0)


class IdleConnections:
    """The connections of one database that wait, idle, for the next thread.

    ``fit(conn)``: whether nothing of its last use is left on the connection (asked
    when it is kept and when it is handed out); ``reset(conn)``: empty its session
    before it is kept, False when that failed."""

    def __init__(
        self, fit: Callable[[Any], bool], reset: Callable[[Any], bool], kept: int = KEPT
    ) -> None:
        self._fit = fit
        self._reset = reset
        self._kept = kept
        self._lock = threading.Lock()
        self._idle: list[tuple[Any, float]] = []  # (connection, when it was kept)
        self._closed = False
        self._sweeper: threading.Timer | None = None  # closes the kept ones past their time

    def take(self) -> Any | None:
        """A kept connection still fit to use (the most recently kept), or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn, since = self._idle.pop()
            if _now() - since <= IDLE_FOR_S and self._fit(conn):
                return conn
            _close_quietly(conn)

    def keep(self, conn: Any) -> bool:
        """Keep ``conn`` for the next thread if it is fit, its session could be emptied
        and there is room; False: the caller closes it."""
        if not self._has_room() or not self._fit(conn) or not self._reset(conn):
            return False
        with self._lock:
            if self._closed or len(self._idle) >= self._kept:
                return False
            self._idle.append((conn, _now()))
            self._schedule_sweep()
        return True

    def _schedule_sweep(self) -> None:
        """Start the timer that closes the oldest kept connection once it has waited
        :data:`IDLE_FOR_S`, unless one is running (the caller holds the lock). A timer
        that cannot start (no thread left to the process, or the interpreter shutting
        down) leaves the connections to be passed over when handed out and closed by
        :meth:`close_all`, as before there was one."""
        if self._sweeper is not None or self._closed or not self._idle:
            return
        oldest = min(since for _conn, since in self._idle)
        due = oldest + IDLE_FOR_S - _now() + SWEEP_AFTER_S
        # never a busy loop (a clock standing still), never past what a wait can take
        delay = min(max(due, 0.01), threading.TIMEOUT_MAX / 2)
        sweeper = threading.Timer(delay, self._sweep)
        sweeper.daemon = True  # never holds the program's exit back
        sweeper.name = SWEEPER_NAME
        try:
            sweeper.start()
        except RuntimeError:  # "can't start new thread"
            return
        self._sweeper = sweeper

    def _sweep(self) -> None:
        """Close the kept connections past their time; the timer again for the rest. It
        stays this store's timer until the closing is done, so that :meth:`close_all`
        waits for it."""
        now = _now()
        with self._lock:
            expired = [conn for conn, since in self._idle if now - since > IDLE_FOR_S]
            self._idle = [pair for pair in self._idle if now - pair[1] <= IDLE_FOR_S]
        for conn in expired:
            _close_quietly(conn)
        with self._lock:
            self._sweeper = None
            self._schedule_sweep()

    def _has_room(self) -> bool:
        with self._lock:
            return not self._closed and len(self._idle) < self._kept

    def close_all(self) -> None:
        """Close every kept connection, and keep none from now on (those in use are
        their threads' to close)."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
            sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            sweeper.join(5.0)  # a sweep under way: its closing (it keeps nothing more)
        for conn, _since in idle:
            _close_quietly(conn)


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()

"""Watching a database for changes made by other connections: one interface, two engines.

The window shows what an agent records through ``curator mcp``, what a colleague decides
or commits, within a second and without a reload by hand. How a change is noticed is the
engine's business and lives here, so the window asks one question of either engine,
:meth:`ChangeWatcher.wait`, on a background thread of its own:

- SQLite has no way to push a change to another process. Its watcher keeps a read-only
  connection of its own and polls ``PRAGMA data_version`` (a counter in shared memory that
  moves when another connection commits: no table is read) every :data:`SQLITE_POLL_S`.
  It cannot say which tables changed.
- PostgreSQL pushes: every write transaction of the store sends one ``NOTIFY`` on
  :data:`~curator.store.engine.CHANNEL` (delivered at COMMIT, never for a rolled-back
  one) naming the tables it changed
  (:meth:`curator.store.engine.PostgresDialect.announce`), and the watcher
  ``LISTEN``\\ s on a connection of its own and blocks on its socket until one arrives. The
  wait that first listens reports a change of unknown tables, and so does the wait that
  opens a dropped connection again: what was committed before it listened, or sent while
  it was away, was not heard, so the reader must look again (with the counter it starts
  from, which a window needs without reading it on its GUI thread).

Both report the change of any connection, the watcher's owner's own included. On SQLite
the owner tells its own writes apart by the store's
:meth:`~curator.store.db.Store.data_version` (a shared-memory read). On PostgreSQL that
read is a round trip to the server, which a window must not make on its GUI thread (a
remote or unreachable server would stall it on every change heard): the watcher reads the
change counter on its own connection after each notification and hands it over with the
change (:attr:`Change.counter`, :attr:`ChangeWatcher.counts_changes`).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.store.engine import CHANGE_COUNTER_KEY, CHANNEL, counter_value
from curator.store.opening import _connect_without_writing, file_view

log = logging.getLogger(__name__)

SQLITE_POLL_S = 0.1
"""How often the SQLite watcher looks at ``data_version`` (a shared-memory read)."""

RECONNECT_PAUSE_S = 0.5
"""How long a PostgreSQL watcher whose server is gone waits before it tries again."""


@dataclass(frozen=True)
class Change:
    """Something another connection committed: the tables it changed, when known."""

    tables: frozenset[str] = frozenset()
    """Empty when the engine cannot say (SQLite, or notifications lost to a reconnect)."""
    counter: int | None = None
    """The store's change counter (:meth:`~curator.store.db.Store.change_counter`) read
    after the change, by a watcher that :attr:`~ChangeWatcher.counts_changes`; None where
    the watcher does not read it or the read failed."""

    def touches(self, *names: str) -> bool:
        """Whether the change may have touched one of ``names`` (unknown: it may)."""
        return not self.tables or any(name in self.tables for name in names)

    @staticmethod
    def from_payload(payload: str) -> Change:
        """The change named by a notification's payload ("episode,label")."""
        return Change(frozenset(name for name in payload.split(",") if name))


class ChangeWatcher(ABC):
    """Waits for the next change; one per thread (it owns a connection of its own)."""

    counts_changes = False
    """Whether each change carries the store's change counter (:attr:`Change.counter`),
    read on the watcher's own connection, so that its owner need not read it."""

    def __init__(self) -> None:
        self._interrupted = threading.Event()

    def interrupt(self) -> None:
        """End the current wait and every later one at once (from any thread): a window
        that closes does not wait out a poll interval. PostgreSQL's wait on its socket
        still ends only at its timeout."""
        self._interrupted.set()

    def _pause(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; False when interrupted."""
        return not self._interrupted.wait(max(0.0, seconds))

    @abstractmethod
    def wait(self, timeout_s: float) -> Change | None:
        """The next change, or None when nothing changed within ``timeout_s``."""

    @abstractmethod
    def close(self) -> None:
        """Let go of the connection (idempotent)."""

    def __enter__(self) -> ChangeWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SqliteWatcher(ChangeWatcher):
    """``PRAGMA data_version`` on a read-only connection of its own, polled."""

    def __init__(self, path: Path, poll_s: float = SQLITE_POLL_S) -> None:
        super().__init__()
        self._path = path
        self._poll_s = poll_s
        self._conn: sqlite3.Connection | None = None
        self._view: tuple[int, int, bool] | None = None  # the file as its connection met it
        self._version: int | None = None

    def _read(self) -> int | None:
        try:
            if self._conn is None:
                self._view = file_view(self._path)
                self._conn = _connect_without_writing(self._path, 1.0)
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:  # gone or locked for a moment: look again next time
            self.close()
            return None

    def _file_changed(self) -> bool:
        """Whether the file changed under a connection that takes it as unchanging.

        Without a ``-wal`` beside the file the connection is ``immutable`` (nothing is
        created next to a file this user may not write), and its ``data_version`` never
        moves: a read-only window never saw another process's writes. Its size, time or
        new ``-wal`` says so instead; the connection is then made again as the file is."""
        if self._conn is None or self._view is None or self._view[2]:
            return False  # none yet, or a plain read-only one, whose counter moves
        if file_view(self._path) == self._view:
            return False
        self.close()
        return True

    def wait(self, timeout_s: float) -> Change | None:
        if self._version is None:
            self._version = self._read()
        deadline = time.monotonic() + timeout_s
        while True:
            if self._file_changed():
                self._version = self._read()
                return Change()
            version = self._read()
            if version is not None and self._version is not None and version != self._version:
                self._version = version
                return Change()
            if version is not None:
                self._version = version
            left = deadline - time.monotonic()
            if left <= 0 or not self._pause(min(self._poll_s, left)):
                return None

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
            self._version = None  # a new connection's counter starts anew


QUIET_CHECK_S = 15.0
"""How long a listening connection may hear nothing before it is asked for the change
counter: a connection whose server froze, or whose network went away without a word,
hears nothing for ever (the window went deaf without saying so); a counter that moved
meanwhile is a change missed, reported as one."""
WATCH_ANSWER_S = 10.0
"""How long the listening connection's own statements (``LISTEN``, the counter) may go
unanswered before it is given up and made again."""


def _answered(conn: Any) -> contextlib.AbstractContextManager[None]:
    """A statement of the listening connection, given up after :data:`WATCH_ANSWER_S`."""
    from curator.store.pg_connection import watching_for_an_answer

    return watching_for_an_answer(conn, WATCH_ANSWER_S)


class PostgresWatcher(ChangeWatcher):
    """``LISTEN`` on a connection of its own; a wait blocks on its socket, and a quiet
    connection is asked a round trip every :data:`QUIET_CHECK_S`."""

    counts_changes = True

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._conn: Any = None
        self._checked = 0.0  # time.monotonic() of the last round trip
        self._counter_seen: int | None = None

    def _connect(self) -> Any:
        from curator.store import pg_driver
        from curator.store.pg_url import CONNECT_TIMEOUT_S, url_settings, whole_seconds

        psycopg = pg_driver.load()
        given = url_settings(self._url)  # the URL's own connection settings kept
        conn = psycopg.connect(
            self._url,
            autocommit=True,
            application_name=given.get("application_name") or "curator-watch",
            connect_timeout=whole_seconds(given.get("connect_timeout")) or CONNECT_TIMEOUT_S,
        )
        try:
            with _answered(conn):
                conn.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            conn.close()
            raise
        return conn

    def wait(self, timeout_s: float) -> Change | None:
        from curator.store import pg_driver

        psycopg = pg_driver.load()
        deadline = time.monotonic() + timeout_s
        if self._conn is None:
            try:
                self._conn = self._connect()
            except psycopg.Error:
                self._pause(min(RECONNECT_PAUSE_S, timeout_s))
                return None
            # what was sent before it listened (its first wait, or a reconnect) was not
            # heard: look again
            return Change(counter=self._counter())
        try:
            tables: set[str] = set()
            seen = False
            quiet_for = max(0.0, self._checked + QUIET_CHECK_S - time.monotonic())
            for note in self._conn.notifies(timeout=min(timeout_s, quiet_for), stop_after=1):
                seen = True
                tables |= Change.from_payload(note.payload).tables
            if not seen:
                return self._quiet_check()
            # the rest of a burst already on the socket comes as one change
            for note in self._conn.notifies(timeout=0.0):
                tables |= Change.from_payload(note.payload).tables
            return Change(frozenset(tables), self._counter())
        except psycopg.Error:
            self.close()
            self._pause(min(RECONNECT_PAUSE_S, deadline - time.monotonic()))
            return None

    def _quiet_check(self) -> Change | None:
        """After :data:`QUIET_CHECK_S` without a word: a round trip. A counter that moved
        is a change missed; no answer closes the connection (the next wait makes it again
        and reports a change of unknown tables)."""
        if time.monotonic() - self._checked < QUIET_CHECK_S:
            return None
        before = self._counter_seen
        counter = self._counter()
        if self._conn is None:  # no answer: given up
            self._pause(RECONNECT_PAUSE_S)
            return None
        return Change(counter=counter) if counter != before else None

    def _counter(self) -> int | None:
        """The change counter as this connection reads it after the notifications
        (autocommit: the latest committed value); None when the read fails, and then the
        connection is closed (the next wait opens it again)."""
        self._checked = time.monotonic()
        try:
            with _answered(self._conn):
                row = self._conn.execute(
                    'SELECT "value" FROM "setting" WHERE "key" = %s', (CHANGE_COUNTER_KEY,)
                ).fetchone()
        except Exception:  # a dropped connection, a dropped table: unknown, look again
            log.debug("reading the change counter failed", exc_info=True)
            self.close()
            return None
        self._counter_seen = counter_value(row)
        return self._counter_seen

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

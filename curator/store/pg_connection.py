"""PostgreSQL connections: peewee's database class for psycopg 3, made to behave as the
store expects of any engine.

Apart from :mod:`curator.store.engine` (what differs in SQL between the engines) because
this part is about the connection itself: ``?`` parameters turned into psycopg's, a
dropped connection taken up again where that is safe (a read, or a transaction not yet
begun) and refused in one sentence where it is not (:class:`ConnectionLost`), and the
server's error codes the store maps to its own errors.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import peewee

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.errors import CuratorError
from curator.store.db_choice import BUSY_ENV
from curator.store.engine import WRITE_LOCK_KEY, qmark_to_format
from curator.store.pg_idle import (
    EMPTIED_WITHIN_S,
    HANG_UP,
    IdleConnections,
    socket_events,
    socket_quiet,
)
from curator.store.pg_url import (
    CONNECT_TIMEOUT_S,
    display_url,
    url_settings,
    whole_seconds,
    without_password,
)

ANSWER_MARGIN_S = 60.0
"""How long past its lock wait (the busy timeout) a statement may go unanswered before
the server is taken for gone (:class:`_Deadlines`)."""


class _Deadlines:
    """The statements in flight on every connection, and a watchdog thread that gives up
    the ones the server has not answered by their deadline.

    A server that stopped answering after the connection was made (frozen, its machine
    gone, a proxy between that kept the TCP connection open) would otherwise hold the
    statement for ever: libpq's connect timeout covers the connection only, TCP keepalive
    probes are answered by the peer's kernel while the server process is stopped, and a
    statement timeout is the server's own. Giving up shuts the socket down; libpq then
    reports the connection lost, which the store turns into one sentence
    (:class:`ConnectionLost`) naming the wait. A statement finishing as it is given up is
    safe either way: the shutdown and the end of the statement take the same lock.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: dict[int, tuple[float, Any, float]] = {}
        self._given_up: dict[int, float] = {}
        """Connections whose last statement was given up, and how long it waited."""
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self, conn: Any, seconds: float) -> Iterator[None]:
        key = id(conn)
        with self._cond:
            self._running[key] = (time.monotonic() + seconds, conn, seconds)
            self._given_up.pop(key, None)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="postgres-deadlines", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._cond:
                self._running.pop(key, None)

    def given_up(self, conn: Any) -> bool:
        """Whether ``conn``'s last statement was given up."""
        with self._cond:
            return id(conn) in self._given_up

    def waited(self, conn: Any) -> float | None:
        """How long ``conn``'s last statement waited before it was given up (None: not)."""
        with self._cond:
            return self._given_up.get(id(conn))

    def _watch(self) -> None:
        # Four times a second, not woken per statement: a deadline is a minute or more away
        # when it is set, and a bulk write sends thousands of statements.
        while True:
            with self._cond:
                self._cond.wait(0.25)
                now = time.monotonic()
                for key, (due, conn, seconds) in list(self._running.items()):
                    if now >= due:
                        del self._running[key]
                        self._given_up[key] = seconds
                        _shut_down(conn)


def _shut_down(conn: Any) -> None:
    """End ``conn``'s socket under libpq (a duplicate descriptor is shut down: the socket
    is the same, and libpq's own descriptor stays valid until it closes it)."""
    with contextlib.suppress(Exception):
        duplicate = socket.socket(fileno=os.dup(conn.pgconn.socket))
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        finally:
            duplicate.close()


_DEADLINES = _Deadlines()


def watching_for_an_answer(conn: Any, seconds: float) -> contextlib.AbstractContextManager[None]:
    """A statement on a connection of psycopg's own (not the store's), given up when the
    server has not answered it within ``seconds``: its socket is shut down, so psycopg
    raises rather than waits for ever."""
    return _DEADLINES.watching(conn, seconds)


ANSWERED_ROWS = 1000
"""Rows of a bulk write sent, and answered, under one deadline."""

_SCHEMA_CHANGE = regex(
    r"\s*(?:CREATE|ALTER|DROP|REINDEX|VACUUM|ANALYZE|CLUSTER)\b",
    re.IGNORECASE,
    kept_in=TEXT_PATTERNS_FILE,
)
SCHEMA_ANSWER_S = 900.0
"""How long a change of the schema may go unanswered: a migration builds an index over
every episode, which takes minutes on a large database and sends nothing meanwhile; a
server silent for longer than this is taken for gone, as for any statement (before, a
schema change had no deadline, and a frozen server held ``--create`` or a copy for ever)."""


class _QmarkCursor:
    """A psycopg cursor that takes ``?`` parameters; its errors become peewee's."""

    def __init__(self, cursor: Any, database: Any = None) -> None:
        self._cursor = cursor
        self._database = database  # for executemany's lost connection (see there)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> _QmarkCursor:
        with self._answered(sql), peewee.__exception_wrapper__:  # type: ignore[attr-defined]
            self._cursor.execute(qmark_to_format(sql), tuple(params or ()))
        return self

    def _answered(self, sql: str) -> contextlib.AbstractContextManager[None]:
        """The statement watched for an answer by its deadline (:class:`_Deadlines`); a
        change of the schema by a longer one (:data:`SCHEMA_ANSWER_S`)."""
        seconds = getattr(self._database, "answer_deadline_s", None)
        if seconds is None:
            return contextlib.nullcontext()
        if _SCHEMA_CHANGE.match(sql):
            seconds = max(seconds, SCHEMA_ANSWER_S)
        return _DEADLINES.watching(self._cursor.connection, seconds)

    def executemany(self, sql: str, seq: Any) -> _QmarkCursor:
        """The bulk writes (a commit's change rows, an undo, a copy) call this directly,
        not through ``execute_sql``: a connection lost under one is the same sentence
        (:class:`ConnectionLost`) as under any statement, not psycopg's bare message."""
        database = self._database
        idle = database is None or database._idle()
        try:
            statement = qmark_to_format(sql)
            rows = [tuple(p) for p in seq]
            # Watched a chunk at a time: a server answering a long bulk write steadily is
            # not one that stopped answering (the deadline is for an answer, not the work).
            for start in range(0, max(len(rows), 1), ANSWERED_ROWS):
                with self._answered(sql), peewee.__exception_wrapper__:  # type: ignore[attr-defined]
                    self._cursor.executemany(statement, rows[start : start + ANSWERED_ROWS])
        except peewee.OperationalError as exc:
            if database is None or not database._lost(exc):
                raise
            raise ConnectionLost(_lost_message(exc, idle, database)) from exc
        return self

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class ServerUnreachable(peewee.OperationalError):
    """The PostgreSQL server cannot be reached now: its message is one sentence for a
    person (a window says it once, in its banner, and reads again when the server
    answers: :mod:`curator.gui.window.server_banner`)."""


class CannotConnect(ServerUnreachable):
    """A new connection failed (the server is down, refuses, or the network is cut):
    the sentence the store's first connection says, for every later one too."""


class ConnectionLost(ServerUnreachable):
    """The server or the network ended the connection under a statement that could not
    be sent again (a write, or anything inside a transaction): one sentence, no retry."""


class CommitOutcomeUnknown(ConnectionLost):
    """The connection ended after COMMIT was sent and before the server answered: the
    transaction may have been applied. Nothing may say it was not (the message names
    the doubt, and :func:`curator.store.db_errors.explain_database_error` adds no
    outcome of its own)."""


_REPEATABLE = regex(r"\s*(SELECT|SHOW|BEGIN|SET)\b", re.IGNORECASE, kept_in=TEXT_PATTERNS_FILE)
"""Statements sent again after a lost idle connection: they change nothing stored."""


def cannot_connect(exc: BaseException, url: str) -> str:
    """Why a connection to ``url`` failed, in one line without its password."""
    reason = without_password(" ".join(str(exc).split()), url)
    return f"cannot connect to {display_url(url)}: {reason}"


def no_answer(waited: float, *, schema: bool = False) -> str:
    """Why a connection or a server tool was given up (the deadline, and where it comes
    from); the caller says what became of its work."""
    if schema:
        return (
            f"the PostgreSQL server sent no answer for {waited:g} s (the most a change of "
            "the schema may take)"
        )
    return (
        f"the PostgreSQL server sent no answer for {waited:g} s (its lock wait, "
        f"${BUSY_ENV}, plus {ANSWER_MARGIN_S:g} s)"
    )


def _lost_message(
    exc: BaseException, idle: bool, database: Any = None, *, committing: bool = False
) -> str:
    reason = (str(exc).strip().splitlines() or ["closed"])[0]
    if committing:
        done = "it was lost at the commit, so whether the transaction was applied is not known"
    elif idle:
        done = "the statement may not have run; try again"
    else:
        done = "the transaction it was part of was not applied"
    if database is not None and database._given_up():
        waited = database._waited() or database.answer_deadline_s
        said = no_answer(waited, schema=waited > database.answer_deadline_s)
        return f"{said}, so the connection was given up: {done}"
    return f"the connection to the PostgreSQL server was lost ({reason}): {done}"


_SESSION_SET = regex(
    r"\s*SET\s+(?!LOCAL\b|TRANSACTION\b|SESSION\s+CHARACTERISTICS\b)(?:SESSION\s+)?(\w+)",
    re.IGNORECASE,
    kept_in=TEXT_PATTERNS_FILE,
)
"""A setting of the session (``SET lock_timeout = 0``), kept for its next connection."""


def _socket_gone(conn: Any) -> bool:
    """Whether ``conn``'s socket has hung up or failed, polled without waiting (where
    the platform cannot poll, the error that asked is trusted)."""
    events = socket_events(conn)
    if events is None:
        return True
    return bool(events & (select.POLLHUP | select.POLLERR | select.POLLNVAL | HANG_UP))


def _client_side(exc: BaseException | None, psycopg: Any) -> bool:
    """Whether ``exc`` (peewee's wrapper or psycopg's own) is an operational error the
    client raised itself, without a SQLSTATE from the server (see ``_lost``)."""
    while exc is not None and not isinstance(exc, psycopg.Error):
        exc = exc.__cause__ or exc.__context__  # peewee's wrapper: psycopg's is inside
    return isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None


@functools.cache
def _postgres_class() -> type[peewee.PostgresqlDatabase]:
    """peewee's PostgreSQL database on psycopg 3, imported now (see pg_driver)."""
    from curator.store import pg_driver

    psycopg = pg_driver.load()
    from psycopg.pq import TransactionStatus
    from psycopg.types.json import Json, Jsonb

    class Connection(psycopg.Connection):  # type: ignore[name-defined]
        """Closed quietly when its thread's connection state is dropped, as SQLite's
        connections are: peewee keeps one per thread and a worker thread may end without
        closing it (psycopg would warn)."""

        def __del__(self) -> None:
            with contextlib.suppress(Exception):
                if not self.closed:
                    self.close()

    class Adapter(peewee.Psycopg3Adapter):
        txn_idle = TransactionStatus.IDLE
        txn_inerror = TransactionStatus.INERROR
        txn_unknown = TransactionStatus.UNKNOWN

        def __init__(self) -> None:
            super().__init__()
            self.json_type = Json
            self.jsonb_type = Jsonb

        def check_driver(self) -> None:
            return None

        def get_binary_type(self) -> Any:
            return psycopg.Binary

        def connect(self, db: Any, **params: Any) -> Any:
            return Connection.connect(db.database, **params)

        def server_side_cursor(self, conn: Any) -> Any:
            raise NotImplementedError("server-side cursors are not used")

    class CuratorPostgres(peewee.PostgresqlDatabase):
        """Every transaction but a read snapshot takes the write lock first."""

        param = "?"
        answer_deadline_s: float | None = None
        """How long a statement may go unanswered (set per database: :class:`_Deadlines`)."""
        psycopg2_adapter = Adapter
        psycopg3_adapter = Adapter

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.idle = IdleConnections(self._fit_to_keep, self._emptied)
            """Connections handed back by one thread, kept for the next (:mod:`pg_idle`)."""
            self._handing_back = threading.local()

        @contextlib.contextmanager
        def handing_back(self) -> Iterator[None]:
            """A ``close()`` on this thread within keeps the connection for the next
            thread if it is fit (:mod:`pg_idle`); any other ``close()`` closes it."""
            self._handing_back.on = True
            try:
                yield
            finally:
                self._handing_back.on = False

        def _connect(self) -> Any:
            kept = self.idle.take()
            if kept is not None:
                return kept
            try:
                return super()._connect()  # type: ignore[misc]  # untyped in peewee
            except psycopg.OperationalError as exc:  # not a statement's: nothing was sent
                raise CannotConnect(cannot_connect(exc, self.database)) from exc

        def _close(self, conn: Any) -> None:
            if not (getattr(self._handing_back, "on", False) and self.idle.keep(conn)):
                conn.close()

        @staticmethod
        def _fit_to_keep(conn: Any) -> bool:
            """Whether ``conn`` is outside any transaction, working and quiet (pg_idle)."""
            return bool(
                not conn.closed
                and not conn.broken
                and conn.info.transaction_status == TransactionStatus.IDLE
                and not _DEADLINES.given_up(conn)
                and socket_quiet(conn)
            )

        def _emptied(self, conn: Any) -> bool:
            """``DISCARD ALL`` on ``conn`` (given up after ``EMPTIED_WITHIN_S``): its
            session as a new connection's (pg_idle); False when it failed or went
            unanswered."""
            # psycopg's cache of the statements it prepared would name statements that
            # DISCARD ALL removes (it forgets them only at times): it prepares none
            # on this connection from now on
            conn.prepare_threshold = None
            try:
                with _DEADLINES.watching(conn, EMPTIED_WITHIN_S):
                    conn.execute("DISCARD ALL", prepare=False)
            except Exception:  # any failure: the connection is closed, not kept
                return False
            conn.session_settings = {}  # none left to give a connection made after it
            return not _DEADLINES.given_up(conn)

        def cursor(self, named_cursor: Any = None) -> Any:
            # A connection the server ended (a restart, pg_terminate_backend, a network
            # cut) fails the statement that met the cut; outside a transaction the next
            # one connects again, so a long-lived process (the MCP server, a follow) is
            # not broken for good. Inside one it is not replaced: its writes are lost and
            # the transaction must fail as a whole.
            settings: dict[str, str] = {}
            if not self.is_closed() and not self.in_transaction():
                state = self._state  # type: ignore[attr-defined]  # peewee's, untyped
                if state.conn.closed or state.conn.broken:
                    settings = dict(getattr(state.conn, "session_settings", {}))
                    with contextlib.suppress(Exception):
                        state.conn.close()
                    state.reset()
            cursor = super().cursor()
            if settings:  # the new connection gets the old one's (a write's lock wait)
                conn = self._state.conn  # type: ignore[attr-defined]
                for statement in settings.values():
                    with peewee.__exception_wrapper__:  # type: ignore[attr-defined]
                        conn.execute(statement)
                conn.session_settings = settings
            return _QmarkCursor(cursor, self)

        def _lost(self, exc: BaseException | None = None) -> bool:
            """Whether this thread's connection was ended by the server or the network
            (``exc``: the error a statement just met).

            psycopg may see the hang-up before libpq does: its wait raises "connection
            socket closed" while the connection's status still says it is fine. Every
            error the server sends has a SQLSTATE; one without is the client's own, and
            when the socket has hung up too (a client-side limit, such as libpq's 65,535
            parameters, leaves it working) the connection cannot be used again: it is
            closed here and counts as lost."""
            conn = None if self.is_closed() else self._state.conn  # type: ignore[attr-defined]
            if conn is None:
                return False
            if (
                not (conn.closed or conn.broken)
                and _client_side(exc, psycopg)
                and _socket_gone(conn)
            ):
                with contextlib.suppress(Exception):
                    conn.close()
            return bool(conn.closed or conn.broken)

        def _given_up(self) -> bool:
            """Whether this thread's connection was given up for want of an answer."""
            conn = None if self.is_closed() else self._state.conn  # type: ignore[attr-defined]
            return conn is not None and _DEADLINES.given_up(conn)

        def _waited(self) -> float | None:
            """How long this thread's given-up statement waited (None: none was)."""
            conn = None if self.is_closed() else self._state.conn  # type: ignore[attr-defined]
            return None if conn is None else _DEADLINES.waited(conn)

        def _idle(self) -> bool:
            """Whether no transaction is open on the server (nothing would be lost)."""
            if self.is_closed():
                return True
            conn = self._state.conn  # type: ignore[attr-defined]
            return bool(conn.info.transaction_status == TransactionStatus.IDLE)

        def execute_sql(self, sql: str, params: Any = None) -> Any:
            # The first statement after the server ended an idle connection (a restart,
            # pg_terminate_backend, a network cut) is what finds out. Outside a
            # transaction a read is sent again on a new connection (cursor() makes one);
            # a write may have run before the cut, and inside a transaction the work
            # before it is gone: those fail with one sentence that says so.
            idle = self._idle()
            try:
                cursor = super().execute_sql(sql, params)
            except peewee.OperationalError as exc:
                if not self._lost(exc):
                    raise
                # a server that did not answer is not asked again: it would most likely
                # not answer again, and the caller would wait a second deadline
                again = idle and _REPEATABLE.match(sql) and self.transaction_depth() == 0
                if not again or self._given_up():
                    raise ConnectionLost(_lost_message(exc, idle, self)) from exc
                cursor = self._once_more(
                    lambda: super(CuratorPostgres, self).execute_sql(sql, params)
                )
            setting = _SESSION_SET.match(sql)
            if setting and self.transaction_depth() == 0:
                # kept for a connection made after this one is lost (see cursor())
                conn = self._state.conn  # type: ignore[attr-defined]
                kept = getattr(conn, "session_settings", None)
                if kept is None:
                    kept = conn.session_settings = {}
                kept[setting.group(1).lower()] = sql
            return cursor

        def _once_more(self, call: Any) -> Any:
            """``call`` after a lost connection, on a new one: its own failure to connect
            or to be answered is the same one sentence, never psycopg's bare error."""
            try:
                return call()
            except peewee.OperationalError as exc:
                if self._lost(exc) or self.is_closed():
                    raise ConnectionLost(_lost_message(exc, True, self)) from exc
                raise

        def begin(self, isolation_level: Any = None) -> None:
            try:
                super().begin(isolation_level)
            except peewee.OperationalError as exc:
                if not self._lost(exc):
                    raise
                if self._given_up():
                    raise ConnectionLost(_lost_message(exc, True, self)) from exc
                # nothing had begun: on a new connection
                self._once_more(lambda: super(CuratorPostgres, self).begin(isolation_level))
            self._state.snapshot = isolation_level is not None  # type: ignore[attr-defined]
            if isolation_level is None:
                try:
                    self.execute_sql("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
                except BaseException:
                    # as SQLite's failed BEGIN IMMEDIATE: no transaction is left open (on
                    # a connection that is gone, none is: its error is the one to raise)
                    if not self._lost():
                        self.connection().rollback()
                    raise

        def commit(self) -> None:
            """A connection lost at COMMIT: a read snapshot has nothing to apply (the
            server ends it with the connection); a write cannot know whether it was
            applied, and says so in one sentence."""
            try:
                super().commit()
            except peewee.OperationalError as exc:
                if not self._lost(exc):
                    raise
                if getattr(self._state, "snapshot", False):  # type: ignore[attr-defined]
                    return
                raise CommitOutcomeUnknown(
                    _lost_message(exc, False, self, committing=True)
                ) from exc

        def rollback(self) -> None:
            """On a lost connection there is nothing to roll back: the server ended the
            transaction with it (the error that found the loss is the one raised)."""
            if self._lost():
                return
            super().rollback()

    return CuratorPostgres


def postgres_database(
    url: str,
    busy_timeout_s: float,
    *,
    read_only: bool = False,
    connect_timeout_s: int = CONNECT_TIMEOUT_S,
) -> peewee.PostgresqlDatabase:
    """A peewee database for ``url`` whose writes wait ``busy_timeout_s`` for the lock
    (``read_only``: the server refuses every write of its connections); a server that
    does not complete the connection within ``connect_timeout_s`` is given up (libpq
    counts whole seconds and treats less than 2 as 2)."""
    if not hasattr(peewee, "Psycopg3Adapter"):
        raise CuratorError("a PostgreSQL database needs a peewee with psycopg 3 support")
    try:
        cls = _postgres_class()
    except ImportError as exc:
        raise CuratorError(
            f"a PostgreSQL database needs the psycopg package ({exc}): "
            "pip install 'psycopg[binary]'"
        ) from None
    own = f"-c lock_timeout={int(busy_timeout_s * 1000)}"
    if read_only:
        own += " -c default_transaction_read_only=on"
    given = url_settings(url)
    db = cls(
        url,
        application_name=given.get("application_name") or "curator",
        # after the URL's own (a search_path, a statement_timeout): the lock wait and
        # read-only, which the curator's promises rest on, are the curator's
        options=" ".join(part for part in (given.get("options", ""), own) if part),
        connect_timeout=whole_seconds(given.get("connect_timeout")) or connect_timeout_s,
        # the text is Unicode: a database whose default is LATIN1 turned an emoji into
        # a Python error; the server now says which character it cannot store
        client_encoding="UTF8",
    )
    db.answer_deadline_s = busy_timeout_s + ANSWER_MARGIN_S  # type: ignore[attr-defined]
    return db


def in_transaction(conn: Any) -> bool:
    """Whether ``conn`` (either engine's) is inside a transaction."""
    if hasattr(conn, "in_transaction"):
        return bool(conn.in_transaction)
    return int(conn.info.transaction_status) != 0  # psycopg: IDLE is 0


def sqlstate(exc: BaseException) -> str:
    """PostgreSQL's SQLSTATE from anywhere in the chain ("" for SQLite's errors)."""
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        seen.append(current)
        state = getattr(current, "sqlstate", None)
        if state:
            return str(state)
        for arg in current.args:
            if isinstance(arg, BaseException) and getattr(arg, "sqlstate", None):
                return str(arg.sqlstate)  # type: ignore[attr-defined]
        current = current.__cause__ or current.__context__
    return ""


LOCK_NOT_AVAILABLE = "55P03"
READ_ONLY_TRANSACTION = "25006"
DISK_FULL = "53100"

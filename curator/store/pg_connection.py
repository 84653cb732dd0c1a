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
import re
from collections.abc import Iterator, Sequence
from typing import Any

import peewee

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.errors import CuratorError
from curator.store.engine import WRITE_LOCK_KEY, qmark_to_format


class _QmarkCursor:
    """A psycopg cursor that takes ``?`` parameters; its errors become peewee's."""

    def __init__(self, cursor: Any, database: Any = None) -> None:
        self._cursor = cursor
        self._database = database  # for executemany's lost connection (see there)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> _QmarkCursor:
        with peewee.__exception_wrapper__:  # type: ignore[attr-defined]
            self._cursor.execute(qmark_to_format(sql), tuple(params or ()))
        return self

    def executemany(self, sql: str, seq: Any) -> _QmarkCursor:
        """The bulk writes (a commit's change rows, an undo, a copy) call this directly,
        not through ``execute_sql``: a connection lost under one is the same sentence
        (:class:`ConnectionLost`) as under any statement, not psycopg's bare message."""
        database = self._database
        idle = database is None or database._idle()
        try:
            with peewee.__exception_wrapper__:  # type: ignore[attr-defined]
                self._cursor.executemany(qmark_to_format(sql), [tuple(p) for p in seq])
        except peewee.OperationalError as exc:
            if database is None or not database._lost():
                raise
            raise ConnectionLost(_lost_message(exc, idle)) from exc
        return self

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class ConnectionLost(peewee.OperationalError):
    """The server or the network ended the connection under a statement that could not
    be sent again (a write, or anything inside a transaction): one sentence, no retry."""


_REPEATABLE = regex(r"\s*(SELECT|SHOW|BEGIN|SET)\b", re.IGNORECASE, kept_in=TEXT_PATTERNS_FILE)
"""Statements sent again after a lost idle connection: they change nothing stored."""


def _lost_message(exc: BaseException, idle: bool) -> str:
    reason = (str(exc).strip().splitlines() or ["closed"])[0]
    done = (
        "the statement may not have run; try again"
        if idle
        else "the transaction it was part of was not applied"
    )
    return f"the connection to the PostgreSQL server was lost ({reason}): {done}"


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
        psycopg2_adapter = Adapter
        psycopg3_adapter = Adapter

        def cursor(self, named_cursor: Any = None) -> Any:
            # A connection the server ended (a restart, pg_terminate_backend, a network
            # cut) fails the statement that met the cut; outside a transaction the next
            # one connects again, so a long-lived process (the MCP server, a follow) is
            # not broken for good. Inside one it is not replaced: its writes are lost and
            # the transaction must fail as a whole.
            if not self.is_closed() and not self.in_transaction():
                state = self._state  # type: ignore[attr-defined]  # peewee's, untyped
                if state.conn.closed or state.conn.broken:
                    with contextlib.suppress(Exception):
                        state.conn.close()
                    state.reset()
            return _QmarkCursor(super().cursor(), self)

        def _lost(self) -> bool:
            """Whether this thread's connection was ended by the server or the network."""
            conn = None if self.is_closed() else self._state.conn  # type: ignore[attr-defined]
            return conn is not None and bool(conn.closed or conn.broken)

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
                return super().execute_sql(sql, params)
            except peewee.OperationalError as exc:
                if not self._lost():
                    raise
                if idle and _REPEATABLE.match(sql) and self.transaction_depth() == 0:
                    return super().execute_sql(sql, params)
                raise ConnectionLost(_lost_message(exc, idle)) from exc

        def begin(self, isolation_level: Any = None) -> None:
            try:
                super().begin(isolation_level)
            except peewee.OperationalError:
                if not self._lost():
                    raise
                super().begin(isolation_level)  # nothing had begun: on a new connection
            if isolation_level is None:
                try:
                    self.execute_sql("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
                except BaseException:
                    # as SQLite's failed BEGIN IMMEDIATE: no transaction is left open
                    self.connection().rollback()
                    raise

    return CuratorPostgres


CONNECT_TIMEOUT_S = 10
"""How long a connection may take before the server is given up."""


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
    options = f"-c lock_timeout={int(busy_timeout_s * 1000)}"
    if read_only:
        options += " -c default_transaction_read_only=on"
    return cls(url, application_name="curator", options=options, connect_timeout=connect_timeout_s)


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

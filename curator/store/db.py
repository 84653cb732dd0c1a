"""Opening the database: location, pragmas, schema migrations, transactions.

The database is a SQLite file (below) or, named by a ``postgresql://`` URL, a PostgreSQL
database; what differs between the two engines is asked of the store's dialect
(:mod:`curator.store.engine`), so the rest of this module and the application are the same
for both.

One :class:`Store` per process owns the peewee database and binds the models to it.
peewee keeps one connection per thread, so the GUI thread and the LLM worker thread each
get their own connection to the same file; WAL lets readers proceed while one writer
writes, and every write transaction is ``BEGIN IMMEDIATE`` so two writers queue on the
busy timeout instead of failing with "database is locked" halfway through.

Opening never writes before the file has been judged ours (:mod:`curator.store.opening`),
and never takes the write lock unless a migration is due: reads do not wait for writers.
A database that cannot be written (the file or its folder is read-only) is opened
read-only: reads work, and every write says "read-only: ..." (exit 2).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import peewee
from peewee import SqliteDatabase

from curator.core.userpath import name_room, sqlite_special_name
from curator.errors import CuratorError
from curator.store import change_marker
from curator.store.backup_listing import newest_good_backup
from curator.store.changes import ChangeWatcher, PostgresWatcher, SqliteWatcher
from curator.store.db_choice import BUSY_TIMEOUT_S
from curator.store.db_errors import (
    DATABASE_ERRORS,
    DEFAULT_OUTCOME,
    explain_database_error,
    is_damage,
    lock_error,
)
from curator.store.engine import POSTGRES, SQLITE, Dialect, SchemaObjects, read_change_counter
from curator.store.migrations import LATEST_VERSION
from curator.store.models import ALL_MODELS
from curator.store.opened_file import (
    OpenedFile,
    is_writable,
    missing_folders,
    remove_empty,
    settle_at_exit,
    settle_wal,
)
from curator.store.opening import (
    DamagedDatabaseError,
    FileCheck,
    FileReplacedError,
    MissingDatabaseError,
    ReadOnlyError,
    SchemaTooNewError,
    StoreBusyError,
    StoreError,
    check_file,
    existing_file_uri,
    file_name,
    file_view,
    has_wal,
    judge_server_schema,
    read_only_uri,
    stat_or_none,
)
from curator.store.pg_connection import (
    CannotConnect,
    cannot_connect,
    in_transaction,
    postgres_database,
)
from curator.store.pg_url import (
    check_postgres_url,
    display_url,
    is_postgres_url,
)

__all__ = [
    "MissingDatabaseError",
    "ReadOnlyError",
    "SchemaTooNewError",
    "Store",
    "StoreBusyError",
    "StoreError",
]


class Store:
    """The application's database: judged, opened, migrated if needed, bound to the models.

    ``write()`` is the only way the application writes: an ``IMMEDIATE`` transaction that
    is committed as a whole or not at all. ``read_only=True`` (or a file or folder this
    process cannot write) opens the database without ever writing it. ``create=False``
    refuses a path where no file exists (MissingDatabaseError, with ``missing_message``)
    instead of creating the database there, and an empty one (zero bytes, or SQLite
    without a table) instead of filling it (``empty_message``, where one could be made).
    A write after the file was deleted, moved or replaced is refused (FileReplacedError):
    the store writes only the file it opened.

    ``path`` may be a ``postgresql://`` URL instead (see :meth:`_open_postgres`); then
    ``dialect`` is PostgreSQL's and ``location`` (for messages) shows the URL without a
    password. ``path`` then names no file: what works only on a file (backups, compaction)
    asks first, outside the store through :class:`curator.store.location.DatabaseLocation`.
    """

    dialect: Dialect = SQLITE
    db: peewee.Database
    _url = ""  # PostgreSQL's URL as given (a password included): only for connections
    _file: OpenedFile | None = None  # a SQLite file as opened
    _made_here: SchemaObjects | None = None  # an empty database's objects before its schema

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        read_only: bool = False,
        create: bool = True,
        missing_message: str | None = None,
        empty_message: str | None = None,
    ):
        self.busy_timeout_s = busy_timeout_s
        self._own_bumps = threading.local()  # this thread's committed bumps (data_version)
        self._read_views = threading.local()  # what each thread's read-only connection saw
        if is_postgres_url(path):
            self._open_postgres(os.fspath(path), read_only=read_only, create=create)
            return
        special = sqlite_special_name(path) if isinstance(path, str) else None
        if special is not None:  # a Path is a file's path by construction: opened as one
            raise StoreError(special)
        self.path = Path(path)
        self.location = str(self.path)
        # Before anything else: a name the system refuses (a loop of links, a folder that
        # may not be searched, a name too long) is said as such, not called missing.
        if not create and stat_or_none(self.path) is None:  # a dangling link too
            # A missing file gets no folder, no file, no -wal/-shm.
            raise MissingDatabaseError(
                missing_message or f"no database at {self.path}; nothing was created"
            )
        try:
            found = check_file(self.path, timeout=busy_timeout_s)  # a lock: as long as a write
        except DamagedDatabaseError as exc:
            # refused as it is; the message also says which backup would put it back
            raise exc.naming(newest_good_backup(self.path)) from exc
        if not create and found.empty:
            # Zero bytes (`touch`, a copy that failed) or SQLite with no tables: nobody's
            # database yet, and a command that may not create one must not fill it either.
            # The caller's way on (--create, create=True) only where a database could be made.
            could = not read_only and is_writable(self.path)
            raise MissingDatabaseError(
                empty_message
                if empty_message and could
                else f"{self.path} is empty (no database in it); nothing was written"
            )
        self.read_only = read_only or (found.exists and not is_writable(self.path))
        if not found.exists and (read_only or not is_writable(self.path)):
            raise ReadOnlyError(f"read-only: {self.path} does not exist and cannot be created here")
        if self.read_only and found.needs_migration:
            raise ReadOnlyError(
                f"read-only: {self.path} has schema version {found.version} and needs an "
                f"upgrade to {LATEST_VERSION}, which needs write access"
            )
        if not found.exists:
            over = name_room(self.path.parent, self.path.name + "-journal")
            if over is not None:  # SQLite's own answer: "unable to open database file"
                raise StoreError(
                    f"cannot create {self.path}: its name leaves no room for SQLite's "
                    f"-wal and -journal files beside it ({over[0]:,} bytes with the longer, "
                    f"at most {over[1]:,} here); choose a shorter name"
                )
        made: list[Path] = []  # folders this open creates, innermost first
        if not found.exists:
            made = missing_folders(self.path.parent)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                remove_empty(made)  # those made before the one refused
                reason = exc.strerror or exc
                raise StoreError(f"cannot create the folder of {self.path}: {reason}") from exc
        self.db = self._database(found)
        self.db.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
        try:
            self.db.connect(reuse_if_open=True)
            if not self.read_only:
                self._prepare(found)
        except StoreError:
            self.db.close()
            remove_empty(made)
            raise
        except DATABASE_ERRORS as exc:
            self.db.close()
            remove_empty(made)
            what = "creation" if found.empty else "upgrade" if found.needs_migration else "opening"
            raise self.explain(exc, f"{what} of the database") from exc
        except BaseException:
            # Stopped while it opened (Ctrl-C, SIGTERM): the connection goes too, or its
            # lock kept the half-made file from being taken back by the caller. The
            # statement it was running is held by the traceback's frames, and SQLite keeps
            # a connection closed under a live statement (and its lock) until that goes.
            traceback.clear_frames(sys.exc_info()[2])
            self.db.close()
            remove_empty(made)
            raise
        # by its absolute path: a process that changes its folder still names this file
        self._file = OpenedFile(Path(file_name(self.path)))
        self._file_path = self._file.path
        if self.read_only:
            self._read_views.seen = file_view(self._file_path)
        if not self.read_only:
            # Each thread opens a connection of its own: once the file exists, never by a
            # name that would create it. A window's background read after the file was
            # deleted made a new empty one, and Backup now copied that as a good backup.
            self.db.database = existing_file_uri(self._file_path)
            self.db.connect_params["uri"] = True
        settle_at_exit(self)  # if never closed

    def _open_postgres(self, url: str, *, read_only: bool, create: bool) -> None:
        """Connect, judge the schema and migrate it when due, as for a SQLite file.

        The database itself must exist on the server (the curator never creates one: who
        may create databases is the server administrator's choice). A database without the
        curator's schema is filled only where a SQLite file would be created (``create``);
        one holding tables of another program, or a newer schema, is refused untouched.
        """
        # Every URL, also one a program hands the API: what libpq would refuse by quoting
        # a piece of it (the password perhaps) is refused here without quoting it.
        url = check_postgres_url(url, "the caller", password_allowed=True)
        self.dialect = POSTGRES
        self.location = display_url(url)
        self.path = Path(self.location)  # names no file; messages use ``location``
        self.read_only = read_only
        self._url = url  # for a watcher's connection of its own (never shown)
        self.db = postgres_database(url, self.busy_timeout_s, read_only=read_only)
        self.db.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
        what = "reading of the database's schema"
        try:
            try:
                self.db.connect(reuse_if_open=True)
            except DATABASE_ERRORS as exc:
                # a refusal of the URL by libpq is a driver error, not a connection's
                why = str(exc) if isinstance(exc, CannotConnect) else cannot_connect(exc, url)
                raise StoreError(why) from exc
            version = self.schema_version
            tables = functools.partial(POSTGRES.tables, self.db)
            judge_server_schema(self.location, version, tables, read_only=read_only, create=create)
            if version < LATEST_VERSION:
                what = "upgrade of the database"
                if version == 0:  # an empty database: what the schema adds can be taken back
                    self._made_here = POSTGRES.schema_objects(self.db)
                self.migrate()
        except StoreError:
            self.db.close()
            raise
        except DATABASE_ERRORS as exc:
            self.db.close()
            raise self.explain(exc, what) from exc

    def take_back_schema(self) -> bool:
        """Drop what this open added to an empty PostgreSQL database (its tables, the
        extensions it created), leaving the database as it was before: for a command that
        set the schema up for a write that then failed (``curator copy``). False, and
        nothing done, where this open found a schema already (or the file is SQLite's,
        whose files the caller takes back)."""
        before = self._made_here
        if before is None:
            return False
        self.dialect.take_back(self.db, before)
        self._made_here = None
        return True

    def _database(self, found: FileCheck) -> SqliteDatabase:
        pragmas: dict[str, Any] = {
            "foreign_keys": 1,
            "busy_timeout": int(self.busy_timeout_s * 1000),
        }
        if self.read_only:
            # immutable when no WAL is next to the file: nothing is locked or created (a
            # read-only WAL reader would leave -shm/-wal files behind it).
            name = read_only_uri(self.path, immutable=not has_wal(self.path))
            return SqliteDatabase(
                name, uri=True, timeout=self.busy_timeout_s, pragmas={**pragmas, "query_only": 1}
            )
        return SqliteDatabase(
            file_name(self.path),
            timeout=self.busy_timeout_s,
            # every transaction, peewee's atomic() included, takes the write lock up front
            lock_type="IMMEDIATE",
            pragmas={**pragmas, "synchronous": "normal"},
        )

    def _prepare(self, found: FileCheck) -> None:
        """WAL and migrations: only what is due, so an up-to-date open takes no lock."""
        if not found.wal:
            self.db.execute_sql("PRAGMA journal_mode=wal")
        if found.needs_migration:
            self.migrate()

    # -- schema ---------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        return self.dialect.schema_version(self.db)

    def migrate(self, target: int = LATEST_VERSION) -> None:
        """Apply the pending migrations up to ``target`` in one transaction.

        The version is read again under the write lock: another process may have migrated
        the file between the check and the lock.
        """
        with self.write():
            current = self.schema_version
            if current > LATEST_VERSION:
                raise SchemaTooNewError(
                    f"{self.location} has schema version {current}, newer than {LATEST_VERSION}"
                )
            for version in range(current + 1, target + 1):
                for statement in self.dialect.migration(version):
                    self.db.execute_sql(statement)
            if target > current:
                self.dialect.set_schema_version(self.db, target)

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """An ``IMMEDIATE`` write transaction (takes the write lock up front, waits if busy).

        Nested calls become savepoints. A transaction that changed a row also bumps the
        change counter (:mod:`curator.store.change_marker`), so a backup is taken only
        when something changed since the newest one. When SQLite has already rolled the
        transaction back by itself (a full disk, an I/O error), no second ROLLBACK is
        sent: the error raised is the original one, not "cannot rollback - no
        transaction is active". A lock that stays taken for the whole busy timeout
        raises StoreBusyError; a read-only database raises ReadOnlyError before anything
        is tried.
        """
        db = self.db
        if self.read_only:
            raise ReadOnlyError(
                f"read-only: {self.location} is opened read-only; nothing was changed"
            )
        if db.transaction_depth() > 0:
            with db.atomic():
                yield
            return
        try:
            db.begin()
        except DATABASE_ERRORS as exc:
            lock = self._lock_error(exc)
            if lock is None:
                raise
            raise lock from exc
        try:
            self.check_same_file()
        except FileReplacedError as exc:
            self._rollback_if_open(exc)
            settle_wal(self.db)
            raise
        bumped = False
        try:
            # Inside the try: a Ctrl-C between the push and the try left the transaction
            # pushed and begun, and the open that ran it then failed to close the database
            # ("transaction is open") instead of stopping, its new file not taken back.
            db.push_transaction(db.transaction())
            conn = db.connection()
            # PostgreSQL keeps no count of changed rows: every write transaction counts
            changes_before = getattr(conn, "total_changes", None)
            yield
            if changes_before is None or conn.total_changes != changes_before:
                self.dialect.announce(db)  # before the bump: it names the tables written
                change_marker.bump(db, self.dialect)  # "changed since the newest backup?"
                bumped = True
            # again before the commit: a file deleted while a long write ran would take
            # the work with it, reported as done
            self.check_same_file()
        except BaseException as exc:
            if db.transaction_depth() > 0:  # this one's, pushed: none was open before it
                db.pop_transaction()
            self._rollback_if_open(exc)
            if isinstance(exc, FileReplacedError):
                settle_wal(self.db)
            raise
        db.pop_transaction()
        try:
            db.commit()
        except BaseException as exc:
            self._rollback_if_open(exc)
            raise
        if bumped:
            self._own_bumps.count = getattr(self._own_bumps, "count", 0) + 1

    def check_same_file(self, doing: str = "written") -> None:
        """Refuse when the path no longer names the file opened (:mod:`opened_file`):
        before a write (checked with the write lock held, so no writer of ours can be
        half-way through a replacement), and before the API's reads (``doing="read"``),
        which answered from the deleted file."""
        if self._file is not None:
            self._file.refuse_if_moved(self.location, doing)

    @contextmanager
    def waiting_at_most(self, seconds: float) -> Iterator[None]:
        """Writes on this thread wait at most ``seconds`` for another process's lock.

        For the window's one-row writes made on the GUI thread (a review decision per
        key press): while the CLI imports or commits, a "busy" message after a moment
        beats a window frozen for the whole busy timeout. The lock error names the wait.
        """
        self.dialect.set_wait(self.db, int(seconds * 1000))
        try:
            yield
        except StoreBusyError as exc:
            raise StoreBusyError(
                f"busy: another curator process is writing to {self.location} (waited "
                f"{seconds:g} s for it); nothing was changed, try again when it has finished"
            ) from exc
        finally:
            self.dialect.set_wait(self.db, int(self.busy_timeout_s * 1000))

    @contextmanager
    def write_without_waiting(self) -> Iterator[None]:
        """``write()`` that raises StoreBusyError at once when another process writes.

        For bookkeeping that must never hold up its caller (marking abandoned runs at
        every start, a run's heartbeat): it is simply tried again later.
        """
        waited_ms = int(self.busy_timeout_s * 1000)
        self.dialect.set_wait(self.db, 0)
        try:
            with self.write():
                yield
        finally:
            self.dialect.set_wait(self.db, waited_ms)

    def _rollback_if_open(self, exc: BaseException) -> None:
        """Roll back unless SQLite already did; a failed rollback is noted on ``exc``.

        (peewee's after_commit callbacks are not used by the application, so none are run
        or cleared here.)
        """
        db = self.db
        conn = db.connection() if not db.is_closed() else None
        if conn is None or not in_transaction(conn):
            return
        try:
            db.rollback()
        except DATABASE_ERRORS as rollback_exc:  # the original error still says what happened
            exc.add_note(f"and the rollback failed: {rollback_exc}")

    def _lock_error(self, exc: BaseException) -> StoreError | None:
        return lock_error(exc, self.location, self.busy_timeout_s)

    def explain(
        self, exc: BaseException, what: str, outcome: str = DEFAULT_OUTCOME
    ) -> CuratorError:
        """A SQLite failure of ``what`` as one readable sentence (the real cause)."""
        if self.changed_under_read(exc):
            return StoreError(
                f"{self.location} changed while it was read (another program wrote it); "
                f"the {what} {outcome}: try again"
            )
        return explain_database_error(exc, self.location, what, self.busy_timeout_s, outcome)

    def changed_under_read(self, exc: BaseException) -> bool:
        """Whether ``exc`` is a read-only ``immutable`` connection meeting a file that
        another program rewrote during the read (its checkpoint, a VACUUM): SQLite says
        "malformed", but the file is sound, and read again it answers. Said "damaged",
        it sent its person to an older backup."""
        if not (self.read_only and self.dialect.is_file) or not is_damage(exc):
            return False
        seen = getattr(self._read_views, "seen", None)
        return seen is not None and not seen[2] and file_view(self._file_path) != seen

    @contextmanager
    def read(self) -> Iterator[None]:
        """One consistent snapshot for several queries, without the write lock.

        A deferred transaction: under WAL it never waits for a writer, and every query
        inside sees the same committed state. Inside a write it simply joins it.
        """
        self.see_outside_writes()
        with self.db.transaction(self.dialect.read_isolation):
            yield

    def see_outside_writes(self) -> None:
        """A read-only store reads what others committed since it opened.

        Without a ``-wal`` beside the file, a read-only connection opens it ``immutable``
        (nothing is locked or created next to it); but such a connection takes the file
        as unchanging. A ``Curator(read_only=True)`` kept open while an agent recorded
        episodes read the counts of the moment it opened, then called the healthy file
        damaged ("restore a backup"). So this thread's connection is opened again, as
        the file now is (``immutable`` without a ``-wal``, a plain read-only one with
        it), whenever the file's size, time or ``-wal`` changed since it last looked;
        never inside a transaction. A checkpoint or a VACUUM that rewrites the file during
        one immutable read makes SQLite say "malformed": :meth:`changed_under_read` tells
        that from damage."""
        if not (self.read_only and self.dialect.is_file) or self.db.in_transaction():
            return
        now = file_view(self._file_path)
        if now is None or getattr(self._read_views, "seen", None) == now:
            return
        self.db.close()
        self.db.database = read_only_uri(self._file_path, immutable=not now[2])
        self._read_views.seen = now

    @contextmanager
    def explained_write(self, what: str) -> Iterator[None]:
        """``write()`` whose SQLite failures become one readable CuratorError.

        ``what`` names the operation in the message ("the commit was not applied").
        """
        try:
            with self.write():
                yield
        except DATABASE_ERRORS as exc:
            raise self.explain(exc, what) from exc

    def data_version(self) -> int:
        """Changes when another connection commits, never for this thread's own commits:
        cheap polling for outside changes. SQLite's ``data_version`` is so by itself;
        PostgreSQL's is the change counter, less the bumps this thread committed (the
        window's one-row writes on its own thread were each read as an outside change)."""
        version = self.dialect.data_version(self.db)
        if self.dialect.is_file:
            return version
        return version - int(getattr(self._own_bumps, "count", 0))

    def change_counter(self) -> int:
        """The count of the application's writes (:mod:`change_marker`): unlike
        :meth:`data_version`, the same number whichever connection reads it."""
        return read_change_counter(self.db)

    def changes(self) -> ChangeWatcher:
        """A watcher of changes committed by any connection, this store's included, for
        a thread of its own (:mod:`curator.store.changes`)."""
        if self.dialect.is_file:
            return SqliteWatcher(self.path)
        return PostgresWatcher(self._url)

    def integrity_check(self) -> str:
        return self.dialect.integrity_check(self.db)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Raw query (for diagnostics and tests): its rows, none for a statement without."""
        cursor = self.db.execute_sql(sql, params)
        return list(cursor.fetchall()) if cursor.description is not None else []

    def close(self) -> None:
        """Close this thread's connection (other threads close their own).

        A file deleted, moved or replaced meanwhile gets its ``-wal`` emptied first:
        SQLite leaves the log of a moved file where it is when the connection closes, and
        the file now at the path would read it as its own (a replacement showed the old
        file's episodes instead of its own)."""
        if not self.db.is_closed():
            self.settle_if_moved()
            self.db.close()

    def hand_back(self) -> None:
        """:meth:`close` at the end of a job run on a thread of its own: a server's
        connection fit to be used again is kept, idle, for the next thread that connects
        (:mod:`curator.store.pg_idle`) instead of closed, until :meth:`dispose`."""
        handing_back = getattr(self.db, "handing_back", None)  # only a server's database
        with handing_back() if handing_back is not None else contextlib.nullcontext():
            self.close()

    def dispose(self) -> None:
        """The end of the store's use: :meth:`close`, and on a server the connections
        that other threads handed back (:meth:`hand_back`) and that wait idle are closed
        too. Threads still at work close their own."""
        self.close()
        idle = getattr(self.db, "idle", None)  # only a server's database keeps any
        if idle is not None:
            idle.close_all()

    def settle_if_moved(self) -> None:
        """Empty the ``-wal`` of a file deleted, moved or replaced meanwhile."""
        if self._file is not None and self._file.moved():
            settle_wal(self.db)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

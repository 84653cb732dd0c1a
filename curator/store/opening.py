"""Deciding, without writing a byte, whether a file may be opened as our database.

Every open starts here, before any pragma that writes (``journal_mode=WAL``) and before a
migration. The file is read through a connection that cannot write: ``immutable=1`` when
no ``-wal`` is next to it (nothing is locked or created), ``mode=ro`` when there is one (so
the committed pages in the WAL are read too). The verdict is one of:

- **new**: absent, zero bytes, or a SQLite file with ``user_version`` 0 and no schema at
  all: ours to initialise where the caller may create a database (otherwise refused by
  :class:`curator.store.db.Store`, untouched);
- **ours**: ``user_version`` between 1 and ``LATEST_VERSION`` and every table the
  migrations up to that version create is present (tables of our own a user added are
  tolerated, as Firefox tolerates extra tables in places.sqlite);
- refused, with one sentence: a directory, a pipe or device, a file that is not SQLite,
  a damaged database (``quick_check`` fails), a newer schema, or a database of another
  program (tables but not ours, or an ``application_id``, the header field by which a
  program claims its files, even before it made any table: we set none). A refused file
  is never opened for writing, so it stays byte-identical.

Reading a WAL database whose ``-shm`` is missing (left so by a program that crashed)
makes SQLite create the ``-shm`` beside it, as any reader does; it holds no data and is
left in place: removing it could pull the index from under a program opening the file
at that moment.

A known limit, accepted: the ``immutable`` read assumes nobody changes the main file
meanwhile. Under WAL a writer changes it only when it checkpoints, so a false "damaged"
verdict needs a checkpoint to land during the check; it would refuse (exit 2) and change
nothing, and the next try succeeds.

Like Anki and Zotero, a damaged database is never repaired or replaced behind the
user's back: the message names the newest backup that passes ``quick_check`` and the
``curator restore`` command that puts it back (see :mod:`curator.store.backup`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.core.userpath import shown_path
from curator.core.wording import agree
from curator.errors import CuratorError
from curator.store.migrations import LATEST_VERSION, MIGRATIONS

SQLITE_MAGIC = b"SQLite format 3\x00"
_CREATE_TABLE = regex(r'^CREATE TABLE "([^"]+)"', kept_in=TEXT_PATTERNS_FILE)


class StoreError(CuratorError):
    """A database problem explained in one sentence for the user (exit code 2)."""


class SchemaTooNewError(StoreError):
    """The file was written by a newer version of the application; it is left untouched."""


class ForeignDatabaseError(StoreError):
    """A SQLite database of another program (or a clashing schema); it is left untouched."""


class DamagedDatabaseError(StoreError):
    """The file is not a database or fails ``quick_check``; it is left untouched.

    ``problem`` completes "<path> ..." ("is not a SQLite database", "is damaged (...)");
    ``backup`` is the newest backup that passes ``quick_check`` (None when there is none).
    """

    def __init__(self, path: Path, problem: str, backup: Path | None = None) -> None:
        self.path = path
        self.problem = problem
        self.backup = backup
        if backup is None:
            advice = "no good backup was found; it was not modified"
        else:
            advice = (
                f"it was not modified; the newest good backup is {backup} "
                "(run `curator restore` to put it back)"
            )
        super().__init__(f"{path} {problem}; {advice}")

    def naming(self, backup: Path | None) -> DamagedDatabaseError:
        """The same refusal, naming ``backup`` as the one to restore."""
        return DamagedDatabaseError(self.path, self.problem, backup)


class MissingDatabaseError(StoreError):
    """No file at the path and the command may not create one (exit code 2).

    A mistyped ``--db`` must not hand the agent an empty memory: only the commands that
    create a database on purpose create one; the others refuse and create nothing.
    """


class ReadOnlyError(StoreError):
    """A write to a database that can only be read (file, folder or open mode)."""


class FileReplacedError(StoreError):
    """The path no longer names the file this process opened (deleted, moved or replaced
    since): a write would go to the old file, or through its ``-wal``, named by path, into
    the new one and damage it. Nothing is written; the database must be opened again."""


class StoreBusyError(StoreError):
    """Another process held the write lock for the whole busy timeout (exit code 1)."""

    exit_code = 1


def tables_up_to(version: int) -> frozenset[str]:
    """The tables the migrations up to ``version`` create (read from their SQL)."""
    names: set[str] = set()
    for migration in MIGRATIONS[:version]:
        for statement in migration:
            match = _CREATE_TABLE.match(statement)
            if match:
                names.add(match.group(1))
    return frozenset(names)


@dataclass(frozen=True)
class FileCheck:
    """What :func:`check_file` found: a file that may be opened as our database."""

    path: Path
    exists: bool  # False: absent or zero bytes
    version: int  # PRAGMA user_version (0 for a new file)
    wal: bool  # already in WAL mode (no journal_mode change needed)

    @property
    def needs_migration(self) -> bool:
        return self.version < LATEST_VERSION

    @property
    def empty(self) -> bool:
        """Absent, zero bytes, or SQLite without a table: no database in it yet."""
        return self.version == 0


def file_name(path: Path) -> str:
    """The name SQLite is given for the database file ``path``: absolute, so that no file's
    name is read as one of SQLite's own (``:memory:``, a ``file:`` URI, which this build
    of SQLite reads as a URI even when not asked to)."""
    return os.path.abspath(path)


def existing_file_uri(path: Path) -> str:
    """A URI that opens the file at absolute ``path`` to read and write, never creating
    it (SQLite's ``mode=rw``): "unable to open database file" where it is gone."""
    return f"{path.as_uri()}?mode=rw"


def connect_existing(path: Path, **options: Any) -> sqlite3.Connection:
    """A plain ``sqlite3`` connection to the database file at ``path`` that exists: where
    it is gone, ``sqlite3.OperationalError`` ("unable to open database file") instead of
    a new empty file in its place (which a backup then copied as a good one)."""
    return sqlite3.connect(existing_file_uri(Path(file_name(path))), uri=True, **options)


def read_only_uri(path: Path, *, immutable: bool) -> str:
    """A URI that opens ``path`` without ever writing it (or creating files when immutable)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def has_wal(path: Path) -> bool:
    """Whether a ``-wal`` file lies next to the database SQLite will really open.

    SQLite follows a symbolic link to the real file and keeps the ``-wal`` beside it,
    not beside the link; looking next to the link would miss a crashed writer's WAL and
    open the file ``immutable``, reading stale (even empty) tables.
    """
    return _sibling(path.resolve(), "-wal").exists()


DAMAGE_CODES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
"""The SQLite error names (and their extended forms) that mean the file is damaged; any
other failure to read it is the disk's or the system's, not the file's."""

NO_ROOM_CODES = ("SQLITE_IOERR_SHMSIZE",)
"""The SQLite error names of an index (``-shm``) that could not grow: what a full disk
does to a database being opened or made (SQLite's words for it: "disk I/O error")."""

SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database it writes (named by its name plus these)."""


def remove_side_files(path: Path) -> None:
    """Remove what SQLite kept beside ``path`` (a file gone, or taken back, or a copy that
    failed); what cannot be removed stays."""
    for suffix in SIDE_FILES:
        with contextlib.suppress(OSError):
            path.with_name(path.name + suffix).unlink(missing_ok=True)


def file_view(path: Path) -> tuple[int, int, bool] | None:
    """The file's size and modification time, and whether a ``-wal`` lies beside it: what
    changes when another process writes a file read ``immutable`` (None: not there)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_size, found.st_mtime_ns, has_wal(path)


def _connect_without_writing(path: Path, timeout: float) -> sqlite3.Connection:
    wal = has_wal(path)
    return sqlite3.connect(read_only_uri(path, immutable=not wal), uri=True, timeout=timeout)


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else "quick_check failed"


def stat_or_none(path: Path) -> os.stat_result | None:
    """``os.stat(path)``, links followed; None when nothing is there (no such name, or a
    link to nothing, which a new database may be created through).

    Any other refusal (a folder on the way that may not be searched, a loop of links, a
    name longer than the system allows, a file where a folder should be) is a
    :class:`StoreError` in one sentence: ``Path.exists()`` would call some of them
    "missing" and raise others as they are.
    """
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot use {shown_path(path)}: {exc.strerror or exc}") from exc


def check_file(path: Path, *, timeout: float = 5.0) -> FileCheck:
    """Judge ``path`` read-only; raise a StoreError that says why it may not be opened.

    A damaged file's error names no backup here: this module sits below the one that
    lists backups (which judges each backup with this function), and the open adds the
    newest good backup to the error (:meth:`DamagedDatabaseError.naming`).
    """
    found = stat_or_none(path)
    if found is None:
        return FileCheck(path, exists=False, version=0, wal=False)
    if stat.S_ISDIR(found.st_mode):
        raise StoreError(f"{path} is a folder, not a database file")
    if not stat.S_ISREG(found.st_mode):
        # a FIFO would block the first read for ever; a device is nobody's database
        raise StoreError(f"{path} is not a regular file (a pipe, socket or device); not opened")
    size = found.st_size
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if size == 0:
        return FileCheck(path, exists=False, version=0, wal=False)
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        raise DamagedDatabaseError(path, "is not a SQLite database")
    try:
        conn = _connect_without_writing(path, timeout)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        owner = int(conn.execute("PRAGMA application_id").fetchone()[0])
        objects = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        problem = _first_line(
            "\n".join(str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall())
        )
        journal = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    except sqlite3.DatabaseError as exc:
        name = getattr(exc, "sqlite_errorname", "")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            raise StoreBusyError(
                f"busy: another curator process is writing to {path} (waited {timeout:g} s "
                "for it); try again later"
            ) from exc
        if name and not name.startswith(DAMAGE_CODES):
            # The disk or the system failed the read (an I/O error, no memory, no room for
            # the -shm): not damage, which would send the person to an older backup.
            why = (
                f"{exc} (no room to make its -shm index: is the disk full?)"
                if name.startswith(NO_ROOM_CODES)
                else str(exc)
            )
            raise StoreError(f"cannot read {path}: {why}; it was not modified") from exc
        raise DamagedDatabaseError(path, _damage_text(exc)) from exc
    finally:
        conn.close()
    if problem != "ok":
        raise DamagedDatabaseError(path, f"is damaged (quick_check: {problem})")
    tables = {name for kind, name in objects if kind == "table"}
    if owner != 0:  # we set none: a program that sets one owns the file, tables or not
        raise ForeignDatabaseError(
            f"{path} is not a Memory Curator database (its application id "
            f"{owner & 0xFFFFFFFF:#010x} names another program); it was not modified"
        )
    if version > LATEST_VERSION:
        raise SchemaTooNewError(
            f"{path} has schema version {version}, newer than this version of the "
            f"application understands ({LATEST_VERSION}); it was not modified. "
            "Update the application to open it."
        )
    if version == 0:
        if objects:
            raise ForeignDatabaseError(
                f"{path} is not a Memory Curator database (it holds {_listing(tables)}); "
                "it was not modified"
            )
        return FileCheck(path, exists=True, version=0, wal=journal == "wal")
    missing = tables_up_to(version) - tables
    if missing:
        raise ForeignDatabaseError(
            f"{path} is not a Memory Curator database (schema version {version} but "
            f"{_listing(missing, 'no')}); it was not modified"
        )
    return FileCheck(path, exists=True, version=version, wal=journal == "wal")


def _listing(names: set[str] | frozenset[str], prefix: str = "") -> str:
    shown = sorted(names)
    text = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
    if not shown:
        return "indexes or views but no tables"
    label = agree(len(shown), "table", "tables")
    return f"{prefix} {label} {text}".strip()


def _damage_text(exc: sqlite3.DatabaseError) -> str:
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
        return "is not a SQLite database"
    return f"is damaged ({exc})"


def judge_server_schema(
    location: str,
    version: int,
    tables: Callable[[], Collection[str]],
    *,
    read_only: bool,
    create: bool,
) -> None:
    """A PostgreSQL database judged before anything is written to it, as
    :func:`check_file` judges a SQLite file: a newer schema, another program's tables, a
    database without the curator's schema that may not be set up (``create``) and one
    due for an upgrade that may not be written are each refused untouched.

    ``version`` is the database's schema version (0: none); ``tables`` lists its tables,
    asked only when it has no curator schema."""
    if version > LATEST_VERSION:
        raise SchemaTooNewError(
            f"{location} has schema version {version}, newer than the "
            f"{LATEST_VERSION} this version of the application understands; it was "
            "not modified. Update the application to open it."
        )
    if version == 0:
        found = tables()
        if found:
            shown = ", ".join(sorted(found)[:5])
            raise ForeignDatabaseError(
                f"{location} is not a Memory Curator database (it holds "
                f"tables {shown}); it was not modified"
            )
        if not create:
            raise MissingDatabaseError(
                f"{location} holds no curator database yet; nothing was "
                "created: pass --create to set it up there"
            )
    if version < LATEST_VERSION and read_only:
        raise ReadOnlyError(
            f"read-only: {location} has schema version {version} and needs "
            f"an upgrade to {LATEST_VERSION}, which needs write access"
        )

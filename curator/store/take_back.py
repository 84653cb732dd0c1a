"""Taking back a database a refused command made, and only while nobody else has used it.

A command that may create a database (``demo``, the imports, ``--create``, ``copy``'s
DEST) opens, and so makes, it before it reads the rest of its input; when it then fails,
the new file holds nothing but the schema, and removing it (or giving a file that had
zero bytes its zero bytes back) keeps the promise that a refusal changes nothing.

But "this process made it" is decided from what the path held before the open, and a
second process may have made, or filled, the same path meanwhile: two copies into one new
DEST, or an import beside a copy. Removing the file then deleted the other process's
database after it had reported success. So the file is taken back only when, with
SQLite's write lock held (taken without waiting: a process writing it keeps it), it holds
no row beyond what the schema itself writes. A file that another process has merely
opened is still removed (its next write is refused: the store writes only the file it
opened, see :class:`curator.store.db.FileReplacedError`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from curator.store.engine import CHANGE_COUNTER_KEY
from curator.store.opening import connect_existing, remove_side_files

#: Tables the schema fills by itself: the full-text index's own data. (The ``setting``
#: table's one row of its own, the change counter at 1, is judged apart: a setting saved
#: by ``curator settings`` is someone's, and so is any count of changes above it.)
_SCHEMA_ROWS = ("episode_fts_",)


def _lock_without_waiting(path: Path, *, exclusive: bool) -> sqlite3.Connection:
    """A connection to ``path`` that holds its write lock, taken without waiting (a
    process writing it keeps it). ``exclusive``: in SQLite's exclusive locking mode, which
    keeps a WAL database's index in this process's memory instead of the ``-shm`` file,
    and is granted only while no other connection has the file open."""
    conn = connect_existing(path, timeout=0, isolation_level=None)
    try:
        if exclusive:  # before the first read: only then does the index stay in memory
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE" if exclusive else "BEGIN IMMEDIATE")
    except BaseException:
        conn.close()
        raise
    return conn


def _is_busy(exc: sqlite3.Error) -> bool:
    """Whether SQLite refused because another connection holds a lock on the file."""
    return getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def _holds_nothing_of_anyone(path: Path) -> sqlite3.Connection | None:
    """An open connection holding the write lock when ``path`` holds no data; else None.

    Every reader of a WAL database maps its ``-shm`` index, growing that file first when it
    is short. On a full disk the open that failed left it short (part of its pages written)
    and nobody can grow it, so this reading failed too ("disk I/O error") and the file the
    command made stayed with its side files. Then the lock is taken in exclusive mode,
    which needs no ``-shm``: still never while another process has the file open."""
    try:
        conn = _lock_without_waiting(path, exclusive=False)
    except sqlite3.Error as exc:
        if _is_busy(exc):
            return None
        try:
            conn = _lock_without_waiting(path, exclusive=True)
        except sqlite3.Error:
            return None
    try:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        for table in tables:
            if table.startswith(_SCHEMA_ROWS):
                continue
            quoted = table.replace('"', '""')
            if table == "setting":  # all but the change counter as the schema sets it
                query = f'SELECT 1 FROM "{quoted}" WHERE NOT (key = ? AND value = ?) LIMIT 1'
                found = conn.execute(query, (CHANGE_COUNTER_KEY, "1")).fetchone()
            else:
                found = conn.execute(f'SELECT 1 FROM "{quoted}" LIMIT 1').fetchone()
            if found is not None:
                conn.close()
                return None
        return conn
    except sqlite3.Error:
        conn.close()
        return None


def take_back(database: Path, folders: Sequence[Path] = (), *, zero_bytes: bool = False) -> bool:
    """Remove ``database`` (and its side files, then the empty ``folders``, innermost
    first), or with ``zero_bytes`` truncate it to the zero bytes it had, when it holds
    nothing of anyone (see the module docstring). True when it was taken back."""
    if os.path.exists(database):  # (not for a name the system refuses: nothing was made)
        conn = _holds_nothing_of_anyone(database)
        if conn is None:
            return False
        if zero_bytes:
            # closed first: a closing connection checkpoints its WAL into the file, which
            # would undo the truncation
            conn.close()
            with contextlib.suppress(OSError):
                os.truncate(database, 0)
        else:
            try:  # removed while the write lock is held: no writer slips in between
                with contextlib.suppress(OSError):
                    database.unlink()
            finally:
                conn.close()
        remove_side_files(database)
    for folder in folders:  # a folder something else uses stays
        with contextlib.suppress(OSError):
            folder.rmdir()
    return True


@dataclass(frozen=True)
class Made:
    """What opening a database file at a path may make, judged before the open: the
    missing file and folders (the file first, then its folders innermost first), or the
    file that has zero bytes."""

    missing: tuple[Path, ...] = ()
    zero_bytes: Path | None = None

    @classmethod
    def before_opening(cls, path: Path) -> Made:
        # Where the open makes it: a link to nothing names the file it points to (SQLite
        # follows links), and ``new/../db`` is ``db`` beside ``new``, which the store's own
        # take-back of the folders it made (``new``) removes before this one runs.
        made = Path(os.path.realpath(path))
        missing = tuple(p for p in (made, *made.parents) if not os.path.lexists(p))
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_size == 0:
                return cls(missing, path.resolve())
        return cls(missing)

    def take_back(self) -> None:
        """Give back what the open made (see :func:`take_back`), once the caller has
        closed its own connections to the file."""
        with contextlib.suppress(OSError):  # still zero bytes: nothing was made, nothing to do
            if self.zero_bytes is not None and self.zero_bytes.stat().st_size > 0:
                take_back(self.zero_bytes, zero_bytes=True)
        if self.missing:
            take_back(self.missing[0], self.missing[1:])

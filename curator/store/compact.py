"""Giving disk space back: ``curator compact`` rewrites the database without free pages.

SQLite never shrinks a file by itself: rows deleted by an undo, a relabel rewritten as
new rows, a big import cancelled all leave free pages that the next writes reuse, but
the file keeps its size (measured: a 100k-episode database grew by half over two
relabel/undo cycles). ``VACUUM`` rebuilds it into a fresh file holding only live pages;
in WAL mode the new pages go through the WAL, and a ``TRUNCATE`` checkpoint then writes
them into the main file and empties the WAL, so the space is returned to the disk.

Why an explicit command rather than ``auto_vacuum=INCREMENTAL``: incremental vacuum only
moves free pages to the end of the file and truncates them (it does not defragment), it
would have to be switched on with a full ``VACUUM`` of every existing database anyway,
and a vacuum that rewrites a 700 MB file is not something to start unasked while the
window is in use.

All or nothing, and only on our own, idle databases:

* the file is judged first like every open (:func:`curator.store.opening.check_file`):
  a file that is not a Memory Curator database is refused and left byte-identical;
* the connection takes SQLite's exclusive lock (``locking_mode=EXCLUSIVE``) without
  waiting: while another process has the database open (the window, a running
  ``distill``), it refuses at once with "busy", nothing changed; holding the lock, no
  other process can open the database until the compaction is done;
* ``VACUUM`` is one transaction: interrupted, it leaves the database as it was.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.errors import CuratorError
from curator.store.backup_identity import database_file
from curator.store.opening import (
    MissingDatabaseError,
    StoreBusyError,
    check_file,
    connect_existing,
)


@dataclass(frozen=True)
class CompactReport:
    """One compaction: the database and its ``-wal`` in bytes before and after."""

    path: Path
    before: int
    after: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "database": str(self.path),
            "bytes_before": self.before,
            "bytes_after": self.after,
            "bytes_freed": self.before - self.after,
            "seconds": round(self.seconds, 3),
        }

    def describe(self) -> str:
        return (
            f"compacted {self.path}: {self.before / 1e6:,.1f} MB -> {self.after / 1e6:,.1f} MB "
            f"({(self.before - self.after) / 1e6:,.1f} MB given back, {self.seconds:.1f} s)"
        )


def database_bytes(path: Path) -> int:
    """The bytes the database takes on disk: the file and its ``-wal``."""
    total = 0
    for file in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):
            total += file.stat().st_size
    return total


def compact_database(path: Path, *, missing_message: str | None = None) -> CompactReport:
    """``VACUUM`` the database at ``path`` and give the freed space back to the disk.

    Raises MissingDatabaseError when there is no database (nothing is created), the
    open's own StoreError for a file that is not ours (untouched), StoreBusyError (exit 1)
    while another process has it open, CuratorError when SQLite fails (nothing changed).
    """
    path = database_file(path)
    if not os.path.exists(path):  # a dangling link too
        raise MissingDatabaseError(missing_message or f"no database at {path}; nothing changed")
    found = check_file(path)  # refuses a foreign or damaged file
    if found.empty:  # zero bytes, or SQLite without a table: nobody's database to compact
        raise MissingDatabaseError(f"{path} is empty (no database in it); nothing changed")
    started = time.perf_counter()
    before = database_bytes(path)
    try:
        conn = connect_existing(path, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        raise CuratorError(f"cannot open {path}: {exc}; nothing changed") from exc
    try:
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")  # kept until close: nobody opens it meanwhile
            conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
                raise StoreBusyError(
                    f"busy: {path} is open in another process (the window or a curator "
                    "command); close it and run compact again; nothing changed"
                ) from None
            raise CuratorError(f"cannot lock {path}: {exc}; nothing changed") from exc
        try:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise CuratorError(f"compacting {path} failed: {exc}; nothing changed") from exc
    finally:
        conn.close()
    return CompactReport(path, before, database_bytes(path), time.perf_counter() - started)

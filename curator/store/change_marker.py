"""A marker of the database's content that any process can compare: "changed since?".

Why a marker of our own: SQLite has none that works across processes in WAL mode.
``PRAGMA data_version`` only tells one connection about commits made by others since it
last looked. The file header's change counter (offset 24) is incremented on every commit
in rollback-journal mode, but not in WAL mode, which every database of ours uses: there
it stays put through any number of commits and changes only when a checkpoint happens to
write page 1 (measured: three commits, counter still 1; after a checkpoint, 2; further
commits and checkpoints, still 2). File times are no better: a checkpoint, or the last
connection closing, rewrites the file without changing its content, so "modified after
the newest backup" made every close back up a 700 MB database again.

So :meth:`curator.store.db.Store.write`, the one way the application writes, bumps a
counter in the ``setting`` table (key :data:`CHANGE_COUNTER_KEY`) in the same
transaction as every write that changed a row. The marker is that counter together with
the schema version (``PRAGMA user_version``, set by every migration, so a migration that
only adds a table counts as a change too). Not SQLite's schema cookie: the online backup
API sets the copy's cookie to one past the destination's old one, so it never matches.
The online backup copies the counter into each backup, so "nothing changed since the
newest backup" is simply "the database's marker equals the marker inside its newest
backup": no extra state to keep in step, and a write made while the copy ran (not in the
copy) makes the next backup due.

A write made by another tool (the ``sqlite3`` shell) does not bump the counter; an
explicit backup (``curator backup``, File ▸ Backup now) is always taken, whatever the
marker says. Where either side has no counter (a backup taken before it existed, or a
database never written since), :mod:`curator.store.backup` falls back to file times.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from curator.store.engine import CHANGE_COUNTER_KEY, SQLITE, Dialect
from curator.store.opening import _connect_without_writing


def bump(target: Any, dialect: Dialect = SQLITE) -> None:
    """Count one committed change (call inside the write transaction, before COMMIT).

    ``target``: the store's peewee database, or a plain ``sqlite3`` connection. One
    statement (the engine's upsert, :attr:`curator.store.engine.Dialect.bump_sql`); the
    value stays JSON text (a whole number).
    """
    run = getattr(target, "execute_sql", None) or target.execute
    run(dialect.bump_sql, (CHANGE_COUNTER_KEY,))


def read_marker(path: Path) -> str | None:
    """``"<counter>:<schema version>"`` of a database or backup file, read without writing
    (None: no counter yet, or the file cannot be read)."""
    try:
        conn = _connect_without_writing(path, 1.0)
    except sqlite3.Error:
        return None
    try:
        with contextlib.closing(conn):
            row = conn.execute(
                'SELECT "value" FROM "setting" WHERE "key" = ?', (CHANGE_COUNTER_KEY,)
            ).fetchone()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error:
        return None
    if row is None:
        return None
    return f"{row[0]}:{version}"

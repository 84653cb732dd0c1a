"""Opening the SQLite database: location, pragmas, schema migrations, transactions.

One :class:`Store` per process owns the peewee database and binds the models to it.
peewee keeps one connection per thread, so the GUI thread and the LLM worker thread each
get their own connection to the same file; WAL lets readers proceed while one writer
writes, and every write transaction is ``BEGIN IMMEDIATE`` so two writers queue on the
busy timeout instead of failing with "database is locked" halfway through.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from peewee import DatabaseError as PeeweeDatabaseError
from peewee import SqliteDatabase

from curator.errors import CuratorError
from curator.store.migrations import LATEST_VERSION, MIGRATIONS
from curator.store.models import ALL_MODELS

APP_NAME = "memory-curator"
DB_ENV = "CURATOR_DB"
BUSY_TIMEOUT_S = 30.0


class StoreError(CuratorError):
    """A database problem explained in one sentence for the user."""


class SchemaTooNewError(StoreError):
    """The file was written by a newer version of the application; it is left untouched."""


def default_db_path() -> Path:
    """The database in the user's data directory (created on first use)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "curator.sqlite"


def resolve_db_path(cli_value: str | os.PathLike[str] | None) -> Path:
    """``--db`` wins, then ``CURATOR_DB``, then the per-user default."""
    if cli_value:
        return Path(cli_value).expanduser()
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    return default_db_path()


def read_user_version(path: Path) -> int:
    """The schema version of an existing file, read without changing a byte of it."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path} is not a usable SQLite database ({exc})") from exc


class Store:
    """The application's database: opened, migrated and bound to the models.

    ``write()`` is the only way the application writes: an ``IMMEDIATE`` transaction that
    is committed as a whole or not at all.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        if self.path.exists() and self.path.stat().st_size > 0:
            found = read_user_version(self.path)
            if found > LATEST_VERSION:
                raise SchemaTooNewError(
                    f"{self.path} has schema version {found}, newer than this version of "
                    f"the application understands ({LATEST_VERSION}); it was not modified. "
                    "Update the application to open it."
                )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = SqliteDatabase(
            str(self.path),
            timeout=busy_timeout_s,
            # every transaction, peewee's atomic() included, takes the write lock up front
            lock_type="IMMEDIATE",
            pragmas={
                "journal_mode": "wal",
                "foreign_keys": 1,
                "synchronous": "normal",
                "busy_timeout": int(busy_timeout_s * 1000),
            },
        )
        self.db.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
        try:
            self.db.connect(reuse_if_open=True)
            self.migrate()
        except (sqlite3.DatabaseError, PeeweeDatabaseError) as exc:
            self.db.close()
            raise StoreError(f"{self.path} is not a usable SQLite database ({exc})") from exc

    # -- schema ---------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        return int(self.db.execute_sql("PRAGMA user_version").fetchone()[0])

    def migrate(self, target: int = LATEST_VERSION) -> None:
        """Apply the pending migrations up to ``target`` in one transaction."""
        with self.db.atomic():
            current = self.schema_version
            if current > LATEST_VERSION:
                raise SchemaTooNewError(
                    f"{self.path} has schema version {current}, newer than {LATEST_VERSION}"
                )
            for version in range(current + 1, target + 1):
                for statement in MIGRATIONS[version - 1]:
                    self.db.execute_sql(statement)
            if target > current:
                # PRAGMA takes no parameters; target is an int we computed.
                self.db.execute_sql(f"PRAGMA user_version = {int(target)}")

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """An ``IMMEDIATE`` write transaction (takes the write lock up front, waits if busy)."""
        with self.db.atomic():
            yield

    def data_version(self) -> int:
        """Changes when another connection commits: cheap polling for outside changes."""
        return int(self.db.execute_sql("PRAGMA data_version").fetchone()[0])

    def integrity_check(self) -> str:
        rows = self.db.execute_sql("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Raw read query (for diagnostics and tests)."""
        return list(self.db.execute_sql(sql, params).fetchall())

    def close(self) -> None:
        """Close this thread's connection (other threads close their own)."""
        if not self.db.is_closed():
            self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

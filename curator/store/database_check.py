"""What a database is, in one sentence: for the Settings pane's Database section.

:func:`describe_location` says where a database is without opening it (the engine, the
file or host, port, database name and user; never a password). :func:`check_database`
opens it without writing and says what it found ("PostgreSQL 16 at
db.example:5432/memory as ana, schema version 14, 1,234 episodes"), or raises one
readable CuratorError. Neither creates, migrates nor writes anything: a missing file, an
older schema or an empty PostgreSQL database is described as what the window will do
when it opens it. Qt-free; the pane runs :func:`check_database` on a worker thread.
"""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path

from curator.core.wording import plural
from curator.errors import CuratorError
from curator.store.engine import POSTGRES
from curator.store.location import DatabaseLocation
from curator.store.migrations import LATEST_VERSION
from curator.store.opening import check_file, has_wal, read_only_uri
from curator.store.pg_connection import postgres_database
from curator.store.pg_url import is_postgres_url

CHECK_TIMEOUT_S = 10.0
"""How long a check waits for a server to answer or a SQLite lock to clear."""


def describe_location(location: str | os.PathLike[str]) -> str:
    """Where the database is, without opening it (see :attr:`DatabaseLocation.summary`)."""
    return DatabaseLocation.named(location).summary


def _schema_words(version: int) -> str:
    if version < LATEST_VERSION:
        return f"schema version {version} (upgraded to {LATEST_VERSION} when the window opens it)"
    return f"schema version {version}"


def _check_sqlite(path: Path, timeout_s: float) -> str:
    found = check_file(path, timeout=timeout_s)  # refuses a damaged, foreign or newer file
    if not path.exists():
        return f"No database at {path} yet: the window creates it there when it opens."
    if found.empty:  # zero bytes, or SQLite without a table (as PostgreSQL's check says)
        return f"{path} is empty: no curator tables yet; the window sets them up when it opens."
    uri = read_only_uri(path, immutable=not has_wal(path))
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_s)
        try:
            episodes = int(conn.execute("SELECT COUNT(*) FROM episode").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise CuratorError(f"cannot read {path}: {exc}") from exc
    return f"SQLite file {path}, {_schema_words(found.version)}, {plural(episodes, 'episode')}."


def _check_postgres(url: str, timeout_s: float) -> str:
    db = postgres_database(
        url, timeout_s, read_only=True, connect_timeout_s=max(2, math.ceil(timeout_s))
    )
    where = describe_location(url)
    try:
        try:
            db.connect()
        except Exception as exc:  # the driver's own errors: one line, never a password
            reason = " ".join(str(exc).split())
            raise CuratorError(f"cannot connect to {where}: {reason}") from None
        # a server that answers the connection and then stalls a query gives up in time too
        db.execute_sql(f"SET statement_timeout = {max(1, int(timeout_s * 1000))}")
        info = db.connection().info
        major = int(info.server_version) // 10000
        user = f" as {info.user}" if info.user else ""
        port = f":{info.port}" if info.port else ""
        host = info.host if not str(info.host).startswith("/") else "the local socket"
        server = f"PostgreSQL {major} at {host}{port}/{info.dbname}{user}"
        version = POSTGRES.schema_version(db)
        if version > LATEST_VERSION:
            raise CuratorError(
                f"{server} has schema version {version}, newer than the {LATEST_VERSION} "
                "this version understands: update the application to open it"
            )
        if version == 0:
            tables = POSTGRES.tables(db)
            if tables:
                shown = ", ".join(sorted(tables)[:5])
                raise CuratorError(f"{server} is not a Memory Curator database (tables {shown})")
            return f"{server}: no curator tables yet; the window sets them up when it opens."
        row = db.execute_sql("SELECT COUNT(*) FROM episode").fetchone()
        return f"{server}, {_schema_words(version)}, {plural(int(row[0]), 'episode')}."
    except CuratorError:
        raise
    except Exception as exc:  # a query refused by the server (permissions): one line
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CuratorError(f"cannot read {where}: {reason}") from None
    finally:
        if not db.is_closed():
            db.close()


def check_database(location: str | os.PathLike[str], timeout_s: float = CHECK_TIMEOUT_S) -> str:
    """Open ``location`` without writing and say what it holds, in one sentence.

    CuratorError (one line) when it cannot be opened as the window would: unreachable,
    refused, damaged, not a curator database, or a schema newer than this version's.
    """
    if is_postgres_url(location):
        return _check_postgres(os.fspath(location), timeout_s)
    return _check_sqlite(Path(location), timeout_s)

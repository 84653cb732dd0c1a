"""Where a database lives, asked one way whatever its engine.

A database is a SQLite file on this computer or a database on a PostgreSQL server. What
the window and the commands show of it (its name, where it is) and what they may do with
it (copy the file for a backup, restore by putting a file back) differ by engine; those
questions are answered by :class:`DatabaseLocation`, never by looking at the location's
type or spelling elsewhere. The SQL differences are the store's
:class:`~curator.store.engine.Dialect`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote

from curator.store.engine import POSTGRES, SQLITE
from curator.store.pg_url import display_url, is_postgres_url, split_url

if TYPE_CHECKING:
    from curator.store.db import Store


@dataclass(frozen=True)
class DatabaseLocation:
    """A database's place: its engine, how it is shown, and its file when it is one."""

    engine: str
    """The engine's name as messages give it: ``SQLite`` or ``PostgreSQL``."""
    shown: str
    """The whole location for messages: the file's path, or the URL without a password."""
    file: Path | None
    """The SQLite file; ``None`` for a database on a server."""

    @classmethod
    def of(cls, store: Store) -> DatabaseLocation:
        """The location of an open store."""
        if store.dialect.is_file:
            return cls(store.dialect.name, str(store.path), store.path)
        return cls(store.dialect.name, store.location, None)

    @classmethod
    def named(cls, location: str | os.PathLike[str]) -> DatabaseLocation:
        """A location as ``--db`` or ``$CURATOR_DB`` names it, before anything is opened
        (a password in a URL never shows in :attr:`shown`)."""
        if is_postgres_url(location):
            return cls(POSTGRES.name, display_url(os.fspath(location)), None)
        path = Path(location)
        return cls(SQLITE.name, str(path), path)

    @property
    def is_local_file(self) -> bool:
        """A file on this computer (SQLite), rather than a database on a server."""
        return self.file is not None

    @property
    def supports_file_backup(self) -> bool:
        """Whether a backup is a copy of the database file, which the window takes on a
        timer and on close; a server's database is backed up with ``pg_dump`` by
        ``curator backup`` instead."""
        return self.file is not None

    @property
    def display_name(self) -> str:
        """A short name for a title or a status bar: the file's name, or the database's
        name on its server (``service NAME`` where a service file names it)."""
        if self.file is not None:
            return self.file.name
        return url_parts(self.shown)[1] or self.shown

    @property
    def summary(self) -> str:
        """Where the database is, in words: "SQLite file PATH", or "PostgreSQL at
        HOST:PORT/NAME as USER" (for Settings ▸ Database; never a password)."""
        if self.file is not None:
            return f"SQLite file {self.shown}"
        host, dbname, user = url_parts(self.shown)
        shown = f"PostgreSQL at {host}/{dbname}"
        return f"{shown} as {user}" if user else shown

    @property
    def description(self) -> str:
        """The engine and the whole location, for a tooltip (never a password)."""
        kind = "Database file" if self.file is not None else f"{self.engine} database"
        return f"{kind}: {self.shown}"


def url_parts(url: str) -> tuple[str, str, str]:
    """``host:port``, the database's name and the user of a PostgreSQL URL (values in
    its query count; a service file's name stands for the database's)."""
    parts = split_url(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    netloc = parts.netloc.rpartition("@")[2]
    host = query.get("host") or netloc or "the local socket"
    if "port" in query and ":" not in host:
        host = f"{host}:{query['port']}"
    dbname = query.get("dbname") or unquote(parts.path.strip("/"))
    if not dbname and query.get("service"):
        dbname = f"service {query['service']}"
    user = query.get("user") or unquote(parts.username or "")
    return host, dbname, user

"""Which database a command opens, and how long a write waits for another's lock.

One order names the database everywhere (the command line, the window, the MCP server):
``--db``, ``$CURATOR_DB``, the database saved in the profile, then the default file in the
user's data folder (:func:`resolve_db_path`). It lives apart from
:class:`~curator.store.db.Store`, which opens what this module names, because messages
about a database that is missing need the same answers without opening anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from curator.core.userpath import sqlite_special_name, user_path
from curator.errors import CuratorError
from curator.store.pg_url import PROFILE_SOURCE, check_postgres_url, is_postgres_url
from curator.store.profile import saved_database

APP_NAME = "memory-curator"
DB_ENV = "CURATOR_DB"
BUSY_ENV = "CURATOR_BUSY_TIMEOUT"
BUSY_TIMEOUT_S = 30.0


def default_db_path() -> Path:
    """The database in the user's data directory (created on first use)."""
    import platformdirs  # only where no database is named: cron jobs name theirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "curator.sqlite"


def _db_choice(
    cli_value: str | os.PathLike[str] | None,
) -> tuple[str | os.PathLike[str] | None, str]:
    """The database named first (``--db``, ``$CURATOR_DB``, the profile) and where it was
    named; ``(None, "default")`` when none is. The one place that order lives."""
    if cli_value:
        return cli_value, "--db"
    if os.environ.get(DB_ENV):
        return os.environ[DB_ENV], f"${DB_ENV}"
    saved = saved_database()
    if saved is not None:
        return saved, PROFILE_SOURCE
    return None, "default"


def db_path_source(cli_value: str | os.PathLike[str] | None) -> str:
    """Where :func:`resolve_db_path` took the database from, for messages ("named by
    --db"): ``--db``, ``$CURATOR_DB``, ``the profile`` or ``default``."""
    return _db_choice(cli_value)[1]


def resolve_db_path(cli_value: str | os.PathLike[str] | None) -> Path | str:
    """The database to open; the first of these wins:

    1. ``--db`` (``cli_value``);
    2. ``$CURATOR_DB``;
    3. the database saved in the per-user profile (Settings ▸ Database,
       :func:`curator.store.profile.saved_database`);
    4. the default, ``curator.sqlite`` in the user data directory.

    A SQLite file's path, or a ``postgresql://`` URL (a str, made canonical; one with a
    password given by ``--db`` or saved in the profile is refused, see
    :func:`curator.store.pg_url.check_postgres_url`). An empty ``--db`` is a usage error.
    A path with a NUL character cannot name a file (the operating system would refuse it
    deep inside SQLite); it is a usage error here, in one line. A profile that cannot be
    read, or names a database that is no longer valid, is an error too: never a silent
    switch to the default database.
    """
    if cli_value is not None and not os.fspath(cli_value):
        # Not "no --db": falling back to $CURATOR_DB or the default would open (with
        # --create, make) a database the user never named.
        raise CuratorError(
            "--db is empty: give the database file's path, or leave --db out for "
            f"${DB_ENV}, the profile's or the default database"
        )
    raw, source = _db_choice(cli_value)  # the profile is read once here
    if raw is None:
        return default_db_path()
    if "\x00" in os.fspath(raw):
        raise CuratorError(f"the database path given by {source} contains a NUL character")
    if is_postgres_url(raw):
        return check_postgres_url(os.fspath(raw), source)
    special = sqlite_special_name(os.fspath(raw))
    if special is not None:
        raise CuratorError(f"the database given by {source}: {special}")
    return user_path(raw, f"the database path given by {source}")


def _named_and_way(source: str, there: str) -> tuple[str, str]:
    """Where a database's path came from, and how a database is started ``there``."""
    if source == "default":
        return "the default database", (
            "`curator demo`, `curator import FILE`, the window or --create start one"
        )
    if source == PROFILE_SOURCE:
        return "named by the profile, chosen in Settings ▸ Database", (
            "check the path, choose another database in Settings, or pass --create to "
            f"start a new database {there}"
        )
    if source == "SOURCE":  # a copy's source is read, never made
        return "named by SOURCE", "check the path: a copy's source must be a database"
    return f"named by {source}", f"check the path, or pass --create to start a new database {there}"


def missing_database_message(path: Path | str, source: str) -> str:
    """Why a command that may not create a database refuses a missing one, and the way on."""
    named, way = _named_and_way(source, "there")
    return f"no database at {path} ({named}); nothing was created: {way}"


def empty_database_message(path: Path | str, source: str) -> str:
    """Why a command that may not create a database refuses an empty file (zero bytes, or
    SQLite without a table), and the way on."""
    named, way = _named_and_way(source, "in it")
    return f"{path} ({named}) is empty (no database in it); nothing was written: {way}"


def busy_timeout_from_env() -> float:
    """``CURATOR_BUSY_TIMEOUT`` (seconds) or the default: how long a write waits for the lock."""
    raw = os.environ.get(BUSY_ENV, "").strip()
    if not raw:
        return BUSY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise CuratorError(f"{BUSY_ENV} must be a number of seconds (got {raw!r})") from None
    if not 0 <= value <= 3600:
        raise CuratorError(f"{BUSY_ENV} must be between 0 and 3600 seconds (got {raw})")
    return value

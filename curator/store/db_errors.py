"""A database failure said in one sentence that names its real cause.

Busy (another process holds the write lock), read-only, a full disk, a damaged file: the
cause is searched in the whole exception chain (peewee wraps sqlite3's and psycopg's
errors), on both engines (SQLite's error names, PostgreSQL's SQLSTATE codes), so every
command and pane reports the same failure the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import peewee

from curator.errors import CuratorError
from curator.store.db_choice import BUSY_TIMEOUT_S
from curator.store.opening import (
    DAMAGE_CODES,
    NO_ROOM_CODES,
    ReadOnlyError,
    StoreBusyError,
    StoreError,
)
from curator.store.pg_connection import (
    DISK_FULL,
    LOCK_NOT_AVAILABLE,
    READ_ONLY_TRANSACTION,
    CommitOutcomeUnknown,
    ConnectionLost,
    ServerUnreachable,
    sqlstate,
)

DATABASE_ERRORS = (peewee.DatabaseError, sqlite3.DatabaseError)
"""What a database failure is raised as, whichever layer raises it."""


DEFAULT_OUTCOME = "was not applied, nothing changed"
"""What became of one transaction that failed."""
STOPPED_OUTCOME = "stopped; its unfinished transaction was rolled back"
"""The outcome of a command a database error stopped part way (its earlier commits stay)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or during, once each (peewee and the callers
    wrap the driver's errors)."""
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and current not in seen:
        seen.append(current)
        yield current
        current = current.__cause__ or current.__context__


def _error_name(exc: BaseException) -> str:
    """SQLite's error name from anywhere in the chain."""
    names = (str(getattr(e, "sqlite_errorname", "")) for e in _chain(exc))
    return next((name for name in names if name), "")


def server_unreachable(exc: BaseException) -> ServerUnreachable | None:
    """The PostgreSQL server's absence in ``exc``'s chain (a connection that failed or was
    lost), or None."""
    return next((e for e in _chain(exc) if isinstance(e, ServerUnreachable)), None)


def commit_outcome_unknown(exc: BaseException) -> CommitOutcomeUnknown | None:
    """The lost COMMIT anywhere in the chain, or None."""
    return next((e for e in _chain(exc) if isinstance(e, CommitOutcomeUnknown)), None)


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite called the file damaged (its corruption or not-a-database codes)."""
    return _error_name(exc).startswith(DAMAGE_CODES)


def lock_error(exc: BaseException, path: Path | str, busy_timeout_s: float) -> StoreError | None:
    name = _error_name(exc)
    text = str(exc).lower()
    state = sqlstate(exc)
    if state == READ_ONLY_TRANSACTION:
        return ReadOnlyError(f"read-only: {path} cannot be written ({exc})")
    locked = name.startswith("SQLITE_BUSY") or "database is locked" in text
    if locked or state == LOCK_NOT_AVAILABLE:
        return StoreBusyError(
            f"busy: another curator process is writing to {path} (waited "
            f"{busy_timeout_s:g} s for it); try again when it has finished"
        )
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return ReadOnlyError(f"read-only: {path} cannot be written ({exc})")
    return None


def explain_database_error(
    exc: BaseException,
    path: Path | str,
    what: str,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    outcome: str = DEFAULT_OUTCOME,
) -> CuratorError:
    """A SQLite failure of ``what`` as one readable sentence naming the real cause.

    The real cause is searched in the whole exception chain: a busy database, a read-only
    file, a full disk, damage; anything else is reported with SQLite's own words.
    ``outcome`` says what became of the work ("was not applied, nothing changed" for one
    transaction).
    """
    if isinstance(exc, CuratorError):
        return exc
    unknown = commit_outcome_unknown(exc)
    if unknown is not None:  # applied or not: no outcome may be claimed
        return StoreError(
            f"the {what} may have been applied: {unknown}; look before doing it again"
        )
    lock = lock_error(exc, path, busy_timeout_s)
    if lock is not None:
        return lock
    name = _error_name(exc)
    # an index that could not grow is what a full disk does to a database being made
    full = name.startswith(("SQLITE_FULL", *NO_ROOM_CODES)) or sqlstate(exc) == DISK_FULL
    if full or "disk is full" in str(exc).lower():
        return StoreError(
            f"database or disk is full: the {what} {outcome} ({path}); "
            "free some space and try again"
        )
    if is_damage(exc):
        return StoreError(f"{path} is damaged ({exc}); the {what} {outcome}")
    lost = next((e for e in _chain(exc) if isinstance(e, ConnectionLost)), None)
    if lost is not None:  # its sentence says what became of the work: not said twice
        return StoreError(f"the {what} failed: {lost}")
    # PostgreSQL adds CONTEXT and HINT lines to its message: the first one says it
    reason = (str(exc).strip().splitlines() or [""])[0]
    return StoreError(f"the {what} failed: {reason}; it {outcome}")

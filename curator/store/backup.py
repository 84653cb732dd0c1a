"""Backups of the database file, and quarantine of a damaged one.

A backup is taken with SQLite's online backup API from a connection of its own, so it is
a consistent snapshot even while the window or another command writes (WAL readers see
one committed state), and it never copies a half-written page the way a file copy could.
Each copy is checked with ``integrity_check`` before it counts: a backup that cannot be
restored is worse than none, because it would be trusted.

A damaged database is never deleted: it is renamed aside together with its ``-wal`` and
``-shm`` files (which belong to it; a WAL file left next to a new database of the same
name would be replayed into it), and the caller is told which backup to restore.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from curator.errors import CuratorError
from curator.store.db import BUSY_TIMEOUT_S, Store
from curator.store.models import utcnow

DEFAULT_KEEP = 10
BACKUP_DIR_NAME = "backups"
_DAMAGE_ERRORS = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _timestamp() -> str:
    """UTC with microseconds: sorts as text, unique for backups taken in a row."""
    return utcnow().strftime("%Y%m%dT%H%M%S%fZ")


def default_backup_dir(db_path: Path) -> Path:
    return db_path.parent / BACKUP_DIR_NAME


def _backup_pattern(stem: str) -> re.Pattern[str]:
    return re.compile(re.escape(stem) + r"-\d{8}T\d{12}Z\.sqlite")


def list_backups(db_path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backups of ``db_path``, oldest first."""
    folder = backup_dir or default_backup_dir(db_path)
    if not folder.is_dir():
        return []
    pattern = _backup_pattern(db_path.stem)
    return sorted(p for p in folder.iterdir() if pattern.fullmatch(p.name) and p.is_file())


def _check_file(path: Path, pragma: str) -> str:
    """``ok``, or what the check (or opening the file) reported."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = conn.execute(f"PRAGMA {pragma}").fetchall()
        return "\n".join(str(r[0]) for r in rows)
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()


def backup_database(store: Store, dest_dir: Path | None = None, keep: int = DEFAULT_KEEP) -> Path:
    """Copy the database to ``dest_dir`` (default ``<db dir>/backups``), check it, rotate.

    The copy is written under a temporary name and renamed only once ``integrity_check``
    says ``ok``, so a listed backup is always a good one; the oldest backups beyond
    ``keep`` are deleted afterwards. Raises CuratorError when the copy is not sound (it is
    deleted) or cannot be written.
    """
    if keep < 1:
        raise CuratorError(f"--keep must be at least 1 (got {keep})")
    folder = dest_dir or default_backup_dir(store.path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CuratorError(f"cannot create the backup folder {folder}: {exc}") from exc
    stamp = _timestamp()
    final = folder / f"{store.path.stem}-{stamp}.sqlite"
    partial = folder / f"{store.path.stem}-{stamp}.partial"
    try:
        source = sqlite3.connect(str(store.path), timeout=BUSY_TIMEOUT_S)
        try:
            target = sqlite3.connect(str(partial))
            try:
                source.backup(target)
                # A self-contained single file: no -wal next to the copy.
                target.execute("PRAGMA journal_mode=DELETE")
                result = "\n".join(
                    str(r[0]) for r in target.execute("PRAGMA integrity_check").fetchall()
                )
            finally:
                target.close()
        finally:
            source.close()
    except sqlite3.Error as exc:
        _remove_quietly(partial)
        raise CuratorError(f"backup of {store.path} failed: {exc}") from exc
    if result != "ok":
        _remove_quietly(partial)
        raise CuratorError(
            f"backup of {store.path} failed its integrity check ({result.splitlines()[0]}); "
            "the copy was deleted"
        )
    partial.replace(final)
    for old in list_backups(store.path, folder)[:-keep]:
        _remove_quietly(old)
    return final


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@dataclass(frozen=True)
class QuarantineReport:
    """A damaged database that was moved aside, and what the user can do about it."""

    path: Path  # where the database was (and where a restored backup goes)
    moved_to: Path  # the damaged file's new name
    moved: tuple[Path, ...]  # every file renamed (database, -wal, -shm)
    problem: str  # the first line of what quick_check (or opening it) said
    backup: Path | None  # the newest backup that passes quick_check, if any

    @property
    def message(self) -> str:
        head = (
            f"The database {self.path} is damaged ({self.problem}); "
            f"it was moved aside to {self.moved_to}."
        )
        if self.backup is None:
            return head + " No good backup was found; a new empty database will be created."
        return head + f" Restore the newest good backup: {self.backup}"


def check_or_quarantine(path: Path) -> QuarantineReport | None:
    """At start: if ``path`` fails ``quick_check``, rename it aside and name the backup.

    Returns None when the file is sound or absent. Only damage is acted on (a corrupt
    page, a file that is not a database): a locked or unreadable file is left alone, since
    opening it will report that problem more precisely than a rename would.
    """
    if not path.exists() or path.stat().st_size == 0:
        return None
    problem = _damage(path)
    if problem is None:
        return None
    stamp = _timestamp()
    moved: list[Path] = []
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            target = path.with_name(f"{path.name}.damaged-{stamp}{suffix}")
            source.rename(target)
            moved.append(target)
    backup = None
    for candidate in reversed(list_backups(path)):
        if _check_file(candidate, "quick_check") == "ok":
            backup = candidate
            break
    return QuarantineReport(
        path=path, moved_to=moved[0], moved=tuple(moved), problem=problem, backup=backup
    )


def _damage(path: Path) -> str | None:
    """What is wrong with the file, or None when it is sound (or not judged damaged).

    Read-only, so closing the connection never checkpoints a WAL into a damaged file: the
    WAL is moved aside with it, as it was.
    """
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        name = getattr(exc, "sqlite_errorname", "")
        if any(name.startswith(prefix) for prefix in _DAMAGE_ERRORS):
            return str(exc)
        return None
    finally:
        conn.close()
    text = "\n".join(str(r[0]) for r in rows)
    if text == "ok":
        return None
    return text.strip().splitlines()[0] if text.strip() else "quick_check failed"


def restore_backup(backup: Path, path: Path) -> None:
    """Put a backup in place of a (quarantined, hence absent) database file.

    Refuses to overwrite an existing database: the damaged one must have been moved aside.
    """
    if path.exists() and path.stat().st_size > 0:
        raise CuratorError(f"{path} exists; move it aside before restoring {backup}")
    if _check_file(backup, "quick_check") != "ok":
        raise CuratorError(f"the backup {backup} is not sound; choose an older one")
    partial = path.with_name(path.name + ".restoring")
    shutil.copyfile(backup, partial)
    partial.replace(path)

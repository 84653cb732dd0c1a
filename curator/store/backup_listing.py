"""Finding a database's backups and the newest one that can be restored.

This is the piece both the open and the backup module need: the open names the newest
good backup when it refuses a damaged file (:class:`curator.store.opening.
DamagedDatabaseError`), and the backup module lists, prunes and restores backups. It
reads only (a folder listing, the ids inside the files and a read-only ``quick_check``
of each candidate), so it sits below both and imports neither the database connection
nor the backup machinery.
"""

from __future__ import annotations

from pathlib import Path

from curator.errors import CuratorError
from curator.store.backup_identity import belongs_to, database_file, named_backups, read_database_id
from curator.store.opening import check_file

BACKUP_DIR_NAME = "backups"


def default_backup_dir(db_path: Path) -> Path:
    return db_path.parent / BACKUP_DIR_NAME


def list_backups(db_path: Path, backup_dir: Path | None = None) -> list[Path]:
    """The backups of ``db_path``, oldest first: named for it and not holding another
    database's identity (see :mod:`curator.store.backup_identity`)."""
    db_path = database_file(db_path)
    folder = backup_dir or default_backup_dir(db_path)
    named = named_backups(db_path, folder)
    if not named:
        return []
    own_id = read_database_id(db_path) if db_path.is_file() else None
    return [p for p, by_name in named if belongs_to(own_id, p, by_name)]


def backup_problem(backup: Path) -> str | None:
    """Why ``backup`` cannot be restored (None when it can): read-only checks only."""
    try:
        found = check_file(backup)
    except CuratorError as exc:
        return str(exc)
    if not backup.is_file() or backup.stat().st_size == 0:
        return f"{backup} is empty or missing"
    if found.empty:  # SQLite without a table: restoring it would put an empty memory back
        return f"{backup} is an empty database (no tables)"
    return None


def newest_good_backup(path: Path, backup_dir: Path | None = None) -> Path | None:
    """The newest backup of ``path`` that passes ``quick_check`` and holds our schema (a
    file in the backup folder that is the database itself, a hard link, is none)."""
    for candidate in reversed(list_backups(path, backup_dir)):
        if not is_the_database(candidate, path) and backup_problem(candidate) is None:
            return candidate
    return None


def is_the_database(candidate: Path, path: Path) -> bool:
    """Whether ``candidate`` is the file ``path`` names (a link, a hard link, itself)."""
    try:
        return candidate.samefile(path)
    except OSError:
        return False

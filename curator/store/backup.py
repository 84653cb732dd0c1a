"""Backups of the database file, and restoring one in place of a damaged database.

A backup is taken with SQLite's online backup API from a connection of its own, in
steps of a few MiB, inside one read transaction: in WAL mode (every database of ours)
that is one consistent snapshot that blocks no writer, so the window, a running distill
and other commands keep writing while it is copied, and it never copies a half-written
page the way a file copy could. (Without a WAL the read transaction would block writers,
so there each step reads anew and SQLite restarts the copy when another connection
wrote in between.) Between steps the caller hears the progress and may cancel. Each
copy is checked with ``quick_check`` before it counts: a backup that cannot be restored
is worse than none, because it would be trusted. When backups are taken and which are
kept is :mod:`curator.store.backup_schedule`; which backups are a database's own (its
file name and an id stored inside, so two databases in one folder never prune or restore
each other's) is :mod:`curator.store.backup_identity`.

Restoring a backup in place of the database is :mod:`curator.store.restore`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.core.userpath import name_room
from curator.errors import CuratorError
from curator.store.backup_identity import (
    backup_file_name,
    belongs_to,
    database_file,
    ensure_database_id,
    named_backups,
    read_database_id,
)
from curator.store.backup_listing import (
    default_backup_dir,
    list_backups,
)
from curator.store.backup_partials import ClaimTaken, claimed, sweep_stale
from curator.store.backup_schedule import (
    RECENT,
    STAMP_FORMAT,
    backups_to_keep,
    changed_since,
    stamp_of,
)
from curator.store.change_marker import read_marker
from curator.store.db import Store
from curator.store.db_choice import BUSY_TIMEOUT_S, busy_timeout_from_env
from curator.store.db_errors import DATABASE_ERRORS
from curator.store.models import utcnow
from curator.store.opened_file import folders_taken_back
from curator.store.opening import (
    connect_existing,
    file_name,
    has_wal,
    read_only_uri,
    remove_side_files,
)
from curator.store.settings import SettingsError, load_settings

DEFAULT_KEEP = RECENT
STEP_PAGES = 1024
"""Pages copied per step of the online backup (4 MiB at SQLite's default page size): the
source is read-locked only for one step at a time, and progress and cancellation are
checked between steps."""
MAX_RESTARTS = 20
"""Without a WAL (no read transaction held) SQLite restarts an online backup when another
connection writes the source. A copy that keeps restarting gives up instead of looping."""

ProgressFn = Callable[[int, int], None]
"""``progress(done, total)`` in pages, called from the thread taking the backup."""


class BackupCancelled(CuratorError):
    """The backup was stopped between two steps on request (the partial copy is deleted)."""


@dataclass(frozen=True)
class BackupResult:
    """One backup taken: where it is, how big, how long the copy and the check took."""

    path: Path
    size: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"backup": str(self.path), "size": self.size, "seconds": round(self.seconds, 3)}

    def describe(self) -> str:
        return f"backup: {self.path} ({self.size / 1e6:,.1f} MB, {self.seconds:.2f} s)"


def backup_stamp() -> str:
    """UTC with microseconds: sorts as text, unique for backups taken in a row."""
    return utcnow().strftime(STAMP_FORMAT)


def backup_due(db_path: Path, backup_dir: Path | None = None) -> bool:
    """Whether the database changed since its newest backup was started (or has none).

    "Changed" compares the change marker (:mod:`curator.store.change_marker`) of the
    database with the one inside its newest backup: equal markers mean the same content,
    whatever a checkpoint or a close did to the file times. Where either side has no
    marker (a backup from before markers existed), file times decide as before: modified
    after the newest backup was started. A folder listing, the ids and the markers of the
    database and of its newest backup: a few ms (the close calls it on the GUI thread).
    """
    db_path = database_file(db_path)
    named = named_backups(db_path, backup_dir or default_backup_dir(db_path))
    own_id = read_database_id(db_path) if named and db_path.is_file() else None
    newest = next(
        (p for p, by_name in reversed(named) if belongs_to(own_id, p, by_name)),
        None,
    )
    if newest is None:
        return True
    ours = read_marker(db_path) if db_path.is_file() else None
    theirs = read_marker(newest) if ours is not None else None
    if ours is not None and theirs is not None:
        return ours != theirs
    modified = []
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        with contextlib.suppress(OSError):
            modified.append(path.stat().st_mtime)
    return changed_since(modified, stamp_of(newest.name))


def prune_backups(
    db_path: Path,
    backup_dir: Path | None = None,
    *,
    recent: int = RECENT,
    max_total_bytes: int | None = None,
    taken: Path | None = None,
) -> list[Path]:
    """Delete the backups the age rule (:func:`backups_to_keep`) does not keep, then, while
    this database's backups together exceed ``max_total_bytes``, the oldest of them; the
    newest is never deleted, whatever its size. Returns the deleted paths.

    The size bound is why a 700 MB database does not fill the disk with ten copies in a
    day: the age rule alone keeps up to ``recent`` + 7 + 4 of them. Only this database's
    own backups are counted and deleted (another database's in the same folder are not).
    ``taken``, the backup just made, is never deleted: a backup named for a later time
    (the clock set back, a copy renamed by hand) must not make the new one the oldest.
    """
    dated = {p: stamp_of(p.name) for p in list_backups(db_path, backup_dir)}
    stamps = [s for s in dated.values() if s is not None]
    keep = backups_to_keep(stamps, utcnow(), recent=recent)
    deleted: list[Path] = []
    kept: list[Path] = []
    for path, stamp in dated.items():
        if taken is not None and path == taken:
            kept.append(path)
        elif stamp is not None and stamp not in keep:
            remove_quietly(path)
            deleted.append(path)
        else:
            kept.append(path)
    if max_total_bytes is None:
        return deleted
    sizes = {}
    for path in kept:
        with contextlib.suppress(OSError):
            sizes[path] = path.stat().st_size
    total = sum(sizes.values())
    for path in kept[:-1]:  # oldest first (list_backups' order); never the newest
        if path == taken:
            continue
        if total <= max_total_bytes:
            break
        remove_quietly(path)
        deleted.append(path)
        total -= sizes.get(path, 0)
    return deleted


def backup_database(store: Store, dest_dir: Path | None = None, keep: int = DEFAULT_KEEP) -> Path:
    """:func:`take_backup` of an open store (the CLI's ``curator backup``); the path."""
    return take_backup(
        store.path,
        read_only=store.read_only,
        dest_dir=dest_dir,
        keep=keep,
        max_total_bytes=max_total_bytes_of(store),
    ).path


def max_total_bytes_of(store: Store) -> int | None:
    """The ``backup_max_total_mb`` setting in bytes (None: 0, no size bound; or the
    settings cannot be read, when the age rule alone must do rather than no backup)."""
    try:
        megabytes = load_settings(store).backup_max_total_mb
    except (SettingsError, *DATABASE_ERRORS):
        return None
    return megabytes * 1_000_000 if megabytes > 0 else None


def take_backup(
    db_path: Path,
    *,
    read_only: bool = False,
    dest_dir: Path | None = None,
    keep: int = DEFAULT_KEEP,
    max_total_bytes: int | None = None,
    pages: int = STEP_PAGES,
    progress: ProgressFn | None = None,
    cancelled: Callable[[], bool] | None = None,
    checking: Callable[[], None] | None = None,
) -> BackupResult:
    """Copy the database to ``dest_dir`` (default ``<db dir>/backups``) in steps, check it,
    thin out the old backups.

    The copy uses SQLite's online backup API ``pages`` at a time from a connection of its
    own inside one read transaction, so it is a consistent snapshot that blocks no writer
    (WAL); it is
    written under a temporary name and renamed only once ``quick_check`` says ``ok``, so
    a listed backup is always a good one. ``cancelled`` is asked between steps and during
    the check: when it says True the partial copy is deleted and BackupCancelled raised.
    ``max_total_bytes`` bounds this database's backups by total size as well as by age
    (:func:`prune_backups`; None: by age only). ``checking()`` is called once the copy is
    complete, before its ``quick_check``: the check reports no progress of its own and
    takes about as long as the copy on a large database (measured: some 14 s of a
    17 s backup of 1.1 GB), so a progress bar must say what it waits for then.
    Raises CuratorError when the copy is not sound (it is deleted) or cannot be written.
    """
    if keep < 1:
        raise CuratorError(f"--keep must be at least 1 (got {keep})")
    db_path = database_file(db_path)  # a link: the file it names, its backups
    started = time.perf_counter()
    folder = dest_dir or default_backup_dir(db_path)
    # SQLite adds "-journal" to the partial copy's name: the longest of the names
    names_fit(folder, backup_file_name(db_path, backup_stamp(), ".partial-journal"), "backup")
    with folders_taken_back(folder):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or exc
            raise CuratorError(f"cannot create the backup folder {folder}: {reason}") from exc
        return _back_up_into(
            folder,
            db_path,
            started=started,
            read_only=read_only,
            keep=keep,
            max_total_bytes=max_total_bytes,
            pages=pages,
            progress=progress,
            cancelled=cancelled,
            checking=checking,
        )


def _back_up_into(
    folder: Path,
    db_path: Path,
    *,
    started: float,
    read_only: bool,
    keep: int,
    max_total_bytes: int | None,
    pages: int,
    progress: ProgressFn | None,
    cancelled: Callable[[], bool] | None,
    checking: Callable[[], None] | None,
) -> BackupResult:
    """The backup of :func:`take_backup` into ``folder``, which exists (``started``: when
    the backup began, by ``time.perf_counter()``)."""
    if not read_only:  # before the stamp: this write must not make the next backup due
        # Best effort (a copy without the identity is still a backup): it waits for the
        # write lock only as long as any other write of this process would.
        ensure_database_id(db_path, busy_timeout_from_env())
    sweep_stale(folder, db_path)  # what a killed backup of it left (backup_partials)
    stamp = backup_stamp()
    final = folder / backup_file_name(db_path, stamp)
    partial = folder / backup_file_name(db_path, stamp, ".partial")
    try:
        with claimed(partial):
            result = _copy_and_check(
                db_path, partial, read_only, pages, progress, cancelled, checking
            )
            if result == "ok":
                # the size first: once renamed, another run's pruning may delete it
                size = partial.stat().st_size
                partial.replace(final)  # while still claimed: never swept half way
    except BackupCancelled:
        remove_copy(partial)
        raise
    except sqlite3.Error as exc:
        remove_copy(partial)
        if cancelled is not None and cancelled():
            raise BackupCancelled(f"backup of {db_path} stopped; nothing was kept") from exc
        raise CuratorError(f"backup of {db_path} failed: {exc}") from exc
    except ClaimTaken:
        raise  # the name is another run's: its file is not this run's to remove
    except BaseException:
        remove_copy(partial)
        raise
    if result != "ok":
        remove_copy(partial)
        raise CuratorError(
            f"backup of {db_path} failed its quick_check ({result.splitlines()[0]}); "
            "the copy was deleted"
        )
    prune_backups(db_path, folder, recent=keep, max_total_bytes=max_total_bytes, taken=final)
    return BackupResult(final, size, time.perf_counter() - started)


def _copy_and_check(
    db_path: Path,
    partial: Path,
    read_only: bool,
    pages: int,
    progress: ProgressFn | None,
    cancelled: Callable[[], bool] | None,
    checking: Callable[[], None] | None = None,
) -> str:
    """The stepped copy into ``partial`` and its ``quick_check`` result text."""
    restarts = 0
    last_remaining = -1

    def step(_status: int, remaining: int, total: int) -> None:
        nonlocal restarts, last_remaining
        if cancelled is not None and cancelled():
            raise BackupCancelled(f"backup of {db_path} stopped; nothing was kept")
        if last_remaining >= 0 and remaining > last_remaining:
            restarts += 1  # another connection wrote: SQLite starts the copy again
            if restarts > MAX_RESTARTS:
                raise CuratorError(
                    f"backup of {db_path} gave up: the database changed {restarts} times "
                    "while it was copied; try again when it is idle"
                )
        last_remaining = remaining
        if progress is not None:
            progress(total - remaining, total)

    if read_only:
        uri = read_only_uri(db_path, immutable=not has_wal(db_path))
        source = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
    else:
        source = connect_existing(db_path, timeout=BUSY_TIMEOUT_S)
    try:
        if source.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            # One snapshot for the whole copy. In WAL mode a read transaction blocks no
            # writer (only checkpoints wait for it, and the WAL grows meanwhile); without
            # it each step reads anew and every write elsewhere (a distill run commits
            # once per episode) would make SQLite start the copy from the beginning.
            source.execute("BEGIN")
            source.execute("SELECT count(*) FROM sqlite_master").fetchone()
        target = sqlite3.connect(file_name(partial))
        try:
            source.backup(target, pages=max(pages, 1), progress=step)
            # A self-contained single file: no -wal next to the copy.
            target.execute("PRAGMA journal_mode=DELETE")
            if checking is not None:
                checking()
            if cancelled is not None:
                # A nonzero return interrupts the check (sqlite3.OperationalError).
                target.set_progress_handler(lambda: int(cancelled()), 10_000)
            try:
                rows = target.execute("PRAGMA quick_check").fetchall()
            except sqlite3.DatabaseError as exc:  # a page too damaged to even walk
                if cancelled is not None and cancelled():
                    raise BackupCancelled(f"backup of {db_path} stopped; nothing was kept") from exc
                return str(exc)
            if cancelled is not None and cancelled():
                # the handler runs only every 10,000 steps: a small copy's check ends first
                raise BackupCancelled(f"backup of {db_path} stopped; nothing was kept")
            return "\n".join(str(r[0]) for r in rows)
        finally:
            target.close()
    finally:
        source.close()


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def remove_copy(partial: Path) -> None:
    """Remove a copy this run was writing, and the files SQLite keeps beside it: a copy
    stopped by a full disk left its ``-journal``, which nothing removed later."""
    remove_quietly(partial)
    remove_side_files(partial)


def names_fit(folder: Path, longest: str, what: str) -> None:
    """Refuse, before anything is written, a name the file system cannot hold: a database
    name near the limit (255 bytes on most) leaves no room for a backup's time stamp."""
    over = name_room(folder, longest)
    if over is not None:
        raise CuratorError(
            f"cannot {what}: the database's name is too long for the names a {what} writes "
            f"beside it ({over[0]:,} bytes, at most {over[1]:,} here); rename it to a shorter "
            "one; nothing changed"
        )

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

A damaged database is never replaced at start (opening refuses it and names the newest
good backup); only an explicit restore (``curator restore`` or the window's dialog)
replaces it, and even then it is never deleted: it is renamed aside together with its
``-wal`` and ``-shm`` files (which belong to it; a WAL file left next to a new database
of the same name would be replayed into it). Like Anki's "Restore backup", the current
file is set aside whether or not it is damaged, so a restore never loses anything.

A restore refuses while another process has the database open (the window, a running
``distill``): that process would go on writing into the file set aside, so its work
would vanish from the restored database, and when its connection closed SQLite would
delete the ``-wal`` file *by name*, i.e. the restored database's. Every connection to a
WAL database holds a shared POSIX lock on SQLite's lock bytes of the main file while it
is open, so the restore takes the same bytes exclusively for the swap (as SQLite's own
EXCLUSIVE lock would): it fails at once when anyone holds them, and nobody can open the
database while the files are renamed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.errors import CuratorError
from curator.store.backup_identity import (
    backup_file_name,
    belongs_to,
    database_file,
    ensure_database_id,
    foreign_backup_problem,
    named_backups,
    read_database_id,
    target_verdict,
)
from curator.store.backup_listing import (
    backup_problem,
    default_backup_dir,
    list_backups,
    newest_good_backup,
)
from curator.store.backup_partials import claimed, sweep_stale
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
from curator.store.opening import (
    ReadOnlyError,
    StoreBusyError,
    file_name,
    has_wal,
    read_only_uri,
)
from curator.store.settings import SettingsError, load_settings

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no POSIX locks to test
    fcntl = None  # type: ignore[assignment]

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


def _timestamp() -> str:
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
) -> list[Path]:
    """Delete the backups the age rule (:func:`backups_to_keep`) does not keep, then, while
    this database's backups together exceed ``max_total_bytes``, the oldest of them; the
    newest is never deleted, whatever its size. Returns the deleted paths.

    The size bound is why a 700 MB database does not fill the disk with ten copies in a
    day: the age rule alone keeps up to ``recent`` + 7 + 4 of them. Only this database's
    own backups are counted and deleted (another database's in the same folder are not).
    """
    dated = {p: stamp_of(p.name) for p in list_backups(db_path, backup_dir)}
    stamps = [s for s in dated.values() if s is not None]
    keep = backups_to_keep(stamps, utcnow(), recent=recent)
    deleted: list[Path] = []
    kept: list[Path] = []
    for path, stamp in dated.items():
        if stamp is not None and stamp not in keep:
            _remove_quietly(path)
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
        if total <= max_total_bytes:
            break
        _remove_quietly(path)
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CuratorError(f"cannot create the backup folder {folder}: {exc}") from exc
    if not read_only:  # before the stamp: this write must not make the next backup due
        # Best effort (a copy without the identity is still a backup): it waits for the
        # write lock only as long as any other write of this process would.
        ensure_database_id(db_path, busy_timeout_from_env())
    sweep_stale(folder, db_path)  # what a killed backup of it left (backup_partials)
    stamp = _timestamp()
    final = folder / backup_file_name(db_path, stamp)
    partial = folder / backup_file_name(db_path, stamp, ".partial")
    try:
        with claimed(partial):
            result = _copy_and_check(
                db_path, partial, read_only, pages, progress, cancelled, checking
            )
            if result == "ok":
                partial.replace(final)  # while still claimed: never swept half way
    except BackupCancelled:
        _remove_quietly(partial)
        raise
    except sqlite3.Error as exc:
        _remove_quietly(partial)
        if cancelled is not None and cancelled():
            raise BackupCancelled(f"backup of {db_path} stopped; nothing was kept") from exc
        raise CuratorError(f"backup of {db_path} failed: {exc}") from exc
    except BaseException:
        _remove_quietly(partial)
        raise
    if result != "ok":
        _remove_quietly(partial)
        raise CuratorError(
            f"backup of {db_path} failed its quick_check ({result.splitlines()[0]}); "
            "the copy was deleted"
        )
    prune_backups(db_path, folder, recent=keep, max_total_bytes=max_total_bytes)
    return BackupResult(final, final.stat().st_size, time.perf_counter() - started)


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
        source = sqlite3.connect(file_name(db_path), timeout=BUSY_TIMEOUT_S)
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


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@dataclass(frozen=True)
class RestoreReport:
    """A restore that happened: what was put back and where the previous file went."""

    path: Path  # the database, now the restored copy
    backup: Path  # the backup it was copied from (left as it was)
    moved: tuple[Path, ...]  # the previous database and its -wal/-shm, renamed aside

    @property
    def message(self) -> str:
        aside = f"; the previous file was set aside as {self.moved[0]}" if self.moved else ""
        return f"restored {self.path} from {self.backup}{aside}"


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def restore_backup(path: Path, backup: Path | None = None) -> RestoreReport:
    """Put ``backup`` (default: the newest good one) in place of the database ``path``.

    All or nothing: the backup is checked, copied to a temporary file in the database's
    folder, flushed to disk and checked again; only then are the current file and its
    ``-wal``/``-shm`` renamed aside (never deleted) and the copy renamed into place, an
    atomic step. A failure before that leaves every file as it was; a failure of the final
    rename puts the previous files back. The window must not have the database open. A
    backup holding another database's id is refused, whatever its name. A ``path`` that
    is a link restores the file it names; the link stays.
    """
    path = database_file(path)
    if backup is None:
        backup = newest_good_backup(path)
        if backup is None:
            folder = default_backup_dir(path)
            raise CuratorError(f"no good backup of {path} was found in {folder}; nothing changed")
    problem = backup_problem(backup)
    if problem is not None:
        raise CuratorError(f"the backup cannot be restored: {problem}; nothing changed")
    not_ours, label = target_verdict(path)
    foreign = foreign_backup_problem(path, backup) or not_ours
    if foreign is not None:
        raise CuratorError(f"refused: {foreign}")
    if path.is_dir():
        raise CuratorError(f"{path} is a folder, not a database file; nothing changed")
    if path.is_file() and not os.access(path, os.W_OK):
        # The folder may be writable, which would let the file be renamed aside and a
        # writable copy put in its place: what this user may not write stays as it is.
        raise ReadOnlyError(f"read-only: {path} cannot be written by this user; nothing changed")
    stamp = _timestamp()
    partial = path.with_name(f"{path.name}.restoring-{stamp}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with backup.open("rb") as source, partial.open("xb") as target:
            shutil.copyfileobj(source, target, 1024 * 1024)
            target.flush()
            os.fsync(target.fileno())
        problem = backup_problem(partial)
        if problem is not None:
            raise CuratorError(f"the copy of {backup} is not sound ({problem}); nothing changed")
    except OSError as exc:
        _remove_quietly(partial)
        raise CuratorError(f"cannot restore {backup} to {path}: {exc}; nothing changed") from exc
    except BaseException:
        _remove_quietly(partial)
        raise
    try:
        with _exclusive_use(path), _signals_held():
            moved = _set_aside(path, stamp, label)
            try:
                partial.replace(path)
            except OSError as exc:
                for original, aside in moved:
                    aside.replace(original)
                raise CuratorError(
                    f"cannot restore {backup} to {path}: {exc}; nothing changed"
                ) from exc
    except BaseException:
        _remove_quietly(partial)
        raise
    _fsync_folder(path.parent)
    return RestoreReport(path=path, backup=backup, moved=tuple(aside for _, aside in moved))


def _siblings(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm")]


# SQLite's lock bytes in the main file (os_unix.c): PENDING, RESERVED, then 510 SHARED.
_LOCK_START = 0x40000000
_LOCK_LENGTH = 512


@contextmanager
def _exclusive_use(path: Path) -> Iterator[None]:
    """Hold SQLite's lock bytes of ``path`` exclusively, or refuse: it is open elsewhere.

    Must be entered after the last SQLite connection this process had to ``path`` was
    closed and must not open one inside: closing any descriptor of a file drops every
    POSIX lock this process holds on it.
    """
    if fcntl is None or not path.is_file():
        yield
        return
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        fd = -1  # a file we cannot open for writing: the rename decides
    if fd < 0:
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _LOCK_LENGTH, _LOCK_START)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise CuratorError(f"cannot lock {path}: {exc}; nothing changed") from exc
            raise StoreBusyError(
                f"busy: {path} is open in another process (the window or a curator "
                "command); close it and run restore again; nothing changed"
            ) from None
        yield
    finally:
        os.close(fd)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP until the swap is done, then deliver them as they were.

    Between renaming the database aside and renaming the copy into place the path holds
    no database; a process stopped there left none, and the next start would have created
    an empty one in its place. A signal mask would not do: it is per thread, and a
    process-directed signal goes to any thread that does not block it. So for the few
    renames the handlers only note the signal, which is raised again afterwards (to the
    previous handler or the default action). Handlers can be set from the main thread
    only; elsewhere the swap runs unprotected.
    """
    names = ("SIGINT", "SIGTERM", "SIGHUP")
    wanted = [getattr(signal, n) for n in names if hasattr(signal, n)]
    received: list[int] = []

    def note(signum: int, _frame: object) -> None:
        received.append(signum)

    try:
        previous = {signum: signal.signal(signum, note) for signum in wanted}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # None: a handler set outside Python, which cannot be put back; the default
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)


def _set_aside(path: Path, stamp: str, label: str) -> list[tuple[Path, Path]]:
    """Rename the database and its -wal/-shm aside (damaged or not: never deleted)."""
    moved: list[tuple[Path, Path]] = []
    for source in _siblings(path):
        if source.exists():
            suffix = source.name[len(path.name) :]
            target = path.with_name(f"{path.name}.{label}-{stamp}{suffix}")
            source.rename(target)
            moved.append((source, target))
    return moved

"""Restoring a backup in place of the database file (``curator restore``, the window's
recovery dialog).

A damaged database is never replaced at start (opening refuses it and names the newest
good backup); only an explicit restore (``curator restore`` or the window's dialog)
replaces it, and even then it is never deleted: it is renamed aside together with its
``-wal`` and ``-shm`` files and a hot ``-journal`` (which belong to it; a WAL file left
next to a new database of the same name would be replayed into it). Like Anki's
"Restore backup", the current file is set aside whether or not it is damaged, so a
restore never loses anything.

A restore refuses while another process has the database open (the window, a running
``distill``): that process would go on writing into the file set aside, so its work
would vanish from the restored database, and when its connection closed SQLite would
delete the ``-wal`` file *by name*, i.e. the restored database's. Every connection to a
WAL database holds a shared POSIX lock on SQLite's lock bytes of the main file while it
is open, so the restore takes the same bytes exclusively for the swap (as SQLite's own
EXCLUSIVE lock would): it fails at once when anyone holds them, and nobody can open the
database while the files are renamed.

A restore killed in the middle leaves its copy (``NAME.restoring-<time>``) beside the
database; it holds a ``flock`` on that copy until the copy is the database, so the next
restore of the same database removes every such copy nobody holds
(:mod:`curator.store.backup_partials`).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from curator.errors import CuratorError
from curator.store.backup import backup_stamp, names_fit, remove_copy
from curator.store.backup_identity import database_file, foreign_backup_problem, target_verdict
from curator.store.backup_listing import (
    backup_problem,
    default_backup_dir,
    is_the_database,
    newest_good_backup,
)
from curator.store.backup_partials import ClaimTaken, claimed, sweep_stale_restores
from curator.store.opened_file import folders_taken_back
from curator.store.opening import SIDE_FILES, ReadOnlyError, StoreBusyError, remove_side_files

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no POSIX locks to test
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class RestoreReport:
    """A restore that happened: what was put back and where the previous file went."""

    path: Path  # the database, now the restored copy
    backup: Path  # the backup it was copied from (left as it was)
    moved: tuple[Path, ...]  # the previous database and its side files, renamed aside

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
    if path.exists() and not path.is_file() and not path.is_dir():
        # never renamed aside for a file: a pipe, a socket or a device is nobody's database
        raise CuratorError(
            f"{path} is not a regular file (a pipe, socket or device); nothing changed"
        )
    stamp = backup_stamp()
    # the longest name a restore writes: its copy's journal (".restoring-" is longer than
    # any label the current file is set aside under)
    names_fit(path.parent, f"{path.name}.restoring-{stamp}-journal", "restore")
    sweep_stale_restores(path)  # what a killed restore of it left (backup_partials)
    if backup is None:
        backup = newest_good_backup(path)
        if backup is None:
            folder = default_backup_dir(path)
            raise CuratorError(f"no good backup of {path} was found in {folder}; nothing changed")
    problem = backup_problem(backup)
    if problem is not None:
        raise CuratorError(f"the backup cannot be restored: {problem}; nothing changed")
    if is_the_database(backup, path):
        raise CuratorError(f"{backup} is the database itself, not a backup of it; nothing changed")
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
    partial = path.with_name(f"{path.name}.restoring-{stamp}")
    with folders_taken_back(path.parent):  # (--create) a new folder goes again on failure
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with claimed(partial):  # held until it is the database: a later restore sweeps it
                moved = _put_in_place(backup, path, partial, stamp, label)
        except ClaimTaken:
            raise  # the name is another run's: its file is not this run's to remove
        except OSError as exc:
            remove_copy(partial)
            reason = exc.strerror or exc
            raise CuratorError(
                f"cannot restore {backup} to {path}: {reason}; nothing changed"
            ) from exc
        except BaseException:
            remove_copy(partial)
            raise
    _fsync_folder(path.parent)
    return RestoreReport(path=path, backup=backup, moved=tuple(aside for _, aside in moved))


def _put_in_place(
    backup: Path, path: Path, partial: Path, stamp: str, label: str
) -> list[tuple[Path, Path]]:
    """Copy ``backup`` into ``partial`` (claimed, empty), check the copy, then swap it in
    for ``path``; the files set aside, as (former name, name now)."""
    _copy(backup, partial)
    try:
        _fold_side_files(backup, partial)
    finally:  # the copy's own, while it is still claimed: folded in, or dropped with it
        remove_side_files(partial)
    problem = backup_problem(partial)
    if problem is not None:
        raise CuratorError(f"the copy of {backup} is not sound ({problem}); nothing changed")
    with _exclusive_use(path), _signals_held():
        moved = _set_aside(path, stamp, label)
        try:
            partial.replace(path)
        except OSError as exc:
            _put_back(moved)
            raise CuratorError(
                f"cannot restore {backup} to {path}: {exc}; nothing changed"
            ) from exc
    return moved


def _copy(source: Path, target: Path) -> None:
    """``source``'s bytes into ``target`` (existing), flushed to disk."""
    with source.open("rb") as reading, target.open("r+b") as writing:
        shutil.copyfileobj(reading, writing, 1024 * 1024)
        writing.flush()
        os.fsync(writing.fileno())


def _fold_side_files(backup: Path, partial: Path) -> None:
    """Bring into the copy what ``backup``'s own ``-wal`` (or hot ``-journal``) holds.

    The checks read a file together with its ``-wal``, so a file set aside by an earlier
    restore (``PATH.replaced-<time>`` and its ``-wal``) checked sound and was then copied
    without its last commits. SQLite reads the ``-wal`` beside the file a link names, and
    replays whatever ``-wal`` it finds there: copied beside the copy, the same ``-wal`` is
    checkpointed into it (a hot journal is rolled back by the first read), so the copy
    holds what the checks read, and the side files go."""
    source = Path(os.path.realpath(backup))  # where SQLite looks for a link's -wal
    sides = [s for s in ("-wal", "-journal") if _size(source.with_name(source.name + s)) > 0]
    if not sides:
        return
    for side in sides:
        target = partial.with_name(partial.name + side)
        target.touch(exist_ok=False)
        _copy(source.with_name(source.name + side), target)
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as exc:
        raise CuratorError(
            f"the backup's {'/'.join(sides)} could not be brought into its copy ({exc}); "
            "nothing changed"
        ) from exc
    finally:
        conn.close()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _siblings(path: Path) -> list[Path]:
    # a hot -journal belongs to the file as a -wal does: left beside the restored copy it
    # would be rolled back into it (a database whose writer died in a transaction)
    return [path.with_name(path.name + suffix) for suffix in ("", *SIDE_FILES)]


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
                reason = exc.strerror or exc
                raise CuratorError(f"cannot lock {path}: {reason}; nothing changed") from exc
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
    """Rename the database and its -wal/-shm aside (damaged or not: never deleted); all
    or none: a rename that fails puts back those done before it."""
    moved: list[tuple[Path, Path]] = []
    try:
        for source in _siblings(path):
            if source.exists():
                suffix = source.name[len(path.name) :]
                target = path.with_name(f"{path.name}.{label}-{stamp}{suffix}")
                source.rename(target)
                moved.append((source, target))
    except BaseException:
        _put_back(moved)
        raise
    return moved


def _put_back(moved: list[tuple[Path, Path]]) -> None:
    for original, aside in reversed(moved):
        aside.replace(original)

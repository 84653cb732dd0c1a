"""Half-written backups whose writer is gone, found and removed by the next backup.

The same holds for the copy a restore puts in place of the database
(``NAME.restoring-<time>`` beside it): the next restore of that database removes the
copies no process holds (:func:`sweep_stale_restores`).

A backup is written as ``NAME-<time>.partial`` and renamed once it checks out; every way
it can fail or be stopped removes the partial file, except the ways no code survives
(``kill -9``, a crash, a power cut). Those left the partial file behind for ever, a full
copy of the database each, which the backups' size limit did not count. So the writer
holds an exclusive ``flock`` on its partial file for as long as it writes and checks
it (:func:`claimed`), and every backup of the same database first removes the partial
files of that database whose lock it can take (:func:`sweep_stale`): no process is
writing those. ``flock`` locks are the kernel's and go with the process, whatever way
it ends; SQLite's own locks on the file are of another kind and do not meet them. Where
``flock`` does not exist (not POSIX) nothing is swept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from curator.errors import CuratorError
from curator.store.backup_identity import read_database_id
from curator.store.opening import SIDE_FILES, remove_side_files

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["ClaimTaken", "claimed", "created_in_folder", "sweep_stale", "sweep_stale_restores"]

_STAMP = re.compile(r"\d{8}T\d{12}Z")
"""The time in a backup's name (:func:`curator.store.backup.backup_stamp`)."""


_CLAIMED_HERE: set[Path] = set()
"""The files this process holds claimed. A sweep never opens one: closing any descriptor
of a file drops every POSIX lock the process holds on it, SQLite's own on the copy it is
writing included, and two backups may run at once in one process (the window's)."""
_CLAIM_LOCK = threading.Lock()


class ClaimTaken(CuratorError):
    """Another backup or restore of this database took the same name first (started in
    the same microsecond): its file is left alone, and this one may simply run again."""


@contextlib.contextmanager
def claimed(partial: Path) -> Iterator[None]:
    """Create ``partial`` (it must not exist) and hold its lock until the block ends;
    :class:`ClaimTaken` when it exists (it is someone else's: never removed here).

    The name counts as this process's from before the file exists, so a sweep on another
    thread never meets it between its creation and its lock."""
    key = partial.absolute()
    with _CLAIM_LOCK:  # one thread's claim: a loser must not drop the winner's
        if key in _CLAIMED_HERE:
            raise ClaimTaken(f"{partial.name} is being written by this process; run again")
        _CLAIMED_HERE.add(key)
    try:
        try:
            fd = _created_locked(partial)
        except FileExistsError:
            raise ClaimTaken(
                f"{partial.name} was started at the same moment by another run; run again"
            ) from None
        try:
            yield
        finally:
            os.close(fd)
    finally:
        _CLAIMED_HERE.discard(key)


_NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS})
"""What ``link`` says on a file system without hard links (FAT, some network mounts)."""


_FOLDER_TRIES = 5
"""How often a file is created again in a folder that vanished meanwhile."""


def created_in_folder(path: Path) -> int:
    """``os.open(path)`` created exclusively, its folder made again where it vanished.

    Two backups into one new ``--dir``: the first made the folder, the second found it
    made and waited for its database's lock; the first then failed and took back the
    folder it made, still empty (:func:`curator.store.opened_file.folders_taken_back`),
    and the second failed on "No such file or directory". Once this file is in it, the
    folder is not empty, and no take-back removes it."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    for _ in range(_FOLDER_TRIES - 1):
        try:
            return os.open(path, flags, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, flags, 0o644)


def _created_locked(partial: Path) -> int:
    """A descriptor of ``partial``, created (``FileExistsError`` where it exists) and
    locked before any other process can open it by its name.

    Created in place and then locked, it stood unlocked for two system calls, and a sweep
    in another process (two backups of one database at once) that opened it then took
    its lock, found a file of no database and removed it under the writer. So it is made
    under a private name, locked, and linked into place (a link fails where the name
    exists): whoever opens ``partial`` finds it locked. A process killed between the
    private file's creation and its removal (a few system calls) leaves an empty
    ``.claim-…`` file beside it. Where the file system has no hard links, the file is
    created in place and locked at once, as before."""
    if fcntl is None:
        return created_in_folder(partial)
    private = partial.with_name(f".claim-{secrets.token_hex(8)}")  # short: any name fits
    fd = created_in_folder(private)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            os.link(private, partial)
        except OSError as exc:
            if isinstance(exc, FileExistsError) or exc.errno not in _NO_LINKS:
                raise
            os.close(fd)
            fd = -1
            fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(private)
    return fd


def sweep_stale(folder: Path, db_path: Path) -> list[Path]:
    """Remove the partial backups of ``db_path`` in ``folder`` that no process is writing
    (and their side files); the files removed."""
    return _sweep(folder, f"{db_path.name}-", ".partial", db_path)


def sweep_stale_restores(db_path: Path) -> list[Path]:
    """Remove the copies of a backup that a restore of ``db_path`` was putting in place
    (``NAME.restoring-<time>``, beside it) when it was killed; the files removed."""
    return _sweep(db_path.parent, f"{db_path.name}.restoring-", "", db_path)


def _sweep(folder: Path, prefix: str, suffix: str, db_path: Path) -> list[Path]:
    """Remove ``prefix<time>suffix`` files in ``folder`` that are plainly a killed run's
    copy of ``db_path``: a regular file whose lock can be taken, that no connection has
    open as a WAL database (its ``-shm``'s lock; a restore killed while it folded a
    backup's ``-wal`` into its copy left the copy's ``-wal`` and ``-shm``, open by no one),
    holding no other database's identity (a copy of ``db_path`` holds its identity, or none yet when
    it was cut short; where ``db_path``'s own cannot be read, a copy that holds one is
    left). What cannot be removed (another user's file in a shared folder) is left, and
    the run goes on. A database without an identity, closed, named exactly as such a
    copy (``NAME.restoring-<time to the microsecond>Z``), is taken for one."""
    if fcntl is None:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    own_id: str | None = None
    removed: list[Path] = []
    for name in names:
        stamp = name[len(prefix) : len(name) - len(suffix)]
        if not (name.startswith(prefix) and name.endswith(suffix)) or not _STAMP.fullmatch(stamp):
            continue
        path = folder / name
        if path.absolute() in _CLAIMED_HERE:
            continue  # this process is writing it
        if _open_elsewhere(path):
            continue  # a database someone has open under that name: not a copy
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a backup is writing it
            if own_id is None:
                own_id = (read_database_id(db_path) if db_path.is_file() else None) or ""
            theirs = read_database_id(path)
            if theirs is not None and theirs != own_id:
                continue  # another database of ours that happens to bear such a name
            # The name may have been claimed since it was looked at: looked at again,
            # and removed, under the claims' lock, so no claim comes in between. (A claim
            # is locked before it has its name, so this matters where the file system
            # has no hard links and a claim is made in place, then locked.)
            with _CLAIM_LOCK:
                if path.absolute() in _CLAIMED_HERE:
                    continue
                try:
                    path.unlink()
                except OSError:
                    continue
                remove_side_files(path)
            removed.append(path)
        finally:
            os.close(fd)
    removed += _sweep_orphans(folder, names, prefix, suffix)
    return removed


def _sweep_orphans(folder: Path, names: list[str], prefix: str, suffix: str) -> list[Path]:
    """Remove the side files of copies that are gone (a copy stopped by a full disk was
    removed, and its ``-journal`` stayed): no database is left for them to belong to."""
    removed: list[Path] = []
    present = set(names)
    for name in names:
        side = next((s for s in SIDE_FILES if name.endswith(suffix + s)), None)
        if side is None or not name.startswith(prefix):
            continue
        copy = name[: -len(side)]
        if copy in present or not _STAMP.fullmatch(copy[len(prefix) : len(copy) - len(suffix)]):
            continue
        path = folder / name
        with _CLAIM_LOCK:  # a claim makes its copy first: none in between
            if (folder / copy).absolute() in _CLAIMED_HERE or os.path.lexists(folder / copy):
                continue
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(path).st_mode):
                    path.unlink()
                    removed.append(path)
    return removed


# SQLite's "dead man switch" byte in a -shm (os_unix.c: UNIX_SHM_BASE 120 + 8 locks):
# every connection to a WAL database holds a shared lock on it while it is open.
_SHM_DMS = 128


def _open_elsewhere(path: Path) -> bool:
    """Whether a connection (of any process) has ``path`` open as a WAL database.

    This process's own are found by its open files first: probing a file it has open
    would drop its locks on it (closing any descriptor of a file drops them all)."""
    if fcntl is None:
        return False
    shm = os.path.realpath(f"{path}-shm")
    with contextlib.suppress(OSError):
        for fd_name in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd_name}") == shm:
                    return True
    try:
        fd = os.open(f"{path}-shm", os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # a -shm this user cannot lock: leave the file to whoever can
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return True
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _SHM_DMS)
        except OSError:
            return True
        return False
    finally:
        os.close(fd)  # the probe's lock goes with it

"""One download or removal of a model file at a time: an OS file lock next to the target.

Two downloads of one model writing the same ``FILE.part`` interleave their bytes, one
renames the file while the other still hashes it, and one deletes what the other just
saved. So a download (and a removal) holds an exclusive lock on ``FILE.lock`` in the models
folder for its whole duration; a second one is refused at once with one line (exit code 1,
a conflict) rather than waiting behind a transfer that may take an hour.

The lock is the operating system's (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
Windows), so it is released when its process dies, however it dies: a crashed download
never leaves a stale lock behind. On POSIX the lock file is deleted when it is released; an
opener that lost the race to a deleting holder sees that the file it locked is no longer the
one at the path and tries again. On Windows, where an open file cannot be deleted, the empty
lock file stays. A file system without locks (some network shares) is reported in one line.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from curator.errors import CuratorError

LOCK_SUFFIX = ".lock"


class TargetBusy(CuratorError):
    """Another download or removal of the same model file is running."""

    exit_code = 1


def lock_path(target: Path) -> Path:
    return target.with_name(target.name + LOCK_SUFFIX)


@contextmanager
def target_lock(target: Path, busy_message: str) -> Iterator[None]:
    """Hold the lock of ``target`` for the ``with`` block, or raise :class:`TargetBusy`."""
    lock = lock_path(target)
    fd = _acquire(lock, busy_message)
    try:
        yield
    finally:
        _release(lock, fd)


def _open(lock: Path) -> int:
    try:
        # Never through a link: O_CREAT would create (and the release delete) a file
        # somewhere else, one that is not ours.
        return os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CuratorError(
                f"the lock file {lock} is a symbolic link, not ours; it was left alone: "
                "remove it and try again"
            ) from exc
        raise CuratorError(f"cannot create the lock file {lock}: {exc.strerror or exc}") from exc


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _acquire(lock: Path, busy_message: str) -> int:
        fd = _open(lock)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            os.close(fd)
            raise TargetBusy(busy_message) from exc
        return fd

    def _release(lock: Path, fd: int) -> None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        finally:
            os.close(fd)

else:
    import fcntl

    def _acquire(lock: Path, busy_message: str) -> int:
        while True:
            fd = _open(lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise TargetBusy(busy_message) from exc
                raise CuratorError(
                    f"cannot lock {lock} ({exc.strerror or exc}); this folder's file system "
                    "does not support locks: set $CURATOR_MODELS_DIR to a local folder"
                ) from exc
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)  # the holder deleted the file we locked: lock the new one

    def _release(lock: Path, fd: int) -> None:
        try:
            lock.unlink(missing_ok=True)  # while still held: nobody can lock it meanwhile
        except OSError:
            pass  # a lock file that stays is harmless: the next holder reuses it
        finally:
            os.close(fd)

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
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["claimed", "sweep_stale", "sweep_stale_restores"]

_STAMP = re.compile(r"\d{8}T\d{12}Z")
"""The time in a backup's name (:func:`curator.store.backup.backup_stamp`)."""


_CLAIMED_HERE: set[Path] = set()
"""The files this process holds claimed. A sweep never opens one: closing any descriptor
of a file drops every POSIX lock the process holds on it, SQLite's own on the copy it is
writing included, and two backups may run at once in one process (the window's)."""


@contextlib.contextmanager
def claimed(partial: Path) -> Iterator[None]:
    """Create ``partial`` (it must not exist) and hold its lock until the block ends."""
    fd = os.open(partial, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    key = partial.absolute()
    _CLAIMED_HERE.add(key)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        _CLAIMED_HERE.discard(key)
        os.close(fd)


def sweep_stale(folder: Path, db_path: Path) -> list[Path]:
    """Remove the partial backups of ``db_path`` in ``folder`` that no process is writing
    (and their ``-journal``); the files removed."""
    return _sweep(folder, f"{db_path.name}-", ".partial")


def sweep_stale_restores(db_path: Path) -> list[Path]:
    """Remove the copies of a backup that a restore of ``db_path`` was putting in place
    (``NAME.restoring-<time>``, beside it) when it was killed; the files removed."""
    return _sweep(db_path.parent, f"{db_path.name}.restoring-", "")


def _sweep(folder: Path, prefix: str, suffix: str) -> list[Path]:
    """Remove ``prefix<time>suffix`` files in ``folder`` whose lock can be taken."""
    if fcntl is None:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed: list[Path] = []
    for name in names:
        stamp = name[len(prefix) : len(name) - len(suffix)]
        if not (name.startswith(prefix) and name.endswith(suffix)) or not _STAMP.fullmatch(stamp):
            continue
        path = folder / name
        if path.absolute() in _CLAIMED_HERE:
            continue  # this process is writing it
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
            for leftover in (path, path.with_name(name + "-journal")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
            removed.append(path)
        finally:
            os.close(fd)
    return removed

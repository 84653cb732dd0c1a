"""The SQLite file a store opened, and what is done when its path stops naming it.

SQLite names a database's ``-wal`` by path, not by file. A long-lived process (the MCP
server, the window, the API) keeps its connection: after the file was deleted it went on
acknowledging episodes into an unlinked file, and after a replacement its writes reached
the new file through the ``-wal`` named by path, damaging it. So a store remembers the file
it opened (:class:`OpenedFile`), refuses to write once the path names another, and empties
its ``-wal`` into the file it belongs to before closing (:func:`settle_wal`), at the latest
when the process exits (:func:`settle_at_exit`).

Also here: what an open asks of the file system before it creates anything.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import peewee

from curator.store.db_errors import DATABASE_ERRORS
from curator.store.opening import FileReplacedError


def is_writable(path: Path) -> bool:
    """Whether this process may write ``path`` and create its ``-wal``/``-shm`` siblings.

    Judged on the real file behind a symbolic link: SQLite writes its siblings there.
    """
    path = Path(os.path.realpath(path))  # never raises: a loop of links was refused before
    folder = path.parent
    while not os.path.exists(folder) and folder != folder.parent:  # os.path's never raises
        folder = folder.parent  # a folder still to be created: its nearest existing parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not os.path.exists(path) or os.access(path, os.W_OK)


def missing_folders(folder: Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, innermost first: what a
    ``mkdir(parents=True)`` of it makes, and so what a failure after it may remove again
    (:func:`remove_empty`) without touching a folder that was there before. Judged by their
    names: one reached through ``..`` may be another, older folder, and is never listed."""
    return [f for f in (folder, *folder.parents) if ".." not in f.parts and not os.path.lexists(f)]


@contextmanager
def folders_taken_back(folder: Path) -> Iterator[None]:
    """Around making ``folder`` (``mkdir(parents=True)``) and filling it: on any failure
    or stop inside, the folders that did not exist before it (:func:`missing_folders`) and
    are still empty are removed again, innermost first. A backup to a mistyped ``--dir``
    that then failed left an empty folder tree; one that anything filled meanwhile stays."""
    made = missing_folders(folder)
    try:
        yield
    except BaseException:
        remove_empty(made)
        raise


def remove_empty(folders: list[Path]) -> None:
    """Remove the folders an open that failed created (``a/../b``: the missing ``a``
    made to reach a ``b`` that is no database), innermost first; one in use stays."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def file_identity(path: Path) -> tuple[int, int, bool] | None:
    """The device and inode ``path`` names now, and whether the file holds any byte
    (``None``: nothing there)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino, found.st_size > 0


class OpenedFile:
    """The file at ``path`` (absolute) as it was when the store opened it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.identity = file_identity(path)

    def moved(self) -> bool:
        """Whether the path no longer names the file opened (deleted, moved, replaced,
        emptied)."""
        if self.identity is None:
            return False
        now = file_identity(self.path)
        # the same file emptied (truncated to nothing) counts as replaced: writes to it
        # were acknowledged and then lost with the -wal SQLite deletes; a file that was
        # empty when opened (all of it still in the -wal) may gain its first bytes
        return now is None or now[:2] != self.identity[:2] or (self.identity[2] and not now[2])

    def refuse_if_moved(self, location: str, doing: str) -> None:
        """FileReplacedError, saying that nothing was ``doing``, once :meth:`moved`."""
        if self.moved():
            raise FileReplacedError(
                f"{location} was deleted, moved or replaced since this program opened it; "
                f"nothing was {doing}: open the database again"
            )


def settle_wal(db: peewee.Database) -> None:
    """Empty this thread's connection's ``-wal`` into the file it belongs to (the one
    opened).

    Left full, it would be read as the log of whatever file now lies at the path (a
    replacement read our episodes as its own), and SQLite does not delete it when the
    connection closes on a moved file. Written back into the old file and truncated, it is
    empty for any later opener."""
    # if it fails, nothing more can be done here: the error raised says what happened
    with contextlib.suppress(*DATABASE_ERRORS):
        db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")


class _Settles(Protocol):
    db: peewee.Database

    def settle_if_moved(self) -> None: ...


_OPEN_STORES: weakref.WeakSet[_Settles] = weakref.WeakSet()
"""SQLite stores opened by this process: at its exit, a store whose file was moved or
replaced while it was open gets its ``-wal`` emptied, closed or not (a server stopped
with Ctrl+C never closes its store)."""
_OPEN_STORES_LOCK = threading.Lock()
"""Taken to add to :data:`_OPEN_STORES` and to list it: a thread still opening a store at
exit (a daemon thread) must not change the set while it is read."""


def settle_at_exit(store: _Settles) -> None:
    """Have ``store`` settled (:meth:`_Settles.settle_if_moved`) when the process exits."""
    with _OPEN_STORES_LOCK:
        _OPEN_STORES.add(store)


@atexit.register
def _settle_moved_files_at_exit() -> None:
    with _OPEN_STORES_LOCK:
        stores = list(_OPEN_STORES)
    for store in stores:
        with contextlib.suppress(Exception):  # at exit: nothing to tell anyone any more
            if not store.db.is_closed():
                store.settle_if_moved()

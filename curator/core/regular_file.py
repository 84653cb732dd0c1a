"""Opening a path for reading only when it is a regular file, without ever waiting.

A path a person names (an import, a model file) may be a named pipe, a device or a
directory, or may become one between a check and the open. Opening a named pipe for
reading waits for a writer, for ever; so the file is opened with ``O_NONBLOCK`` (which
makes that open return at once), the type of what was opened is checked on its
descriptor (what is checked is what is read), and a regular file is then read as
usual, blocking.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["NotRegularFile", "file_identity", "open_regular"]


class NotRegularFile(Exception):
    """What was opened is not a regular file; ``mode`` says what it is."""

    def __init__(self, mode: int) -> None:
        super().__init__(f"not a regular file (mode {stat.filemode(mode)})")
        self.mode = mode


def open_regular(path: str | os.PathLike[str] | Path) -> BinaryIO:
    """``path`` opened for binary reading; :class:`NotRegularFile` for anything else,
    and the ``OSError`` of ``os.open`` (missing, denied, a directory on some systems)."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(mode)
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_identity(handle: BinaryIO) -> tuple[int, int] | None:
    """The open file's size and modification time (None: not a file). A file read in
    more than one pass, or as a stream, must be the same after its last read as before
    its first, or a rewrite in place would splice two versions into one import.
    (Replacing it by a rename cannot: the handle keeps the old file, whose change time
    the rename moves, so that is not compared.)"""
    try:
        info = os.fstat(handle.fileno())
    except (OSError, io.UnsupportedOperation):
        return None
    return (info.st_size, info.st_mtime_ns)

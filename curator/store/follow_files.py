"""The files around a followed log: its rotated copies, told by identity, head and time.

:mod:`curator.store.follow` reads a log through one open descriptor and decides what
happened to it from that descriptor alone. When the log was rotated, the lines it had
not read yet are in other files: the renamed old file (found by its device and inode),
the copy of a copy-truncate (found by its first bytes), and, when the log was rotated
more than once between two looks, whole generations it never saw. Those are the rotated
copies modified since its last commit (:func:`recent_copies`). Each is looked for in the
log's folder and, for a log named through a symbolic link, in its target's folder, where
a rotation renames it.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["Found", "head_of", "identity", "recent_copies", "siblings", "st_id"]

ROTATED_SUFFIX = re.compile(r"[.\-_][0-9][0-9.\-_:T]*")
"""What a rotation adds to a log's name: ``.1``, ``-20261204``, ``.2026-12-04T10:00``.
Anything else (``.gz``, ``.debug.jsonl``) is another file, never read as a copy."""

MTIME_SLACK_S = 60.0
"""A copy modified this long before the last commit still counts as modified since it:
file systems keep coarser times than the clock that stamped the commit, and a writer on
another machine (a shared folder) has a clock of its own. A copy read whole is not read
again by the same follower while it stays as it was."""

Found = tuple[str, os.stat_result]
"""A file beside the log: its path and what ``stat`` said of it."""


def st_id(st: os.stat_result) -> tuple[int, int]:
    """The device and inode ``stat`` gave: a file's identity, whatever its name is now."""
    return st.st_dev, st.st_ino


def identity(handle: BinaryIO) -> tuple[int, int]:
    """The identity (:func:`st_id`) of an open file."""
    return st_id(os.fstat(handle.fileno()))


def head_of(handle: BinaryIO, length: int) -> tuple[int, str]:
    """The length and SHA-256 of the first ``length`` bytes of an open file (its current
    offset is kept)."""
    here = handle.tell()
    handle.seek(0)
    data = handle.read(length)
    handle.seek(here)
    return len(data), hashlib.sha256(data).hexdigest()


def _folders(path: str) -> list[tuple[str, str]]:
    """``(folder, name)`` of the log as named and, through a symbolic link, as it is."""
    named = (os.path.dirname(path), os.path.basename(path))
    target = os.path.realpath(path)
    real = (os.path.dirname(target), os.path.basename(target))
    return [named] if real == named else [named, real]


def siblings(path: str) -> Iterator[Found]:
    """Every regular file beside the log (in its folder and its link target's folder),
    itself excluded; a folder that cannot be listed gives nothing. A symbolic link is
    none (a rotation makes none, and one may lead anywhere)."""
    seen: set[tuple[int, int]] = set()
    for folder, name in _folders(path):
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for other_name in names:
            if other_name == name:
                continue
            other = os.path.join(folder, other_name)
            try:
                st = os.lstat(other)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st_id(st) not in seen:
                seen.add(st_id(st))
                yield other, st


def recent_copies(path: str, since: float, skip: set[tuple[int, int]]) -> list[Found]:
    """The log's rotated copies (``agent.jsonl.1``, ``agent.jsonl-20261204``: its name
    and :data:`ROTATED_SUFFIX`) modified since ``since`` (seconds since the epoch),
    oldest first, except the files ``skip`` names by identity."""
    names = {name for _, name in _folders(path)}

    def rotated(other: str) -> bool:
        base = os.path.basename(other)
        return any(
            base.startswith(name) and ROTATED_SUFFIX.fullmatch(base[len(name) :]) is not None
            for name in names
        )

    found = [
        (other, st)
        for other, st in siblings(path)
        if rotated(other) and st_id(st) not in skip and st.st_mtime >= since - MTIME_SLACK_S
    ]
    return sorted(found, key=lambda item: (item[1].st_mtime, item[0]))

"""What the database keeps of a follow: each followed file's position, and which logs
the window follows.

A position is written in the transaction that writes the episodes of the lines before
it (:mod:`curator.store.follow`), so what is committed is always where to read on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from curator.store.db import Store
from curator.store.models import FollowState, Setting, utcnow


@dataclass
class Position:
    """Where a file was read up to: its identity, the byte and line after the last
    complete line read, and its head (how many bytes, their SHA-256)."""

    device: int
    inode: int
    offset: int
    line: int
    head_length: int
    head_sha256: str
    committed: float = 0.0
    """When it was last committed (seconds since the epoch)."""

    @property
    def identity(self) -> tuple[int, int]:
        """The device and inode of the file it is a position in."""
        return self.device, self.inode


def key_of(path: str) -> str:
    """The database key of an absolute path: itself, or, for a name that is not UTF-8 (a
    POSIX file name is bytes; the database holds text only), ``bytes:`` and the name with
    each backslash doubled and each stray byte written as ``\\xNN``.

    One key a path, and never another path's: the escapes cannot be confused with a
    backslash of the name itself, and every other key starts with ``/``.
    """
    raw = os.fsencode(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + raw.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def path_of(key: str) -> str:
    """The path a :func:`key_of` key stands for (``path_of(key_of(p)) == p``)."""
    if not key.startswith("bytes:"):
        return key
    raw = bytearray()
    text = key[len("bytes:") :]
    i = 0
    while i < len(text):
        if text.startswith("\\\\", i):
            raw += b"\\"
            i += 2
        elif text.startswith("\\x", i):
            raw.append(int(text[i + 2 : i + 4], 16))
            i += 4
        else:
            raw += text[i].encode("utf-8")
            i += 1
    return os.fsdecode(bytes(raw))


def load_position(store: Store, path: str) -> Position | None:
    """The committed position of ``path`` (None: never read)."""
    with store.read():
        row = FollowState.get_or_none(FollowState.path == key_of(path))
    if row is None:
        return None
    return Position(
        row.device,
        row.inode,
        row.offset,
        row.line,
        row.head_length,
        row.head_sha256,
        row.updated_at.timestamp(),
    )


def save_position(path: str, position: Position) -> None:
    FollowState.insert(
        path=key_of(path),
        device=position.device,
        inode=position.inode,
        offset=position.offset,
        line=position.line,
        head_length=position.head_length,
        head_sha256=position.head_sha256,
        updated_at=utcnow(),
    ).on_conflict(
        conflict_target=[FollowState.path],
        preserve=[
            FollowState.device,
            FollowState.inode,
            FollowState.offset,
            FollowState.line,
            FollowState.head_length,
            FollowState.head_sha256,
            FollowState.updated_at,
        ],
    ).execute()


def positions(store: Store) -> Iterator[tuple[str, int, int]]:
    """Every followed file's path, byte offset and line number, as committed."""
    with store.read():
        rows = list(FollowState.select().order_by(FollowState.path))
    for row in rows:
        yield row.path, row.offset, row.line


FOLLOWED_KEY = "followed_logs"
"""The setting that holds the logs the window follows on this database (a JSON list)."""


def followed_paths(store: Store) -> list[str]:
    """The logs the window followed on this database when it last ran (absolute paths).

    Kept in the database, beside the positions they are read up to: the window opened
    on the same database (from any settings profile) resumes the same follow. A damaged
    value (not a list of text) is no follow, not an error."""
    with store.read():
        row = Setting.get_or_none(Setting.key == FOLLOWED_KEY)
    value = row.value if row is not None else None
    if not isinstance(value, list):
        return []
    return [path_of(p) for p in value if isinstance(p, str) and p]


def remember_followed(store: Store, paths: Sequence[str | Path]) -> list[str]:
    """Save the logs the window follows (none: the follow was stopped); returns them.

    Each as its :func:`key_of` key: a file name that is not UTF-8 is kept too (the
    database holds text only), and :func:`followed_paths` gives it back."""
    kept = list(dict.fromkeys(os.path.abspath(p) for p in paths))
    saved = [key_of(p) for p in kept]
    with store.write():
        # an upsert both engines speak (PostgreSQL refuses SQLite's replace)
        Setting.insert(key=FOLLOWED_KEY, value=saved).on_conflict(
            conflict_target=[Setting.key], preserve=[Setting.value]
        ).execute()
    return kept

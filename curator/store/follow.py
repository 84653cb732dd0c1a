"""Following the JSON Lines logs an agent writes: each complete new line imported once.

A followed file's position (:class:`~curator.store.models.FollowState`: its device and
inode, the byte after the last complete line read, and a hash of its first bytes) is
written in the same transaction as the episodes of those lines. A follower killed at
any moment therefore restarts exactly where its last commit left it: no line twice, none
lost. Only lines ending in ``\\n`` are read; a partial tail waits for its end.

What happens to a file between two polls is told by its identity and its head:

- same inode, same head, larger: the new lines are read;
- same inode but smaller than the offset, or its head changed: it was truncated
  (copy-truncate) or rewritten. Its rotated copy, a file beside it whose head matches,
  is read from the offset first (the lines written just before the copy), then the
  file is read again from its start;
- another inode at the path: it was rotated by rename, or deleted and created again.
  The old file, found beside it by its inode and head, is read to its end first; then
  the new file from its start;
- gone: reported once, and followed again when it comes back.

Episodes keep the importer's identity (a hash of their content), so a line read twice
by any route (a rotated copy that is itself followed) is still one episode. Lines are
parsed by the importer's own rules (:func:`curator.store.importer.episode_from_object`);
a bad one is reported as ``FILE:LINE: reason`` and the follow goes on.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.store.db import Store
from curator.store.importer import _pack, _to_episode, write_parsed
from curator.store.json_source import LineError, _BadLine, _decode, _loads
from curator.store.models import FollowState, Setting, utcnow

HEAD_BYTES = 1024
"""How much of a file's start identifies it (a log's first line or two)."""

CHUNK_BYTES = 4 * 1024 * 1024
"""Bytes read per transaction: a 100 MB log is imported in bounded memory, and each
chunk's lines are committed with the position after them."""

SUFFIXES = (".jsonl", ".ndjson")
"""The files a followed directory's listing contributes."""

Report = Callable[[str], None]


@dataclass
class FollowTotals:
    """What a follower did, summed over its polls."""

    imported: int = 0
    duplicates: int = 0
    errors: list[LineError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "duplicates": self.duplicates,
            "rejected": len(self.errors),
            "errors": [str(e) for e in self.errors],
            "notes": self.notes,
        }


@dataclass
class _Position:
    device: int
    inode: int
    offset: int
    line: int
    head_length: int
    head_sha256: str


def _key(path: str) -> str:
    """The database key of a path: itself, or, for a name that is not UTF-8 (a POSIX file
    name is bytes), the name with its stray bytes written as ``\\xNN`` (the database
    holds text only)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _head(path: str, length: int) -> tuple[int, str]:
    with open(path, "rb") as handle:
        data = handle.read(length)
    return len(data), hashlib.sha256(data).hexdigest()


def _same_head(path: str, position: _Position) -> bool:
    try:
        length, digest = _head(path, position.head_length)
    except OSError:
        return False
    return length == position.head_length and digest == position.head_sha256


class Follower:
    """Polls a fixed set of files and directories; :meth:`poll` reads what is new.

    ``report`` receives each note and bad line as one line (a CLI prints it on stderr).
    ``should_stop`` is asked between two chunks and two files: a stop (SIGTERM, the
    window's Stop following or its close) then waits for one chunk, not for the rest of
    a 100 MB log; the next poll goes on from the committed position.
    Not thread-safe: one follower per thread.
    """

    def __init__(
        self,
        store: Store,
        paths: Sequence[str | Path],
        report: Report,
        *,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.store = store
        self.paths = [os.path.abspath(p) for p in paths]
        self.report = report
        self.should_stop = should_stop or (lambda: False)
        self.totals = FollowTotals()
        self._gone: set[str] = set()

    # -- which files ------------------------------------------------------------------

    def _files(self) -> list[str]:
        files: list[str] = []
        for path in self.paths:
            if os.path.isdir(path):
                try:
                    names = sorted(os.listdir(path))
                except OSError as exc:
                    self._note_once(path, f"{path}: cannot list it ({exc.strerror or exc})")
                    continue
                files += [os.path.join(path, n) for n in names if n.endswith(SUFFIXES)]
            else:
                files.append(path)
        return files

    def _note(self, message: str) -> None:
        self.totals.notes.append(message)
        self.report(message)

    def _note_once(self, key: str, message: str) -> None:
        if key not in self._gone:
            self._gone.add(key)
            self._note(message)

    # -- one poll ---------------------------------------------------------------------

    def poll(self) -> int:
        """Read every followed file up to its last complete line; the lines imported."""
        before = self.totals.imported
        for path in self._files():
            try:
                self._follow(path)
            except OSError as exc:  # unreadable now (permissions, a vanished share)
                self._note_once(path, f"{path}: cannot read it ({exc.strerror or exc})")
            if self.should_stop():  # after a file, so every poll reads at least a chunk
                break
        return self.totals.imported - before

    def _load(self, path: str) -> _Position | None:
        with self.store.read():
            row = FollowState.get_or_none(FollowState.path == _key(path))
        if row is None:
            return None
        return _Position(
            row.device, row.inode, row.offset, row.line, row.head_length, row.head_sha256
        )

    def _follow(self, path: str) -> None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._note_once(path, f"{path}: not there (yet); followed when it appears")
            return
        if not stat.S_ISREG(st.st_mode):
            self._note_once(path, f"{path}: not a regular file; not followed")
            return
        if path in self._gone:
            self._gone.discard(path)
            self._note(f"{path}: there again (or readable again); following it")
        position = self._load(path)
        if position is not None:
            if (st.st_dev, st.st_ino) != (position.device, position.inode):
                self._drain_rotated(path, position, by_inode=True)
                self._note(f"{path}: a new file (rotated or recreated); read from its start")
                position = None
            elif st.st_size < position.offset or not _same_head(path, position):
                self._drain_rotated(path, position, by_inode=False)
                self._note(
                    f"{path}: truncated or rewritten (size {st.st_size:,} bytes, "
                    f"read up to {position.offset:,}); read again from its start"
                )
                position = None
        if position is None:
            # Recorded at first sight, even with no complete line yet: a file rotated away
            # before its first line was complete is then still found by its start.
            position = _Position(st.st_dev, st.st_ino, 0, 0, *_head(path, HEAD_BYTES))
            with self.store.write():
                _save(path, position)
        self._read(path, path, position)

    def _drain_rotated(self, path: str, position: _Position, *, by_inode: bool) -> None:
        """Read the rest of the file ``path`` was before it was rotated, if it is beside it.

        Renamed: the same inode under another name. Copied then truncated: another file
        whose head matches and which is longer than what was read. Lines of it already
        imported are found by their content hash, so reading a candidate twice is safe.
        """
        folder = os.path.dirname(path)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            other = os.path.join(folder, name)
            if other == path:
                continue
            try:
                st = os.stat(other)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size <= position.offset:
                continue
            same_inode = (st.st_dev, st.st_ino) == (position.device, position.inode)
            if (same_inode if by_inode else True) and _same_head(other, position):
                self._note(f"{path}: reading the rest of its rotated copy {other}")
                self._read(other, path, position, commit_position=False)
                return

    def _read(
        self, source: str, path: str, position: _Position, *, commit_position: bool = True
    ) -> None:
        """Read ``source`` from ``position`` to its last complete line, chunk by chunk,
        committing each chunk's episodes with the position after it (for ``path``)."""
        with open(source, "rb") as handle:
            st = os.fstat(handle.fileno())
            while True:
                handle.seek(position.offset)
                data = handle.read(CHUNK_BYTES)
                end = data.rfind(b"\n")
                if end < 0:
                    if len(data) == CHUNK_BYTES:  # one line longer than a chunk
                        data += handle.readline()
                        end = data.rfind(b"\n")
                    if end < 0:  # nothing complete yet: the tail waits for its newline
                        if commit_position and position.head_length < HEAD_BYTES:
                            self._remember_head(path, position, handle)
                        return
                lines = data[: end + 1].split(b"\n")[:-1]
                episodes, errors = self._parse(source, lines, position.line)
                new = _Position(
                    st.st_dev,
                    st.st_ino,
                    position.offset + end + 1,
                    position.line + len(lines),
                    position.head_length,
                    position.head_sha256,
                )
                if new.head_length < HEAD_BYTES:
                    new.head_length, new.head_sha256 = _head_of(handle, HEAD_BYTES)
                with self.store.write():
                    imported, duplicates = write_parsed(episodes, name=path)
                    if commit_position:
                        _save(path, new)
                self.totals.imported += imported
                self.totals.duplicates += duplicates
                for error in errors:
                    self.totals.errors.append(error)
                    self.report(str(error))
                position.offset, position.line = new.offset, new.line
                if len(data) < CHUNK_BYTES or self.should_stop():
                    return

    def _remember_head(self, path: str, position: _Position, handle: Any) -> None:
        """Record the start of a file that holds only a partial line yet: a copy-truncate
        before the line is complete is then still told by the start that changed."""
        length, digest = _head_of(handle, HEAD_BYTES)
        if length > position.head_length:
            position.head_length, position.head_sha256 = length, digest
            with self.store.write():
                _save(path, position)

    @staticmethod
    def _parse(
        name: str, lines: list[bytes], before: int
    ) -> tuple[list[tuple[Any, ...]], list[LineError]]:
        now = utcnow()
        episodes: list[tuple[Any, ...]] = []
        errors: list[LineError] = []
        for number, raw in enumerate(lines, before + 1):
            raw = raw.rstrip(b"\r")
            value: Any
            try:
                text = _decode(raw, number == 1)
                if not text.strip():
                    continue
                value = _loads(text)
            except _BadLine as exc:
                value = exc
            for item in _to_episode(name, number, value, now):
                if isinstance(item, LineError):
                    errors.append(item)
                else:
                    episodes.append(_pack(item))
        return episodes, errors


def _head_of(handle: Any, length: int) -> tuple[int, str]:
    here = handle.tell()
    handle.seek(0)
    data = handle.read(length)
    handle.seek(here)
    return len(data), hashlib.sha256(data).hexdigest()


def _save(path: str, position: _Position) -> None:
    FollowState.insert(
        path=_key(path),
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
    return [p for p in value if isinstance(p, str) and p]


def remember_followed(store: Store, paths: Sequence[str | Path]) -> list[str]:
    """Save the logs the window follows (none: the follow was stopped); returns them."""
    kept = list(dict.fromkeys(os.path.abspath(p) for p in paths))
    with store.write():
        Setting.insert(key=FOLLOWED_KEY, value=kept).on_conflict_replace().execute()
    return kept

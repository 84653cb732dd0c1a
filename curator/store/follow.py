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
  The old file, through the descriptor still held from the last look (or found beside
  it by its inode), is read to its end first, and on while it grows
  (:data:`RETIRED_S`); then the new file from its start;
- either rotation: the log's other rotated copies modified since the last commit are
  read whole too (:mod:`curator.store.follow_files`): generations that came and went
  between two looks;
- gone: reported once, and followed again when it comes back.

Episodes keep the importer's identity (a hash of their content), so a line read twice
by any route (a rotated copy that is itself followed) is still one episode. Lines are
parsed by the importer's own rules (:func:`curator.store.episode_records.episode_from_object`);
a bad one is reported as ``FILE:LINE: reason`` and the follow goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

from curator.core.regular_file import NotRegularFile, open_regular
from curator.core.wording import plural
from curator.store.db import Store
from curator.store.follow_files import head_of, identity, recent_copies, siblings, st_id
from curator.store.follow_state import Position, load_position, save_position
from curator.store.importer import _pack, _to_episode, write_parsed
from curator.store.json_source import LineError, _BadLine, _decode, _loads_line
from curator.store.models import utcnow

HEAD_BYTES = 1024
"""How much of a file's start identifies it (a log's first line or two)."""

CHUNK_BYTES = 4 * 1024 * 1024
"""Bytes read per transaction: a 100 MB log is imported in bounded memory, and each
chunk's lines are committed with the position after them."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A longer line is rejected (``FILE:LINE``) and skipped without being held in memory:
an episode holds at most 1,000,000 characters, which no line of this size can be
under. Until its newline comes, only the bytes written since the last look are read."""

RETIRED_S = 60.0
"""How long a file rotated away by rename is still read while it grows: an agent that
holds its log open writes on into the renamed file until it is told to reopen it."""

MAX_RETIRED = 32
"""At most this many files rotated away are held open at once (the quietest go first)."""

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
class _Retired:
    """A file rotated away by rename, still open and read while it grows."""

    path: str  # the followed path it was
    handle: BinaryIO
    position: Position
    grew: float  # time.monotonic() of its last new line


class Follower:
    """Polls a fixed set of files and directories; :meth:`poll` reads what is new.

    Each file is opened once per look, without waiting (a named pipe put where a log
    was is said once, never waited on), and everything about it (its identity, size and
    head) is read from that one descriptor, so a rotation between the check and the
    read cannot make it read one file at the other's offset. The descriptor is kept
    until the next look: a log renamed away is still read through it, for
    :data:`RETIRED_S` while it grows.

    ``report`` receives each note and bad line as one line (a CLI prints it on stderr).
    ``should_stop`` is asked between two chunks and two files: a stop (SIGTERM, the
    window's Stop following or its close) then waits for one chunk, not for the rest of
    a 100 MB log; the next poll goes on from the committed position.
    Not thread-safe: one follower per thread. :meth:`close` closes what it holds open.
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
        self._open: dict[str, BinaryIO] = {}
        self._retired: list[_Retired] = []
        self._scanned: dict[tuple[int, int, int], int] = {}
        """(device, inode, line start) of a line longer than a chunk -> where its
        newline was last looked for (the next look reads on from there)."""
        self._known: dict[tuple[int, int], Position] = {}
        """How far each file this follower read was read (by identity): a rotated copy
        it already read is read on from there, not again from its start."""

    def close(self) -> None:
        """Close the files held open between two looks (a follower dropped without it
        closes them when it is collected)."""
        for handle in [*self._open.values(), *(r.handle for r in self._retired)]:
            handle.close()
        self._open.clear()
        self._retired.clear()

    def __del__(self) -> None:
        if hasattr(self, "_retired"):  # not half built
            self.close()

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
        files = self._files()
        for path in files:
            try:
                self._follow(path)
            except OSError as exc:  # unreadable now (permissions, a vanished share)
                self._note_once(path, f"{path}: cannot read it ({exc.strerror or exc})")
            if self.should_stop():  # after a file, so every poll reads at least a chunk
                return self.totals.imported - before
        for gone in set(self._open) - set(files):  # left a followed folder: read on a while
            self._retire(gone)
        self._read_retired()
        return self.totals.imported - before

    def note_waiting_tails(self) -> None:
        """Note each followed file that ends in a line without its newline yet: a
        follow reads it once it ends, but a single look (``--once``, from cron) leaves it
        for the next run and says so; a file whose lines end in a bare carriage return
        ends no line at all, and says why."""
        for path in self._files():
            position = load_position(self.store, path)
            try:
                handle = open_regular(path)
            except (OSError, NotRegularFile):
                continue  # said already by the look
            with handle:
                st = os.fstat(handle.fileno())
                if position is None or st_id(st) != position.identity:
                    continue
                waiting = st.st_size - position.offset
                if waiting <= 0:
                    continue
                handle.seek(position.offset)
                tail = handle.read(min(waiting, CHUNK_BYTES))
            # a CR that ends no CRLF, and is not the tail's last byte (a CRLF line caught
            # between its two): lines that can never end here
            bare_cr = b"\r" in tail.replace(b"\r\n", b"").rstrip(b"\r")
            why = (
                "; its lines end in a bare carriage return (\\r), which ends no line here: "
                "write \\n or \\r\\n line ends"
                if bare_cr
                else ""
            )
            self._note(
                f"{path}: {plural(waiting, 'byte')} after its last complete line wait for a "
                f"newline; not imported yet{why}"
            )

    def _follow(self, path: str) -> None:
        try:
            handle = open_regular(path)
        except FileNotFoundError:
            self._note_once(path, f"{path}: not there (yet); followed when it appears")
            self._retire(path)  # renamed away or deleted: read on while it grows
            return
        except NotRegularFile:
            self._note_once(path, f"{path}: not a regular file; not followed")
            return
        try:
            self._follow_open(path, handle)
        except BaseException:
            handle.close()
            raise

    def _follow_open(self, path: str, handle: BinaryIO) -> None:
        if path in self._gone:
            self._gone.discard(path)
            self._note(f"{path}: there again (or readable again); following it")
        st = os.fstat(handle.fileno())
        position = load_position(self.store, path)
        if position is not None:
            if st_id(st) != position.identity:
                self._drain_renamed(path, position, st_id(st))
                self._note(f"{path}: a new file (rotated or recreated); read from its start")
                position = None
            elif st.st_size < position.offset or head_of(handle, position.head_length) != (
                position.head_length,
                position.head_sha256,
            ):
                self._scanned = {k: v for k, v in self._scanned.items() if k[:2] != st_id(st)}
                self._drain_copied(path, position)
                self._note(
                    f"{path}: truncated or rewritten (size {st.st_size:,} bytes, "
                    f"read up to {position.offset:,}); read again from its start"
                )
                position = None
        if position is None:
            # Recorded at first sight, even with no complete line yet: a file rotated away
            # before its first line was complete is then still found by its start.
            position = _at_start(handle, committed=time.time())
            with self.store.write():
                save_position(path, position)
        held = self._open.pop(path, None)
        if held is not None:
            held.close()
        if path in self.paths:  # named: held until the next look (a folder's are not)
            self._open[path] = handle
            self._read(handle, path, path, position)
        else:
            with handle:
                self._read(handle, path, path, position)

    # -- rotations --------------------------------------------------------------------

    def _retire(self, path: str) -> None:
        """The file held for ``path`` is no longer at it: read it to its last complete
        line (its position committed, as it is still the file that position names), then
        on while it grows (:meth:`_read_retired`), then close it; a deleted file's space
        is freed then."""
        held = self._open.pop(path, None)
        if held is None:
            return
        position = load_position(self.store, path)
        if position is None or identity(held) != position.identity:
            held.close()
            return
        try:
            self._read(held, path, path, position)
        except BaseException:
            held.close()
            raise
        self._keep_retired(_Retired(path, held, position, time.monotonic()))

    def _keep_retired(self, retired: _Retired) -> None:
        """Keep ``retired`` open, closing the quietest beyond :data:`MAX_RETIRED`."""
        self._retired.append(retired)
        self._retired.sort(key=lambda r: r.grew)
        while len(self._retired) > MAX_RETIRED:
            self._retired.pop(0).handle.close()

    def _drain_renamed(self, path: str, position: Position, new: tuple[int, int]) -> None:
        """Another file is at ``path``: read the rest of the one it was, through the
        descriptor still held (or, after a restart, found beside it by its inode and
        head), then every rotated copy modified since the last commit that was never
        seen (the log was rotated more than once between two looks)."""
        old = position.identity
        held = self._open.pop(path, None)
        if held is not None and identity(held) == old:
            self._note(f"{path}: reading the rest of the file rotated away")
            kept = _resumed(held, position)
            self._read(held, path, path, kept, commit_position=False)
            self._keep_retired(_Retired(path, held, kept, time.monotonic()))
        else:
            if held is not None:
                held.close()
            self._drain_copy(path, position, by_inode=True)
        self._read_recent(path, position, {old, new})

    def _drain_copied(self, path: str, position: Position) -> None:
        """``path`` was truncated or rewritten: read the rest of its copy beside it (its
        head matches), then the other rotated copies modified since the last commit."""
        copied = self._drain_copy(path, position, by_inode=False)
        skip = {position.identity} | ({copied} if copied else set())
        self._read_recent(path, position, skip)

    def _drain_copy(
        self, path: str, position: Position, *, by_inode: bool
    ) -> tuple[int, int] | None:
        """Read the rest of the file ``path`` was before it was rotated, if it is beside it:
        the same inode under another name (renamed), or a file whose head matches and
        which is longer than what was read (copied then truncated). Lines already
        imported are found by their content hash, so reading a candidate twice is safe.
        The identity of the file read, if one was."""
        for other, st in siblings(path):
            same_inode = st_id(st) == position.identity
            if by_inode != same_inode or (not by_inode and st.st_size <= position.offset):
                continue
            try:
                handle = open_regular(other)
            except (OSError, NotRegularFile):
                continue
            try:
                resumed = _resumed(handle, position)
                if not by_inode and resumed.offset == 0:  # not its copy
                    handle.close()
                    continue
                self._note(f"{path}: reading the rest of its rotated copy {other}")
                self._read(handle, other, path, resumed, commit_position=False)
            except OSError:
                handle.close()
                continue
            except BaseException:
                handle.close()
                raise
            if by_inode:  # the renamed log: its writer may still write on into it
                self._keep_retired(_Retired(path, handle, resumed, time.monotonic()))
            else:
                handle.close()
            return st_id(st)
        return None

    def _read_recent(self, path: str, position: Position, skip: set[tuple[int, int]]) -> None:
        """Read every rotated copy of ``path`` modified since ``position`` was committed,
        other than those ``skip`` names (generations of the log that came and went
        between two looks): from its start, or on from where this follower stopped."""
        for other, st in recent_copies(path, position.committed, skip):
            try:
                with open_regular(other) as handle:
                    if identity(handle) != st_id(st):  # replaced since it was listed
                        continue
                    known = self._known.get(st_id(st))
                    # read before: on from there, if it is still the same file
                    start = _resumed(handle, known) if known else _at_start(handle)
                    if start.offset < st.st_size:
                        self._note(f"{path}: reading {other}, rotated since the last look")
                        self._read(handle, other, path, start, commit_position=False)
            except (OSError, NotRegularFile):
                continue

    def _read_retired(self) -> None:
        """Read on in the files rotated away by rename while they grow; close the ones
        quiet for :data:`RETIRED_S`."""
        now = time.monotonic()
        kept: list[_Retired] = []
        for retired in self._retired:
            before = retired.position.offset
            try:
                self._read(
                    retired.handle, retired.path, retired.path, retired.position,
                    commit_position=False,
                )  # fmt: skip
            except OSError:
                retired.grew = -RETIRED_S  # unreadable now: let it go
            if retired.position.offset != before:
                retired.grew = now
            if now - retired.grew < RETIRED_S:
                kept.append(retired)
            else:
                retired.handle.close()
        self._retired = kept

    # -- reading ----------------------------------------------------------------------

    def _read(
        self,
        handle: BinaryIO,
        source: str,
        path: str,
        position: Position,
        *,
        commit_position: bool = True,
    ) -> None:
        """Read ``handle`` (named ``source`` in reports) from ``position`` to its last
        complete line, chunk by chunk, committing each chunk's episodes with the
        position after it (for ``path``); remember how far it was read."""
        try:
            self._read_lines(handle, source, path, position, commit_position)
        finally:
            if position.head_length:  # a file with nothing in it yet is nothing to know
                self._known[identity(handle)] = replace(position)

    def _read_lines(
        self,
        handle: BinaryIO,
        source: str,
        path: str,
        position: Position,
        commit_position: bool,
    ) -> None:
        device, inode = identity(handle)
        while True:
            line = (device, inode, position.offset)
            waited = line in self._scanned  # a long line already read up to its tail
            handle.seek(position.offset)
            data = b"" if waited else handle.read(CHUNK_BYTES)
            end = data.rfind(b"\n")
            skipped: LineError | None = None
            if waited or (end < 0 and len(data) == CHUNK_BYTES):  # a line over a chunk
                line_end = self._newline_after(handle, line)
                if line_end >= 0 and line_end + 1 - position.offset <= MAX_LINE_BYTES:
                    handle.seek(position.offset)
                    data = handle.read(line_end + 1 - position.offset)
                    end = len(data) - 1
                elif line_end >= 0:
                    skipped = LineError(
                        source,
                        position.line + 1,
                        f"a line of {line_end + 1 - position.offset:,} bytes, over the "
                        f"{MAX_LINE_BYTES:,} a line may have; skipped",
                    )
                    data, end = b"", line_end - position.offset
            if end < 0:  # nothing complete yet: the tail waits for its newline
                if commit_position and position.head_length < HEAD_BYTES:
                    self._remember_head(path, position, handle)
                return
            lines = data[: end + 1].split(b"\n")[:-1] if skipped is None else []
            episodes, errors = self._parse(source, lines, position.line)
            if skipped is not None:
                errors.append(skipped)
            new = Position(
                device,
                inode,
                position.offset + end + 1,
                position.line + (len(lines) if skipped is None else 1),
                position.head_length,
                position.head_sha256,
                time.time(),
            )
            if new.head_length < HEAD_BYTES:
                new.head_length, new.head_sha256 = head_of(handle, HEAD_BYTES)
            with self.store.write():
                imported, duplicates = write_parsed(episodes, name=path)
                if commit_position:
                    save_position(path, new)
            self.totals.imported += imported
            self.totals.duplicates += duplicates
            for error in errors:
                self.totals.errors.append(error)
                self.report(str(error))
            position.offset, position.line = new.offset, new.line
            position.committed = new.committed
            if (skipped is None and len(data) < CHUNK_BYTES) or self.should_stop():
                return

    def _newline_after(self, handle: BinaryIO, line: tuple[int, int, int]) -> int:
        """The offset of the newline that ends the line starting at ``line[2]``, or -1
        while it has none; read a chunk at a time, from where the last look stopped."""
        start = line[2]
        at = self._scanned.get(line, start)
        if at > os.fstat(handle.fileno()).st_size:  # shorter since: read it all again
            at = start
        while True:
            handle.seek(at)
            data = handle.read(CHUNK_BYTES)
            found = data.find(b"\n")
            if found >= 0:
                self._scanned.pop(line, None)
                return at + found
            at += len(data)
            if len(data) < CHUNK_BYTES:
                self._scanned[line] = at  # one entry a file waiting for a newline
                return -1

    def _remember_head(self, path: str, position: Position, handle: BinaryIO) -> None:
        """Record the start of a file that holds only a partial line yet: a copy-truncate
        before the line is complete is then still told by the start that changed."""
        length, digest = head_of(handle, HEAD_BYTES)
        if length > position.head_length:
            position.head_length, position.head_sha256 = length, digest
            with self.store.write():
                save_position(path, position)

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
                value = _loads_line(text)
            except _BadLine as exc:
                value = exc
            for item in _to_episode(name, number, value, now):
                if isinstance(item, LineError):
                    errors.append(item)
                else:
                    episodes.append(_pack(item))
        return episodes, errors


def _resumed(handle: BinaryIO, position: Position) -> Position:
    """Where to read on in a file the log was: at ``position``, or from its start if it
    was truncated or rewritten since (shorter than what was read, or another head)
    before it was rotated away. Lines read twice are one episode all the same."""
    size = os.fstat(handle.fileno()).st_size
    head = (position.head_length, position.head_sha256)
    if size >= position.offset and head_of(handle, position.head_length) == head:
        return replace(position)
    return _at_start(handle)


def _at_start(handle: BinaryIO, committed: float = 0.0) -> Position:
    """The position before the first line of an open file."""
    device, inode = identity(handle)
    return Position(device, inode, 0, 0, *head_of(handle, HEAD_BYTES), committed)

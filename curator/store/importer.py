"""Importing episodes from JSONL (one object per line) or JSON (an array of objects).

Hostile input never crashes the import and never half-imports a file: every bad line is
reported as ``FILE:LINE: reason`` and skipped, and the good lines of a file are inserted in
one transaction. Lines are split on ``\\n`` only (so U+2028 inside a string is just a
character), read as bytes and decoded strictly, so invalid UTF-8 is reported with its
byte offset instead of being replaced silently. A ``\\r\\n`` line end is read as one; a
bare ``\\r`` (old Mac line ends) ends no line, so records it separates run together on
one line, which is reported as that, with the fix, not as a JSON error (see
:data:`curator.store.json_source.BARE_CR`).

A file is JSON Lines or one JSON array, decided by what it holds (see ``_is_json_array``),
and nothing after an array is ever silently ignored. ``-`` reads standard input. A source
that cannot be read at all (missing, unreadable, a directory, a named pipe) is one error
``FILE: reason`` and the next file is still imported.

Identity of an episode: a SHA-256 over its body (text or messages), its source and its
timestamp as given. Re-importing a file therefore adds nothing, while the same short text
sent at two different times ("ping") stays two episodes. An episode without a timestamp
is dated at import time, but its hash leaves the timestamp out, so a re-import of it is
still a no-op.

How a source is opened and its JSON read strictly (shared with the gold-label and
knowledge files) is :mod:`curator.store.json_source`; this module makes episodes of the
values and writes them.
"""

from __future__ import annotations

import io
import itertools
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from curator.core.regular_file import file_identity
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.db_errors import DATABASE_ERRORS, STOPPED_OUTCOME, explain_database_error
from curator.store.episode_records import (
    ParsedEpisode,
    content_hash,
    episode_from_object,
    unread_note,
)
from curator.store.json_source import (
    PIPE_HINT,
    STDIN,
    STDIN_NAME,
    LineError,
    _BadLine,
    _count_lines,
    _is_json_array,
    _iter_json_array,
    _iter_jsonl,
    _open_regular,
    _Unreadable,
)
from curator.store.models import Episode, utcnow

_INSERT_CHUNK = 500

Progress = Callable[[int, int], None]
"""``progress(done, total)``: lines read of the file's lines, then episodes written of
those to write. A window shows it; the CLI passes nothing. While a chat export is read
``total`` is 0 (its episodes are not known before): busy, with no share done."""

PROGRESS_EVERY = 2000
"""Lines (and rows) between two progress reports: often enough for a moving bar, rare
enough to cost nothing."""

Cancelled = Callable[[], bool]
"""``cancelled()``: True once the caller wants the import stopped (a window closing).
Asked every :data:`CANCEL_EVERY` lines while reading and before every chunk written."""

CANCEL_EVERY = 200


class ImportCancelled(CuratorError):
    """The import was stopped on request; its transaction was rolled back, so nothing of
    the file was written."""

    exit_code = 1


def _check(cancelled: Cancelled | None, name: str) -> None:
    if cancelled is not None and cancelled():
        raise ImportCancelled(f"import of {name} cancelled; nothing of it was imported")


@dataclass
class ImportReport:
    file: str
    lines: int = 0
    imported: int = 0
    duplicates: int = 0
    errors: list[LineError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was read but not kept (keys no episode has), one sentence each."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "lines": self.lines,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "rejected": len(self.errors),
            "errors": [{"line": e.line, "reason": e.reason} for e in self.errors],
            "notes": self.notes,
        }


_PARSED_FIELDS = tuple(f.name for f in fields(ParsedEpisode) if f.name != "unread")
"""The fields a packed episode holds (its unread keys are counted as it is read)."""
_HASH = _PARSED_FIELDS.index("content_hash")
_EXTERNAL_ID = _PARSED_FIELDS.index("external_id")
_SOURCE = _PARSED_FIELDS.index("source")


_AS_STORED = ("messages", "metadata")
"""Fields packed as the JSON text they are stored as: a file's episodes are all parsed
before the one transaction that writes them, and a message list and a chat export's
metadata held as dicts and lists were about 600 of the 1,170 bytes an episode of a short
CSV row took (the text: a third of that)."""
_EMPTY_JSON = "{}"
"""The stored text of no metadata (most episodes): one string for all of them."""


def _pack(episode: ParsedEpisode) -> tuple[Any, ...]:
    """A parsed episode as a plain tuple (see :func:`_parse`), its messages and metadata
    as their stored JSON text (:data:`_AS_STORED`): no dict in a tuple keeps it tracked by
    the collector either."""
    return tuple(
        _stored_json(name, getattr(episode, name)) if name in _AS_STORED else getattr(episode, name)
        for name in _PARSED_FIELDS
    )


def _stored_json(name: str, value: Any) -> str | None:
    if name == "metadata" and not value:
        return _EMPTY_JSON
    stored: str | None = Episode._meta.fields[name].db_value(value)
    return stored


_HEAD_BYTES = 4096


_WIDE_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _wide_encoding(head: bytes) -> str | None:
    """UTF-16 or UTF-32 when the file starts with its byte order mark (as an editor or a
    spreadsheet saves "Unicode" text), or UTF-16 without one when every other byte of its
    start is a NUL (a JSON file's ASCII, as UTF-16 writes it), else None: each line was an
    error of its own ("Expecting property name"), none saying why."""
    marked = next((name for mark, name in _WIDE_MARKS if head.startswith(mark)), None)
    if marked is not None:
        return marked
    if len(head) >= 8 and b"\x00\x00" not in head:
        for half in (head[0::2], head[1::2]):
            if half.count(0) == len(half):
                return "UTF-16 (without a byte order mark)"
    return None


def read_episodes(handle: BinaryIO, name: str) -> Iterator[ParsedEpisode | LineError]:
    """Parse an open file into episodes and line errors, in file order.

    JSON Lines are read line by line; a file that may be a JSON array is read whole (its
    shape is decided by :func:`_is_json_array`).
    """
    now = utcnow()
    head = handle.read(_HEAD_BYTES)
    wide = _wide_encoding(head)
    if wide is not None:  # every line would be an error of its own, none saying why
        yield LineError(name, 1, f"the file is in {wide}, not UTF-8; save it as UTF-8")
        return
    items: Iterable[tuple[int, Any | _BadLine]]
    if head.lstrip(b"\xef\xbb\xbf").lstrip().startswith(b"["):
        data = head + handle.read()
        text = (data[3:] if data.startswith(b"\xef\xbb\xbf") else data).decode(
            "utf-8", "surrogateescape"
        )
        items = _iter_json_array(text) if _is_json_array(text) else _iter_jsonl(io.BytesIO(data))
    else:
        items = _iter_jsonl(itertools.chain(io.BytesIO(head + handle.readline()), handle))
    for number, value in items:
        yield from _to_episode(name, number, value, now)


def _to_episode(
    name: str, number: int, value: Any, now: datetime
) -> Iterator[ParsedEpisode | LineError]:
    if isinstance(value, _BadLine):
        yield LineError(name, number, str(value))
        return
    try:
        yield episode_from_object(value, number, now)
    except _BadLine as exc:
        yield LineError(name, number, str(exc))


# -- writing --------------------------------------------------------------------------------


REWRITTEN = (
    "it was written to while it was read; nothing of it was imported: import it once it "
    "is whole (`curator watch` follows a log that is still being written)"
)


def _parse(
    path: str | Path,
    stdin: BinaryIO | None,
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
    chat: Any = None,
) -> tuple[str, list[tuple[Any, ...]], list[LineError], int, list[str]]:
    """Read and validate one source: (its name, good episodes, line errors, lines read,
    notes).

    The good episodes are kept as plain tuples (``ParsedEpisode`` field order) until they
    are inserted: 60,000 dataclass instances held by an import in a window's background
    thread made Python's garbage collector run full collections over them (100-140 ms
    each with the GIL held, the window frozen meanwhile); an exact tuple of plain values
    is untracked by the collector."""
    items: Iterable[ParsedEpisode | LineError] | None = None
    if str(path) == STDIN:
        name = STDIN_NAME
        source = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
        if source is None:  # a windowed process has no standard input
            raise _Unreadable("there is no standard input to read")
        handle: BinaryIO = io.BytesIO(source.read())
    elif chat is not None and (items := chat.read(path)) is not None:
        name, handle = str(path), io.BytesIO()  # a chat export (curator.chat_formats)
    else:
        name = str(path)
        handle = _open_regular(path)
    episodes: list[tuple[Any, ...]] = []
    errors: list[LineError] = []
    unread: Counter[str] = Counter()
    last_line = 0
    counted = items is None  # a chat export's episodes are known only once it is read
    with handle:
        before = file_identity(handle)  # read in one or two passes, as a stream
        total = _count_lines(handle) if progress is not None and counted else 0
        reported = 0
        if items is None:
            items = read_episodes(handle, name)
        for count, item in enumerate(items, 1):
            if isinstance(item, LineError):
                errors.append(item)
            else:
                unread.update(item.unread)
                episodes.append(_pack(item))
            last_line = max(last_line, item.line)
            if count % CANCEL_EVERY == 0:
                _check(cancelled, name)
            if progress is not None and last_line - reported >= PROGRESS_EVERY:
                reported = last_line
                progress(last_line, max(total, last_line) if counted else 0)
        if file_identity(handle) != before:  # two versions spliced: neither is imported
            raise _Unreadable(REWRITTEN)
    if progress is not None:  # no total: "busy", rather than a bar full while reading
        progress(last_line, max(total, last_line) if counted else 0)
    return name, episodes, errors, last_line, [unread_note(unread)] if unread else []


def import_file(
    store: Store,
    path: str | Path,
    *,
    stdin: BinaryIO | None = None,
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
    chat: Any = None,
) -> ImportReport:
    """Import one file: its good lines in one transaction, its bad lines reported.

    ``path`` ``-`` reads ``stdin`` (default: the process's standard input). A source that
    cannot be read at all (missing, unreadable, a directory, a pipe, a read error half
    way) is one error for the whole file, with line 0, and nothing of it is imported.
    ``progress`` (see :data:`Progress`) is called every :data:`PROGRESS_EVERY` lines
    while reading and every few thousand rows while writing. When ``cancelled()`` turns
    True the import stops at its next check and raises :class:`ImportCancelled`: while
    reading nothing was written yet, while writing the transaction is rolled back.
    ``chat`` (a :class:`curator.chat_formats.ChatImport`) reads chat exports too.
    """
    try:
        name, episodes, errors, last_line, notes = _parse(path, stdin, progress, cancelled, chat)
    except _Unreadable as exc:
        reason = str(exc) + (PIPE_HINT if exc.pipe else "")  # this reader takes stdin
        return ImportReport(file=str(path), errors=[LineError(str(path), 0, reason)])
    except OSError as exc:  # a read failing half way (EIO, a vanished network share)
        reason = f"cannot read it ({exc.strerror or exc}); nothing of it was imported"
        return ImportReport(file=str(path), errors=[LineError(str(path), 0, reason)])
    report = ImportReport(file=name, lines=last_line, errors=errors, notes=notes)
    with store.write():
        report.imported, report.duplicates = write_parsed(
            episodes, name=name, progress=progress, cancelled=cancelled
        )
    return report


def import_files(
    store: Store, paths: Sequence[str | Path], *, stdin: BinaryIO | None = None, chat: Any = None
) -> list[ImportReport]:
    """Import several files; each is its own all-or-nothing transaction.

    A file that cannot be read is reported and the others are still imported. A failure
    that stops the whole import (a database busy for the whole timeout, a full disk)
    after some files were committed raises :class:`ImportStopped`, which names them: the
    message "nothing changed" alone hid 3,000 episodes committed from the first file.
    The database's own errors count too (a full disk is SQLite's, not ours).
    """
    reports: list[ImportReport] = []
    for path in paths:
        try:
            reports.append(import_file(store, path, stdin=stdin, chat=chat))
        except (CuratorError, *DATABASE_ERRORS) as exc:
            if not any(r.imported for r in reports):
                raise
            cause = explain_database_error(exc, store.location, "import", outcome=STOPPED_OUTCOME)
            raise ImportStopped(reports, str(path), cause) from exc
    return reports


class ImportStopped(CuratorError):
    """An import of several files stopped at ``failed`` after ``done`` were committed."""

    exit_code = 1

    def __init__(self, done: list[ImportReport], failed: str, cause: CuratorError) -> None:
        kept = ", ".join(f"{r.file} ({r.imported:,} imported)" for r in done if r.imported)
        # exit 1 whatever stopped it: some of the work was done and is kept (2 and 3 say
        # that nothing changed)
        super().__init__(f"{failed}: {cause}; the files before it stay imported: {kept}")
        self.done = done


_INSERTED = ("external_id", "content_hash", "text", "messages", "timestamp", "source", "metadata")
"""The columns an import writes from a parsed episode (then ``imported_at`` and
``classify_truncated``; every other column is NULL until a run fills it)."""
_INSERT_HEAD = (
    'INSERT INTO "episode" ('
    + ", ".join(f'"{name}"' for name in (*_INSERTED, "imported_at", "classify_truncated"))
    + ") VALUES "
)
_ROW_PLACES = "(" + ", ".join("?" * (len(_INSERTED) + 2)) + ")"


def _stored_ids(hashes: Sequence[str]) -> dict[str, str | None]:
    """The stored episodes among ``hashes``: content hash -> its external id."""
    stored: dict[str, str | None] = {}
    for start in range(0, len(hashes), _INSERT_CHUNK):
        chunk = hashes[start : start + _INSERT_CHUNK]
        query = Episode.select(Episode.content_hash, Episode.external_id).where(
            Episode.content_hash.in_(chunk)
        )
        for row in query:
            stored.setdefault(row.content_hash, row.external_id)
    return stored


def _told_apart(row: tuple[Any, ...], first_ids: dict[str, str | None]) -> tuple[Any, ...]:
    """``row`` under a hash of its own when it has an id and the first episode of its
    content hash (stored, or earlier in the same batch: ``first_ids`` is filled as it
    goes) has none or another one: a record with its own id is kept whatever came before
    it. Only such a repeat changes identity, so every other episode keeps the one it was
    imported with before, and the same file imported again derives the same identities.
    A record without an id after one with an id is taken for the same record (nothing
    tells them apart)."""
    content, external = row[_HASH], row[_EXTERNAL_ID]
    first = first_ids.setdefault(content, external)
    if external is None or first == external:
        return row
    repeat = content_hash({"repeat_of": content, "id": external}, row[_SOURCE], None)
    return (*row[:_HASH], repeat, *row[_HASH + 1 :])


def _insert_episodes(packed: Sequence[tuple[Any, ...]], imported_at: datetime) -> None:
    """One multi-row INSERT of packed episodes (at most :data:`_INSERT_CHUNK`), each value
    converted by its model field exactly as the query builder converts it.

    The query builder spent more than half of an import making the SQL text of each
    500-row insert, value by value; here the text is the same for every full chunk. One
    statement of many rows, not ``executemany`` of one-row statements: SQLite ran those
    four times slower (the full-text triggers and indexes per statement).

    Sent through ``execute_sql`` as the query builder sends it, not a bare cursor: so a
    SQLite error is peewee's (``peewee.OperationalError`` for a full disk, as before) and
    a PostgreSQL connection cut under the import is
    :class:`~curator.store.pg_connection.ConnectionLost`'s sentence."""
    meta = Episode._meta
    fields_ = [meta.fields[name] for name in _INSERTED]
    at = meta.fields["imported_at"].db_value(imported_at)
    untruncated = meta.fields["classify_truncated"].db_value(False)
    where = [_PARSED_FIELDS.index(name) for name in _INSERTED]
    as_stored = [name in _AS_STORED for name in _INSERTED]  # packed as their text
    params: list[Any] = []
    for row in packed:
        for field_, i, stored in zip(fields_, where, as_stored, strict=True):
            params.append(row[i] if stored else field_.db_value(row[i]))
        params += (at, untruncated)
    meta.database.execute_sql(_INSERT_HEAD + ", ".join([_ROW_PLACES] * len(packed)), params)


def write_parsed(
    episodes: Sequence[tuple[Any, ...]],
    *,
    name: str = "",
    progress: Progress | None = None,
    cancelled: Cancelled | None = None,
) -> tuple[int, int]:
    """Insert packed episodes (see :func:`_pack`) whose content hash is new: (imported,
    duplicates). Runs inside the caller's open ``store.write()`` transaction, so a caller
    can commit other rows with them atomically (a followed log commits its position).

    An episode with an ``id`` whose content hash is already there (stored, or earlier in
    ``episodes``) without that id is another record with the same words, source and time
    (two events of a log, "ok" twice): it is told apart by a hash that also holds its id
    (:func:`_told_apart`), not counted "already present" and lost. A record without an
    id is a duplicate of any record of its content, as before."""
    stored = _stored_ids([row[_HASH] for row in episodes])
    first_ids = dict(stored)  # and the batch's own, as they come
    episodes = [_told_apart(row, first_ids) for row in episodes]
    told_apart = [row[_HASH] for row in episodes if row[_HASH] not in first_ids]
    existing = set(stored) | set(_stored_ids(told_apart))
    seen: set[str] = set()
    fresh: list[tuple[Any, ...]] = []
    duplicates = 0
    for row in episodes:
        if row[_HASH] in existing or row[_HASH] in seen:
            duplicates += 1
            continue
        seen.add(row[_HASH])
        fresh.append(row)
    imported_at = utcnow()
    for start in range(0, len(fresh), _INSERT_CHUNK):
        _check(cancelled, name)
        if progress is not None and start % PROGRESS_EVERY < _INSERT_CHUNK:
            progress(start, len(fresh))
        _insert_episodes(fresh[start : start + _INSERT_CHUNK], imported_at)
        time.sleep(0)  # hand the GIL over between chunks (a window paints meanwhile)
    if progress is not None and fresh:
        progress(len(fresh), len(fresh))
    return len(fresh), duplicates

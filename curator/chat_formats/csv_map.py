"""CSV with a column mapping: ``--map content=body,timestamp=sent_at,source=channel``.

The first row names the columns. The mapping says which column holds each field: the
``content`` (required), and optionally ``timestamp`` (ISO 8601, or seconds since 1970),
``source``, ``role``, ``name`` (the speaker), ``id`` and ``conversation`` (rows with the same
value form one conversation; without it, rows of the same source do). A field that is not
mapped is read from a column of its own name when there is one. Rows keep their file order
within a conversation. An empty row is left out and counted; a row with an empty content
cell is an error with its line, like a row with too few or too many cells.

Recognised by content when the first line is a header of two or more named columns, one of
them the mapped content column (``content`` without a mapping); a one-column file is read
as CSV only with ``--format csv`` (a line of plain text is not a header).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, TextIO

from curator.chat_formats.common import (
    BadElement,
    BadExport,
    ChatMessage,
    Conversation,
    Skipped,
    clean,
    epoch_time,
    iso_time,
)
from curator.core.regular_file import file_identity
from curator.store.episode_records import MAX_EPISODE_CHARS
from curator.store.importer import LineError

NAME = "csv"

# The csv module stops at cells of 131,072 characters; a message may be up to the episode
# limit, and a longer one is rejected by line (a cell of more than twice the limit stops
# the file: the reader cannot resume after it). The limit is the process's: set once
# here, as a read that set it and put it back at its end took it from under a second
# read going on beside it (two imports on two threads of one program), whose next long
# cell then stopped its file.
csv.field_size_limit(max(csv.field_size_limit(), 2 * MAX_EPISODE_CHARS))
DEFAULT_PER = "message"
FIELDS = ("content", "timestamp", "source", "role", "name", "id", "conversation")


def parse_mapping(text: str) -> dict[str, str]:
    """``content=body,timestamp=sent_at`` as ``{"content": "body", ...}`` (ValueError)."""
    mapping: dict[str, str] = {}
    for pair in (p for p in text.split(",") if p.strip()):
        key, sep, column = pair.partition("=")
        key, column = key.strip(), column.strip()
        if not sep or not column:
            raise ValueError(f"{pair.strip()!r} is not FIELD=COLUMN")
        if key not in FIELDS:
            raise ValueError(f"{key!r} is not one of {', '.join(FIELDS)}")
        if key in mapping:
            raise ValueError(f"{key!r} is mapped twice")
        mapping[key] = column
    return mapping


def header_of(text: str) -> list[str] | None:
    """The header row when ``text`` (the file's start) reads as CSV with 2+ columns.

    Its first record is read as the reader reads it, not as the text up to a ``\n``: a
    file with bare CR line ends was one long "header" and was not taken for CSV, though
    ``--format csv`` read it, and a quoted header cell may hold a line end itself."""
    start = text.lstrip("\ufeff")
    if start.lstrip()[:1] in ("{", "["):
        return None
    try:
        row = next(csv.reader(io.StringIO(start, newline="")))
    except (csv.Error, StopIteration):
        return None
    return row if len(row) >= 2 and all(cell.strip() for cell in row) else None


def looks_like(text: str, mapping: dict[str, str]) -> bool:
    """A header naming the mapped content column (``content`` when none is mapped)."""
    header = header_of(text)
    return header is not None and mapping.get("content", "content") in header


def conversations(
    source: bytes | Path, file: str, mapping: dict[str, str], skipped: Skipped
) -> Iterator[Conversation | LineError]:
    """Rows grouped into conversations (in order of first appearance); bad rows as
    ``FILE:LINE: reason``.

    A file is read as a stream, never whole: the text of a 191 MB CSV held as bytes, as a
    string and in a ``StringIO`` (four bytes a character) took 1.1 GB beside the rows.
    Its UTF-8 is checked in a first pass, so that a bad byte anywhere is one error for
    the file, before any row's."""
    with io.BytesIO(source) if isinstance(source, bytes) else source.open("rb") as handle:
        before = file_identity(handle)
        _check_utf8(handle)
        handle.seek(0)
        text = io.TextIOWrapper(handle, encoding="utf-8-sig", newline="")
        try:
            yield from _read(text, file, mapping, skipped, lambda: file_identity(handle) == before)
        except UnicodeDecodeError:  # written to since the check
            raise BadExport("invalid UTF-8 written to the file while it was read") from None
        finally:
            text.detach()  # the handle is the with's to close


_CHECK_BYTES = 1 << 20


def _check_utf8(handle: BinaryIO) -> None:
    """BadExport naming the first byte (from 1, the byte order mark counted) that is not
    UTF-8, read a block at a time; a character cut at the end of the file is one too."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    fed = 0
    while True:
        block = handle.read(_CHECK_BYTES)
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(block, final=not block)
        except UnicodeDecodeError as exc:
            raise BadExport(f"invalid UTF-8 at byte {fed - pending + exc.start + 1}") from None
        if not block:
            return
        fed += len(block)


def _read(
    text: TextIO,
    file: str,
    mapping: dict[str, str],
    skipped: Skipped,
    unchanged: Callable[[], bool],
) -> Iterator[Conversation | LineError]:
    lines = _Lines(text)
    reader = csv.reader(lines)
    try:
        header = next(reader)
    except StopIteration:
        raise BadExport("the file is empty (a CSV needs a header row)") from None
    except csv.Error as exc:
        raise BadExport(f"the header row is not CSV ({exc})") from None
    if lines.ended:
        raise BadExport(f"a quoted cell of the header row never closes ({_UNCLOSED})")
    columns = {name: i for i, name in reversed(list(enumerate(header)))}
    chosen = {key: mapping.get(key, key) for key in FIELDS}
    used = set(chosen.values())
    twice = sorted({name for name in header if name in used and header.count(name) > 1})
    if twice:  # which of the two holds the text? Read, one of them was lost unsaid
        named = ", ".join(repr(name) for name in twice)
        raise BadExport(f"the header names the column {named} twice; rename one of them")
    missing = [f"{mapping[k]!r}" for k in mapping if mapping[k] not in columns]
    if missing or chosen["content"] not in columns:
        absent = ", ".join(missing) or repr(chosen["content"])
        raise BadExport(f"no column {absent} in the header (columns: {', '.join(header)[:200]})")
    index = {key: columns[col] for key, col in chosen.items() if col in columns}
    groups: dict[str, Conversation] = {}
    row_number = 0
    while True:
        lines.taken = 0
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            yield LineError(file, reader.line_num, f"not CSV ({exc}); the rest was not read")
            break
        line = reader.line_num
        if lines.ended:  # the row took the file's end: a quoted cell never closed
            why = f"a quoted cell opened here never closes ({_UNCLOSED})"
            yield LineError(file, line - lines.taken + 1, f"{why}: not imported")
            break
        if not any(cell.strip() for cell in row):
            skipped["empty rows"] += 1
            continue
        row_number += 1
        try:
            key, message = _row(row, header, index, line)
        except BadElement as exc:
            yield LineError(file, line, str(exc))
            continue
        source = row[index["source"]].strip() if "source" in index else ""
        if key not in groups:
            groups[key] = Conversation(len(groups) + 1, key, source, where=f"line {line}")
        groups[key].messages.append(message)
    if not unchanged():  # before any row is handed on: nothing of it is imported
        raise BadExport("the file was written to while it was read; import it once it is whole")
    for key in list(groups):  # each let go once read: its messages become episodes
        yield groups.pop(key)


_UNCLOSED = "the file was cut short, or a quote is missing"


class _Lines:
    """The file's lines as the csv reader takes them, counted, and whether it asked past
    the last: it does only to finish a quoted cell (a row ends at its line's end
    otherwise), where, not strict, it hands the cell on as far as the file went. A file
    cut inside a quoted cell imported the cut text, and one missing a closing quote
    imported the rest of the file as one message."""

    def __init__(self, text: TextIO) -> None:
        self._text = text
        self.taken = 0  # lines taken since the caller last set it to 0
        self.ended = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self._text.readline()
        if not line:
            self.ended = True
            raise StopIteration
        self.taken += 1
        return line


_SECONDS = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_BASIC_DATE = re.compile(r"\d{8}")


def _time(raw: str) -> datetime | None:
    """Seconds since 1970, or an ISO 8601 time. Eight digits are a basic ISO date
    (``20240501``), not 231 days of 1970; a number out of range (milliseconds, say) says
    so, as an ISO time out of range does (both were "not an ISO 8601 time")."""
    if _SECONDS.fullmatch(raw) and not _BASIC_DATE.fullmatch(raw):
        return epoch_time(float(raw), "timestamp")
    return iso_time(raw, "timestamp")


def _row(
    row: list[str], header: list[str], index: dict[str, int], line: int
) -> tuple[str, ChatMessage]:
    if len(row) != len(header):
        raise BadElement(f"has {len(row)} cells, the header has {len(header)}")
    cell = {key: row[i] for key, i in index.items()}
    content = clean(cell["content"], "the content")
    if not content.strip():
        raise BadElement("the content cell is empty")
    stamp: datetime | None = None
    raw_time = cell.get("timestamp", "").strip()
    if raw_time:
        stamp = _time(raw_time)
    source = clean(cell.get("source", "").strip(), "the source")
    key = cell.get("conversation", "").strip() or source
    name = cell.get("name", "").strip()
    message_id = cell.get("id", "").strip() or f"line {line}"
    return key, ChatMessage(
        id=message_id,
        role=clean(cell.get("role", "").strip() or "user", "the role"),
        content=content,
        name=clean(name, "the name") or None,
        timestamp=stamp,
        position=f"line {line}",
    )

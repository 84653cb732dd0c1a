"""Episodes from the chat exports people already have.

One small module per format reads an export into conversations (:mod:`.common`); this
module recognises a file's format by its content (never by its name), and hands the
importer its episodes. Formats: ``chatgpt`` (``conversations.json``), ``claude``
(``conversations.json``), ``telegram`` (``result.json``), ``discord`` (DiscordChatExporter
JSON), ``slack`` (the export zip or folder), ``csv`` (with a column mapping), and ``jsonl``:
the importer's own JSON Lines / JSON array of episodes, which it reads itself.

The importer calls :meth:`ChatImport.read` for each file: ``None`` means "read it as
episodes JSONL/JSON, as always"; otherwise it gets the episodes and element errors, which
it writes with its usual rules (idempotent, the good ones in one transaction, the bad
ones reported). What a reader leaves out on purpose is counted in
:attr:`ChatImport.skipped`, per file, for the report.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.chat_formats import chatgpt, claude, csv_map, discord, slack, telegram
from curator.chat_formats.common import (
    FORMAT_NAMES,
    BadExport,
    Granularity,
    episodes,
    load_json,
    parse_granularity,
)
from curator.core.zip_errors import is_zip
from curator.store.episode_records import ParsedEpisode
from curator.store.importer import LineError
from curator.store.models import utcnow

FORMATS = ("auto", "jsonl", "chatgpt", "claude", "telegram", "discord", "slack", "csv")
JSON_FORMATS = (chatgpt, claude, telegram, discord)
DEFAULT_PER = {m.NAME: m.DEFAULT_PER for m in (chatgpt, claude, telegram, discord, slack, csv_map)}
MAX_EXPORT_BYTES = 2 * 1024 * 1024 * 1024
"""A bigger JSON or CSV export is refused rather than exhaust memory: a JSON export is
read whole, and a CSV's rows (read as a stream) are all held until the import writes them."""

_SNIFF_BYTES = 64 * 1024

__all__ = ["FORMATS", "ChatImport", "detect_value", "parse_granularity"]


def detect_value(value: Any) -> str | None:
    """The chat format a decoded JSON value is in, or None (never raises)."""
    for module in JSON_FORMATS:
        if module.looks_like(value):
            return str(module.NAME)
    return None


def detect(path: Path, mapping: dict[str, str] | None = None) -> str:
    """The format of ``path`` by its content: a chat format, or ``jsonl`` (the importer's
    own episodes, also its answer for anything it cannot place: the importer's reader then
    says what is wrong with it)."""
    return _sniff(path, mapping or {})[0]


_NOT_READ = object()


def _sniff(path: Path, mapping: dict[str, str]) -> tuple[str, Any]:
    """(format, the decoded JSON when deciding needed it whole, else ``_NOT_READ``): a
    large export is decoded once, not once to recognise it and again to read it."""
    try:
        if path.is_dir():
            return ("slack" if slack.is_export_folder(path) else "jsonl"), _NOT_READ
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            zipped = is_zip(head, handle)
    except OSError:
        return "jsonl", _NOT_READ
    if zipped:  # a zip that is no Slack export, or a damaged one: said as such
        return "slack", _NOT_READ
    text = head.lstrip(b"\xef\xbb\xbf").decode("utf-8", "replace")
    start = text.lstrip()[:1]
    if start not in ("{", "["):
        return ("csv" if csv_map.looks_like(text, mapping) else "jsonl"), _NOT_READ
    first_line = text.lstrip().split("\n", 1)[0]
    try:  # a JSON Lines file: its first line is a whole object (cheap to decide)
        return detect_value(load_json(first_line.encode())) or "jsonl", _NOT_READ
    except BadExport:
        pass
    try:
        if path.stat().st_size > MAX_EXPORT_BYTES:
            return "jsonl", _NOT_READ
        data = path.read_bytes()
        value = load_json(data)
    except OSError:
        return "jsonl", _NOT_READ
    except BadExport:  # cut off or damaged: its keys still say what it was meant to be
        if _later_line_is_whole(data):  # JSON Lines whose first line is bad or long
            return "jsonl", _NOT_READ
        return _by_keys(data), _NOT_READ
    found = detect_value(value)
    return (found, value) if found else ("jsonl", _NOT_READ)


_SIGNATURES = (
    ("chatgpt", ('"mapping"', '"current_node"')),
    ("claude", ('"chat_messages"',)),
    ("discord", ('"guild"', '"channel"', '"messages"')),
    ("telegram", ('"messages"', '"date_unixtime"')),
)


def _later_line_is_whole(data: bytes, lines: int = 5) -> bool:
    """Whether one of the lines after the first few is a whole JSON object: a file of
    JSON Lines (one document, cut off or not, has no such line). Its first line may be
    damaged or over 64 KiB; read as one damaged export it was refused whole when a later
    episode's keys looked like an export's."""
    start = data.find(b"\n") + 1
    for _ in range(lines):
        if start <= 0 or start >= len(data):
            return False
        end = data.find(b"\n", start)
        line = data[start : end if end >= 0 else len(data)].strip()
        if line.startswith(b"{"):
            try:
                if isinstance(load_json(line), dict):
                    return True
            except BadExport:
                pass
        start = end + 1 if end >= 0 else -1
    return False


def _by_keys(data: bytes) -> str:
    """The format whose key names a damaged file holds (``jsonl`` if none): a cut-off
    export is then reported once by its reader, not line by line as JSON Lines. The whole
    file is searched (it was read to be decoded): a first conversation over 64 KiB, or a
    Telegram export's contact list, pushed the keys past its start, and a cut-off export
    was read as JSON Lines, one error for each of its 27,000 lines."""
    for name, keys in _SIGNATURES:
        if all(key.encode() in data for key in keys):
            return name
    return "jsonl"


@dataclass
class ChatImport:
    """The import's choice of format, granularity and CSV mapping, and what it left out."""

    format: str = "auto"
    per: Granularity | None = None
    mapping: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, Counter[str]] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)

    def read(self, path: str | Path) -> Iterator[ParsedEpisode | LineError] | None:
        """The file's episodes and errors, or None when the importer reads it itself."""
        name = str(path)
        if name == "-" or self.format == "jsonl" or not _file_or_folder(Path(path)):
            return None  # a pipe, a device, a missing file: the importer says what it is
        fmt, value = self.format, _NOT_READ
        if fmt == "auto":
            fmt, value = _sniff(Path(path), self.mapping)
        if fmt == "jsonl":
            return None
        self.formats[name] = fmt
        skipped = self.skipped.setdefault(name, Counter())
        return self._episodes(Path(path), name, fmt, value, skipped)

    def _episodes(
        self, path: Path, name: str, fmt: str, value: Any, skipped: Counter[str]
    ) -> Iterator[ParsedEpisode | LineError]:
        per = self.per or parse_granularity(DEFAULT_PER[fmt])
        try:
            if value is not _NOT_READ:
                module = {m.NAME: m for m in JSON_FORMATS}[fmt]
                conversations = module.conversations(value, name, skipped)
            else:
                conversations = _conversations(path, name, fmt, self.mapping, skipped)
            yield from episodes(
                conversations, per=per, file=name, fmt=fmt, now=utcnow(), skipped=skipped
            )
        except BadExport as exc:
            yield LineError(name, 0, f"not a readable {fmt} export: {exc}; nothing was imported")
        except OSError as exc:
            yield LineError(name, 0, f"cannot read it ({exc.strerror or exc})")


def _file_or_folder(path: Path) -> bool:
    """A regular file or a folder: never open anything else to look inside (a named pipe
    with no writer would block for ever)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _conversations(
    path: Path, name: str, fmt: str, mapping: dict[str, str], skipped: Counter[str]
) -> Iterator[Any]:
    if fmt == "slack":
        if path.is_dir():
            if not slack.is_export_folder(path):
                raise BadExport("a Slack export folder holds users.json and channels.json")
            return slack.conversations(slack.open_folder(path), name, skipped)
        return slack.conversations(slack.zip_files(path), name, skipped)
    if path.is_dir():
        raise BadExport("is a directory")
    if os.stat(path).st_size > MAX_EXPORT_BYTES:
        raise BadExport(f"over {MAX_EXPORT_BYTES // 2**30} GiB")
    if fmt == "csv":  # read as a stream
        return csv_map.conversations(path, name, mapping, skipped)
    data = path.read_bytes()
    module = {m.NAME: m for m in JSON_FORMATS}[fmt]
    value = load_json(data)
    found = detect_value(value)
    if found is not None and found != fmt and not module.looks_like(value):
        # another format's shape read as this one's: a Discord export read as Telegram
        # counted its messages as "service messages" and imported nothing, exit 0
        raise BadExport(
            f"it is a {FORMAT_NAMES[found]}, not a {FORMAT_NAMES[fmt]} "
            f"(give --format {found}, or leave --format out)"
        )
    return module.conversations(value, name, skipped)

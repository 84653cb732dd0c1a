"""Importing episodes from JSONL (one object per line) or JSON (an array of objects).

Hostile input never crashes the import and never half-imports a file: every bad line is
reported as ``FILE:LINE: reason`` and skipped, and the good lines of a file are inserted in
one transaction. Lines are split on ``\\n`` only (so U+2028 inside a string is just a
character), read as bytes and decoded strictly, so invalid UTF-8 is reported with its
byte offset instead of being replaced silently.

Identity of an episode: a SHA-256 over its body (text or messages), its source and its
timestamp as given. Re-importing a file therefore adds nothing, while the same short text
sent at two different times ("ping") stays two episodes. An episode without a timestamp
is dated at import time, but its hash leaves the timestamp out, so a re-import of it is
still a no-op.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from curator.store.db import Store
from curator.store.models import Episode, format_utc, to_utc, utcnow

MAX_EPISODE_CHARS = 1_000_000
"""Longer episodes are rejected: a model context holds a few thousand tokens at most."""

MAX_NESTING = 64
MAX_INT_DIGITS = 30
_INSERT_CHUNK = 500


@dataclass(frozen=True)
class LineError:
    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class ImportReport:
    file: str
    lines: int = 0
    imported: int = 0
    duplicates: int = 0
    errors: list[LineError] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "lines": self.lines,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "rejected": len(self.errors),
            "errors": [{"line": e.line, "reason": e.reason} for e in self.errors],
        }


class _BadLine(ValueError):
    """One line's problem, worded for the user."""


@dataclass(frozen=True)
class ParsedEpisode:
    line: int
    external_id: str | None
    text: str
    messages: list[dict[str, str]] | None
    timestamp: datetime
    source: str
    metadata: dict[str, Any]
    content_hash: str


# -- JSON decoding with the hostile cases turned into clear errors --------------------------


def _reject_constant(name: str) -> Any:
    raise _BadLine(f"{name} is not valid JSON")


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _BadLine(f"integer with {len(digits.lstrip('-'))} digits is too large")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadLine(f"number {text[:20]} is out of range")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _BadLine(f"duplicate key {key!r}")
        result[key] = value
    return result


def _loads(text: str) -> Any:
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except RecursionError:
        raise _BadLine("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise _BadLine(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # int digit limits and friends
        if isinstance(exc, _BadLine):
            raise
        raise _BadLine(f"invalid JSON: {exc}") from None


def _check_depth_and_text(value: Any, where: str, depth: int = 0) -> None:
    """Reject deep nesting and strings that cannot be stored as UTF-8 (lone surrogates)."""
    if depth > MAX_NESTING:
        raise _BadLine(f"{where} is nested more than {MAX_NESTING} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _BadLine(f"{where} contains a lone surrogate (not valid Unicode)") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_depth_and_text(key, where, depth + 1)
            _check_depth_and_text(item, where, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_depth_and_text(item, where, depth + 1)


# -- field validation -----------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _parse_timestamp(value: Any) -> datetime:
    if not isinstance(value, str):
        raise _BadLine(f"'timestamp' must be an ISO 8601 string, not {_type_name(value)}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return to_utc(datetime.fromisoformat(text))
    except ValueError:
        raise _BadLine(f"'timestamp' {value[:40]!r} is not ISO 8601") from None


def _parse_messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise _BadLine(f"'messages' must be an array, not {_type_name(value)}")
    if not value:
        raise _BadLine("'messages' is empty")
    messages: list[dict[str, str]] = []
    for i, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise _BadLine(f"message {i} must be an object, not {_type_name(item)}")
        role, content, name = item.get("role"), item.get("content"), item.get("name")
        if not isinstance(role, str) or not role.strip():
            raise _BadLine(f"message {i} needs a 'role' string")
        if not isinstance(content, str):
            raise _BadLine(f"message {i} needs a 'content' string, not {_type_name(content)}")
        message = {"role": role.strip(), "content": content}
        if name is not None:
            if not isinstance(name, str):
                raise _BadLine(f"message {i} 'name' must be a string, not {_type_name(name)}")
            message["name"] = name
        messages.append(message)
    return messages


def render_messages(messages: Sequence[dict[str, str]]) -> str:
    """Plain text of a chat: one ``speaker: content`` block per message."""
    lines = []
    for m in messages:
        speaker = m.get("name") or m["role"]
        lines.append(f"{speaker}: {m['content']}")
    return "\n".join(lines)


def content_hash(body: Any, source: str, timestamp: str | None) -> str:
    canonical = json.dumps(
        {"body": body, "source": source, "timestamp": timestamp},
        ensure_ascii=False,
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def episode_from_object(obj: Any, line: int, now: datetime) -> ParsedEpisode:
    """Validate one decoded JSON value as an episode (raises ``_BadLine``)."""
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a JSON object, found {_type_name(obj)}")
    _check_depth_and_text(obj, "the episode")
    bodies = [k for k in ("content", "text", "messages") if k in obj]
    if not bodies:
        raise _BadLine("needs 'content', 'text' or 'messages'")
    if len(bodies) > 1:
        raise _BadLine(f"has both {bodies[0]!r} and {bodies[1]!r}; give exactly one")
    key = bodies[0]
    messages: list[dict[str, str]] | None = None
    if key == "messages":
        messages = _parse_messages(obj["messages"])
        text = render_messages(messages)
        body: Any = messages
    else:
        value = obj[key]
        if not isinstance(value, str):
            raise _BadLine(f"{key!r} must be a string, not {_type_name(value)}")
        if not value.strip():
            raise _BadLine(f"{key!r} is empty")
        text = body = value
    if len(text) > MAX_EPISODE_CHARS:
        raise _BadLine(f"episode is {len(text):,} characters, over the {MAX_EPISODE_CHARS:,} limit")

    raw_id = obj.get("id")
    if raw_id is not None and (not isinstance(raw_id, str | int) or isinstance(raw_id, bool)):
        raise _BadLine(f"'id' must be a string or an integer, not {_type_name(raw_id)}")
    source = obj.get("source", "")
    if not isinstance(source, str):
        raise _BadLine(f"'source' must be a string, not {_type_name(source)}")
    metadata = obj.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _BadLine(f"'metadata' must be an object, not {_type_name(metadata)}")

    if obj.get("timestamp") is None:
        timestamp, stamp_for_hash = now, None
    else:
        timestamp = _parse_timestamp(obj["timestamp"])
        stamp_for_hash = format_utc(timestamp)
    return ParsedEpisode(
        line=line,
        external_id=None if raw_id is None else str(raw_id),
        text=text,
        messages=messages,
        timestamp=timestamp,
        source=source.strip(),
        metadata=metadata,
        content_hash=content_hash(body, source.strip(), stamp_for_hash),
    )


# -- reading files ----------------------------------------------------------------------------


def _decode(raw: bytes, first: bool) -> str:
    if first and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadLine(f"invalid UTF-8 at byte {exc.start + 1} of the line") from None


def _iter_jsonl(lines: Iterable[bytes]) -> Iterator[tuple[int, Any | _BadLine]]:
    for number, raw in enumerate(lines, 1):
        raw = raw.rstrip(b"\n").rstrip(b"\r")
        try:
            text = _decode(raw, number == 1)
            if not text.strip():
                continue
            yield number, _loads(text)
        except _BadLine as exc:
            yield number, exc


def _iter_json_array(data: bytes) -> Iterator[tuple[int, Any | _BadLine]]:
    """The elements of a top-level JSON array, each with the line it starts on."""
    try:
        text = _decode(data, True)
    except _BadLine as exc:
        yield 1, exc
        return
    # A lenient decoder only finds where each element ends; the element is then decoded
    # again with the strict rules, so one bad element is reported and the next one is read.
    spanner = json.JSONDecoder(
        object_pairs_hook=list, parse_constant=str, parse_int=str, parse_float=str
    )
    pos = text.index("[") + 1
    length = len(text)

    def skip_ws(i: int) -> int:
        while i < length and text[i] in " \t\r\n":
            i += 1
        return i

    # Line numbers are counted incrementally: recounting from the start for every element
    # made large arrays quadratic.
    counted_to, line = 0, 1

    def line_at(i: int) -> int:
        nonlocal counted_to, line
        line += text.count("\n", counted_to, i)
        counted_to = i
        return line

    pos = skip_ws(pos)
    if pos < length and text[pos] == "]":
        return
    while pos < length:
        number = line_at(pos)
        try:
            _, end = spanner.raw_decode(text, pos)
        except RecursionError:
            yield number, _BadLine("JSON nested too deeply; the rest of the file was not read")
            return
        except json.JSONDecodeError as exc:
            yield number, _BadLine(f"invalid JSON: {exc.msg}; the rest of the file was not read")
            return
        try:
            value: Any = _loads(text[pos:end])
        except _BadLine as exc:
            value = exc
        yield number, value
        pos = skip_ws(end)
        if pos < length and text[pos] == ",":
            pos = skip_ws(pos + 1)
            continue
        if pos < length and text[pos] == "]":
            return
        yield line_at(pos), _BadLine("expected ',' or ']' after an array element")
        return
    yield text.count("\n") + 1, _BadLine("the array is not closed (file cut off?)")


def _looks_like_json_array(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
    return head.startswith(b"[")


def read_episodes(path: Path) -> Iterator[ParsedEpisode | LineError]:
    """Parse a file into episodes and line errors, in file order."""
    name = str(path)
    now = utcnow()
    if _looks_like_json_array(path):
        items: Iterator[tuple[int, Any | _BadLine]] = _iter_json_array(path.read_bytes())
        for number, value in items:
            yield from _to_episode(name, number, value, now)
    else:
        with path.open("rb") as handle:
            for number, value in _iter_jsonl(handle):
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


def import_file(store: Store, path: str | Path) -> ImportReport:
    """Import one file: its good lines in one transaction, its bad lines reported."""
    path = Path(path)
    report = ImportReport(file=str(path))
    if not path.is_file():
        report.errors.append(LineError(str(path), 0, "no such file"))
        return report
    episodes: list[ParsedEpisode] = []
    last_line = 0
    for item in read_episodes(path):
        if isinstance(item, LineError):
            report.errors.append(item)
            last_line = max(last_line, item.line)
        else:
            episodes.append(item)
            last_line = max(last_line, item.line)
    report.lines = last_line
    with store.write():
        seen: set[str] = set()
        fresh: list[ParsedEpisode] = []
        hashes = [e.content_hash for e in episodes]
        existing: set[str] = set()
        for start in range(0, len(hashes), _INSERT_CHUNK):
            chunk = hashes[start : start + _INSERT_CHUNK]
            query = Episode.select(Episode.content_hash).where(Episode.content_hash.in_(chunk))
            existing.update(row.content_hash for row in query)
        for episode in episodes:
            if episode.content_hash in existing or episode.content_hash in seen:
                report.duplicates += 1
                continue
            seen.add(episode.content_hash)
            fresh.append(episode)
        imported_at = utcnow()
        for start in range(0, len(fresh), _INSERT_CHUNK):
            rows = [
                {
                    "external_id": e.external_id,
                    "content_hash": e.content_hash,
                    "text": e.text,
                    "messages": e.messages,
                    "timestamp": e.timestamp,
                    "source": e.source,
                    "metadata": e.metadata,
                    "imported_at": imported_at,
                    "classify_truncated": False,
                }
                for e in fresh[start : start + _INSERT_CHUNK]
            ]
            Episode.insert_many(rows).execute()
        report.imported = len(fresh)
    return report


def import_files(store: Store, paths: Sequence[str | Path]) -> list[ImportReport]:
    """Import several files; each is its own all-or-nothing transaction."""
    return [import_file(store, p) for p in paths]

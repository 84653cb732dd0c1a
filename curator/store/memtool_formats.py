"""Reading other memory tools' files: Mem0, OpenMemory, Letta agent files, lists of strings.

People who leave (or compare) another memory tool bring its memories here; they come in
through the same review as the seed's JSON list (:mod:`curator.store.knowledge_file`).
The shape is recognised by content, never by the file name:

* **mem0**: what ``Memory.get_all()`` returns, ``{"results": [memory, ...]}``, or a bare
  array of memories; a memory is ``{"id", "memory", "created_at", "metadata", ...}``.
  ``memory`` is the text; ``metadata.importance`` (0..1) and ``metadata.distilled_at``
  (written by ``curator export --format mem0``) are used when present, else
  ``created_at`` is the date.
* **openmemory**: OpenMemory's export, ``{"memories": [...]}`` (its ``memories.json``),
  the zip holding that file, or a bare array; a memory is ``{"id", "content",
  "created_at", "state", ...}``. A memory whose ``state`` is ``deleted`` or ``archived``
  is reported and left out (it was not in the tool's memory any more).
* **letta**: a Letta agent file (``.af``): core memory blocks under ``blocks``,
  ``core_memory`` or ``memory_blocks`` (``{"label", "value", "limit"}``) and archival
  passages under ``passages`` (``{"text", "created_at"}``), at the top level or in each
  of ``agents``. A block holds many facts, one per line: each non-empty line of its
  value is one pattern (a leading bullet is removed); blocks carry no date.
* **strings**: a JSON array of strings, one pattern each.

The original ids are kept as each item's ``source_id`` (``mem0:ID``, ``openmemory:ID``,
``letta:block:LABEL:N`` for line N of a block, ``letta:passage:ID``); the import writes
them into the run's dedup trace, element by element (a candidate has no column for a
foreign id). Errors name the element: a bare array's are numbered by the line the
element starts on, an object's by the element's 1-based position in its list, and the
reason names the list (``results[3]``).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from curator.core.zip_errors import ZIP_READ_ERRORS, zip_reason
from curator.store.json_source import (
    LineError,
    _BadLine,
    _check_depth_and_text,
    _iter_json_array,
    _loads,
    _type_name,
)
from curator.store.knowledge_items import (
    DEFAULT_IMPORTANCE,
    KnowledgeFile,
    KnowledgeItem,
    _item_from_object,
    _parse_timestamp_field,
    _text,
)
from curator.store.memtool_origin import origin
from curator.store.models import format_utc

FORMATS = ("auto", "seed", "mem0", "openmemory", "letta", "strings")
"""``--format`` of ``import-knowledge``; ``auto`` recognises the shape by content."""

MAX_ZIP_JSON_BYTES = 512 * 1024 * 1024
"""The largest ``memories.json`` read out of a zip: a zip bomb stops here, unread."""

_LEFT_OUT_STATES = ("deleted", "archived")
_BLOCK_KEYS = ("blocks", "core_memory", "memory_blocks")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,9}[.)])\s+")


def detect(value: Any) -> str | None:
    """The format a parsed JSON document is in, or None when it is none of them.

    Total: any JSON value gives an answer, never an exception (a property test holds it).
    """
    if isinstance(value, list):
        for element in value:
            if isinstance(element, str):
                return "strings"
            if isinstance(element, dict):
                if "pattern" in element:
                    return "seed"
                if "memory" in element:
                    return "mem0"
                if "content" in element:
                    return "openmemory"
                return "seed"
        return "seed"
    if isinstance(value, dict):
        if "results" in value:
            return "mem0"
        if "memories" in value:
            return "openmemory"
        if any(k in value for k in (*_BLOCK_KEYS, "passages", "agents")):
            return "letta"
    return None


def _date(obj: dict[str, Any], keys: tuple[str, ...], now: datetime) -> datetime | None:
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        try:
            when = _parse_timestamp_field(value)
        except _BadLine as exc:
            raise _BadLine(str(exc).replace("'distilled'", f"'{key}'")) from None
        if when > now:
            raise _BadLine(
                f"{key!r} {str(value)[:40]!r} is in the future (now is {format_utc(now)})"
            )
        return when
    return None


def _source_id(prefix: str, value: Any) -> str | None:
    if isinstance(value, str | int) and not isinstance(value, bool):
        return f"{prefix}:{value}"
    return None


def _importance(metadata: Any) -> tuple[float, bool]:
    if not isinstance(metadata, dict) or metadata.get("importance") is None:
        return DEFAULT_IMPORTANCE, False
    value = metadata["importance"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _BadLine(f"'metadata.importance' must be a number, not {_type_name(value)}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise _BadLine(f"'metadata.importance' {value} is outside 0..1")
    return float(value), True


def _memory_item(obj: Any, line: int, now: datetime, fmt: str) -> KnowledgeItem:
    """One Mem0 or OpenMemory memory (see the module doc)."""
    key = "memory" if fmt == "mem0" else "content"
    if not isinstance(obj, dict):
        raise _BadLine(f"expected a memory object with {key!r}, found {_type_name(obj)}")
    _check_depth_and_text(obj, "the memory")
    if key not in obj:
        raise _BadLine(f"needs a {key!r} string")
    if not isinstance(obj[key], str):
        raise _BadLine(f"{key!r} must be a string, not {_type_name(obj[key])}")
    state = obj.get("state")
    if fmt == "openmemory" and isinstance(state, str) and state.lower() in _LEFT_OUT_STATES:
        raise _BadLine(f"state {state!r}: left out (no longer in the tool's memory)")
    text = _text(obj[key], repr(key))
    importance, given = _importance(obj.get("metadata"))
    metadata = obj.get("metadata")
    dated = metadata if isinstance(metadata, dict) and "distilled_at" in metadata else obj
    when = _date(dated, ("distilled_at", "created_at"), now)
    kept = origin(fmt, **{k: obj.get(k) for k in ("id", "created_at", "updated_at")})
    return KnowledgeItem(line, text, importance, when, given, _source_id(fmt, obj.get("id")), kept)


def _string_item(value: Any, line: int) -> KnowledgeItem:
    if not isinstance(value, str):
        raise _BadLine(f"expected a string, found {_type_name(value)}")
    _check_depth_and_text(value, "the string")
    return KnowledgeItem(line, _text(value, "the string"), DEFAULT_IMPORTANCE, None, False)


def _element(fmt: str, value: Any, line: int, now: datetime) -> KnowledgeItem:
    if fmt == "seed":
        return _item_from_object(value, line, now)
    if fmt == "strings":
        return _string_item(value, line)
    return _memory_item(value, line, now, fmt)


def read_array(text: str, result: KnowledgeFile, now: datetime, fmt: str) -> None:
    """A top-level JSON array, element by element with real line numbers.

    ``fmt`` ``auto`` takes the format of the first readable element; every element is
    then read as that format (a stray one is an error on its line, not a guess).
    """
    elements = list(_iter_json_array(text))
    if fmt == "auto":
        fmt = detect([v for _, v in elements if not isinstance(v, _BadLine)][:1]) or "seed"
    if fmt == "letta":
        result.errors.append(
            LineError(result.path, 1, "a JSON array; a Letta agent file is a JSON object")
        )
        return
    result.shape = "json" if fmt == "seed" else fmt
    for number, value in elements:
        if isinstance(value, _BadLine):
            result.errors.append(LineError(result.path, number, str(value)))
            continue
        try:
            result.items.append(_element(fmt, value, number, now))
        except _BadLine as exc:
            result.errors.append(LineError(result.path, number, str(exc)))


def _listed(doc: dict[str, Any], key: str, where: str, result: KnowledgeFile) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        result.errors.append(
            LineError(result.path, 1, f"{where}{key!r} must be an array, not {_type_name(value)}")
        )
        return []
    return value


def _block_lines(block: Any, label_hint: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(text, source id, origin) of each non-empty line of a core memory block."""
    if not isinstance(block, dict):
        raise _BadLine(f"expected a block object, found {_type_name(block)}")
    _check_depth_and_text(block, "the block")
    value = block.get("value")
    if not isinstance(value, str):
        raise _BadLine(f"the block needs a 'value' string, not {_type_name(value)}")
    label = block.get("label")
    label = label if isinstance(label, str) and label else label_hint
    for n, line in enumerate(value.splitlines(), 1):
        stripped = _BULLET.sub("", line).strip()
        if stripped:
            where = origin("letta", block=label, block_id=block.get("id"), line=n)
            yield stripped, f"letta:block:{label}:{n}", where


def _read_letta(doc: dict[str, Any], result: KnowledgeFile, now: datetime) -> None:
    scopes: list[tuple[str, dict[str, Any]]] = [("", doc)]
    for i, agent in enumerate(_listed(doc, "agents", "", result), 1):
        if isinstance(agent, dict):
            scopes.append((f"agents[{i}].", agent))
        else:
            result.errors.append(
                LineError(
                    result.path, i, f"agents[{i}]: expected an object, not {_type_name(agent)}"
                )
            )
    seen_blocks: set[str] = set()  # a block listed at the top and in its agent: once
    for where, scope in scopes:
        for key in _BLOCK_KEYS:
            for i, block in enumerate(_listed(scope, key, where, result), 1):
                name = f"{where}{key}[{i}]"
                block_id = block.get("id") if isinstance(block, dict) else None
                if isinstance(block_id, str):
                    if block_id in seen_blocks:
                        continue
                    seen_blocks.add(block_id)
                try:
                    for text, source, came_from in _block_lines(block, f"block{i}"):
                        try:
                            item = KnowledgeItem(
                                i,
                                _text(text, "the line"),
                                DEFAULT_IMPORTANCE,
                                None,
                                False,
                                source,
                                came_from,
                            )
                        except _BadLine as exc:
                            result.errors.append(LineError(result.path, i, f"{name}: {exc}"))
                            continue
                        result.items.append(item)
                except _BadLine as exc:
                    result.errors.append(LineError(result.path, i, f"{name}: {exc}"))
        for i, passage in enumerate(_listed(scope, "passages", where, result), 1):
            try:
                if not isinstance(passage, dict):
                    raise _BadLine(f"expected a passage object, found {_type_name(passage)}")
                _check_depth_and_text(passage, "the passage")
                if not isinstance(passage.get("text"), str):
                    raise _BadLine(f"needs a 'text' string, not {_type_name(passage.get('text'))}")
                result.items.append(
                    KnowledgeItem(
                        i,
                        _text(passage["text"], "'text'"),
                        DEFAULT_IMPORTANCE,
                        _date(passage, ("created_at",), now),
                        False,
                        _source_id("letta:passage", passage.get("id")),
                        origin(
                            "letta",
                            passage_id=passage.get("id"),
                            created_at=passage.get("created_at"),
                        ),
                    )
                )
            except _BadLine as exc:
                result.errors.append(LineError(result.path, i, f"{where}passages[{i}]: {exc}"))


def read_object(text: str, result: KnowledgeFile, now: datetime, fmt: str) -> None:
    """A top-level JSON object: Mem0's ``results``, OpenMemory's ``memories``, a Letta file."""
    try:
        doc = _loads(text)
    except _BadLine as exc:
        cut = any(w in str(exc) for w in ("Unterminated", "Expecting"))
        result.errors.append(LineError(result.path, 1, f"{exc}{' (file cut off?)' * cut}"))
        return
    found = detect(doc)
    if fmt == "auto":
        if found is None:
            result.errors.append(
                LineError(
                    result.path,
                    1,
                    "a JSON object of no known shape; expected an array of {pattern, "
                    "importance, distilled}, Mem0 {results}, OpenMemory {memories} or a "
                    "Letta agent file {blocks, passages, agents}",
                )
            )
            return
        fmt = found
    result.shape = fmt
    if fmt in ("seed", "strings"):
        result.errors.append(LineError(result.path, 1, f"a JSON object; {fmt} is a JSON array"))
        return
    if fmt == "letta":
        _read_letta(doc, result, now)
        return
    key = "results" if fmt == "mem0" else "memories"
    if key not in doc:
        result.errors.append(LineError(result.path, 1, f"no {key!r} array in the object"))
        return
    for i, value in enumerate(_listed(doc, key, "", result), 1):
        try:
            result.items.append(_element(fmt, value, i, now))
        except _BadLine as exc:
            result.errors.append(LineError(result.path, i, f"{key}[{i}]: {exc}"))


def zip_json_text(data: bytes, result: KnowledgeFile) -> str | None:
    """The ``memories.json`` of an OpenMemory export zip, decoded; None (and an error) if none.

    The size is checked on what is read, not on what the zip's header claims.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [
                info.filename
                for info in archive.infolist()
                if not info.is_dir() and PurePosixPath(info.filename).name == "memories.json"
            ]
            if len(names) != 1:
                said = "without" if not names else f"with {len(names):,} files named"
                result.errors.append(
                    LineError(result.path, 0, f"a zip {said} memories.json (OpenMemory's export)")
                )
                return None
            with archive.open(names[0]) as member:
                raw = member.read(MAX_ZIP_JSON_BYTES + 1)
    except ZIP_READ_ERRORS as exc:
        result.errors.append(LineError(result.path, 0, f"an unreadable zip ({zip_reason(exc)})"))
        return None
    if len(raw) > MAX_ZIP_JSON_BYTES:
        result.errors.append(
            LineError(
                result.path,
                0,
                f"memories.json in the zip is over {MAX_ZIP_JSON_BYTES // 2**20} MiB; not read",
            )
        )
        return None
    try:
        return raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        result.errors.append(
            LineError(result.path, 0, f"memories.json: invalid UTF-8 at byte {exc.start + 1}")
        )
        return None

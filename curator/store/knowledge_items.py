"""What a knowledge file holds, item by item, whatever tool wrote it.

The seed's JSON reader (:mod:`curator.store.knowledge_file`) and the other memory tools'
readers (:mod:`curator.store.memtool_formats`) build the same items with the same checks;
they live here so neither reader imports the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from curator.store.episode_records import _parse_timestamp
from curator.store.json_source import LineError, _BadLine, _check_depth_and_text, _type_name
from curator.store.models import MAX_PATTERN_CHARS, format_utc

DEFAULT_IMPORTANCE = 0.5
"""For plain text and Markdown (no score) and JSON elements without one."""


@dataclass(frozen=True)
class KnowledgeItem:
    line: int
    text: str
    importance: float
    distilled_at: datetime | None  # None: no date in the file (the commit's time is used)
    importance_given: bool = True
    source_id: str | None = None  # the id another memory tool gave it (memtool_formats)
    origin: dict[str, Any] | None = None  # its original ids and dates (memtool_origin)


@dataclass
class KnowledgeFile:
    path: str
    shape: str  # json | markdown | text | mem0 | openmemory | letta | strings | none
    items: list[KnowledgeItem] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def _text(value: str, where: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise _BadLine(f"{where} is empty")
    if len(text) > MAX_PATTERN_CHARS:
        raise _BadLine(f"{where} is {len(text):,} characters, over the {MAX_PATTERN_CHARS:,} limit")
    return text


def _item_from_object(obj: Any, line: int, now: datetime) -> KnowledgeItem:
    if not isinstance(obj, dict):
        raise _BadLine(f"expected an object with a 'pattern', found {_type_name(obj)}")
    _check_depth_and_text(obj, "the element")
    if "pattern" not in obj:
        raise _BadLine("needs a 'pattern' string")
    pattern = obj["pattern"]
    if not isinstance(pattern, str):
        raise _BadLine(f"'pattern' must be a string, not {_type_name(pattern)}")
    text = _text(pattern, "'pattern'")
    importance = obj.get("importance")
    given = importance is not None
    if importance is None:
        importance = DEFAULT_IMPORTANCE
    elif isinstance(importance, bool) or not isinstance(importance, int | float):
        raise _BadLine(f"'importance' must be a number, not {_type_name(importance)}")
    elif not math.isfinite(importance) or not 0.0 <= importance <= 1.0:
        raise _BadLine(f"'importance' {importance} is outside 0..1")
    distilled = obj.get("distilled")
    when = None if distilled is None else _parse_timestamp_field(distilled)
    if when is not None and when > now:
        raise _BadLine(
            f"'distilled' {str(distilled)[:40]!r} is in the future (now is "
            f"{format_utc(now)}); give the date it was distilled, or none"
        )
    return KnowledgeItem(line, text, float(importance), when, given)


def _parse_timestamp_field(value: Any) -> datetime:
    try:
        return _parse_timestamp(value)
    except _BadLine as exc:
        raise _BadLine(str(exc).replace("'timestamp'", "'distilled'")) from None

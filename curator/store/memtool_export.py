"""Knowledge out to other memory tools: Mem0's ``Memory.add`` list and a Letta block.

Both take the rows :func:`curator.store.knowledge.top_k_patterns` ranks (the prompt's
order), so the ranking lives in one place. ``mem0`` is a JSON list, one element per
pattern: ``messages`` (one user message, for ``Memory.add(e["messages"], metadata=
e["metadata"], infer=False)``, which stores the text as it is), ``memory`` (the same text)
and ``metadata`` (importance, effective importance, distilled date, category, rank and the
provenance: pattern id and source episode ids). ``curator import-knowledge`` reads the list
back (its ``memory`` and ``metadata``). ``letta-block`` is the text of one core-memory
block: a ``- pattern`` line per pattern, highest effective importance first, within
``limit`` characters counted as Letta counts them (``len`` of the value), last line
included; a pattern is whole or left out, never cut, and the last line says how many were
left out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from curator.core.textsafety import escape_controls
from curator.core.wording import agree, plural
from curator.store.db import Store
from curator.store.knowledge import PatternRow, export_json, export_markdown
from curator.store.models import PatternEpisode
from curator.store.snapshot import tuples

DEFAULT_BLOCK_LIMIT = 5000
"""Letta's default character limit of a core-memory block."""

MIN_BLOCK_LIMIT = 80
"""Room for the last line with any count: a smaller limit is a usage error."""

EXPORT_FORMATS = ("markdown", "json", "mem0", "letta-block")
"""``curator export --format`` and the window's File ▸ Export knowledge, in menu order."""


@dataclass(frozen=True, slots=True)
class ExportText:
    """One format's text of the ranked patterns: ``written`` of ``total`` patterns went in
    (fewer only for a Letta block, whose ``limit`` leaves some out)."""

    fmt: str
    text: str
    written: int
    total: int
    limit: int | None = None


def _sources(store: Store, ids: list[int]) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    for start in range(0, len(ids), 500):
        query = (
            PatternEpisode.select(PatternEpisode.pattern, PatternEpisode.episode)
            .where(PatternEpisode.pattern.in_(ids[start : start + 500]))
            .order_by(PatternEpisode.pattern, PatternEpisode.episode)
            .bind(store.db)
        )
        for pattern_id, episode_id in tuples(query):
            found[pattern_id].append(episode_id)
    return found


def export_mem0(store: Store, rows: list[PatternRow]) -> list[dict[str, Any]]:
    """The rows as a list for ``Memory.add`` (see the module doc)."""
    sources = _sources(store, [r.id for r in rows])
    return [
        {
            "messages": [{"role": "user", "content": r.text}],
            "memory": r.text,
            "metadata": {
                "importance": r.importance,
                "effective_importance": round(r.effective, 6),
                "distilled_at": r.distilled_at.isoformat(),
                "category": r.category,
                "rank": r.rank,
                "provenance": {"pattern_id": r.id, "source_episode_ids": sources.get(r.id, [])},
            },
        }
        for r in rows
    ]


def _last_line(left_out: int, total: int, limit: int) -> str:
    if not left_out:
        fit = agree(total, "the pattern fits", f"all {total:,} patterns fit")
        return f"({fit} in {limit:,} characters)"
    return f"({left_out:,} of {plural(total, 'pattern')} did not fit in {limit:,} characters)"


def export_letta_block(rows: list[PatternRow], limit: int = DEFAULT_BLOCK_LIMIT) -> str:
    """The block text, at most ``limit`` characters (see the module doc)."""
    return _letta_block(rows, limit)[0]


def _letta_block(rows: list[PatternRow], limit: int) -> tuple[str, int]:
    """The block text and how many patterns it holds.

    Patterns are taken in rank order; one that does not fit is left out and the next,
    shorter ones are still tried, so a long pattern does not keep the rest out.
    """
    if limit < MIN_BLOCK_LIMIT:
        raise ValueError(f"the limit must be at least {MIN_BLOCK_LIMIT} characters")
    total = len(rows)
    # the widest last line any count can give, so whatever is left out it still fits
    budget = limit - len(_last_line(total, total, limit)) - 1
    lines: list[str] = []
    used = 0
    for row in rows:
        line = f"- {escape_controls(' '.join(row.text.split()))}"
        cost = len(line) + 1  # its newline
        if used + cost <= budget:
            lines.append(line)
            used += cost
    written = len(lines)
    lines.append(_last_line(total - written, total, limit))
    return "\n".join(lines), written


def export_text(
    store: Store, rows: list[PatternRow], fmt: str, limit: int = DEFAULT_BLOCK_LIMIT
) -> ExportText:
    """The file the window writes for ``fmt`` (one of :data:`EXPORT_FORMATS`), made by
    the functions ``curator export --format FMT`` prints with: the same Mem0 list, the
    same Letta block and Markdown; for ``json`` the list of patterns that the command
    line's document holds under ``patterns``.

    ``limit`` applies to ``letta-block`` only; below :data:`MIN_BLOCK_LIMIT` (or an
    unknown format) is a ValueError, as the command line's usage error.
    """
    total = len(rows)
    if fmt == "markdown":
        return ExportText(fmt, export_markdown(rows), total, total)
    if fmt == "json":
        text = json.dumps(export_json(rows), ensure_ascii=False, indent=2) + "\n"
        return ExportText(fmt, text, total, total)
    if fmt == "mem0":
        text = json.dumps(export_mem0(store, rows), ensure_ascii=False, indent=2) + "\n"
        return ExportText(fmt, text, total, total)
    if fmt == "letta-block":
        block, written = _letta_block(rows, limit)
        return ExportText(fmt, block, written, total, limit)  # the value, as Letta counts it
    raise ValueError(f"unknown export format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")

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

from collections import defaultdict
from typing import Any

from curator.core.textsafety import escape_controls
from curator.store.db import Store
from curator.store.knowledge import PatternRow
from curator.store.models import PatternEpisode
from curator.store.snapshot import tuples

DEFAULT_BLOCK_LIMIT = 5000
"""Letta's default character limit of a core-memory block."""

MIN_BLOCK_LIMIT = 80
"""Room for the last line with any count: a smaller limit is a usage error."""


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
        return f"(all {total} patterns fit in {limit} characters)"
    return f"({left_out} of {total} patterns did not fit in {limit} characters)"


def export_letta_block(rows: list[PatternRow], limit: int = DEFAULT_BLOCK_LIMIT) -> str:
    """The block text, at most ``limit`` characters (see the module doc).

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
    lines.append(_last_line(total - (len(lines)), total, limit))
    return "\n".join(lines)

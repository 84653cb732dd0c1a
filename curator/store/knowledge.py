"""Reading the Knowledge layer: active patterns, the top K, provenance, export.

All patterns decay at the same rate, so their order by effective importance never changes
with time alone; it is the order of the stored ``rank_key`` (see
:func:`curator.core.scoring.rank_key`). The top K is therefore one query on the
``pattern_rank`` index, whatever "now" is; effective importances are computed only for the
rows returned.

One exception: a ``distilled_at`` in the future. Intake refuses such dates and a commit
stamps at most its own time, but a database written before that may hold one, whose
stored key ranks it above every real pattern while its effective importance is only its
stored value. Those rows (found by an indexed ``distilled_at > now``; normally none) are
ranked by :func:`curator.core.scoring.standing_key`, the key of the value they show, and
merged into the indexed order, so the prompt's order is always the order of the shown
effective importance; ties go to the newer decay reference (the date, capped at now),
then to the lower id.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from peewee import JOIN, fn

from curator.core.scoring import decay_reference, effective_importance, standing_key
from curator.core.textsafety import escape_controls
from curator.store.db import Store
from curator.store.models import Changeset, Episode, Pattern, PatternEpisode, Run, utcnow
from curator.store.settings import load_settings
from curator.store.snapshot import tuples

RANK_ORDER = (Pattern.rank_key.desc(), Pattern.distilled_at.desc(), Pattern.id.asc())


@dataclass(frozen=True)
class PatternRow:
    id: int
    text: str
    importance: float
    effective: float
    distilled_at: datetime
    category: str
    status: str
    revision: int
    rank: int  # 1-based position among active patterns
    in_top_k: bool
    sources: int


@dataclass(frozen=True)
class SourceRow:
    episode_id: int
    run_id: int | None
    run_kind: str | None
    timestamp: datetime
    source: str
    preview: str


def _settings(store: Store, k: int | None, rate: float | None) -> tuple[int, float]:
    if k is not None and rate is not None:
        return k, rate
    saved = load_settings(store)
    return (saved.top_k if k is None else k), (saved.decay_rate if rate is None else rate)


def active_patterns(
    store: Store, now: datetime | None = None, k: int | None = None, rate: float | None = None
) -> list[PatternRow]:
    """Every active pattern in prompt order, with effective importance and top-K flag."""
    return _rows(store, now, k, rate, limit=None)


def top_k_patterns(
    store: Store, k: int | None = None, now: datetime | None = None, rate: float | None = None
) -> list[PatternRow]:
    """The K patterns the agent receives in its prompt (one indexed query)."""
    return _rows(store, now, k, rate, limit=k if k is not None else None, only_top=True)


def _rows(
    store: Store,
    now: datetime | None,
    k: int | None,
    rate: float | None,
    *,
    limit: int | None,
    only_top: bool = False,
) -> list[PatternRow]:
    top_k, decay = _settings(store, k, rate)
    now = now or utcnow()
    sources = (
        PatternEpisode.select(PatternEpisode.pattern, fn.COUNT(PatternEpisode.episode).alias("n"))
        .group_by(PatternEpisode.pattern)
        .alias("src")
    )
    base = Pattern.select(Pattern, fn.COALESCE(sources.c.n, 0).alias("n_sources")).join(
        sources, JOIN.LEFT_OUTER, on=(sources.c.pattern_id == Pattern.id)
    )
    active = Pattern.status == "active"
    query = base.where(active & (Pattern.distilled_at <= now)).order_by(*RANK_ORDER)
    count = None
    if only_top:
        count = top_k if limit is None else limit
        query = query.limit(count)
    future = list(base.where(active & (Pattern.distilled_at > now)))
    ordered = _merge_future(query, future, now, decay)
    if count is not None:
        ordered = itertools.islice(ordered, max(0, count))
    rows = []
    for rank, p in enumerate(ordered, 1):
        rows.append(
            PatternRow(
                id=p.id,
                text=p.text,
                importance=p.importance,
                effective=effective_importance(p.importance, p.distilled_at, now=now, rate=decay),
                distilled_at=p.distilled_at,
                category=p.category,
                status=p.status,
                revision=p.revision,
                rank=rank,
                in_top_k=rank <= top_k,
                sources=int(p.n_sources),
            )
        )
    return rows


def standing_order(
    importance: float, distilled_at: datetime, pattern_id: int, now: datetime, rate: float
) -> tuple[float, float, int]:
    """The prompt's order as a sort key: the shown value's key, descending, then the newer
    decay reference, then the lower id (a future date counts as ``now``, where its frozen
    value puts it). Every ranking of patterns breaks its ties by it."""
    key = standing_key(importance, distilled_at, now, rate)
    return (-key, -decay_reference(distilled_at, now).timestamp(), pattern_id)


def _merge_future(ranked: Any, future: list[Any], now: datetime, rate: float) -> Iterator[Any]:
    """The indexed order with the future-dated rows put where their shown value ranks.

    Both streams are in the order ``(key desc, decay reference desc, id asc)``: the
    indexed one by the stored key (its own key, its dates being in the past), the
    future one by :func:`standing_key` (every reference there is ``now``).
    """
    if not future:
        yield from ranked
        return

    def stored(p: Any) -> tuple[float, float, int]:
        return (-p.rank_key, -p.distilled_at.timestamp(), p.id)

    def standing(p: Any) -> tuple[float, float, int]:
        return standing_order(p.importance, p.distilled_at, p.id, now, rate)

    future.sort(key=standing)
    decorated = heapq.merge(
        ((stored(p), p) for p in ranked),
        ((standing(p), p) for p in future),
        key=lambda pair: pair[0],
    )
    for _key, p in decorated:
        yield p


def pattern_sources(store: Store, pattern_id: int) -> list[SourceRow]:
    """The episodes a pattern came from (or was confirmed by), with the run that linked them.

    Read as plain tuples, not model instances: a pattern confirmed by many runs has tens
    of thousands of sources, and three model objects per row took a second at 20,000.
    """
    query = (
        PatternEpisode.select(
            Episode.id,
            PatternEpisode.run,
            Run.kind,
            Episode.timestamp,
            Episode.source,
            Episode.text,
        )
        .join(Episode)
        .switch(PatternEpisode)
        .join(Run, JOIN.LEFT_OUTER)
        .where(PatternEpisode.pattern == pattern_id)
        .order_by(Episode.timestamp)
        .bind(store.db)
    )
    rows = tuples(query)
    return [
        SourceRow(
            episode_id=episode_id,
            run_id=run_id,
            run_kind=run_kind,
            timestamp=timestamp,
            source=source,
            preview=text.strip().split("\n", 1)[0][:200],
        )
        for episode_id, run_id, run_kind, timestamp, source, text in rows
    ]


def leaving_top_k(
    store: Store,
    days_ahead: float,
    k: int | None = None,
    now: datetime | None = None,
    rate: float | None = None,
) -> list[PatternRow]:
    """Prompt patterns that a new pattern at today's cut-off would push out in ``days_ahead``.

    Without new patterns the order never changes (all decay alike), so nothing leaves by
    rank alone. What does change is how weak the prompt's patterns become: a pattern is
    listed when its effective importance in ``days_ahead`` days is below the cut-off today
    (the K-th pattern's effective importance now), i.e. a newly distilled pattern scored at
    today's cut-off would outrank it by then. While the prompt has room (fewer than K
    active patterns), a new pattern pushes nothing out and the list is empty.
    """
    now = now or utcnow()
    top_k, decay = _settings(store, k, rate)
    top = top_k_patterns(store, k=top_k, now=now, rate=decay)
    return leaving_among(top, days_ahead, top_k, now, decay)


def leaving_among(
    rows: list[PatternRow], days_ahead: float, k: int, now: datetime, rate: float
) -> list[PatternRow]:
    """:func:`leaving_top_k` over rows already loaded in prompt order (no query).

    The Knowledge pane loads every active pattern once and moves its "in N days" slider
    over them; asking the database again at every slider step would only repeat the read.
    """
    top = rows[:k]
    if k <= 0 or len(top) < k:
        return []
    kth = top[-1]  # today's cut-off, at this ``now`` (the rows may be a moment old)
    cutoff = effective_importance(kth.importance, kth.distilled_at, now=now, rate=rate)
    later = now + timedelta(days=days_ahead)
    return [
        row
        for row in top
        if effective_importance(row.importance, row.distilled_at, now=later, rate=rate) < cutoff
    ]


def last_retirement(store: Store) -> int | None:
    """The newest retirement changeset not yet undone (what "Undo retire" reverts)."""
    found = (
        Changeset.select(Changeset.id)
        .where((Changeset.kind == "retire") & Changeset.undone_by.is_null())
        .order_by(Changeset.id.desc())
        .bind(store.db)
        .first()
    )
    return int(found.id) if found is not None else None


def export_markdown(rows: list[PatternRow]) -> str:
    """The knowledge block as the agent receives it, ready to paste into a system prompt.

    A control character an older database still holds is written as a visible ``\\x1b``
    (:func:`curator.core.textsafety.escape_controls`): the block goes into a prompt file
    and before a person's eyes, where it must not hide or erase text.
    """
    lines = [
        "## Knowledge",
        "",
        "Patterns distilled from past episodes, most important first:",
        "",
    ]
    lines += [f"- {' '.join(escape_controls(r.text).split())}" for r in rows]
    return "\n".join(lines) + "\n"


def export_json(rows: list[PatternRow]) -> list[dict[str, object]]:
    return [
        {
            "id": r.id,
            "text": r.text,
            "importance": r.importance,
            "effective_importance": round(r.effective, 6),
            "distilled_at": r.distilled_at.isoformat(),
            "category": r.category,
            "rank": r.rank,
        }
        for r in rows
    ]

"""Knowledge queries: the indexed top K equals the decay order, and what leaves the prompt."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from curator.core.scoring import effective_importance, rank_key, top_k
from curator.store.db import Store
from curator.store.knowledge import active_patterns, leaving_top_k, top_k_patterns
from curator.store.models import Pattern, utcnow


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "knowledge.sqlite")
    now = utcnow()
    with s.write():
        for i in range(30):
            distilled = now - timedelta(days=(i * 7) % 40, hours=i)
            importance = ((i * 37) % 100) / 100
            Pattern.create(
                text=f"pattern {i} about what keeps happening",
                importance=importance,
                distilled_at=distilled,
                rank_key=rank_key(importance, distilled),
                status="retired" if i == 3 else "active",
            )
    yield s
    s.close()


@pytest.mark.parametrize("days_later", [0, 1.5, 30, 400])
def test_indexed_top_k_equals_reference_order_at_any_time(store: Store, days_later: float) -> None:
    now = utcnow() + timedelta(days=days_later)
    active = list(Pattern.select().where(Pattern.status == "active"))
    expected = [p.id for p in top_k(active, 10, now=now)]
    assert [r.id for r in top_k_patterns(store, k=10, now=now)] == expected
    rows = active_patterns(store, now=now, k=10)
    assert len(rows) == 29 and sum(r.in_top_k for r in rows) == 10
    assert [r.effective for r in rows] == sorted((r.effective for r in rows), reverse=True)


def test_leaving_top_k(store: Store) -> None:
    assert leaving_top_k(store, 0, k=10) == []
    later = leaving_top_k(store, 60, k=10)
    top = top_k_patterns(store, k=10)
    cutoff = top[-1].effective
    assert later and {r.id for r in later} <= {r.id for r in top}
    in_60_days = utcnow() + timedelta(days=60)
    assert all(
        effective_importance(r.importance, r.distilled_at, in_60_days) < cutoff for r in later
    )
    staying = [r for r in top if r.id not in {x.id for x in later}]
    assert all(
        effective_importance(r.importance, r.distilled_at, in_60_days) >= cutoff for r in staying
    )
    # With room left in the prompt, a new pattern pushes nothing out.
    assert leaving_top_k(store, 365, k=50) == []


def test_changing_the_decay_rate_reranks_the_stored_keys(store: Store) -> None:
    from curator.store.settings import set_setting

    set_setting(store, "decay_rate", 0.5)
    now = utcnow()
    active = list(Pattern.select().where(Pattern.status == "active"))
    expected = [p.id for p in top_k(active, 10, now=now, rate=0.5)]
    assert [r.id for r in top_k_patterns(store, k=10, now=now)] == expected


def test_leaving_among_loaded_rows_equals_the_query(store: Store) -> None:
    """The pane's slider works on rows it loaded once; it lists what the query lists."""
    from curator.store.knowledge import leaving_among

    now = utcnow()
    rows = active_patterns(store, now=now, k=10, rate=0.95)
    for days in (0, 7, 30, 200):
        expected = [r.id for r in leaving_top_k(store, days, k=10, now=now, rate=0.95)]
        assert [r.id for r in leaving_among(rows, days, 10, now, 0.95)] == expected
    assert leaving_among(rows[:9], 30, 10, now, 0.95) == []  # room left: nothing leaves


def test_last_retirement_is_the_newest_not_undone(store: Store) -> None:
    from curator.pipeline.audit import retire_patterns
    from curator.pipeline.commit import undo_changeset
    from curator.store.knowledge import last_retirement

    assert last_retirement(store) is None
    ids = [r.id for r in active_patterns(store)[:2]]
    first = retire_patterns(store, ids[:1]).id
    second = retire_patterns(store, ids[1:]).id
    assert last_retirement(store) == second
    undo_changeset(store, second)
    assert last_retirement(store) == first


def test_pattern_sources_lists_each_episode_with_its_run_oldest_first(store: Store) -> None:
    """Read as plain rows: the same fields the model-instance read gave, an episode linked
    without a run included (outer join), the preview the text's first line."""
    from datetime import UTC, datetime

    from curator.store.knowledge import pattern_sources
    from curator.store.models import Episode, PatternEpisode, Run

    pattern = Pattern.select().order_by(Pattern.id).first()
    with store.write():
        run = Run.create(kind="distill", status="committed")
        newer = Episode.create(
            content_hash="a", text="  second line one\nline two", source="dm",
            timestamp=datetime(2026, 3, 2, tzinfo=UTC), metadata={},
        )  # fmt: skip
        older = Episode.create(
            content_hash="b", text="first " * 60, source="replies",
            timestamp=datetime(2026, 3, 1, tzinfo=UTC), metadata={},
        )  # fmt: skip
        PatternEpisode.create(pattern=pattern, episode=newer, run=run)
        PatternEpisode.create(pattern=pattern, episode=older, run=None)
    rows = pattern_sources(store, pattern.id)
    assert [r.episode_id for r in rows] == [older.id, newer.id]
    assert (rows[0].run_id, rows[0].run_kind, rows[0].source) == (None, None, "replies")
    assert (rows[1].run_id, rows[1].run_kind, rows[1].source) == (run.id, "distill", "dm")
    assert rows[1].preview == "second line one" and len(rows[0].preview) == 200
    assert rows[0].timestamp == datetime(2026, 3, 1, tzinfo=UTC)

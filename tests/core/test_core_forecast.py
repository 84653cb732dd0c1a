"""Decay forecast dates checked against the decay formula of the scoring module."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from curator.core.forecast import PatternAge, forecast
from curator.core.scoring import effective_importance

NOW = datetime(2026, 6, 1, tzinfo=UTC)
RATE = 0.95


def _patterns(n: int) -> list[PatternAge]:
    return [
        PatternAge(i, 0.3 + 0.07 * (i % 9), NOW - timedelta(days=3 * i), f"p{i}")
        for i in range(1, n + 1)
    ]


def test_floor_date_is_where_the_formula_crosses_the_floor() -> None:
    f = forecast(_patterns(12), k=5, now=NOW, rate=RATE, floor=0.05, new_importance=0.4)
    for p in f.patterns:
        src = next(q for q in _patterns(12) if q.id == p.id)
        assert p.below_floor is not None
        at = effective_importance(src.importance, src.distilled_at, p.below_floor, RATE)
        if p.below_floor > NOW:
            assert at == pytest.approx(0.05, rel=1e-9)
            before = p.below_floor - timedelta(hours=1)
            after = p.below_floor + timedelta(hours=1)
            assert effective_importance(src.importance, src.distilled_at, before, RATE) > 0.05
            assert effective_importance(src.importance, src.distilled_at, after, RATE) < 0.05


def test_outranked_date_is_where_a_new_pattern_ties() -> None:
    f = forecast(_patterns(12), k=5, now=NOW, rate=RATE, new_importance=0.3)
    for p in f.patterns:
        src = next(q for q in _patterns(12) if q.id == p.id)
        assert p.outranked is not None
        value = effective_importance(src.importance, src.distilled_at, p.outranked, RATE)
        if p.outranked > NOW:
            assert value == pytest.approx(0.3, rel=1e-9)
        else:
            assert value <= 0.3


def test_ranks_follow_effective_importance_and_cutoff_is_the_kth() -> None:
    pats = _patterns(12)
    f = forecast(pats, k=5, now=NOW, rate=RATE, horizon_days=30)
    values = [p.effective_now for p in f.patterns]
    assert values == sorted(values, reverse=True)
    assert [p.in_prompt for p in f.patterns] == [True] * 5 + [False] * 7
    kth = next(q for q in pats if q.id == f.patterns[4].id)
    assert f.cutoff is not None and len(f.cutoff) == 31
    for day, value in zip(f.days, f.cutoff, strict=True):
        expected = effective_importance(
            kth.importance, kth.distilled_at, NOW + timedelta(days=day), RATE
        )
        assert value == pytest.approx(expected)
    assert f.prompt_full and "replace pattern" in f.message


def test_nothing_leaves_a_prompt_with_room() -> None:
    f = forecast(_patterns(3), k=5, now=NOW, rate=RATE)
    assert not f.prompt_full and f.cutoff is None
    assert f.lowest is not None and f.lowest[0] == pytest.approx(f.patterns[-1].effective_now)
    assert f.highest is not None and f.highest[0] == pytest.approx(f.patterns[0].effective_now)
    assert f.message.startswith("Nothing leaves the prompt while it has room: 3 of 5")
    doc = f.to_json()
    assert doc["prompt_full"] is False and doc["cutoff"] is None

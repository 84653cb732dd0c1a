"""The "UPDATE refreshes the decay clock" setting: off keeps distilled_at, on moves it to
the commit time (with the ranking key), undo restores it; the forecast shows both."""

from __future__ import annotations

from datetime import timedelta

import pytest

from curator.core.scoring import rank_key
from curator.pipeline import commit, review
from curator.pipeline.insights import compute_insights
from curator.store.db import Store
from curator.store.models import Pattern, utcnow
from curator.store.settings import set_setting
from tests.review.conftest import make_pattern, make_staged_run

TEXT = "The operator prefers short status updates in the morning before standup."
NEAR = "The operator prefers short status updates every morning before the standup."


def _update_once(store: Store) -> tuple[int, object]:
    old = utcnow() - timedelta(days=30)
    pid = make_pattern(store, TEXT, 0.6, distilled_at=old)
    run = make_staged_run(store, [{"text": NEAR, "importance": 0.4}])
    (candidate,) = [c.id for c in run.candidates]
    view = review.decide(store, candidate, "ACCEPT")
    assert view.action == "UPDATE"
    return pid, run


def test_off_by_default_keeps_the_distillation_date(store: Store) -> None:
    pid, run = _update_once(store)
    before = Pattern.get_by_id(pid)
    commit.commit_run(store, run.id)  # type: ignore[attr-defined]
    after = Pattern.get_by_id(pid)
    assert after.distilled_at == before.distilled_at
    assert after.rank_key == before.rank_key
    assert after.revision == before.revision + 1


def test_on_moves_the_clock_and_undo_restores_it(store: Store) -> None:
    set_setting(store, "update_refreshes_decay", True)
    pid, run = _update_once(store)
    before = Pattern.get_by_id(pid)
    started = utcnow()
    summary = commit.commit_run(store, run.id)  # type: ignore[attr-defined]
    after = Pattern.get_by_id(pid)
    assert started <= after.distilled_at <= utcnow()
    # the decay clock is the commit's time; the row's written time is taken under the lock
    assert after.distilled_at <= after.updated_at <= utcnow()
    assert after.rank_key == pytest.approx(rank_key(after.importance, after.distilled_at))
    assert after.rank_key > before.rank_key
    commit.undo_changeset(store, summary.id)
    restored = Pattern.get_by_id(pid)
    assert restored.distilled_at == before.distilled_at
    assert restored.rank_key == before.rank_key


def test_forecast_shows_both_behaviours(store: Store) -> None:
    pid, run = _update_once(store)
    commit.commit_run(store, run.id)  # type: ignore[attr-defined]
    ins = compute_insights(store, floor=0.05)
    keep = next(p for p in ins.forecast_keep.patterns if p.id == pid)
    fresh = next(p for p in ins.forecast_refresh.patterns if p.id == pid)
    assert keep.below_floor is not None and fresh.below_floor is not None
    # refreshed 30 days later: it falls below the floor about 30 days later
    gap = (fresh.below_floor - keep.below_floor).total_seconds() / 86400
    assert gap == pytest.approx(30, abs=0.01)
    assert ins.refresh_enabled is False

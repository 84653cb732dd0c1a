"""The run log read back: the method, the run list, durations for questions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from curator.pipeline.run_history import (
    counts_text,
    format_duration,
    recent_runs,
    scoring_method_text,
)
from curator.store.db import Store
from curator.store.models import Run, utcnow


@pytest.fixture
def store(tmp_path: Path):
    db = Store(tmp_path / "runs.sqlite")
    yield db
    db.close()


def _run(store: Store, path: str, seconds: float, items: int, status: str = "done") -> None:
    end = utcnow()
    with store.write():
        Run.create(
            kind="classify",
            status=status,
            started_at=end - timedelta(seconds=seconds),
            finished_at=end,
            model_path=path,
            stats={"classified": items, "scored_exact": items},
            params={"method": "label log-probabilities"},
        )


def test_method_and_list(store: Store) -> None:
    _run(store, "/m/a.gguf", 1.0, 3)
    (run,) = recent_runs(store, 10)
    assert scoring_method_text(run) == "exact"
    with store.write():
        Run.update(stats={}).execute()
    assert scoring_method_text(recent_runs(store, 1)[0]) == "label log-probabilities"


def test_durations_read_as_a_person_would_say_them() -> None:
    assert format_duration(40) == "40 s"
    assert format_duration(12 * 60) == "12 min"
    assert format_duration(60_185 * 0.8) == "13 h"
    assert format_duration(4 * 86400) == "4.0 days"


def test_counts_leave_out_the_features_phase_duration_and_the_scoring_methods() -> None:
    """A classify run's stats carry how long its features phase took, for the next
    estimate; the Runs pane's Counts column read "features_ms 15981" among the counts."""
    stats = {"classified": 20, "noise": 6, "features_ms": 15_981, "scored_exact": 20, "x": True}
    assert counts_text(stats) == "classified 20 · noise 6"

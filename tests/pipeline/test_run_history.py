"""The run log read back: measured speed per model, the method, durations for questions."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from curator.pipeline.run_history import (
    DEFAULT_SECONDS_PER_ITEM,
    format_duration,
    recent_runs,
    scoring_method_text,
    seconds_per_item,
)
from curator.store.db import Store
from curator.store.models import Run, TraceStep, utcnow


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


def test_speed_is_measured_per_model_from_finished_runs(store: Store) -> None:
    assert seconds_per_item(store, "classify", "/m/a.gguf").measured_runs == 0
    assert (
        seconds_per_item(store, "classify", "/m/a.gguf").seconds_per_item
        == (DEFAULT_SECONDS_PER_ITEM["classify"])
    )
    _run(store, "/m/a.gguf", 80.0, 100)
    _run(store, "/m/a.gguf", 20.0, 25)
    _run(store, "/m/a.gguf", 500.0, 1, status="cancelled")  # did not run to its end
    _run(store, "/m/b.gguf", 9.0, 1)  # another model
    speed = seconds_per_item(store, "classify", "/m/a.gguf")
    assert speed.measured_runs == 2
    assert speed.seconds_per_item == pytest.approx(0.8)
    assert "0.8 s each" in speed.describe()


def test_speed_is_the_model_time_in_the_trace_not_the_run_start(store: Store) -> None:
    """A run of 8 episodes spends most of its wall clock on its fixed start (calibration,
    relearning): its trace's call times say how long one more episode takes."""
    _run(store, "/m/a.gguf", 40.0, 8)
    (run,) = recent_runs(store, 1)
    with store.write():
        for _ in range(8):
            TraceStep.create(run=run.id, step="classify", seconds=0.75)
    speed = seconds_per_item(store, "classify", "/m/a.gguf")
    assert speed.seconds_per_item == pytest.approx(0.75)
    assert speed.source() == "Measured on this model's last finished run."


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

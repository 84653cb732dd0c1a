"""A finished run of the demo model in the run log, so a test's run estimate is known.

A run's estimate comes from the model's measured speed; with nothing measured it starts
from defaults, and a run of every pending demo episode then asks first (longer than five
minutes). Tests that start such a run to cancel or close it record a fast one first.
"""

from __future__ import annotations

from datetime import timedelta

from curator.llm.model_file import resolve_model_path
from curator.store.db import Store
from curator.store.models import Run, TraceStep, utcnow


def record_measured_run(store: Store, seconds_each: float, episodes: int = 10) -> None:
    """A finished classify run of the demo model, as the run log records one: each call
    read 1,000 prompt tokens in ``seconds_each``."""
    finished = utcnow()
    with store.write():
        run = Run.create(
            kind="classify",
            status="done",
            started_at=finished - timedelta(seconds=seconds_each * episodes),
            finished_at=finished,
            model_path=str(resolve_model_path(None, None)),
            stats={"classified": episodes},
        )
        for _ in range(episodes):
            TraceStep.create(run=run.id, step="classify", tokens_in=1000, seconds=seconds_each)

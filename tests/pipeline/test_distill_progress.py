"""Distill progress moves within a batch: per step (extract/refine/importance) and per token.

A batch takes three generating calls; reporting only finished batches left the bar at 0 %
for a whole batch and then jumped (with one batch: 0 % until the end). Real demo model.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from curator.pipeline.distill import distill
from curator.pipeline.progress import Progress, TaskState
from curator.store.db import Store
from curator.store.settings import set_setting

pytestmark = pytest.mark.llm


@pytest.fixture
def classified_store(classified_demo, tmp_path: Path):
    store = Store(classified_demo.copy_to(tmp_path))
    yield store
    store.close()


def test_distill_reports_each_step_and_token_of_a_batch(
    classified_store: Store, demo_backend
) -> None:
    reports: list[Progress] = []
    tokens: list[str] = []
    # Two batches (the run's total divides each step's share); short answers will do, as
    # long as the first batch keeps a candidate to score.
    set_setting(classified_store, "max_output_tokens", 64)
    result = distill(
        classified_store,
        demo_backend,
        TaskState(on_progress=reports.append, on_token=tokens.append),
        limit=4,
    )
    assert result.status == "staged", result.message
    first_batch = [p for p in reports if p.step in ("extract", "refine", "importance")]
    first_batch = [p for p in first_batch if p.done == 0]
    steps = [p.step for p in first_batch]
    # Every step of the first batch reports, in order, before the batch is done.
    assert steps.index("extract") < steps.index("refine") < steps.index("importance")
    total = first_batch[0].total
    # Never backwards, except a retried call starting its step again (its tokens anew).
    for before, after in itertools.pairwise(first_batch):
        assert after.fraction >= before.fraction or after.step == before.step
    # The bar moves inside the batch: each step a third of it, tokens within a step.
    step_starts = {p.step: p.fraction for p in reversed(first_batch)}
    assert step_starts["refine"] == pytest.approx(1 / 3 / total)
    assert step_starts["importance"] == pytest.approx(2 / 3 / total)
    extract = [p for p in first_batch if p.step == "extract"]
    assert len(extract) > 5  # one per token (the window throttles, not the pipeline)
    assert 0 < extract[-1].fraction < 1 / 3 / total
    assert any("tokens" in p.message for p in extract)

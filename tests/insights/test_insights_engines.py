"""Insights read the same figures on both engines, whatever the model's traced JSON holds.

A model's output may spell a NUL character (``\\u0000``) inside its JSON; the trace keeps
it as written on both engines. SQLite's ``json_extract`` reads a string up to its NUL;
PostgreSQL's ``jsonb`` refuses the escape, which cost the whole Insights view once one such
trace step was stored: the store's dialect now reads it as SQLite does.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.pipeline.insights import compute_insights
from curator.store.db import Store
from curator.store.models import Run, TraceStep
from tests.insights.conftest import build

NUL_DOCUMENTS = [
    {"label": "noise", "confidence": 0.9, "reason": "a\u0000b"},  # beside the label
    {"label": "noise\u0000, or not", "confidence": 0.9},  # read up to the NUL: noise
    {"label": "noise", "confidence": 0.9, "quote": "\\u0000 as text, \\\u0000 as a NUL"},
]


@pytest.mark.parametrize("document", NUL_DOCUMENTS)
def test_a_nul_in_a_traced_document_reads_as_on_sqlite(db_url: str, document: object) -> None:
    store = Store(db_url)
    try:
        reviewed = build(store)
        before = compute_insights(store, run_id=reviewed.classify_run)
        with store.write():
            step = TraceStep.get(
                (TraceStep.run == reviewed.classify_run)
                & (TraceStep.episode == reviewed.episode_ids[0])
            )
            step.parsed = document
            step.save()
        stored = store.execute("SELECT parsed FROM trace_step WHERE id = ?", (step.id,))[0][0]
        assert stored == json.dumps(document, ensure_ascii=False, sort_keys=True)  # as written
        assert TraceStep.get_by_id(step.id).parsed == document
        everything = compute_insights(store)
        one_run = compute_insights(store, run_id=reviewed.classify_run)
    finally:
        store.close()
    counts = before.labels.counts.tolist()
    counts[0][0] -= 1  # the first episode: human and model said constitutional, now
    counts[0][1] += 1  # the model says noise
    assert one_run.labels.counts.tolist() == counts
    (point,) = [p for p in everything.series if p.run_id == reviewed.classify_run]
    assert point.pairs == sum(map(sum, counts))


@settings(
    deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet=st.sampled_from(["\\", "u", "0", "\u0000", "a", '"']), max_size=12))
@example(text="\\u0000")
@example(text="\\\u0000")
@example(text="\u0000\u0000")
def test_the_label_beside_any_text_is_read_alike(db_url: str, text: str) -> None:
    store = Store(db_url)
    try:
        with store.write():
            TraceStep.delete().execute()
        label = store.dialect.json_value("parsed", "label")
        with store.write():
            run = Run.create(kind="classify", status="done")
            TraceStep.create(run=run.id, step="classify", parsed={"label": "fact", "note": text})
            TraceStep.create(run=run.id, step="classify", parsed={"label": text})
        rows = store.execute(f"SELECT {label} FROM trace_step ORDER BY id")
    finally:
        store.close()
    assert rows[0][0] == "fact"
    assert rows[1][0] == text.partition("\u0000")[0]  # up to a NUL, as SQLite reads it

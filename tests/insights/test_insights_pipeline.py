"""compute_insights on a real database: the figures, the what-if, the JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.core.dedup import gate
from curator.core.jsonsafe import dumps
from curator.pipeline.insights import compute_insights
from curator.store.db import Store
from curator.store.models import Candidate
from tests.insights.conftest import CANDIDATES, PATTERNS, Reviewed


def test_label_matrix_kappa_and_cells(reviewed: tuple[Store, Reviewed]) -> None:
    store, r = reviewed
    ins = compute_insights(store)
    assert ins.labels.counts.tolist() == [[4, 1, 0], [0, 5, 2], [1, 0, 3]]
    # p_o = 12/16; rows 5, 7, 4; columns 5, 6, 5: p_e = (25 + 42 + 20) / 256
    p_e = 87 / 256
    assert ins.labels.kappa() == pytest.approx((12 / 16 - p_e) / (1 - p_e))
    assert ins.label_kappa.low is not None and ins.label_kappa.high is not None
    assert ins.label_kappa.low < ins.labels.kappa() < ins.label_kappa.high  # type: ignore[operator]
    # the noise/uncategorized cell holds exactly the two episodes the human called noise
    assert ins.label_cells[("noise", "uncategorized")] == r.episode_ids[10:12]
    assert sum(b.count for b in ins.calibration) == 16
    top = ins.calibration[9]  # confidences 0.9 and 0.95: 4 + 5 agree
    assert top.count == 9 and top.agreement == pytest.approx(1.0)


def test_gate_matrix_overrides_and_ratios(reviewed: tuple[Store, Reviewed]) -> None:
    store, r = reviewed
    ins = compute_insights(store)
    stored = {c.id: c for c in Candidate.select()}
    assert ins.gate.total == len(CANDIDATES)
    human = [stored[cid].action for cid in r.candidate_ids]
    proposed = [stored[cid].proposed_action for cid in r.candidate_ids]
    assert [(o.candidate_id, o.proposed, o.human) for o in ins.overrides] == [
        (cid, p, h) for cid, p, h in zip(r.candidate_ids, proposed, human, strict=True) if p != h
    ]
    assert {o.ratio for o in ins.overrides} <= {stored[c].proposed_ratio for c in r.candidate_ids}
    assert ins.quality_drops == 2
    assert sum(sum(v) for v in ins.histogram.values()) == len(CANDIDATES)


def test_what_if_matches_the_real_gate_on_the_stored_candidates(
    reviewed: tuple[Store, Reviewed],
) -> None:
    store, _ = reviewed
    ins = compute_insights(store)
    texts = [c[0] for c in CANDIDATES]
    for skip, update in [(0.95, 0.70), (0.9, 0.5), (0.99, 0.95), (0.97, 0.3)]:
        what = ins.what_if_at(skip, update)
        real = [d.action for d in gate(texts, list(PATTERNS), skip=skip, update=update)]
        assert list(what.proposals) == real, (skip, update)
    assert ins.what_if_at(0.95, 0.70).changed == 0
    assert ins.what_if_at(0.99, 0.95).changed > 0


def test_quality_what_if_uses_the_traced_drops(reviewed: tuple[Store, Reviewed]) -> None:
    store, _ = reviewed
    ins = compute_insights(store)
    assert ins.quality_at(10, 3).admitted == 1  # "User likes tea"
    assert ins.quality_at(80, 3).dropped_by_decision["SKIP"] == 3


def test_series_per_run_and_run_filter(reviewed: tuple[Store, Reviewed]) -> None:
    store, r = reviewed
    ins = compute_insights(store)
    assert [(p.run_id, p.kind, p.pairs) for p in ins.series] == [
        (r.classify_run, "classify", 16),
        (r.distill_run, "distill", len(CANDIDATES)),
    ]
    only = compute_insights(store, run_id=r.classify_run)
    assert only.labels.counts.tolist() == ins.labels.counts.tolist()
    assert only.gate.total == 0
    gate_only = compute_insights(store, run_id=r.distill_run)
    assert gate_only.labels.total == 0 and gate_only.gate.total == len(CANDIDATES)


def test_json_has_no_nan_even_when_empty(tmp_path: Path) -> None:
    store = Store(tmp_path / "empty.sqlite")
    try:
        text = dumps(compute_insights(store).to_json())
    finally:
        store.close()
    doc = json.loads(text)  # allow_nan=False in dumps: a NaN would have raised
    assert doc["labels"]["kappa"] is None and doc["labels"]["accuracy"] is None
    assert doc["forecast"]["keep_clock"]["prompt_full"] is False
    assert "NaN" not in text


def test_accepting_an_update_of_an_earlier_candidate_is_not_an_override(tmp_path: Path) -> None:
    """An import (or distill) run gates each text against its own earlier ADDs too; the
    UPDATE of one not yet committed is recorded as a SKIP when accepted. It was listed
    as the reviewer overriding the gate, though every proposal was taken."""
    from curator.pipeline import review
    from curator.pipeline.import_knowledge import import_knowledge
    from curator.pipeline.insights import SELF_GATED_RUNS

    first = "Release notes are read more when each change names who asked for it."
    second = "Release notes get read more often when each change names the person who asked."
    assert 0.70 <= gate([second], [first])[0].ratio < 0.95  # an UPDATE of the first
    path = tmp_path / "notes.txt"
    path.write_text(f"{first}\n{second}\n", encoding="utf-8")
    store = Store(tmp_path / "curator.sqlite")
    try:
        report = import_knowledge(store, path)
        assert report.run_id is not None and "import" in SELF_GATED_RUNS
        views = review.list_candidates(store, report.run_id)
        assert [v.proposed_action for v in views] == ["ADD", "UPDATE"]
        for view in views:
            review.decide(store, view.id, "ACCEPT")
        assert Candidate.get_by_id(views[1].id).action == "SKIP"  # nothing to update yet
        found = compute_insights(store)
    finally:
        store.close()
    assert found.overrides == [] and found.gate.accuracy() == 1.0
    # the what-if knows the second matched an earlier candidate of its run
    assert [g.same_run_match for g in found.gated] == [False, True]

"""The Episodes detail panel says which source decided the label, and how sure it was:
the model's scores after classify, a person after a relabel, the learned classifier after
a retrain (the real demo model, a real database, the real window offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.gui.episodes.label_source import LabelDecision, decision_text
from curator.pipeline.labels import relabel
from curator.pipeline.learn import relearn
from curator.store.db import Store
from curator.store.models import Episode

# Three human labels per label (the learned classifier's minimum), by the demo's own ids.
LABELLED = {
    "noise": ["ep-0002", "ep-0004", "ep-0005"],
    "uncategorized": ["ep-0007", "ep-0010", "ep-0014"],
    "constitutional": ["ep-0003", "ep-0015", "ep-0016"],
}


@pytest.fixture
def store(classified_demo, tmp_path: Path):
    """The demo database with 20 episodes classified by the real demo model."""
    db = Store(classified_demo.copy_to(tmp_path))
    yield db
    db.close()


def _scored_unlabelled() -> list[Episode]:
    """Episodes the model scored that the test does not label by hand."""
    hand = [e for external in LABELLED.values() for e in external]
    return list(
        Episode.select()
        .where((Episode.predicted_by == "model") & Episode.external_id.not_in(hand))
        .order_by(Episode.id)
    )


def _detail_of(qtbot, pane, episode_id: int) -> str:
    pane.select_ids([episode_id])
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)  # read in the background
    return " ".join(pane.detail.toPlainText().split())


def test_detail_names_the_source_and_confidence_of_the_label(qtbot, main_window, store) -> None:
    main_window.tabs.setCurrentIndex(0)
    pane = main_window.episodes_pane
    scored, unlabelled = _scored_unlabelled()[:2]
    assert scored.human_label is None

    text = _detail_of(qtbot, pane, int(scored.id))
    assert (
        f"Decided by the model's scores: {scored.predicted_label}, "
        f"confidence {scored.predicted_confidence:.2f} (margin {scored.predicted_margin:.2f})"
    ) in text

    # a person relabels it with the keyboard: the panel now names the person
    other = next(k for k in ("noise", "constitutional") if k != scored.predicted_label)
    pane.table.setFocus()
    qtbot.keyClick(pane.table, Qt.Key.Key_N if other == "noise" else Qt.Key.Key_C)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=10_000)
    assert Episode.get_by_id(scored.id).human_label == other
    text = _detail_of(qtbot, pane, int(scored.id))
    assert f"Decided by a person: {other} (the machine predicted {scored.predicted_label})" in text
    pane.relearner.shutdown()

    # after a retrain, an unlabelled episode's label comes from the learned classifier
    for label, external in LABELLED.items():
        relabel(store, [int(Episode.get(Episode.external_id == e).id) for e in external], label)
    assert relearn(store).trained
    learned = Episode.get_by_id(unlabelled.id)
    assert learned.predicted_by == "learned"
    text = _detail_of(qtbot, pane, int(learned.id))
    assert (
        f"Decided by the learned classifier: {learned.predicted_label}, "
        f"confidence {learned.predicted_confidence:.2f}"
    ) in text


def test_an_unclassified_episode_has_no_decided_by_row(qtbot, main_window) -> None:
    main_window.tabs.setCurrentIndex(0)
    pane = main_window.episodes_pane
    first = Episode.select().where(Episode.label.is_null()).order_by(Episode.id).first()
    assert first is not None
    assert "Decided by" not in _detail_of(qtbot, pane, int(first.id))


def test_decision_text_for_each_source() -> None:
    assert decision_text(LabelDecision("noise", "calibrated", 0.5, 0.125)) == (
        "the calibrated model scores: noise, confidence 0.50 (margin 0.12)"
    )
    assert decision_text(LabelDecision("noise", "human", None, None, "noise")) == (
        "a person: noise"
    )

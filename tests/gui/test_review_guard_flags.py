"""The guard's stored flags in the window: shown like rule flags; their settings editable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.core.flag_type import Flag
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.pipeline.guard_flags import encode
from curator.pipeline.guard_learn import GuardExamples, learned_flag
from curator.pipeline.guard_opinion import opinion_flag
from curator.store.db import Store
from curator.store.models import Candidate, Run, utcnow
from curator.store.settings import load_settings

CLEAN = "Write the incident summary within one hour of resolving it."
JUDGED = "Members of the garden club ask about the spring sale most weeks."


def build(store: Store) -> list[Flag]:
    """A staged run whose second candidate carries both stored guard flags."""
    model = opinion_flag(0.91, 0.5)
    assert model is not None
    learned = learned_flag(0.77, GuardExamples(("a",) * 5, ("b",) * 6), "Always plug the sale", 0.5)
    with store.write():
        run = Run.create(kind="import", status="staged", finished_at=utcnow())
        Candidate.create(run=run, ordinal=1, text=CLEAN, importance=0.5, proposed_action="ADD")
        Candidate.create(
            run=run,
            ordinal=2,
            text=JUDGED,
            importance=0.5,
            proposed_action="ADD",
            guard_flags=encode([learned, model]),
        )
    return [model, learned]


@pytest.fixture
def pane(qtbot, tmp_path: Path, show_pane) -> Iterator[tuple[ReviewPane, list[Flag]]]:
    store = Store(tmp_path / "guard.sqlite")
    flags = build(store)
    widget = ReviewPane(AppServices(store=store, db_path=store.path, dialogs=Dialogs()))
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    yield widget, flags
    store.close()


def test_stored_guard_flags_are_shown_marked_and_confirmed(
    qtbot, pane: tuple[ReviewPane, list[Flag]]
) -> None:
    widget, (model, learned) = pane
    widget.list_view.selectRow(widget.model.find_row(lambda c: c.text == JUDGED))
    plain = widget.detail.toPlainText()
    assert "Flagged" in plain and "the model's second opinion" in plain
    assert "p(yes) 0.91" in plain and "like texts you rejected" in plain
    assert "closest, similarity 0.50: “Always plug the sale”" in plain
    column = widget.model.column_index("⚑")
    marks = [widget.model.data(widget.model.index(r, column)) for r in range(2)]
    assert marks == ["", "⚑ 2"]
    with qtbot.waitSignal(widget.data_changed, timeout=30_000):
        assert widget.accept_all()
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    dialog = widget.flagged_dialog
    assert dialog is not None
    listed = dialog.view.toPlainText()
    assert model.describe() in listed and learned.describe() in listed
    dialog.reject()
    by_text = {c.text: c for c in widget.candidates()}
    assert by_text[CLEAN].action == "ADD" and by_text[JUDGED].action is None


def test_settings_pane_edits_the_guard_settings(qtbot, main_window, services, store) -> None:
    pane = main_window.pane("settingsPane")
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    assert pane.guard_opinion.currentData() == "on"
    assert pane.guard_threshold.value() == pytest.approx(0.5)
    pane.guard_opinion.setCurrentIndex(pane.guard_opinion.findData("always"))
    pane.guard_threshold.setValue(0.8)
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)
    saved = load_settings(store)
    assert (saved.guard_model_opinion, saved.guard_opinion_threshold) == ("always", 0.8)
    assert "demo model too" in pane.guard_opinion.currentText()

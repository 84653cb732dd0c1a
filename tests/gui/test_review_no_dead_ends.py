"""Review without dead ends, on the demo database (real SQLite, real Qt widgets).

The staged run is what importing a knowledge file stages (the real gate proposes SKIP /
UPDATE / ADD against the demo's 20 patterns), so no model is needed:

1. UPDATE of a near-duplicate of demo pattern #3 (ratio 0.93);
2. UPDATE of demo pattern #1;
3. ADD (nothing is similar): pressing 2 on it opens the target picker.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import SIGNAL, Qt
from PySide6.QtWidgets import QMessageBox

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.models import Candidate, Changeset, Pattern
from tests.gui.review_runs import read_preview

GREETING = "Greet returning users by name when a conversation starts again after a long pause."
EXAMPLE = "Replies that include a worked example get more follow-up questions, so lead with one."
MINE = "Replies with one concrete worked example draw more follow-up questions than abstract ones."


@pytest.fixture
def staged(services: AppServices, tmp_path: Path) -> int:
    p3 = Pattern.get_by_id(3).text
    knowledge = tmp_path / "knowledge.txt"
    knowledge.write_text("\n".join([p3.replace("usually", "often"), EXAMPLE, GREETING]) + "\n")
    report = import_knowledge(services.store, knowledge)
    assert report.run_id is not None
    return int(report.run_id)


@pytest.fixture
def pane(qtbot, services: AppServices, staged: int, show_pane) -> ReviewPane:
    widget = ReviewPane(services)
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)  # read in the background
    widget.activateWindow()
    qtbot.waitActive(widget)
    widget.list_view.setFocus()
    return widget


def press(qtbot, pane: ReviewPane, key: Qt.Key) -> None:
    qtbot.keyClick(pane.list_view, key)


def select(pane: ReviewPane, ordinal: int) -> None:
    pane._select_row(pane.model.find_row(lambda c: c.ordinal == ordinal))


def row(pane: ReviewPane, ordinal: int):
    return next(c for c in pane.candidates() if c.ordinal == ordinal)


def commit(qtbot, pane: ReviewPane) -> None:
    """Through the preview dialog, as a user commits; waits for the background write."""
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    pane.reviewed_only.setChecked(True)
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and not dialog.blocked
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        dialog.accept()


def test_update_without_a_proposed_pattern_opens_the_picker_and_commit_updates_the_choice(
    qtbot, pane: ReviewPane, staged: int
) -> None:
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))
    select(pane, 3)
    assert row(pane, 3).proposed_action == "ADD"
    before = Pattern.get_by_id(1)

    press(qtbot, pane, Qt.Key.Key_2)
    picker = pane.target_dialog
    assert picker is not None and not messages  # no refusal: a way to choose
    qtbot.waitUntil(lambda: len(picker.matches) > 1)
    ratios = [m.ratio for m in picker.matches]
    assert ratios == sorted(ratios, reverse=True)  # nearest first
    picker.search.setText("worked example")
    qtbot.waitUntil(lambda: [m.id for m in picker.matches] == [1])
    assert picker.choose(1)
    assert "Existing" in picker.diff.toPlainText() and "Greet" in picker.diff.toPlainText()
    picker.ok.click()

    chosen = row(pane, 3)
    assert chosen.action == "UPDATE" and chosen.target_id == 1
    assert "Update #1" in pane.model.data(
        pane.model.index(pane.model.find_row(lambda c: c.ordinal == 3), 2)
    )
    commit(qtbot, pane)
    after = Pattern.get_by_id(1)
    assert after.revision == before.revision + 1 and after.updated_run_id == staged
    assert after.text == before.text  # not edited: the pattern keeps its text
    assert not messages


def test_down_in_the_pickers_search_goes_to_the_nearest_pattern_of_the_text_typed(
    qtbot, pane: ReviewPane
) -> None:
    """Down in the picker's search moves into its list (before: Tab, or the mouse),
    and a search still waiting for the typing pause is ranked at once."""
    select(pane, 3)
    press(qtbot, pane, Qt.Key.Key_2)
    picker = pane.target_dialog
    assert picker is not None
    qtbot.waitUntil(lambda: len(picker.matches) > 1)
    qtbot.waitUntil(picker.search.hasFocus)

    qtbot.keyClicks(picker.search, "worked example")
    qtbot.keyClick(picker.search, Qt.Key.Key_Down)

    assert picker.list.hasFocus()
    qtbot.waitUntil(lambda: [m.id for m in picker.matches] == [1], timeout=5_000)
    assert picker.chosen() is not None and picker.chosen().id == 1
    qtbot.keyClick(picker.list, Qt.Key.Key_Return)  # the list's Return is the dialog's OK
    assert row(pane, 3).target_id == 1


def _edit(qtbot, pane: ReviewPane, text: str, importance: float) -> None:
    press(qtbot, pane, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    dialog.text_edit.setPlainText(text)
    dialog.importance.setValue(importance)
    dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background


def test_edited_update_uses_my_wording_when_chosen_and_the_list_shows_the_edit(
    qtbot, pane: ReviewPane
) -> None:
    select(pane, 2)
    press(qtbot, pane, Qt.Key.Key_2)  # UPDATE of the proposed pattern #1
    select(pane, 2)
    _edit(qtbot, pane, MINE, 0.95)
    edited = row(pane, 2)
    assert edited.action == "UPDATE" and edited.target_id == 1 and edited.rewords
    index = pane.model.find_row(lambda c: c.ordinal == 2)
    shown = [pane.model.data(pane.model.index(index, col)) for col in range(6)]
    assert shown[5] == "✎ " + MINE and shown[3] == "0.95 ✎"
    assert "my wording" in shown[2]
    assert pane.panel.use_mine.isChecked() and pane.panel.wording.isVisible()
    assert "Your wording (written)" in pane.diff.toPlainText()

    pane.reviewed_only.setChecked(True)
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and "(your wording)" in dialog.view.toPlainText()
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        dialog.accept()
    assert Pattern.get_by_id(1).text == MINE


def test_edited_update_keeps_the_pattern_text_when_chosen(qtbot, pane: ReviewPane) -> None:
    old = Pattern.get_by_id(1).text
    select(pane, 2)
    press(qtbot, pane, Qt.Key.Key_2)
    select(pane, 2)
    _edit(qtbot, pane, MINE, 0.95)
    pane.panel.keep_text.click()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    kept = row(pane, 2)
    assert kept.keep_pattern_text and not kept.rewords
    assert "Your wording (not written)" in pane.diff.toPlainText()
    pane.reviewed_only.setChecked(True)
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and "is not written" in dialog.view.toPlainText()
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        dialog.accept()
    updated = Pattern.get_by_id(1)
    assert updated.text == old and updated.importance == pytest.approx(0.95)


def test_backspace_undoes_the_selected_row_and_ctrl_z_the_last_decision(
    qtbot, pane: ReviewPane
) -> None:
    said: list[str] = []
    pane.status_message.connect(said.append)
    for _ in range(3):
        press(qtbot, pane, Qt.Key.Key_A)
    assert [c.action for c in pane.candidates()] == ["UPDATE", "UPDATE", "ADD"]
    select(pane, 1)
    press(qtbot, pane, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert [c.action for c in pane.candidates()] == [None, "UPDATE", "ADD"]
    assert said[-1].startswith("Undid Update existing on #1")
    assert pane.current_candidate().ordinal == 1

    qtbot.keyClick(pane.list_view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert [c.action for c in pane.candidates()] == [None, "UPDATE", None]
    assert said[-1].startswith("Undid Add new on #3")


def test_actions_are_named_for_what_they_do(pane: ReviewPane) -> None:
    keys = pane.findChild(type(pane.progress_label), "keyHelp").text()
    assert "<b>1</b> Duplicate — skip" in keys and "<b>2</b> Update existing" in keys
    assert "<b>3</b> Add new" in keys and "<b>X</b> Reject" in keys
    assert "✓" not in keys


def test_commit_runs_off_the_gui_thread_and_undo_asks_first(
    qtbot, pane: ReviewPane, services: AppServices, staged: int
) -> None:
    said: list[str] = []
    pane.status_message.connect(said.append)
    for _ in range(3):
        press(qtbot, pane, Qt.Key.Key_A)
    commit(qtbot, pane)
    assert services.ops.job_thread_ids
    assert threading.get_ident() not in services.ops.job_thread_ids
    (changeset,) = Changeset.select().where(Changeset.kind == "commit")
    name = f"commit #{changeset.id} (run #{staged})"
    assert f"Run #{staged} committed as commit #{changeset.id}." in said
    assert Pattern.get_by_id(3).revision == 2

    assert pane.undo_last_commit()
    box = services.dialogs.shown[-1]
    assert isinstance(box, QMessageBox)
    assert name in box.text() and "committed" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()  # declined: nothing undone
    services.ops.wait()
    assert Changeset.get_by_id(changeset.id).undone_by_id is None
    assert Pattern.get_by_id(3).revision == 2

    assert pane.undo_last_commit()
    box = services.dialogs.shown[-1]
    yes = next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole)
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        yes.click()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert Changeset.get_by_id(changeset.id).undone_by_id is not None
    assert Pattern.get_by_id(3).revision == 1
    assert f"Undid {name}." in said
    assert pane.current_run_id() == staged  # staged again, back to review


def test_empty_review_explains_itself_and_offers_distill(qtbot, main_window: MainWindow) -> None:
    review = main_window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    main_window.tabs.setCurrentWidget(review)
    review.refresh()
    qtbot.waitUntil(lambda: review.settled, timeout=30_000)
    assert review.stack.currentIndex() == 1
    assert review.distill_button.isVisible()
    assert "Nothing reaches the agent's knowledge until you commit" in review.empty_label.text()
    assert review.receivers(SIGNAL("distill_requested()")) >= 1  # the window listens
    with qtbot.waitSignal(review.distill_requested):
        review.distill_button.click()


def test_editing_a_decided_update_keeps_its_target_even_when_the_wording_drifts(
    qtbot, pane: ReviewPane
) -> None:
    """Before, E re-matched the edited text and a reworded UPDATE silently became an ADD."""
    drifted = "Lead every technical answer with a small, runnable example; readers ask more."
    select(pane, 2)
    press(qtbot, pane, Qt.Key.Key_2)  # UPDATE of pattern #1
    select(pane, 2)
    _edit(qtbot, pane, drifted, 0.7)
    edited = row(pane, 2)
    assert edited.rematch_action == "ADD"  # the gate alone would no longer call it an update
    assert edited.action == "UPDATE" and edited.target_id == 1 and edited.rewords
    commit(qtbot, pane)
    assert Pattern.get_by_id(1).text == drifted


def test_a_decision_while_another_process_writes_is_shown_then_put_back_when_it_cannot_be_written(
    qtbot, pane: ReviewPane, services: AppServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision is written in the background: with the CLI holding the write lock the
    list still moves on at once, and when the lock outlasts the decision's wait the row
    goes back to undecided with a message saying so (with the decisions made after it)."""
    import sqlite3

    from curator.gui.review import review_decisions

    monkeypatch.setattr(review_decisions, "DECISION_WAIT_S", 0.5)
    shown: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: shown.append((title, text))
    outside = sqlite3.connect(str(services.store.path), check_same_thread=False)
    outside.execute("BEGIN IMMEDIATE")  # another process's write lock
    try:
        press(qtbot, pane, Qt.Key.Key_A)
        press(qtbot, pane, Qt.Key.Key_A)
        assert [c.action for c in pane.candidates()][:2] == ["UPDATE", "UPDATE"]  # at once
        assert pane.current_candidate().ordinal == 3
        qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    finally:
        outside.rollback()
        outside.close()
    assert [c.action for c in pane.candidates()] == [None, None, None]  # put back
    assert len(shown) == 1 and shown[0][0] == "Review"
    assert (
        "#1 was not decided: busy: " in shown[0][1]
        and "nor was the 1 decision made after" in shown[0][1]
    )
    assert pane.current_candidate().ordinal == 1  # the decision that failed
    assert threading.get_ident() not in services.ops.job_thread_ids
    press(qtbot, pane, Qt.Key.Key_A)  # the lock is gone: the decision goes through
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert pane.candidates()[0].action == "UPDATE"
    assert Candidate.get_by_id(pane.candidates()[0].id).action == "UPDATE"

"""Review's queued decisions under fast keys, locks held elsewhere and commits."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from PySide6.QtWidgets import QDialog

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.pipeline import review as review_api
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.models import Candidate, Pattern
from tests.gui.review_runs import TEXTS, read_preview, shown_pane, stage_texts


@pytest.fixture
def staged(services: AppServices, tmp_path: Path) -> int:
    return stage_texts(services, tmp_path)


@pytest.fixture
def pane(qtbot, services: AppServices, staged: int) -> ReviewPane:
    return shown_pane(qtbot, services, settled=True)


def settle(qtbot, pane: ReviewPane) -> None:
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)


def review_of(qtbot, main_window, staged: int) -> ReviewPane:
    """The window's Review pane, shown, with the staged run read and listed."""
    review = main_window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    main_window.tabs.setCurrentWidget(review)
    review.refresh()
    settle(qtbot, review)
    review.select_run(staged)
    settle(qtbot, review)
    return review


def failures(services: AppServices) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    services.ops.failed.connect(lambda label, text: seen.append((label, text)))
    return seen


def test_backspace_twice_on_one_decision_is_not_an_error(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    seen = failures(services)
    shown: list[str] = []
    pane.status_message.connect(shown.append)
    first = pane.current_candidate()
    assert pane.decide_current("ADD")
    pane._select_row(pane.model.find_row(lambda c: c.id == first.id))
    assert pane.undo_selected()
    assert pane.undo_selected()  # the row still shows ADD: the first undo is not written
    settle(qtbot, pane)
    assert not seen
    assert Candidate.get_by_id(first.id).action is None
    assert next(c for c in pane.candidates() if c.id == first.id).action is None
    assert shown[-1] == f"Candidate #{first.ordinal} has no decision to undo."


def test_commit_pressed_twice_while_decisions_are_queued_opens_one_preview_of_them_all(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    for action in ("ADD", "REJECT", "ADD"):
        assert pane.decide_current(action)
    assert pane.commits.open_commit_dialog() is None  # waits for the writes
    assert pane.commits.open_commit_dialog() is None  # pressed again meanwhile
    settle(qtbot, pane)
    qtbot.waitUntil(lambda: pane.commits.commit_dialog is not None, timeout=30_000)
    dialogs = [w for w in pane.findChildren(QDialog) if w.objectName() == "commitDialog"]
    assert len(dialogs) == 1
    dialog = read_preview(qtbot, pane.commits.commit_dialog)
    assert not dialog.blocked  # every decision is in the preview
    dialog.accept()
    qtbot.waitUntil(lambda: not services.ops.busy, timeout=30_000)
    stored = {c.text: (c.action, c.state) for c in Candidate.select()}
    assert [stored[t][0] for t in TEXTS] == ["ADD", "REJECT", "ADD"]
    assert all(stored[t][1] == "applied" for t in TEXTS)


def test_a_write_lock_held_elsewhere_puts_the_rows_back_and_says_so(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))
    other = sqlite3.connect(services.store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        for action in ("ADD", "REJECT", "ADD"):
            assert pane.decide_current(action)
        qtbot.waitUntil(lambda: bool(messages), timeout=30_000)
    finally:
        other.execute("ROLLBACK")
        other.close()
    settle(qtbot, pane)
    assert len(messages) == 1
    assert "busy" in messages[0][1] and "nor were the 2" in messages[0][1]
    assert [c.action for c in pane.candidates()] == [None, None, None]
    assert Candidate.select().where(Candidate.action.is_null(False)).count() == 0
    assert pane.decide_current("ADD")
    settle(qtbot, pane)
    assert Candidate.select().where(Candidate.action.is_null(False)).count() == 1


def test_fast_interleaved_keys_end_as_the_database_holds_them(
    qtbot, pane: ReviewPane, services: AppServices, staged: int
) -> None:
    seen = failures(services)
    keys = ["ADD", "undo", "REJECT", "ctrlz", "ADD", "ADD", "undo", "undo", "ctrlz", "REJECT"]
    for n, key in enumerate(keys):
        if key == "undo":
            pane.undo_selected()
        elif key == "ctrlz":
            pane.undo_decision()
        else:
            pane.decide_current(key)
        if n % 3 == 2:
            pane._select_row(0)
    settle(qtbot, pane)
    assert not seen
    db = {c.id: c.action for c in review_api.list_candidates(services.store, staged)}
    assert {c.id: c.action for c in pane.candidates()} == db


def test_a_late_undo_answer_does_not_pull_the_selection_back_from_later_keys(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    """Ctrl+Z, then a key on the next candidate before the undo is written: the undo's
    answer arrives later and must not move the selection off where the keys left it."""
    first, second, third = pane.candidates()
    assert pane.decide_current("ADD")  # first -> the selection moves to second
    assert pane.undo_decision()  # undoes first, when written
    assert pane.current_candidate().id == second.id
    assert pane.decide_current("REJECT")  # second -> the selection moves to third
    assert pane.current_candidate().id == third.id
    settle(qtbot, pane)
    assert Candidate.get_by_id(first.id).action is None
    assert Candidate.get_by_id(second.id).action == "REJECT"
    assert pane.current_candidate().id == third.id


def test_switching_runs_while_decisions_are_queued_shows_the_new_run_and_keys_wait_for_it(
    qtbot, pane: ReviewPane, services: AppServices, staged: int, tmp_path: Path
) -> None:
    other_file = tmp_path / "other.txt"
    other_file.write_text("Short answers suit quick factual questions about dates.\n")
    other = import_knowledge(services.store, other_file).run_id
    pane.refresh()
    settle(qtbot, pane)
    pane.select_run(staged)
    settle(qtbot, pane)
    first = pane.current_candidate()
    assert pane.decide_current("ADD")
    pane.run_combo.setCurrentIndex(pane.run_combo.findData(other))
    # the old run's rows are not left under the new run's name for the next key
    assert all(c.run_id == other for c in pane.candidates())
    pane.decide_current("REJECT")
    settle(qtbot, pane)
    assert pane.current_run_id() == other
    assert [c.run_id for c in pane.candidates()] == [other]
    assert Candidate.get_by_id(first.id).action == "ADD"
    assert (
        Candidate.select().where(Candidate.run == staged, Candidate.action == "REJECT").count() == 0
    )


def test_closing_the_main_window_writes_the_queued_decisions(
    qtbot, main_window, staged: int
) -> None:
    review = review_of(qtbot, main_window, staged)
    for action in ("ADD", "REJECT", "ADD"):
        assert review.decide_current(action)
    assert review.decisions.pending == 3
    main_window.close()
    stored = {c.text: c.action for c in Candidate.select().where(Candidate.run == staged)}
    assert [stored[t] for t in TEXTS] == ["ADD", "REJECT", "ADD"]


def test_a_refused_update_opens_the_picker_for_its_own_candidate(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    """UPDATE of a pattern retired meanwhile: the key moved the selection on at once, so
    the picker the refusal opens must be for the refused candidate, not the next one."""
    target = next(c for c in pane.candidates() if c.proposed_target_id is not None)
    pane._select_row(pane.model.find_row(lambda c: c.id == target.id))
    with services.store.write():
        Pattern.update(status="retired").where(Pattern.id == target.proposed_target_id).execute()
    assert pane.decide_current("UPDATE")
    assert pane.current_candidate().id != target.id  # moved on
    qtbot.waitUntil(lambda: pane.target_dialog is not None, timeout=30_000)
    settle(qtbot, pane)
    dialog = pane.target_dialog
    assert dialog.windowTitle().endswith(f"candidate #{target.ordinal}")
    qtbot.waitUntil(lambda: dialog.list.count() > 0, timeout=30_000)
    others = {c.id: c.action for c in pane.candidates() if c.id != target.id}
    dialog.list.setCurrentRow(0)
    dialog.accept_if_chosen()
    settle(qtbot, pane)
    assert Candidate.get_by_id(target.id).action == "UPDATE"  # the chosen pattern, on it
    assert {c.id: c.action for c in pane.candidates() if c.id != target.id} == others
    assert all(Candidate.get_by_id(i).action == a for i, a in others.items())


def test_closing_the_window_with_a_commit_waiting_for_the_writes_opens_no_preview(
    qtbot, main_window, staged: int
) -> None:
    """Commit pressed while decisions were queued, then the window closed: the writes are
    finished on close, and the preview must not pop up for a window that is gone (a
    visible dialog would also keep the application from quitting)."""
    review = review_of(qtbot, main_window, staged)
    assert review.decide_current("ADD")
    assert review.commits.open_commit_dialog() is None  # waits for the write
    main_window.close()
    assert review.commits.commit_dialog is None
    assert not [w for w in review.findChildren(QDialog) if w.isVisible()]
    assert Candidate.select().where(Candidate.action == "ADD").count() == 1


def test_an_update_refused_while_the_window_closes_opens_no_picker(
    qtbot, main_window, services: AppServices, staged: int
) -> None:
    """The close writes the queued decisions; one refused then is named by a message the
    close also closes, but the target picker would stay open for a window that is gone."""
    review = review_of(qtbot, main_window, staged)
    target = next(c for c in review.candidates() if c.proposed_target_id is not None)
    review._select_row(review.model.find_row(lambda c: c.id == target.id))
    with services.store.write():
        Pattern.update(status="retired").where(Pattern.id == target.proposed_target_id).execute()
    assert review.decide_current("UPDATE")
    main_window.close()
    assert review.target_dialog is None
    assert not [w for w in review.findChildren(QDialog) if w.isVisible()]
    assert Candidate.get_by_id(target.id).action is None


def test_random_key_sequences_over_two_runs_end_as_the_database_holds_them(
    qtbot, services: AppServices, tmp_path: Path
) -> None:
    """Decisions, both undos, selection moves, the flagged filter and run switches in
    random order without waiting: no callback fails and the list ends on the database."""
    for n in range(2):
        f = tmp_path / f"k{n}.txt"
        f.write_text(
            "\n".join(
                f"Pattern number {n}-{k} about replies and greetings {k * 7}." for k in range(12)
            )
            + "\n"
        )
        import_knowledge(services.store, f)
    pane = ReviewPane(services)
    qtbot.addWidget(pane)
    pane.show()
    pane.show_message = lambda t, m: None
    seen = []
    services.ops.failed.connect(lambda a, b: seen.append((a, b)))
    pane.refresh()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    for seed in range(10):
        rng = random.Random(seed)
        for _ in range(60):
            r = rng.random()
            if r < 0.35:
                pane.decide_current(rng.choice(["ADD", "REJECT", "SKIP", "UPDATE", "ACCEPT"]))
            elif r < 0.5:
                pane.undo_selected()
            elif r < 0.6:
                pane.undo_decision()
            elif r < 0.75:
                if pane.model.rowCount():
                    pane._select_row(rng.randrange(pane.model.rowCount()))
            elif r < 0.8:
                pane.flagged_only.setChecked(not pane.flagged_only.isChecked())
            elif r < 0.85:
                pane.run_combo.setCurrentIndex(rng.randrange(pane.run_combo.count()))
            elif r < 0.9 and pane.target_dialog is not None:
                pane.target_dialog.reject()
            else:
                qtbot.wait(rng.choice((0, 1, 5)))
        if pane.target_dialog is not None:
            pane.target_dialog.reject()
        qtbot.waitUntil(lambda: pane.settled, timeout=60_000)
        if pane.target_dialog is not None:
            pane.target_dialog.reject()
        run = pane.current_run_id()
        db = {
            c.id: (c.action, c.target_id) for c in review_api.list_candidates(services.store, run)
        }
        shown = {c.id: (c.action, c.target_id) for c in pane._candidates}
        assert shown == db, seed
        assert not seen, seen


def test_a_click_on_the_review_tab_gives_its_keys_to_the_list(
    qtbot, services: AppServices, staged: int, qsettings
) -> None:
    """Under a real X server the first focus sat on the tab bar and a click on a tab left it
    there: the digit keys worked, but Up, Backspace and Ctrl+Z never reached the list, and
    Ctrl+Z undid a relabel in Episodes (switching to it) instead of the last decision."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    from curator.gui.window.main_window import MainWindow

    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitExposed(window)
    episodes = window.pane("episodesPane")
    qtbot.waitUntil(lambda: QApplication.focusWidget() is episodes.table, timeout=5_000)
    bar = window.tabs.tabBar()
    assert bar.focusPolicy() == Qt.FocusPolicy.NoFocus
    review = window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(1).center())
    assert window.tabs.currentWidget() is review
    qtbot.waitUntil(lambda: review.settled and review.model.rowCount() > 0, timeout=30_000)
    assert QApplication.focusWidget() is review.list_view
    # Ctrl+Z wherever the focus is in the pane undoes the last decision, in the pane
    qtbot.keyClick(review.list_view, Qt.Key.Key_3)
    qtbot.waitUntil(lambda: review.settled, timeout=30_000)
    assert [c.action for c in review.candidates()].count("ADD") == 1
    review.run_combo.setFocus()
    qtbot.keyClick(review.run_combo, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: review.settled, timeout=30_000)
    assert window.tabs.currentWidget() is review
    assert [c.action for c in review.candidates()].count("ADD") == 0

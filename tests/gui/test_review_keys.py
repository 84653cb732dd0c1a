"""Review keys do what they say: the edit dialog's Tab and Return, and Backspace on an edit.

The pattern is one line, so in the edit dialog Tab moves to Importance and Return is OK
(never a tab or a newline in the text). Backspace on an edited, decided row takes the edit
back first (the decision stays), and only the next Backspace the decision. Real widgets,
real keys (``qtbot.keyClick``), a real SQLite file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.pipeline import review as review_api
from curator.store.db import Store
from tests.gui.test_review_pane import build_staged_run

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")

NEW_TEXT = "Write the incident summary within two hours of resolving it."


@pytest.fixture
def staged(tmp_path: Path) -> Iterator[tuple[AppServices, dict[str, int]]]:
    store = Store(tmp_path / "review.sqlite")
    ids = build_staged_run(store)
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs()), ids
    store.close()


@pytest.fixture
def pane(qtbot, staged, show_pane) -> ReviewPane:
    services, _ = staged
    widget = ReviewPane(services)
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    widget.activateWindow()
    qtbot.waitActive(widget)
    widget.list_view.setFocus()
    return widget


def _open_edit(qtbot, pane: ReviewPane, row: int):
    pane._select_row(row)
    qtbot.keyClick(pane.list_view, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    qtbot.waitExposed(dialog)
    dialog.activateWindow()
    dialog.text_edit.setFocus()
    qtbot.waitUntil(dialog.text_edit.hasFocus)
    return dialog


def _back_to(qtbot, pane: ReviewPane) -> None:
    """The closed dialog leaves no active window on the offscreen platform: activate the
    pane again (a desktop's window manager does that) so its shortcuts get keys."""
    qtbot.waitUntil(lambda: pane.edit_dialog is None)
    pane.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is pane)
    pane.list_view.setFocus()


def _row(pane: ReviewPane, ordinal: int):
    return next(c for c in pane.candidates() if c.ordinal == ordinal)


def test_tab_moves_to_importance_and_inserts_nothing(qtbot, pane: ReviewPane) -> None:
    dialog = _open_edit(qtbot, pane, 2)
    before = dialog.text_edit.toPlainText()
    qtbot.keyClick(dialog.text_edit, Qt.Key.Key_Tab)
    assert "\t" not in dialog.text_edit.toPlainText()
    assert dialog.text_edit.toPlainText() == before
    assert dialog.importance.hasFocus() or dialog.importance.lineEdit().hasFocus()
    dialog.reject()


def test_return_accepts_the_edit_instead_of_a_newline(qtbot, pane: ReviewPane) -> None:
    dialog = _open_edit(qtbot, pane, 2)
    dialog.text_edit.setPlainText(NEW_TEXT)
    dialog.rematch()
    qtbot.waitUntil(lambda: not dialog.rematching, timeout=30_000)
    with qtbot.waitSignal(dialog.accepted, timeout=5_000):
        qtbot.keyClick(dialog.text_edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: pane.settled and not pane.decisions.pending, timeout=30_000)
    edited = _row(pane, 3)
    assert edited.final_text == NEW_TEXT  # one line, no newline added
    assert edited.action == "ADD"


@pytest.mark.parametrize("key", [Qt.Key.Key_Enter, Qt.Key.Key_Return])
def test_return_with_an_empty_text_does_not_accept(qtbot, pane: ReviewPane, key) -> None:
    """OK is off for an empty text: Return must not record anything either."""
    dialog = _open_edit(qtbot, pane, 2)
    dialog.text_edit.setPlainText("   ")
    dialog.rematch()
    qtbot.keyClick(dialog.text_edit, key)
    assert dialog.isVisible() and dialog.result() == 0
    assert "\n" not in dialog.text_edit.toPlainText()
    dialog.reject()


def test_a_pasted_newline_is_one_line_in_the_decision(qtbot, pane: ReviewPane) -> None:
    dialog = _open_edit(qtbot, pane, 2)
    dialog.text_edit.setPlainText("Write the incident summary\nwithin two hours of resolving it.")
    assert dialog.decision()[0] == NEW_TEXT
    dialog.reject()


def test_backspace_undoes_the_edit_first_then_the_decision(qtbot, pane: ReviewPane) -> None:
    dialog = _open_edit(qtbot, pane, 2)  # ordinal 3, undecided ADD proposal
    dialog.text_edit.setPlainText(NEW_TEXT)
    dialog.importance.setValue(0.55)
    dialog.accept()
    qtbot.waitUntil(lambda: pane.settled and not pane.decisions.pending, timeout=30_000)
    edited = _row(pane, 3)
    assert (edited.action, edited.final_text) == ("ADD", NEW_TEXT)

    _back_to(qtbot, pane)
    pane._select_row(2)
    said: list[str] = []
    pane.status_message.connect(said.append)
    qtbot.keyClick(pane.list_view, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: pane.settled and not pane.decisions.pending, timeout=30_000)
    once = _row(pane, 3)
    assert once.action == "ADD"  # the decision stays
    assert once.final_text is None and once.final_importance is None  # the edit is gone
    assert said[-1] == "Undid the edit of #3 (Add new stays; Backspace again undoes the decision)."

    qtbot.keyClick(pane.list_view, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: pane.settled and not pane.decisions.pending, timeout=30_000)
    twice = _row(pane, 3)
    assert twice.action is None  # now the decision


# -- the engine rule behind the key, for any decision made with an edit -------------------


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ordinal=st.integers(min_value=1, max_value=4),
    verb=st.sampled_from(["ACCEPT", "ADD", "REJECT", "SKIP"]),
    suffix=st.text(alphabet="abcdefgh xyz", min_size=3, max_size=20),
    importance=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)),
    via_last=st.booleans(),
)
def test_undo_with_edit_first_always_walks_edit_then_decision_then_nothing(
    tmp_path_factory, ordinal, verb, suffix, importance, via_last
) -> None:
    """Whatever the decision made with an edit, the first undo removes only the edit when
    the decision can stand without it, the second one the decision, a third finds nothing."""
    store = Store(tmp_path_factory.mktemp("undo") / "review.sqlite")
    try:
        run_id = build_staged_run(store)["run"]
        c = next(x for x in review_api.list_candidates(store, run_id) if x.ordinal == ordinal)
        text = f"Keep the release notes short and concrete {suffix.strip() or 'ok'}."
        target = c.proposed_target_id if verb == "SKIP" else None
        if verb == "SKIP" and target is None:
            verb = "REJECT"
        try:
            decided = review_api.decide(
                store, c.id, verb, target_id=target, text=text, importance=importance
            )
        except Exception:
            return  # refused (a quality gate): nothing to undo, nothing changed

        def undo() -> review_api.CandidateView | None:
            if via_last:
                return review_api.undo_last_decision(store, run_id, edit_first=True)
            return review_api.undo_decision(store, c.id, edit_first=True)

        first = undo()
        assert first is not None
        edited = decided.final_text is not None or decided.final_importance is not None
        if first.action is not None:  # the edit went first, the decision stood
            assert edited
            assert first.final_text is None and first.final_importance is None
            second = undo()
            assert second is not None and second.action is None
        assert undo() is None
        now = review_api.get_candidate(store, c.id)
        assert now.action is None and now.final_text is None and now.final_importance is None
    finally:
        store.close()

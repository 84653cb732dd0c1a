"""The human gate without holes: a commit applies what its preview showed, and Enter on a
confirmation never lets flagged material into Knowledge.

Real keys (QTest.keyClick) on the real dialogs; the decisions "from a shell" are written
on another thread, which has its own connection to the same SQLite file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QWidget

from curator.gui.review.review_dialogs import CommitDialog
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.gui.widgets.flag_view import FlaggedConfirmDialog
from curator.pipeline import review
from curator.pipeline.commit import preview_commit
from curator.store.db import Store
from curator.store.models import Candidate, Pattern, Run
from tests.gui.review_runs import TEXTS, read_preview, shown_pane, stage_texts
from tests.gui.test_review_flags_pane import CLEAN, HIDDEN, PHISHING, build

ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


def _ids(run_id: int) -> list[int]:
    query = Candidate.select().where(Candidate.run == run_id).order_by(Candidate.ordinal)
    return [c.id for c in query]


def _click_ok(qtbot, dialog: QDialog) -> None:
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)  # type: ignore[attr-defined]
    assert ok.isEnabled()
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)


def test_commit_refuses_decisions_made_elsewhere_after_the_preview(
    qtbot, services: AppServices, tmp_path: Path
) -> None:
    run_id = stage_texts(services, tmp_path)
    ids = _ids(run_id)
    for cid, verb in zip(ids, ("ADD", "REJECT", "REJECT"), strict=True):
        review.decide(services.store, cid, verb)
    pane = shown_pane(qtbot, services, settled=True)
    pane.select_run(run_id)
    qtbot.waitUntil(lambda: pane.settled and pane.current_run_id() == run_id, timeout=30_000)
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))

    shown = read_preview(qtbot, pane.open_commit_dialog())
    assert shown is not None and "1 new pattern" in shown.view.toPlainText()
    # `curator decide` from a shell, meanwhile: another thread has its own connection
    store = services.store
    shell = threading.Thread(
        target=lambda: (
            review.decide(store, ids[1], "ADD", actor="shell"),
            review.decide(store, ids[2], "ADD", actor="shell"),
            store.db.close(),
        )
    )
    shell.start()
    shell.join(timeout=60)
    assert Candidate.get_by_id(ids[2]).action == "ADD"

    with qtbot.waitSignal(pane.commits.committed, timeout=30_000) as outcome:
        _click_ok(qtbot, shown)
    assert outcome.args == [None]  # refused
    assert Pattern.select().where(Pattern.created_run == run_id).count() == 0
    assert Run.get_by_id(run_id).status == "staged"
    assert not Candidate.select().where(Candidate.state == "applied").count()
    fresh = pane.commits.commit_dialog
    assert fresh is not None and fresh is not shown and fresh.isVisible()
    assert fresh.note == (
        f"Nothing was committed: since the preview you accepted, candidate {ids[1]} went "
        f"from REJECT to ADD and candidate {ids[2]} went from REJECT to ADD; this is the "
        "run as it is now."
    )
    assert fresh.note in fresh.view.toPlainText()
    assert "3 new pattern" in fresh.view.toPlainText()
    assert not messages  # said in the fresh preview, not in a second box

    with qtbot.waitSignal(pane.commits.committed, timeout=30_000) as outcome:
        _click_ok(qtbot, fresh)  # the reviewer accepts what they now see
    assert outcome.args[0] is not None and outcome.args[0].counts["ADD"] == 3
    added = {p.text for p in Pattern.select().where(Pattern.created_run == run_id)}
    assert added == set(TEXTS)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)


# -- Enter on a confirmation takes the safe answer -----------------------------------------


@pytest.fixture
def flagged_pane(qtbot, tmp_path: Path, show_pane) -> Iterator[ReviewPane]:
    store = Store(tmp_path / "flags.sqlite")
    build(store)
    widget = ReviewPane(AppServices(store=store, db_path=store.path, dialogs=Dialogs()))
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    yield widget
    store.close()


def _press(dialog: QDialog, key: Qt.Key, on: str) -> None:
    """Enter as a user presses it: on the dialog, or on the widget that has the focus."""
    target: QWidget = dialog
    if on == "focus":
        target = dialog.focusWidget() or dialog
    QTest.keyClick(target, key)


def _decisions(texts: tuple[str, ...]) -> dict[str, str | None]:
    return {t: Candidate.get(Candidate.text == t).action for t in texts}


@pytest.mark.parametrize("on", ["dialog", "focus"])
@pytest.mark.parametrize("key", ENTER_KEYS)
def test_enter_on_the_flagged_confirmation_leaves_them_undecided(
    qtbot, flagged_pane: ReviewPane, key: Qt.Key, on: str
) -> None:
    pane = flagged_pane
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        assert pane.accept_all()
    qtbot.waitUntil(lambda: pane.settled and pane.flagged_dialog is not None, timeout=30_000)
    dialog = pane.flagged_dialog
    assert dialog is not None
    qtbot.waitExposed(dialog)
    results: list[int] = []
    dialog.finished.connect(results.append)

    _press(dialog, key, on)
    assert results == [QDialog.DialogCode.Rejected.value]
    assert not pane.ops.busy  # no accept of the flagged ones was started
    assert _decisions((CLEAN, PHISHING, HIDDEN)) == {CLEAN: "ADD", PHISHING: None, HIDDEN: None}
    assert pane.flagged_dialog is None


@pytest.mark.parametrize("key", [*ENTER_KEYS, Qt.Key.Key_Escape])
def test_enter_on_a_commit_with_a_flagged_decision_commits_nothing(
    qtbot, flagged_pane: ReviewPane, key: Qt.Key
) -> None:
    pane = flagged_pane
    ids = {Candidate.get(Candidate.text == t).id: t for t in (CLEAN, PHISHING, HIDDEN)}
    for cid in ids:
        review.decide(pane.services.store, cid, "ADD")  # the phishing one with its flags seen
    pane.refresh()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and "Flagged" in dialog.view.toPlainText()
    qtbot.waitExposed(dialog)
    results: list[int] = []
    dialog.finished.connect(results.append)

    _press(dialog, key, "focus")
    assert results == [QDialog.DialogCode.Rejected.value]
    assert not pane.ops.busy
    assert Pattern.select().count() == 0
    assert Run.get().status == "staged"


def test_accepting_the_flagged_confirmation_takes_only_the_candidates_it_listed(
    qtbot, flagged_pane: ReviewPane
) -> None:
    """Same class as the unseen commit: a flagged candidate that became undecided after
    the confirmation listed the others (a shell undid its decision) is not accepted."""
    pane = flagged_pane
    hidden = Candidate.get(Candidate.text == HIDDEN).id
    review.decide(pane.services.store, hidden, "REJECT")
    pane.refresh()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        assert pane.accept_all()
    qtbot.waitUntil(lambda: pane.settled and pane.flagged_dialog is not None, timeout=30_000)
    dialog = pane.flagged_dialog
    assert dialog is not None and [c.text for c in dialog.candidates] == [PHISHING]
    store = pane.services.store
    shell = threading.Thread(target=lambda: (review.undo_decision(store, hidden), store.db.close()))
    shell.start()
    shell.join(timeout=60)
    assert Candidate.get_by_id(hidden).action is None

    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        _click_ok(qtbot, dialog)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    assert _decisions((CLEAN, PHISHING, HIDDEN)) == {CLEAN: "ADD", PHISHING: "ADD", HIDDEN: None}


KEYS = st.sampled_from([Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape])
MODIFIERS = st.sampled_from(
    [
        Qt.KeyboardModifier.NoModifier,
        Qt.KeyboardModifier.KeypadModifier,
        Qt.KeyboardModifier.ShiftModifier,
        Qt.KeyboardModifier.ControlModifier,
    ]
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(presses=st.lists(st.tuples(KEYS, MODIFIERS, st.integers(0, 3)), min_size=1, max_size=3))
def test_no_enter_or_escape_on_a_gate_dialog_lets_material_in(
    qtbot, flagged_pane: ReviewPane, presses: list[tuple[Qt.Key, Qt.KeyboardModifier, int]]
) -> None:
    """Property: whatever Enter/Return/Escape is pressed, with whichever modifier, on
    whichever part of the flagged confirmation or the commit preview, it is not accepted."""
    views = [c for c in flagged_pane.candidates() if c.flags]
    preview = preview_commit(flagged_pane.services.store, int(views[0].run_id))
    for dialog in (
        FlaggedConfirmDialog(views, flagged_pane),
        CommitDialog(preview, True, flagged_pane),
    ):
        results: list[int] = []
        dialog.finished.connect(results.append)
        dialog.open()
        qtbot.waitExposed(dialog)
        parts: list[QWidget] = [dialog, dialog.view, *dialog.buttons.buttons()]
        for key, modifier, where in presses:
            if results:
                break
            target = parts[where % len(parts)]
            target.setFocus()
            QTest.keyClick(target, key, modifier)
        assert QDialog.DialogCode.Accepted.value not in results
        dialog.close()

"""Review reads its candidates and writes its decisions off the GUI thread.

Listing a run re-checks every candidate's flags (100 ms for 400 candidates at 300,000
episodes) and every decision reloaded the whole list on the GUI thread before; now the
list is a background query with a loading state, and a decision is shown at once and
written in key order through ``ops.write``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtWidgets import QHeaderView, QLabel

from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.qt_models import FIT_ROWS
from curator.store.models import Candidate, Pattern
from tests.gui.review_runs import TEXTS, shown_pane, stage_texts


@pytest.fixture
def staged(services: AppServices, tmp_path: Path) -> int:
    return stage_texts(services, tmp_path)


@pytest.fixture
def pane(qtbot, services: AppServices, staged: int) -> ReviewPane:
    return shown_pane(qtbot, services, settled=False)


def settle(qtbot, pane: ReviewPane) -> None:
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)


def test_the_candidates_load_in_the_background_with_a_loading_state(
    qtbot, pane: ReviewPane, services: AppServices, staged: int
) -> None:
    pane.refresh()
    assert pane.loading and not pane.settled
    assert pane.progress_label.text() == "Loading the candidates…"
    assert pane.model.rowCount() == 0  # nothing read on the GUI thread
    settle(qtbot, pane)
    assert pane.current_run_id() == staged
    assert [c.text for c in pane.candidates()] == list(TEXTS)
    assert "0 / 3" in pane.progress_label.text()
    assert services.ops.job_thread_ids
    assert threading.get_ident() not in services.ops.job_thread_ids


def test_keys_show_the_decision_at_once_and_write_it_in_order_off_the_gui_thread(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    pane.refresh()
    settle(qtbot, pane)
    ran_before = len(services.ops.job_thread_ids)
    for action in ("ADD", "REJECT", "ADD"):
        assert pane.decide_current(action)
    # shown and advanced before any write was delivered (delivery needs the event loop)
    assert pane.decisions.pending == 3
    assert [c.action for c in pane.candidates()] == ["ADD", "REJECT", "ADD"]
    assert "3 / 3" in pane.progress_label.text()
    assert Candidate.select().where(Candidate.action.is_null(False)).count() < 3
    settle(qtbot, pane)
    stored = {c.text: c.action for c in Candidate.select()}
    assert [stored[t] for t in TEXTS] == ["ADD", "REJECT", "ADD"]
    assert [c.decided_via for c in pane.candidates()] == ["human"] * 3  # the engine's answer
    ran = services.ops.job_thread_ids[ran_before:]
    # the three writes, and the reads of each shown candidate's sources: none on the GUI thread
    assert len(ran) >= 3 and threading.get_ident() not in ran


def test_a_refused_decision_is_put_back_and_named(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    """UPDATE of a pattern retired meanwhile: the engine refuses in the background, the
    row returns to undecided and the picker opens with the reason (no dead end)."""
    pane.refresh()
    settle(qtbot, pane)
    shown: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: shown.append((title, text))
    target = next(c for c in pane.candidates() if c.proposed_target_id is not None)
    pane._select_row(pane.model.find_row(lambda c: c.id == target.id))
    with services.store.write():
        Pattern.update(status="retired").where(Pattern.id == target.proposed_target_id).execute()
    assert pane.decide_current("UPDATE")
    assert next(c for c in pane.candidates() if c.id == target.id).action == "UPDATE"
    qtbot.waitUntil(lambda: pane.target_dialog is not None, timeout=30_000)
    settle(qtbot, pane)
    assert next(c for c in pane.candidates() if c.id == target.id).action is None
    assert Candidate.get_by_id(target.id).action is None
    assert pane.current_candidate().id == target.id
    intro = pane.target_dialog.findChildren(QLabel)[0].text()
    assert "retired" in intro and not shown  # the engine's reason, in the picker
    pane.target_dialog.reject()
    assert pane.decide_current("ADD")  # another decision on it still works
    settle(qtbot, pane)
    assert Candidate.get_by_id(target.id).action == "ADD"


def test_a_decision_does_not_re_measure_every_row_of_the_list(pane: ReviewPane) -> None:
    """The columns fit their content over a screenful of rows: measured over every row
    (Qt's default, up to 1,000) each decision cost 160 ms at 400 candidates."""
    header = pane.list_view.horizontalHeader()
    assert header.resizeContentsPrecision() == FIT_ROWS
    last = pane.model.columnCount() - 1
    assert header.sectionResizeMode(last) == QHeaderView.ResizeMode.Stretch


def test_closing_the_window_writes_the_decisions_still_queued(
    qtbot, pane: ReviewPane, services: AppServices
) -> None:
    pane.refresh()
    settle(qtbot, pane)
    for action in ("ADD", "REJECT", "ADD"):
        assert pane.decide_current(action)
    assert pane.decisions.pending == 3
    pane.shutdown()  # what the window calls on close, before the operations shut down
    assert pane.decisions.pending == 0
    services.ops.shutdown()
    stored = {c.text: c.action for c in Candidate.select()}
    assert [stored[t] for t in TEXTS] == ["ADD", "REJECT", "ADD"]


def test_the_last_commit_is_read_off_the_gui_thread_at_every_write(
    qtbot, pane: ReviewPane, services: AppServices, staged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo button names the newest commit. It was read at every start and end of
    any write, on the GUI thread: a round trip to a PostgreSQL server each time."""
    from curator.gui.review import review_commit
    from curator.pipeline import commit as commit_api
    from curator.pipeline import review as review_api

    settle(qtbot, pane)
    read_on: list[int] = []
    real = commit_api.last_commit

    def spied(store, run_id=None):  # the real read, its thread noted
        read_on.append(threading.get_ident())
        return real(store, run_id)

    monkeypatch.setattr(review_commit.commit_api, "last_commit", spied)
    review_api.accept_all(services.store, staged)
    summary = commit_api.commit_run(services.store, staged, actor="test")
    pane.commits.update_buttons()
    qtbot.waitUntil(lambda: pane.commits.undo_button.isEnabled(), timeout=30_000)
    assert read_on and threading.get_ident() not in read_on
    assert pane.last_commit() is not None and pane.last_commit().id == summary.id
    tip = pane.commits.undo_button.toolTip()
    assert tip.startswith(f"Undo {review_commit.commit_name(summary)}, committed")

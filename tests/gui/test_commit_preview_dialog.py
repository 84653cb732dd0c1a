"""The commit dialog: its preview is read off the GUI thread (a "Reading…" state with
Commit disabled meanwhile), and it shows what the agent will get (effective importance,
prompt rank before → after, the words for an UPDATE that will not move its pattern)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from PySide6.QtWidgets import QWidget

from curator.gui.review.review_commit import CommitBar
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.pipeline import review
from curator.store.db import Store
from curator.store.models import Run, utcnow
from curator.store.settings import set_setting
from tests.gui.review_runs import read_preview, shown_pane
from tests.review.conftest import make_pattern, make_staged_run


@pytest.fixture
def services(tmp_path: Path) -> Iterator[AppServices]:
    """Twelve fresh patterns, one 90 days old (0.38), a staged UPDATE of it to 1.00 and a
    weak ADD (0.005, below everything)."""
    store = Store(tmp_path / "curator.sqlite")
    set_setting(store, "top_k", 10)
    now = utcnow()
    for i in range(12):
        make_pattern(
            store,
            f"Fresh rule number {i} about deployment windows and their owners.",
            0.9 - 0.05 * i,
            distilled_at=now - timedelta(days=1),
        )
    old = make_pattern(
        store,
        "Rotate the staging credentials every quarter.",
        0.38,
        distilled_at=now - timedelta(days=90),
    )
    run = make_staged_run(
        store,
        [
            {
                "text": "Rotate the staging credentials each quarter.",
                "action": "UPDATE",
                "target": old,
                "importance": 1.0,
            },
            {
                "text": "Always page the on-call owner before a failover.",
                "action": "ADD",
                "importance": 0.005,
            },
        ],
    )
    for c in run.candidates:
        review.decide(store, c.id, "ACCEPT")
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    store.close()


def test_the_preview_is_read_in_the_background_and_tells_what_the_agent_gets(
    qtbot, services: AppServices
) -> None:
    pane: ReviewPane = shown_pane(qtbot, services, settled=True)
    gui_thread = threading.get_ident()
    jobs_before = len(services.ops.job_thread_ids)
    dialog = pane.open_commit_dialog()
    assert dialog is not None
    assert dialog.loading and dialog.blocked and not dialog.ok.isEnabled()
    assert "Reading what the commit would change" in dialog.view.toPlainText()
    dialog.accept()  # nothing shown yet: nothing to commit
    assert dialog.isVisible() and not services.ops.busy
    read_preview(qtbot, dialog)
    assert gui_thread not in services.ops.job_thread_ids[jobs_before:]
    assert len(services.ops.job_thread_ids) > jobs_before
    assert dialog.ok.isEnabled() and dialog.preview is not None
    text = dialog.view.toPlainText()
    assert "#13: 0.38 → 1.00" in text
    assert "effective 0.004 → 0.010, rank 13 → 13" in text
    assert "will not move: stays at rank 13, outside the prompt (top 10)" in text
    assert "the decay clock is not refreshed" in text
    assert "an UPDATE does not refresh the decay clock" in text
    assert "lands at rank 14, outside the prompt (top 10)" in text
    assert "Pushed out of the prompt" not in text


def test_with_the_clock_refreshed_the_dialog_shows_the_pattern_entering_the_prompt(
    qtbot, services: AppServices
) -> None:
    set_setting(services.store, "update_refreshes_decay", True)
    pane = shown_pane(qtbot, services, settled=True)
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    text = dialog.view.toPlainText()
    assert "an UPDATE refreshes the decay clock" in text
    assert "rank 13 → 1" in text and "enters the prompt: rank 13 → 1 (top 10)" in text
    assert "Pushed out of the prompt (top 10)" in text and "#10: rank 10 → 11" in text


def test_a_preview_closed_while_it_is_read_is_dropped_quietly(qtbot, services: AppServices) -> None:
    pane = shown_pane(qtbot, services, settled=True)
    failures: list[tuple[str, str]] = []
    services.ops.failed.connect(lambda label, text: failures.append((label, text)))
    dialog = pane.open_commit_dialog()
    assert dialog is not None and dialog.loading
    dialog.reject()
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)
    assert not failures and pane.commit_dialog is None
    assert Run.get().status == "staged"


def test_a_preview_that_cannot_be_read_says_so_in_the_dialog(qtbot, services: AppServices) -> None:
    """A run id the database does not have (deleted after the window listed it)."""
    parent = QWidget()
    qtbot.addWidget(parent)
    messages: list[tuple[str, str]] = []
    bar = CommitBar(services, parent, lambda t, m: messages.append((t, m)), lambda: 999)
    dialog = bar.open_commit_dialog()
    assert dialog is not None
    qtbot.waitUntil(lambda: not dialog.loading, timeout=30_000)
    assert "The preview could not be read: there is no run 999" in dialog.view.toPlainText()
    assert not dialog.ok.isEnabled() and dialog.preview is None
    dialog.accept()  # refused: there is nothing to commit
    assert not services.ops.busy and not messages
    dialog.reject()


def test_the_setting_changed_after_the_preview_commits_nothing_and_says_so(
    qtbot, services: AppServices
) -> None:
    pane = shown_pane(qtbot, services, settled=True)
    shown = read_preview(qtbot, pane.open_commit_dialog())
    set_setting(services.store, "update_refreshes_decay", True)  # the Settings pane, meanwhile
    with qtbot.waitSignal(pane.commits.committed, timeout=30_000) as outcome:
        shown.ok.click()
    assert outcome.args == [None]
    assert Run.get().status == "staged"
    fresh = pane.commits.commit_dialog
    assert fresh is not None and fresh is not shown and not fresh.loading
    assert "UPDATE refreshes the decay clock" in fresh.note and "turned on" in fresh.note
    assert "rank 13 → 1" in fresh.view.toPlainText()  # the fresh preview, under the new setting

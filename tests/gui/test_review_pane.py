"""Review pane: single-key decisions, undo, commit through the preview, undo commit, conflict.

The staged run is built directly with the models (existing patterns, candidates with the
pipeline's proposals and their source episodes), so these tests need no model.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from curator.core.scoring import rank_key
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.review.review_dialogs import CommitDialog, preview_html
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.pipeline.commit import preview_commit
from curator.store.db import Store
from curator.store.models import (
    Candidate,
    CandidateEpisode,
    Episode,
    Pattern,
    Run,
    utcnow,
)
from tests.gui.review_runs import read_preview

# The offscreen platform cannot resize a native window to new size hints; that is not a
# defect of the pane (no such message on a real desktop).
pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")

EXISTING = [
    ("Always confirm the deployment window with the on-call engineer first.", 0.8),
    ("Users prefer short status updates with a clear next step at the end.", 0.6),
    ("Back up the configuration before changing any production setting.", 0.7),
]


def make_pattern(text: str, importance: float, days_ago: float) -> Pattern:
    when = utcnow() - timedelta(days=days_ago)
    return Pattern.create(
        text=text,
        importance=importance,
        distilled_at=when,
        rank_key=rank_key(importance, when),
        category="uncategorized",
    )


def build_staged_run(store: Store) -> dict[str, int]:
    """Three active patterns and a staged run proposing UPDATE, SKIP, ADD, ADD."""
    ids: dict[str, int] = {}
    with store.write():
        episodes = [
            Episode.create(
                content_hash=f"h{i}",
                text=f"user: episode {i} about deployments and status updates\nagent: noted {i}",
                timestamp=utcnow() - timedelta(days=3, hours=i),
                source="chat",
                label="uncategorized",
                label_by="model",
            )
            for i in range(4)
        ]
        patterns = [make_pattern(t, imp, 10 + i) for i, (t, imp) in enumerate(EXISTING)]
        run = Run.create(kind="distill", status="staged", finished_at=utcnow())
        proposals = [
            # text, importance, action, target, ratio
            (
                "Always confirm the deployment window with the on-call engineers first.",
                0.9,
                "UPDATE",
                patterns[0],
                0.82,
            ),
            (
                "Users prefer short status updates with a clear next step at the end!",
                0.5,
                "SKIP",
                patterns[1],
                0.97,
            ),
            ("Write the incident summary within one hour of resolving it.", 0.75, "ADD", None, 0.3),
            ("Greet the user by name when the conversation starts again.", 0.4, "ADD", None, 0.2),
        ]
        for ordinal, (text, imp, action, target, ratio) in enumerate(proposals, 1):
            c = Candidate.create(
                run=run,
                ordinal=ordinal,
                text=text,
                importance=imp,
                proposed_action=action,
                proposed_target=target,
                proposed_ratio=ratio,
                target_revision=target.revision if target is not None else None,
            )
            CandidateEpisode.create(candidate=c, episode=episodes[ordinal - 1])
        ids = {"run": run.id, **{f"p{i}": p.id for i, p in enumerate(patterns)}}
    return ids


@pytest.fixture
def staged(db_url: str) -> Iterator[tuple[AppServices, dict[str, int]]]:
    """On both engines: a SQLite file, then a PostgreSQL database."""
    store = Store(db_url)
    ids = build_staged_run(store)
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs()), ids
    store.close()


@pytest.fixture
def pane(qtbot, staged, show_pane) -> ReviewPane:
    services, _ = staged
    widget = ReviewPane(services)
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)  # read in the background
    widget.activateWindow()
    qtbot.waitActive(widget)
    widget.list_view.setFocus()
    return widget


def key(qtbot, pane: ReviewPane, k: Qt.Key) -> None:
    qtbot.keyClick(pane.list_view, k)


def test_candidate_model_passes_modeltester(qtmodeltester, pane: ReviewPane) -> None:
    assert pane.model.rowCount() == 4
    qtmodeltester.check(pane.model)


def test_detail_shows_diff_ratio_and_importance(pane: ReviewPane) -> None:
    current = pane.current_candidate()
    assert current is not None and current.ordinal == 1  # first undecided
    assert "0.80 → " in pane.detail.toPlainText() and "0.90" in pane.detail.toPlainText()
    assert "0.820" in pane.match_label.text()
    assert "engineers" in pane.diff.toPlainText()
    assert "background-color" in pane.diff.toHtml()  # the inserted "s" is highlighted
    assert "episode 0 about deployments" in pane.sources.toPlainText()


def test_keys_decide_advance_and_undo(qtbot, pane: ReviewPane, staged) -> None:
    _, _ids = staged
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))

    key(qtbot, pane, Qt.Key.Key_A)  # accept the UPDATE proposal
    assert pane.current_candidate().ordinal == 2  # advanced to the next undecided
    key(qtbot, pane, Qt.Key.Key_1)  # SKIP
    key(qtbot, pane, Qt.Key.Key_3)  # ADD
    assert pane.current_candidate().ordinal == 4
    key(qtbot, pane, Qt.Key.Key_X)  # REJECT
    decided = {c.ordinal: c.action for c in pane.candidates()}
    assert decided == {1: "UPDATE", 2: "SKIP", 3: "ADD", 4: "REJECT"}
    assert "4 / 4" in pane.progress_label.text()

    key(qtbot, pane, Qt.Key.Key_Backspace)  # undo the REJECT
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert pane.current_candidate().ordinal == 4
    assert pane.current_candidate().action is None
    assert "3 / 4" in pane.progress_label.text()

    key(qtbot, pane, Qt.Key.Key_Up)  # arrows move the selection
    assert pane.current_candidate().ordinal == 3
    key(qtbot, pane, Qt.Key.Key_Down)
    key(qtbot, pane, Qt.Key.Key_2)  # UPDATE an ADD proposal: no target, the picker opens
    assert pane.target_dialog is not None and not messages
    assert pane.current_candidate().action is None


def test_edit_dialog_rematches_and_decides(qtbot, pane: ReviewPane) -> None:
    pane._select_row(2)  # the ADD candidate
    key(qtbot, pane, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    dialog.text_edit.setPlainText(EXISTING[2][0].replace("any", "a"))
    dialog.rematch()
    qtbot.waitUntil(lambda: not dialog.rematching, timeout=30_000)  # off the GUI thread
    label = dialog.match_label.text()
    assert "Update existing" in label or "Duplicate — skip" in label
    dialog.importance.setValue(0.55)
    dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    edited = next(c for c in pane.candidates() if c.ordinal == 3)
    assert edited.final_text == EXISTING[2][0].replace("any", "a")
    assert edited.action in ("UPDATE", "SKIP")
    assert edited.final_importance == pytest.approx(0.55)


def test_edit_dialog_text_with_a_control_character_is_refused(qtbot, pane: ReviewPane) -> None:
    """An ESC sequence typed or pasted into the Edit dialog is refused with its reason;
    the candidate stays as it was."""
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))
    pane._select_row(2)  # the ADD candidate
    before = next(c for c in pane.candidates() if c.ordinal == 3)
    key(qtbot, pane, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    dialog.text_edit.setPlainText("Deploys wait for a green build\x1b[8m and a hidden order.")
    dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    qtbot.waitUntil(lambda: bool(messages), timeout=30_000)
    assert "U+001B (ESC)" in messages[-1][1]
    after = next(c for c in pane.candidates() if c.ordinal == 3)
    assert (after.final_text, after.action) == (before.final_text, before.action)


def test_edit_dialog_text_that_shows_nothing_cannot_be_taken(qtbot, pane: ReviewPane) -> None:
    """Zero-width characters and blanks: the dialog says so and neither OK nor Return
    takes the text (the reviewer would see an empty row, the agent hidden characters)."""
    pane._select_row(2)  # the ADD candidate
    before = next(c for c in pane.candidates() if c.ordinal == 3)
    key(qtbot, pane, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    dialog.text_edit.setPlainText("\u200b\u2060 \u200d\ufeff \u3164")
    dialog.rematch()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled()
    assert "shows nothing" in dialog.match_label.text()
    qtbot.keyClick(dialog.text_edit, Qt.Key.Key_Return)
    assert dialog.isVisible()
    dialog.reject()
    after = next(c for c in pane.candidates() if c.ordinal == 3)
    assert (after.final_text, after.action) == (before.final_text, before.action)


def test_an_edited_update_is_listed_and_committed_as_edited(
    qtbot, pane: ReviewPane, staged
) -> None:
    """The Edit dialog's wording is what the list shows and what the commit writes."""
    _, ids = staged
    reworded = "Always confirm the release window with the on-call engineer first, in writing."
    pane._select_row(0)  # the UPDATE proposal of the first pattern
    key(qtbot, pane, Qt.Key.Key_E)
    dialog = pane.edit_dialog
    assert dialog is not None
    dialog.text_edit.setPlainText(reworded)
    dialog.rematch()
    qtbot.waitUntil(lambda: not dialog.rematching, timeout=30_000)  # off the GUI thread
    assert "Update existing" in dialog.match_label.text()
    dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    edited = next(c for c in pane.candidates() if c.ordinal == 1)
    assert edited.action == "UPDATE" and edited.target_id == ids["p0"]
    row = pane.model.find_row(lambda c: c.ordinal == 1)
    shown = pane.model.data(pane.model.index(row, pane.model.column_index("Candidate")))
    assert shown == "✎ " + reworded
    pane._select_row(row)
    assert "replaces the text of pattern" in pane.detail.toPlainText()

    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        assert pane.apply_commit(ids["run"], reviewed_only=True)
    assert Pattern.get_by_id(ids["p0"]).text == reworded


def test_commit_changes_knowledge_and_undo_reverts(qtbot, pane: ReviewPane, staged) -> None:
    services, ids = staged
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))
    knowledge = KnowledgePane(services)
    qtbot.addWidget(knowledge)
    knowledge.refresh()
    qtbot.waitUntil(lambda: not knowledge.loading)  # it reads in the background
    before = {r.id: r for r in knowledge.pattern_rows()}
    assert len(before) == 3

    # Unreviewed candidates block a full commit: the preview says so and OK is disabled.
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and dialog.blocked
    dialog.reject()
    # back in the window, as after a click on Cancel: the shown dialog (it was shown
    # while its preview was read) is gone and the pane is active again for its keys
    qtbot.waitUntil(lambda: not pane.findChildren(CommitDialog))
    pane.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is pane)
    pane.list_view.setFocus()

    for k in (Qt.Key.Key_A, Qt.Key.Key_A, Qt.Key.Key_A, Qt.Key.Key_X):
        key(qtbot, pane, k)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None and not dialog.blocked
    text = dialog.view.toPlainText()
    assert "1 new pattern" in text and "1 update" in text and "0.80 → 0.90" in text
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert not messages
    assert pane.current_run_id() is None  # the run is committed, no longer staged

    knowledge.refresh()
    qtbot.waitUntil(lambda: not knowledge.loading)  # it reads in the background
    after = {r.id: r for r in knowledge.pattern_rows()}
    assert len(after) == 4
    assert after[ids["p0"]].importance == pytest.approx(0.9)
    added = [r for r in after.values() if r.id not in before]
    assert added[0].text.startswith("Write the incident summary")

    assert pane.undo_last_commit()  # asks first
    box = services.dialogs.shown[-1]
    (yes,) = [b for b in box.buttons() if b.objectName() == "confirmButton"]
    with qtbot.waitSignal(pane.data_changed, timeout=30_000):
        yes.click()
    knowledge.refresh()
    qtbot.waitUntil(lambda: not knowledge.loading)  # it reads in the background
    reverted = {r.id: r for r in knowledge.pattern_rows()}
    assert set(reverted) == set(before)
    assert reverted[ids["p0"]].importance == pytest.approx(0.8)
    assert not messages


def test_conflict_is_shown_through_the_hook(qtbot, pane: ReviewPane, staged) -> None:
    services, ids = staged
    messages: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: messages.append((title, text))
    for k in (Qt.Key.Key_A, Qt.Key.Key_A, Qt.Key.Key_A, Qt.Key.Key_X):
        key(qtbot, pane, k)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    # Someone else edits the UPDATE target behind the pane's back.
    with services.store.write():
        Pattern.update(text="Changed elsewhere.", revision=Pattern.revision + 1).where(
            Pattern.id == ids["p0"]
        ).execute()
    dialog = read_preview(qtbot, pane.open_commit_dialog())
    assert dialog is not None
    assert "Conflicts" in dialog.view.toPlainText()
    with qtbot.waitSignal(pane.commits.committed, timeout=30_000):
        dialog.accept()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)  # written in the background
    assert len(messages) == 1
    title, text = messages[0]
    assert title == "Commit" and "conflict" in text.lower()
    assert Run.get_by_id(ids["run"]).status == "staged"  # nothing applied
    assert pane.current_run_id() == ids["run"]


def test_preview_html_lists_unreviewed(staged) -> None:
    services, ids = staged
    preview = preview_commit(services.store, ids["run"])
    assert "4 candidates are not reviewed" in preview_html(preview, reviewed_only=False)
    assert "stay staged" in preview_html(preview, reviewed_only=True)


def test_sources_are_read_off_the_gui_thread(qtbot, pane: ReviewPane, monkeypatch) -> None:
    """Selecting a candidate reads its source episodes on a worker thread: the panel says
    "Reading…" first and shows them when the answer comes (at 300,000 episodes a
    candidate's sources took noticeable time on the GUI thread)."""
    import threading

    from curator.pipeline import review as review_api

    threads: list[str] = []
    real = review_api.source_episodes

    def recording(store, ids):  # records the calling thread; the read itself is real
        threads.append(threading.current_thread().name)
        return real(store, ids)

    monkeypatch.setattr(review_api, "source_episodes", recording)
    key(qtbot, pane, Qt.Key.Key_Down)
    assert pane.sources_loading
    assert "Reading" in pane.sources.toPlainText()
    qtbot.waitUntil(lambda: not pane.sources_loading, timeout=10_000)
    assert threads and threading.main_thread().name not in threads
    assert "episode" in pane.sources.toPlainText()
    assert "Reading" not in pane.sources.toPlainText()

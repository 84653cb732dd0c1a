"""Review pane: an ADD proposed before a near-duplicate was written elsewhere shows that
pattern, and the keys that take a target take it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.core.scoring import rank_key
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.store.db import Store
from curator.store.models import Candidate, CandidateEpisode, Episode, Pattern, Run, utcnow

TEXT = "Write the incident summary within one hour of resolving it."


@pytest.fixture
def stale(qtbot, tmp_path: Path, show_pane) -> Iterator[tuple[ReviewPane, int]]:
    store = Store(tmp_path / "stale.sqlite")
    with store.write():
        run = Run.create(kind="distill", status="staged", finished_at=utcnow())
        episode = Episode.create(content_hash="h1", text="episode 1", timestamp=utcnow())
        c = Candidate.create(run=run, ordinal=1, text=TEXT, importance=0.8, proposed_action="ADD")
        CandidateEpisode.create(candidate=c, episode=episode)
        now = utcnow()  # written after the run started, by no run of its own
        written = Pattern.create(
            text=TEXT + " ", importance=0.5, distilled_at=now, rank_key=rank_key(0.5, now)
        )
    widget = ReviewPane(AppServices(store=store, db_path=store.path, dialogs=Dialogs()))
    show_pane(widget)
    qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    widget.activateWindow()
    qtbot.waitActive(widget)
    widget.list_view.setFocus()
    yield widget, int(written.id)
    store.close()


def test_the_pattern_written_since_is_shown_and_key_1_skips_into_it(
    qtbot, stale: tuple[ReviewPane, int]
) -> None:
    pane, written = stale
    label = pane.match_label.text()
    assert f"Pattern #{written}, written since this run was staged" in label
    assert "1</b> skips into it" in label
    assert TEXT in pane.diff.toPlainText() and "Written since" in pane.diff.toPlainText()
    qtbot.keyClick(pane.list_view, Qt.Key.Key_1)
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    (decided,) = pane.candidates()
    assert decided.action == "SKIP" and decided.target_id == written
    stored = Candidate.get()  # what the database holds, not the list's prediction
    assert stored.action == "SKIP" and stored.target_id == written

"""The Review pane's source episodes, read on a worker thread, under fast keys.

The panel must only ever show the selected candidate's sources: with the arrow keys held
down across the list, many reads are out at once and only the newest may land; the
candidate shown again (a reload after a decision) keeps its sources without a
"Reading…" flicker; a read that fails says so and leaves the pane settled.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt

from curator.gui.review.review_pane import ReviewPane
from tests.gui import test_review_pane as base

staged = base.staged  # the pane's own fixtures: a staged run on both engines, shown
pane = base.pane
key = base.key

KEYS = {
    "down": Qt.Key.Key_Down,
    "up": Qt.Key.Key_Up,
    "home": Qt.Key.Key_Home,
    "end": Qt.Key.Key_End,
}


def shows_the_current_candidate_s_sources(pane: ReviewPane) -> bool:
    """Candidate ``k`` of the staged run was distilled from episode ``k - 1`` alone."""
    current = pane.current_candidate()
    text = pane.sources.toPlainText()
    others = [f"episode {i} about" for i in range(4) if i != current.ordinal - 1]
    return f"episode {current.ordinal - 1} about" in text and not any(o in text for o in others)


@settings(
    deadline=None,
    max_examples=12,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(presses=st.lists(st.sampled_from(sorted(KEYS)), min_size=1, max_size=12))
@example(presses=["down", "down", "down", "up", "up", "up"])
def test_keys_held_down_show_only_the_last_candidate_s_sources(
    qtbot, pane: ReviewPane, presses: list[str]
) -> None:
    for name in presses:  # no wait between presses: the reads overlap
        key(qtbot, pane, KEYS[name])
    qtbot.waitUntil(lambda: pane.settled, timeout=10_000)
    assert shows_the_current_candidate_s_sources(pane)
    assert not pane.sources_loading


def test_the_candidate_shown_again_keeps_its_sources_without_reading(
    qtbot, pane: ReviewPane
) -> None:
    assert shows_the_current_candidate_s_sources(pane)
    seen: list[str] = []
    pane.sources.textChanged.connect(lambda: seen.append(pane.sources.toPlainText()))
    pane.refresh()  # the same candidate stays current after the reload
    qtbot.waitUntil(lambda: pane.settled, timeout=10_000)
    assert not any("Reading" in text for text in seen)
    assert shows_the_current_candidate_s_sources(pane)


def test_a_failed_read_says_so_and_settles(qtbot, pane: ReviewPane, monkeypatch) -> None:
    """Fault injection: the read raises (a database that fails mid-read)."""
    from curator.pipeline import review as review_api

    def failing(store, ids):
        raise OSError("disk I/O error")

    monkeypatch.setattr(review_api, "source_episodes", failing)
    key(qtbot, pane, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: pane.settled, timeout=10_000)
    assert "could not be read" in pane.sources.toPlainText()
    monkeypatch.undo()
    key(qtbot, pane, Qt.Key.Key_Up)
    qtbot.waitUntil(lambda: pane.settled, timeout=10_000)
    assert shows_the_current_candidate_s_sources(pane)

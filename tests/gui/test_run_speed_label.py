"""The Runs pane's speed label: generation speed, or nothing, never a stale figure.

Before, it showed "19.3 tokens/s" during classification (which generates no token) and
kept the last figure while the next call was still reading its prompt.
"""

from __future__ import annotations

from curator.gui.runs.runs_pane import RunsPane
from curator.pipeline.progress import Progress


def test_speed_label_follows_the_progress(qtbot, show_pane, services) -> None:
    pane = RunsPane(services)
    show_pane(pane)
    pane._on_progress(Progress("classify", 1, 4, message="episode 1", prompt_tokens_per_s=19.3))
    assert pane.speed_label.text() == "19 prompt tokens/s"
    pane._on_progress(Progress("extract", 0, 2, 6.54, "batch 1/2, 9 tokens"))
    assert pane.speed_label.text() == "6.5 tokens/s"
    qtbot.waitUntil(lambda: pane.speed_label.width() >= pane.speed_label.sizeHint().width())
    pane._on_progress(Progress("refine", 0, 2, 0.0, "batch 1/2"))  # reading its prompt
    assert pane.speed_label.text() == ""

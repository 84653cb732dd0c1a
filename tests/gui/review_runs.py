"""A staged run of three knowledge lines for the Review pane's background tests."""

from __future__ import annotations

from pathlib import Path

from curator.gui.review.review_dialogs import CommitDialog
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.pipeline.import_knowledge import import_knowledge

TEXTS = (
    "Replies that include a worked example get more follow-up questions, so lead with one.",
    "Greet returning users by name when a conversation starts again after a long pause.",
    "Summaries longer than three short paragraphs are skimmed rather than read in full.",
)


def stage_texts(services: AppServices, folder: Path, texts: tuple[str, ...] = TEXTS) -> int:
    """Import ``texts`` as a knowledge file: a staged run with one candidate per line."""
    knowledge = folder / "knowledge.txt"
    knowledge.write_text("\n".join(texts) + "\n")
    report = import_knowledge(services.store, knowledge)
    assert report.run_id is not None
    return int(report.run_id)


def shown_pane(qtbot, services: AppServices, *, settled: bool) -> ReviewPane:
    """A Review pane shown at 1200x800; ``settled``: its candidates read and listed."""
    widget = ReviewPane(services)
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    widget.show()
    qtbot.waitExposed(widget)
    if settled:
        widget.refresh()
        qtbot.waitUntil(lambda: widget.settled, timeout=30_000)
    return widget


def read_preview(qtbot, dialog: CommitDialog | None) -> CommitDialog:
    """A commit dialog once its preview, read in the background, is shown."""
    assert dialog is not None
    qtbot.waitUntil(lambda: not dialog.loading, timeout=30_000)
    return dialog

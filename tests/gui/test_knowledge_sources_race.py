"""The Provenance panel under quick selection changes."""

from __future__ import annotations

from curator.gui.knowledge.knowledge_sources import NOTHING_SELECTED, ProvenancePanel
from curator.gui.runtime.services import AppServices
from curator.store.models import Episode, Pattern, PatternEpisode


def test_clearing_the_selection_while_sources_are_read_leaves_the_panel_empty(
    qtbot, services: AppServices
) -> None:
    """A pattern's sources read before the selection was cleared (a filter that hides
    every pattern, a retire) must not fill the panel under no pattern at all."""
    pattern = Pattern.select().first()
    with services.store.write():
        for episode in Episode.select().limit(3):
            PatternEpisode.create(pattern=pattern, episode=episode)
    pattern_id = int(pattern.id)
    panel = ProvenancePanel(services.ops)
    qtbot.addWidget(panel)
    panel.show_pattern(pattern_id, "a pattern", ())
    panel.show_pattern(None, "", ())
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)
    assert panel.model.rowCount() == 0
    assert panel.title.text() == NOTHING_SELECTED
    assert not panel.loading
    panel.show_pattern(pattern_id, "a pattern", ())  # selected again: it reads and shows
    qtbot.waitUntil(lambda: not panel.loading, timeout=30_000)
    assert panel.model.rowCount() > 0

"""From a pattern's provenance to its source episode in the Episodes pane, and back."""

from __future__ import annotations

from PySide6.QtCore import Qt

from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.window.main_window import MainWindow
from curator.store.models import Episode, Pattern, PatternEpisode, Run


def _link_sources(window: MainWindow) -> tuple[int, list[int]]:
    """The demo's patterns carry no provenance: link two demo episodes to its 5th pattern,
    as a distill run does."""
    store = window.services.store
    pattern = Pattern.select().where(Pattern.status == "active").order_by(Pattern.id)[4]
    episodes = list(Episode.select().order_by(Episode.id.desc()).limit(2))
    with store.write():
        run = Run.create(kind="distill", status="committed")
        for episode in episodes:
            PatternEpisode.create(pattern=pattern, episode=episode, run=run)
    return pattern.id, [e.id for e in episodes]


def _knowledge(qtbot, window: MainWindow) -> KnowledgePane:
    pane = window.pane("knowledgePane")
    assert isinstance(pane, KnowledgePane)
    window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and bool(pane.pattern_rows()), timeout=30_000)
    return pane


def _double_click_source(qtbot, pane: KnowledgePane, row: int) -> int:
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)  # read in the background
    view = pane.sources_view
    center = view.visualRect(pane.sources.index(row, 0)).center()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=center)
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=center)
    source = pane.sources.row_at(row)
    assert source is not None
    return source.episode_id


def test_double_click_opens_the_episode_and_back_returns_to_the_pattern(
    qtbot, main_window: MainWindow
) -> None:
    pattern_id, linked = _link_sources(main_window)
    pane = _knowledge(qtbot, main_window)
    pattern = next(r for r in pane.pattern_rows() if r.id == pattern_id)
    pane.select_patterns([pattern.id])
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)
    assert pane.sources.rowCount() == pattern.sources
    episodes = main_window.episodes_pane
    nav = main_window.provenance
    assert nav.back_button.isHidden()

    episode_id = _double_click_source(qtbot, pane, pane.sources.rowCount() - 1)
    assert main_window.tabs.currentWidget() is episodes
    assert episode_id in linked
    qtbot.waitUntil(lambda: episodes.selected_ids() == [episode_id])
    assert episodes.model.rowCount() == 1  # the episode itself, not the whole list
    qtbot.waitUntil(lambda: not episodes.detail_loading, timeout=10_000)
    assert episodes.detail.toPlainText().strip()  # its text is shown
    assert nav.back_button.isVisible()
    assert nav.back_button.text() == f"← Back to pattern #{pattern.id}"

    # Alt+Left goes back to Knowledge with the same pattern selected.
    pane.select_patterns([])  # what a reload elsewhere might have done to it
    qtbot.keyClick(episodes.table, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert main_window.tabs.currentWidget() is pane
    qtbot.waitUntil(lambda: pane.ops.pending == 0)
    assert pane.current_id() == pattern.id and pane.selected_ids() == [pattern.id]
    assert nav.back_button.isHidden()

    # ... and so does the button.
    _double_click_source(qtbot, pane, 0)
    assert main_window.tabs.currentWidget() is episodes
    qtbot.mouseClick(nav.back_button, Qt.MouseButton.LeftButton)
    assert main_window.tabs.currentWidget() is pane
    assert pane.selected_ids() == [pattern.id]
    assert not nav.back()  # nothing left to go back to


def test_the_jump_shows_the_episode_whatever_the_episodes_filters(
    qtbot, main_window: MainWindow
) -> None:
    """A search and a label filter left in Episodes must not hide the episode jumped to."""
    pattern_id, linked = _link_sources(main_window)
    episodes = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(episodes)
    episodes.search_edit.setText("no episode has this text")
    episodes.label_combo.setCurrentIndex(episodes.label_combo.findData("human"))
    episodes.apply_filter()
    qtbot.waitUntil(lambda: episodes.model.rowCount() == 0)

    pane = _knowledge(qtbot, main_window)
    pane.select_patterns([pattern_id])
    episode_id = _double_click_source(qtbot, pane, 0)
    assert episode_id in linked
    qtbot.waitUntil(lambda: episodes.selected_ids() == [episode_id])  # before: an empty list
    assert episodes.model.rowCount() == 1
    assert episodes.search_edit.text() == "" and episodes.current_filter().label == "all"

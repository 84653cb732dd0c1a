"""From a pattern's provenance to the episode it came from, and back.

Double-clicking a source episode in the Knowledge pane opens the Episodes pane on that
one episode, selected. The way back is a "Back to pattern #N" button at the right of the
tab bar (shown while the Episodes pane is on screen) and Alt+Left, the platform's "Back"
key: both return to Knowledge with the same pattern selected. The window builds one
navigator; neither pane knows about the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QPushButton, QTabWidget, QWidget

if TYPE_CHECKING:
    from curator.gui.episodes.episodes_pane import EpisodesPane
    from curator.gui.knowledge.knowledge_pane import KnowledgePane


class ProvenanceNavigator(QObject):
    """Jumps from Knowledge to one episode and remembers the pattern to return to."""

    def __init__(
        self,
        window: QWidget,
        tabs: QTabWidget,
        knowledge: KnowledgePane,
        episodes: EpisodesPane,
        show_episodes: Callable[[list[int], str], None],
    ) -> None:
        super().__init__(window)
        self.tabs = tabs
        self.knowledge = knowledge
        self.episodes = episodes
        self.show_episodes = show_episodes
        """The window's jump to the Episodes pane showing only some episodes."""
        self.origin: int | None = None
        """The pattern the user came from (None: no way back to offer)."""
        self._select_when_loaded: int | None = None

        self.back_button = QPushButton("← Back")
        self.back_button.setObjectName("backToPatternButton")
        self.back_button.setFlat(True)
        self.back_button.clicked.connect(self.back)
        self.back_button.hide()
        tabs.setCornerWidget(self.back_button, Qt.Corner.TopRightCorner)
        self.back_action = QAction("Back to the pattern", window)
        self.back_action.setObjectName("backToPatternAction")
        self.back_action.setShortcut(QKeySequence("Alt+Left"))
        self.back_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.back_action.setEnabled(False)
        self.back_action.triggered.connect(self.back)
        window.addAction(self.back_action)

        knowledge.show_episode.connect(self.open_episode)
        tabs.currentChanged.connect(self._tab_changed)
        # after the pane has re-selected what it kept across the reset (it connects first)
        episodes.model.loaded.connect(self._episodes_loaded)

    def open_episode(self, episode_id: int) -> None:
        """Show ``episode_id`` in the Episodes pane, selected, and offer the way back."""
        self.origin = self.knowledge.current_id()
        title = f"Source of pattern #{self.origin}" if self.origin is not None else "Episode"
        self._select_when_loaded = episode_id
        self.show_episodes([episode_id], title)
        self._episodes_loaded()
        if self.origin is not None:
            self.back_button.setText(f"← Back to pattern #{self.origin}")
            self.back_button.setToolTip("Return to the Knowledge pane (Alt+Left)")
        self._tab_changed()

    def _episodes_loaded(self) -> None:
        """Select the episode once its row exists (now, or when a background load lands)."""
        wanted = self._select_when_loaded
        if wanted is None or self.episodes.model.row_of(wanted) is None:
            return
        self._select_when_loaded = None
        self.episodes.select_ids([wanted])
        row = self.episodes.model.row_of(wanted)
        if row is not None:
            index = self.episodes.model.index(row, 0)
            flag = self.episodes.table.selectionModel().SelectionFlag.NoUpdate
            self.episodes.table.selectionModel().setCurrentIndex(index, flag)
            self.episodes.table.scrollTo(index)

    def back(self) -> bool:
        """Return to the Knowledge pane with the remembered pattern selected."""
        if self.origin is None:
            return False
        pattern = self.origin
        self.origin = None
        self.knowledge.select_patterns([pattern])
        self.tabs.setCurrentWidget(self.knowledge)
        self.knowledge.select_patterns([pattern])
        self._tab_changed()
        return True

    def _tab_changed(self, *_: object) -> None:
        offer = self.origin is not None and self.tabs.currentWidget() is self.episodes
        self.back_button.setVisible(offer)
        self.back_action.setEnabled(offer)

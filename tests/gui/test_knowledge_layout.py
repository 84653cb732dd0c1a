"""The Knowledge pane at a small screen's size, and its splitters remembered."""

from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QSplitter

from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow


def _shown_knowledge(qtbot, window: MainWindow) -> KnowledgePane:
    pane = window.pane("knowledgePane")
    assert isinstance(pane, KnowledgePane)
    window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and bool(pane.pattern_rows()), timeout=30_000)
    return pane


def test_pattern_text_keeps_its_width_at_1024_by_700(qtbot, services: AppServices) -> None:
    # The pane alone, at the room a 1024x700 window leaves it (the window's minimum width
    # is set by other panes).
    pane = KnowledgePane(services)
    qtbot.addWidget(pane)
    pane.resize(1004, 600)
    pane.show()
    qtbot.waitExposed(pane)
    pane.refresh()
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and bool(pane.pattern_rows()), timeout=30_000)
    column = pane.patterns.column_index("Pattern")
    width = pane.table.columnWidth(column)
    chars = width / pane.table.fontMetrics().averageCharWidth()
    assert chars >= 30, (width, chars)  # before: about 12 characters
    index = pane.patterns.index(0, column)
    row = pane.patterns.row_at(0)
    assert row is not None and pane.patterns.data(index, 3) == row.text  # full text as tooltip


def test_knowledge_splitters_are_named_and_remembered(
    qtbot, services: AppServices, qsettings: QSettings
) -> None:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    pane = _shown_knowledge(qtbot, window)
    names = {s.objectName() for s in pane.findChildren(QSplitter)}
    assert {"knowledgeSplitter", "knowledgeTopSplitter", "knowledgeBottomSplitter"} <= names
    # a size the offscreen screen holds, so the restored geometry is the same one
    window.resize(780, 700)
    qtbot.waitUntil(lambda: pane.top_splitter.width() < 780)
    pane.top_splitter.setSizes([420, 338])
    chosen = pane.top_splitter.sizes()
    window.close()

    # a restart: new services (the first window's close shut its background operations)
    again = MainWindow(AppServices(store=services.store, db_path=services.db_path), qsettings)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    restored = _shown_knowledge(qtbot, again)
    sizes = restored.top_splitter.sizes()  # the same proportion (the pane may be resized)
    assert abs(sizes[0] / sum(sizes) - chosen[0] / sum(chosen)) < 0.01, (sizes, chosen)
    again.close()

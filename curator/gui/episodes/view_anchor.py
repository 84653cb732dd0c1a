"""The reader's place in the Episodes table, kept while rows come and go around it.

An agent recording over MCP, a followed log or another window adds episodes while the
person reads: every such change reloads the table's rows, and a reload that kept only the
scroll bar's value moved the rows under the reader (ten new episodes at the top pushed the
selected one ten rows down, out of view) and lost the keyboard's current row, so Down
went on from the first row instead of the one being read.

The anchor is the episode the reader's eye is on and how many rows below the top of the
view it stands: the current episode when it is selected and on screen, else the top row
of the view. After the reload the view scrolls so that episode stands on the same row
of the screen. At the very top of the list with no selected row on screen there is no
anchor: the view stays at the top and shows what arrived there, as a feed does.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QAbstractItemView, QTableView

from curator.gui.episodes.episode_model import EpisodeTableModel


@dataclass(frozen=True, slots=True)
class ViewAnchor:
    """An episode and the row of the view it is shown on (0: the top row)."""

    episode_id: int
    rows_from_top: int


def _model(table: QTableView) -> EpisodeTableModel:
    model = table.model()
    assert isinstance(model, EpisodeTableModel)
    return model


def view_anchor(table: QTableView) -> ViewAnchor | None:
    """Where the reader is (see the module doc); None: at the top, nothing to keep."""
    model = _model(table)
    top = table.rowAt(0)
    if top < 0:
        return None
    bottom = table.rowAt(table.viewport().height() - 1)
    if bottom < 0:
        bottom = model.rowCount() - 1
    current = table.currentIndex()
    on_screen = current.isValid() and top <= current.row() <= bottom
    if on_screen and table.selectionModel().isRowSelected(current.row(), QModelIndex()):
        row = current.row()
    elif table.verticalScrollBar().value() == 0:
        return None
    else:
        row = top
    return ViewAnchor(model.episode_id(row), row - top)


def scroll_to_anchor(table: QTableView, anchor: ViewAnchor | None, fallback: int) -> None:
    """Scroll so the anchor's episode stands on its row of the view again; the scroll
    bar's ``fallback`` value when there is no anchor or its episode is no longer shown."""
    bar = table.verticalScrollBar()
    row = None if anchor is None else _model(table).row_of(anchor.episode_id)
    if anchor is None or row is None:
        bar.setValue(fallback)
        return
    top = max(0, row - anchor.rows_from_top)
    if table.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerPixel:
        top *= table.verticalHeader().defaultSectionSize()  # rows of one fixed height
    bar.setValue(top)

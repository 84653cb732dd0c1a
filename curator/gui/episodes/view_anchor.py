"""The reader's place in the Episodes table, kept while rows come and go around it.

An agent recording over MCP, a followed log or another window adds episodes while the
person reads: every such change reloads the table's rows, and a reload that kept only the
scroll bar's value moved the rows under the reader (ten new episodes at the top pushed the
selected one ten rows down, out of view) and lost the keyboard's current row, so Down
went on from the first row instead of the one being read.

The anchor is the episode the reader's eye is on and where on the screen it stands: the
current episode when it is selected and on screen, else the top row of the view, with a
few rows below it in case it is gone (deleted meanwhile). After the reload the view
scrolls so that episode stands at the same height again, to the pixel. At the very top
of the list with no selected row on screen there is no anchor: the view stays at the top
and shows what arrived there, as a feed does.

It is taken when the new rows replace the old ones, not when the reload is asked for: on
a large database the reload runs in the background, and the reader scrolls or picks
another episode meanwhile (restoring the place from before the wait threw them back).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QModelIndex
from PySide6.QtWidgets import QAbstractItemView, QTableView

from curator.gui.episodes.episode_model import EpisodeTableModel

SPARE_ROWS = 5
"""Rows below the anchor also remembered: the first still shown stands in for it."""


@dataclass(frozen=True, slots=True)
class ViewAnchor:
    """Episodes and the height (pixels from the top of the view) each was shown at, the
    anchor first; and the scroll bar's value, for when none of them is shown any more."""

    places: tuple[tuple[int, int], ...]
    scroll: int


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
    rows = range(row, min(row + 1 + SPARE_ROWS, model.rowCount()))
    places = tuple((model.episode_id(r), table.rowViewportPosition(r)) for r in rows)
    return ViewAnchor(places, table.verticalScrollBar().value())


def scroll_to_anchor(table: QTableView, anchor: ViewAnchor | None) -> None:
    """Scroll so the anchor's episode (or the first of its spares still shown) stands at
    its height again; no anchor: the top."""
    bar = table.verticalScrollBar()
    if anchor is None:
        bar.setValue(0)
        return
    model = _model(table)
    found = next(
        (
            (row, y)
            for episode_id, y in anchor.places
            if (row := model.row_of(episode_id)) is not None
        ),
        None,
    )
    if found is None:
        bar.setValue(anchor.scroll)
        return
    row, y = found
    height = table.verticalHeader().defaultSectionSize()  # rows of one fixed height
    if table.verticalScrollMode() == QAbstractItemView.ScrollMode.ScrollPerPixel:
        bar.setValue(max(0, row * height - y))
    else:
        bar.setValue(max(0, row - round(y / height)))

"""The Episodes pane's table view: relabel keys, and columns fitted to their content.

The fixed columns are sized to what they show: the Time column always to a whole local
time ("2026-10-31 14:05"; cut to "2026-10-31 1…" it is no time at all), the others at
their preferred width, scaled down on a narrow window (a 1024 px laptop) so the stretching
Preview keeps :data:`MIN_PREVIEW_WIDTH`, down to :data:`MIN_WIDTH`. Once the
user drags a column the table stops fitting: the user's widths win.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, Qt, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QWidget

from curator.gui.episodes.episode_model import COLUMNS
from curator.gui.widgets.qt_models import FIT_ROWS, headers_ignore_selection
from curator.gui.widgets.row_table import RowTableView

RELABEL_KEYS: dict[int, str] = {
    Qt.Key.Key_C: "constitutional",
    Qt.Key.Key_N: "noise",
    Qt.Key.Key_U: "uncategorized",
}

COLUMN_WIDTHS = {"time": 125, "source": 85, "label": 165, "model_label": 140, "human_label": 105}
"""Preferred widths; narrower windows scale all but Time down so Preview stays on screen."""

MIN_WIDTH = 60
"""No fixed column but Time is narrowed below this (its header then shows elided)."""

MIN_PREVIEW_WIDTH = 160
"""What the stretching Preview column keeps at least while columns are fitted."""

TIME_SAMPLE = "2026-12-31 23:59"
"""The widest local time the Time column shows (minutes precision, digits all alike)."""


MAX_TIME_WIDTH = 260
"""No fitted column takes more than this, whatever text a damaged row carries."""


class EpisodeTableView(RowTableView):
    """The table; turns the relabel keys into signals before type-ahead search sees them."""

    relabel_requested = Signal(str)
    undo_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._fitting = False
        self.user_sized = False
        """The user dragged a column: stop fitting the columns to the width."""

    def show_model(self, model: QAbstractItemModel) -> None:
        """Show ``model`` (the episodes, maybe 100,000s of rows) set up for its size: rows
        of one fixed height, resizable columns at their widths, sorted newest first."""
        self.setModel(model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().setVisible(False)
        # fixed row height: the view never measures rows (that would fetch every page)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        # Columns scaled down for Preview's sake (an 800-pixel window) end their titles
        # in "…" (the whole title is the header's tooltip) instead of clipping both ends.
        header.setTextElideMode(Qt.TextElideMode.ElideRight)
        header.setResizeContentsPrecision(FIT_ROWS)  # the rows sizeHintForColumn reads
        for column, (key, _title) in enumerate(COLUMNS):
            if key in COLUMN_WIDTHS:
                header.resizeSection(column, COLUMN_WIDTHS[key])
        headers_ignore_selection(self)
        header.sectionResized.connect(self.section_resized)
        header.setSortIndicator(0, Qt.SortOrder.DescendingOrder)
        self.setSortingEnabled(True)

    def time_width(self) -> int:
        """What the Time column needs to show a whole time (the shown rows' included)."""
        margin = self.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self)
        sample = self.fontMetrics().horizontalAdvance(TIME_SAMPLE) + 2 * (margin + 1) + 4
        column = next(i for i, (key, _t) in enumerate(COLUMNS) if key == "time")
        shown = self.sizeHintForColumn(column) if self.model() is not None else 0
        header = self.horizontalHeader().sectionSizeHint(column)
        return min(max(sample, shown, header), MAX_TIME_WIDTH)

    def fit_columns(self) -> None:
        """Time to its content; the other fixed columns scaled so Preview keeps room."""
        header = self.horizontalHeader()
        time = self.time_width()
        # the preferred width, or the shown rows' content where that is wider ("scheduled")
        others = {
            key: max(COLUMN_WIDTHS[key], min(self.sizeHintForColumn(column), MAX_TIME_WIDTH))
            for column, (key, _title) in enumerate(COLUMNS)
            if key in COLUMN_WIDTHS and key != "time"
        }
        available = self.viewport().width() - MIN_PREVIEW_WIDTH - time
        scale = min(1.0, max(available, 0) / sum(others.values()))
        self._fitting = True
        try:
            for column, (key, _title) in enumerate(COLUMNS):
                if key == "time":
                    header.resizeSection(column, time)
                elif key in others:
                    header.resizeSection(column, max(MIN_WIDTH, int(others[key] * scale)))
        finally:
            self._fitting = False

    def section_resized(self, column: int, *_: object) -> None:
        """A column the user dragged; the stretching Preview follows every window
        resize by itself (counted as the user's, it stopped all fitting for good)."""
        last = self.horizontalHeader().count() - 1
        if not self._fitting and self.isVisible() and column != last:
            self.user_sized = True

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if not self.user_sized:
            self.fit_columns()

    def keyboardSearch(self, search: str) -> None:
        """No type-ahead: Qt's looks for a row starting with the typed letters by reading
        every row (``match`` over the model), and at 110,000 episodes each key then held
        the window for 5 s, fetching the whole table page by page. The search field
        (Ctrl+F) searches the episodes' text instead, in the background."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if modifiers in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
            label = RELABEL_KEYS.get(event.key())
            if label is not None:
                self.relabel_requested.emit(label)
                event.accept()
                return
            if event.key() == Qt.Key.Key_Backspace:
                self.undo_requested.emit()
                event.accept()
                return
        super().keyPressEvent(event)

"""A plot whose legend fits it: names shortened only as far as the chart's room asks.

The decay chart names up to eight patterns in its legend, plus "N more (grey)" and the
cut-off. A long pattern text made one entry wider than a narrow chart, and eleven entries in
one column covered a 1024×700 window's whole chart height. :class:`FittedLegendPlot` lays the
legend out in up to three columns that stay in the top half of the plot, never in more
columns than its width holds, and shortens the names (:data:`NAME_LIMITS`) only where they
must be, chosen from the font's measure of them so that a Ctrl+A fills the legend once.
What the entries are is the subclass's (:meth:`FittedLegendPlot.legend_rows`).
"""

from __future__ import annotations

import html
import math

import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtGui import QFont, QFontMetricsF, QResizeEvent

NAME_LIMITS = (30, 20, 12, 0)
"""How long a pattern's legend name may be, longest first: a narrow chart shortens them
until the legend's columns fit its width (0: the id alone)."""
LEGEND_POINTS = 8.0
"""The legend labels' size, whatever the application's font."""
_LABEL_MARGIN = 4.0
"""The margin around a legend label's text (its text document's, Qt's default)."""
_ENTRY_EXTRA = 42.0
"""A legend entry's width beyond its label's text: the line sample, spacing, margins."""
_SIDE_ROOM = 20.0
"""The view's width the legend leaves free (its offset from the edge and a margin)."""


def entry_name(pattern_id: int, text: str, limit: int = NAME_LIMITS[0]) -> str:
    """``#id text``, the text on one line and cut to ``limit`` characters (0: the id)."""
    flat = " ".join(text.split())
    if limit <= 0:
        return f"#{pattern_id}"
    short = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return f"#{pattern_id} {short}".rstrip()


class FittedLegendPlot(pg.PlotWidget):
    """A ``PlotWidget`` whose :attr:`legend` (set by the subclass's constructor) fits it."""

    legend: pg.LegendItem
    _name_limit: int
    """The names' length the legend was last filled with (one of :data:`NAME_LIMITS`)."""
    _refit_pending: bool

    def legend_rows(self, limit: int) -> list[tuple[pg.PlotDataItem, str]]:
        """Each legend entry's sample item and text, its names cut to ``limit``."""
        raise NotImplementedError

    def _rebuild_legend(self) -> None:
        """The legend's entries anew, their names as long as its columns leave room for
        (:meth:`_fit_legend`): shortened (:data:`NAME_LIMITS`) only where they must be,
        to the ids alone only where one column of the shortest names is still too wide.
        The names' length is chosen from the font's measure of them, so the legend is
        filled once (each fill is a few milliseconds of a Ctrl+A)."""
        view = self.getPlotItem().getViewBox()
        first = NAME_LIMITS.index(self._estimated_limit(view.width() - _SIDE_ROOM, view.height()))
        for limit in NAME_LIMITS[first:-1]:
            self._fill_legend(limit)
            if self._fit_legend():
                return
        if self._overflows():
            self._fill_legend(NAME_LIMITS[-1])
            self._fit_legend()

    def _overflows(self) -> bool:
        return bool(self.legend.width() > self.getPlotItem().getViewBox().width() - _SIDE_ROOM)

    def _estimated_limit(self, room: float, height: float) -> int:
        """The longest name limit whose legend, measured in the labels' font, fits
        ``room`` in the columns the plot's ``height`` asks for."""
        measure = QFontMetricsF(self._legend_font())
        for limit in NAME_LIMITS[:-1]:
            entries = [text for _item, text in self.legend_rows(limit)]
            columns = self._columns_for(len(entries), height)
            widest = max((measure.horizontalAdvance(e) for e in entries), default=0.0)
            if columns * (widest + _ENTRY_EXTRA) <= room:
                return limit
        return NAME_LIMITS[-2]  # the ids alone only once the legend is laid out

    def _columns_for(self, rows: int, height: float) -> int:
        """Columns (up to three) that keep ``rows`` entries in the top half of the plot."""
        line = self._legend_row_height()
        columns = 1
        while columns < 3 and -(-rows // columns) * line > height / 2:
            columns += 1
        return columns

    def _legend_row_height(self) -> float:
        """A legend row's height: its label's 8 pt line and the label's text margins
        (the application's font measured it before: rows of 30 px estimated at 16 pt, 15
        at 6 pt, where every row is 21)."""
        return math.ceil(QFontMetricsF(self._legend_font()).height() + 2 * _LABEL_MARGIN)

    def _legend_font(self) -> QFont:
        """The legend labels' font: the chart's, at the labels' size."""
        font = QFont(self.font())
        font.setPointSizeF(LEGEND_POINTS)
        return font

    def _fill_legend(self, limit: int) -> None:
        self.legend.clear()
        self._name_limit = limit
        for item, entry in self.legend_rows(limit):
            # a label is rich text: a pattern's "<b>" or "&amp;" is shown as written
            self.legend.addItem(item, html.escape(entry, quote=False))
        self.legend.setVisible(bool(self.legend.items))

    def _fit_legend(self) -> bool:
        """Lay the legend out in as many columns (up to three) as it takes to stay in the
        top half of the plot: one column of eleven entries covered a 1024×700 window's
        whole chart height, the markers' labels and the curves' right end included.

        Never in more columns than the plot's width holds: in a narrow chart two columns
        ran past its left edge and cut the first column's names off. Whether it fitted in
        the columns its height asked for (if not, the caller may shorten its names)."""
        view = self.getPlotItem().getViewBox()
        columns = self._columns_for(len(self.legend.items), view.height())
        wanted, room = columns, view.width() - _SIDE_ROOM
        while True:
            if columns != self.legend.columnCount:
                self.legend.setColumnCount(columns)
            if columns == 1 or self.legend.width() <= room:
                return columns == wanted and self.legend.width() <= room
            columns -= 1

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        # no legend yet while PlotWidget builds itself, no plot once torn down
        if hasattr(self, "_name_limit") and not self._refit_pending:
            # once the plot's layout has its new size (in this event it has the old one)
            self._refit_pending = True
            QTimer.singleShot(0, self, self._refit_legend)  # dropped if the chart goes

    def _start_fitting(self) -> None:
        """Called by the subclass's constructor once :attr:`legend` exists."""
        self._name_limit = NAME_LIMITS[0]
        self._refit_pending = False  # a resize's legend layout is waiting for its event

    def _refit_legend(self) -> None:
        """The legend for the chart's new size: laid out again, and filled again only
        when its names' length changes (a drag of a hundred steps filled it a dozen
        times), shorter as well as longer: a chart made narrower kept its long names in
        one column, down over the "today" label, where a fresh layout shortened them to
        keep two columns in the top half."""
        self._refit_pending = False
        if self.getPlotItem() is None:  # torn down meanwhile
            return
        fitted = self._fit_legend()
        view = self.getPlotItem().getViewBox()
        limit = self._estimated_limit(view.width() - _SIDE_ROOM, view.height())
        overflows = self._overflows() and self._name_limit != NAME_LIMITS[-1]
        shorter = not fitted and limit < self._name_limit
        if overflows or shorter or limit > self._name_limit:
            self._rebuild_legend()  # names as long as the new size leaves room for

"""A date axis whose every tick label is a date: ``2026``, ``2026-10`` or ``2026-10-31``.

pyqtgraph's :class:`~pyqtgraph.DateAxisItem` picks its format from the visible span: on a
span of a second (two runs started in the same minute, a lone point auto-ranged around
itself) it labels the ticks ``13.400 … 14.299``, seconds and milliseconds, which reads as
numbers, not as when. The charts of this application plot days, weeks and years, so this
axis only has date zoom levels, and the view it is linked to never shows less than
:attr:`DayAxis.MIN_SPAN` (so there is always a day tick to label). The dates are in local
time, as everywhere else in the window.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pyqtgraph as pg
from pyqtgraph.graphicsItems.DateAxisItem import (
    DAY_SPACING,
    MONTH_SPACING,
    YEAR_SPACING,
    TickSpec,
    ZoomLevel,
    makeMStepper,
    makeSStepper,
    makeYStepper,
)
from PySide6.QtGui import QFont, QFontMetrics

_YEARS = ZoomLevel(
    [
        TickSpec(YEAR_SPACING, makeYStepper(1), "%Y", autoSkip=[1, 2, 5, 10, 25]),
        TickSpec(MONTH_SPACING, makeMStepper(1), "%Y-%m"),
    ],
    "2026-12",
)
_MONTHS = ZoomLevel(
    [
        TickSpec(MONTH_SPACING, makeMStepper(1), "%Y-%m"),
        TickSpec(DAY_SPACING, makeSStepper(DAY_SPACING), "%Y-%m-%d", autoSkip=[1, 2, 5, 10]),
    ],
    "2026-12-31",
)
_DAYS = ZoomLevel(
    [TickSpec(DAY_SPACING, makeSStepper(DAY_SPACING), "%Y-%m-%d", autoSkip=[1, 2, 5])],
    "2026-12-31",
)


class DayAxis(pg.DateAxisItem):
    """A bottom axis of seconds since the epoch, labelled with dates only."""

    MIN_SPAN = 3 * DAY_SPACING
    """The shortest span a linked view shows (seconds): a few day ticks always fit."""

    def __init__(self, orientation: str = "bottom", **kwargs: object) -> None:
        super().__init__(orientation=orientation, **kwargs)
        # (largest tick spacing in seconds a level may use, level): finest last
        self.zoomLevels = OrderedDict(
            [(np.inf, _YEARS), (60 * DAY_SPACING, _MONTHS), (5 * DAY_SPACING, _DAYS)]
        )
        # pyqtgraph measures the labels with the painter's metrics when it draws; until
        # then (ticks asked for before the first paint) the widget font's stand in
        self.fontMetrics = QFontMetrics(QFont())

    def linkToView(self, view: pg.ViewBox) -> None:
        super().linkToView(view)
        view.setLimits(minXRange=self.MIN_SPAN)

    @classmethod
    def widen(cls, low: float, high: float) -> tuple[float, float]:
        """``low``..``high`` widened about its middle to at least :attr:`MIN_SPAN`."""
        if high - low >= cls.MIN_SPAN:
            return low, high
        middle = (low + high) / 2.0
        return middle - cls.MIN_SPAN / 2.0, middle + cls.MIN_SPAN / 2.0

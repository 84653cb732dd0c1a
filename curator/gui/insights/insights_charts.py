"""The charts of the Insights pane (pyqtgraph); they draw numbers computed elsewhere.

Every plot item is created once and updated with ``setData``/``setOpts``, as in the
decay chart. The only interaction that feeds numbers back is the ratio histogram's two
draggable threshold lines: they emit the thresholds, the pane asks the core for the
what-if and shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette, QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget

from curator.core.agreement import CalibrationBin
from curator.core.forecast import Forecast
from curator.core.whatif import GATE_DECISIONS
from curator.gui.widgets.date_axis import DayAxis
from curator.pipeline.insights import RunPoint

DECISION_COLORS: dict[str, tuple[int, int, int]] = {
    "SKIP": (140, 140, 150),
    "UPDATE": (70, 130, 200),
    "ADD": (60, 160, 90),
    "REJECT": (200, 80, 60),
}


SERIES_STYLES = (((70, 130, 200), "o"), ((220, 150, 30), "s"))
"""Colour and symbol of a chart's first and second line (blue circles, orange squares)."""


def series_item(index: int, name: str) -> pg.PlotDataItem:
    """A line with symbols in the ``index``-th series style, named for the legend."""
    colour, symbol = SERIES_STYLES[index]
    return pg.PlotDataItem(
        pen=pg.mkPen(colour, width=2), symbol=symbol, symbolBrush=colour, name=name
    )


def _style(plot: pg.PlotWidget, left: str, bottom: str) -> None:
    palette = plot.palette()
    fg = palette.color(QPalette.ColorRole.WindowText)
    plot.setBackground(palette.color(QPalette.ColorRole.Base))
    item = plot.getPlotItem()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(fg)
        axis.setTextPen(fg)
    item.setLabel("left", left)
    item.setLabel("bottom", bottom)
    item.showGrid(x=True, y=True, alpha=0.2)
    item.setMenuEnabled(False)
    item.hideButtons()
    plot.setMinimumHeight(180)


class EmptyNote:
    """What a chart with nothing to plot yet will show, said in its place: two bare axes
    (and a lone diagonal) told a new user nothing."""

    def __init__(self, plot: pg.PlotWidget, text: str, name: str) -> None:
        self._plot = plot
        self.label = QLabel(text, plot)
        self.label.setObjectName(name)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setMargin(16)
        self.set_empty(True)

    @property
    def empty(self) -> bool:
        return not self.label.isHidden()

    def set_empty(self, empty: bool) -> None:
        item = self._plot.getPlotItem()
        for name in ("left", "bottom"):
            item.showAxis(name, not empty)
        item.showGrid(x=not empty, y=not empty, alpha=0.2)
        if item.legend is not None:
            item.legend.setVisible(not empty)
        for curve in item.listDataItems():
            curve.setVisible(not empty)
        self.label.setVisible(empty)
        self.fit()

    def fit(self) -> None:
        """Cover the chart (call from its ``resizeEvent``)."""
        self.label.setGeometry(self._plot.rect())


RELIABILITY_EMPTY = (
    "Nothing to calibrate yet. Once episodes you labelled by hand have been classified, "
    "each point here is how often the model agreed with you at a confidence; on the "
    "dashed diagonal its confidence is honest."
)


class ReliabilityChart(pg.PlotWidget):
    """Observed agreement per confidence bin against the diagonal of perfect calibration."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent)
        _style(self, "observed agreement", "model confidence")
        item = self.getPlotItem()
        item.setXRange(0, 1, padding=0.02)
        item.setYRange(0, 1, padding=0.02)
        item.getViewBox().setMouseEnabled(x=False, y=False)
        item.addItem(
            pg.PlotDataItem(
                [0, 1], [0, 1], pen=pg.mkPen((150, 150, 150), style=Qt.PenStyle.DashLine)
            )
        )
        self.points = pg.PlotDataItem(
            pen=pg.mkPen((70, 130, 200), width=2), symbol="o", symbolBrush=(70, 130, 200)
        )
        item.addItem(self.points)
        self.note = EmptyNote(self, RELIABILITY_EMPTY, "reliabilityEmptyLabel")

    def set_bins(self, bins: Sequence[CalibrationBin]) -> None:
        shown = [b for b in bins if b.count and b.mean_confidence is not None]
        self.points.setData([b.mean_confidence for b in shown], [b.agreement for b in shown])
        self.note.set_empty(not shown)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        note = getattr(self, "note", None)  # None while PlotWidget builds itself
        if note is not None:
            note.fit()


SERIES_EMPTY = (
    "No run has been scored yet. Each classify or replay run scored against your own "
    "labels, and each distill run against your review decisions, adds a point here: "
    "Cohen's kappa, from -1 (always disagrees) through 0 (chance) to 1 (always agrees)."
)


class SeriesChart(pg.PlotWidget):
    """Cohen's kappa per run over time: label agreement and gate agreement."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, axisItems={"bottom": DayAxis()})
        _style(self, "Cohen's kappa", "run started")
        item = self.getPlotItem()
        item.addLegend(offset=(10, 10))
        item.setYRange(-1.0, 1.0, padding=0.05)
        item.getViewBox().setMouseEnabled(x=True, y=False)
        self.labels = series_item(0, "labels")
        self.gate = series_item(1, "gate")
        item.addItem(self.labels)
        item.addItem(self.gate)
        self.note = EmptyNote(self, SERIES_EMPTY, "seriesEmptyLabel")
        self.empty_label = self.note.label

    def set_series(self, points: Sequence[RunPoint]) -> None:
        times: list[float] = []
        for target, kinds in ((self.labels, ("classify", "replay")), (self.gate, ("distill",))):
            chosen = [p for p in points if p.kind in kinds and p.kappa is not None]
            xs = [p.started_at.timestamp() for p in chosen]
            times += xs
            target.setData(xs, [float(p.kappa or 0.0) for p in chosen])
        if times:
            # runs minutes apart still span days on the axis: its ticks stay dates
            self.getPlotItem().setXRange(*DayAxis.widen(min(times), max(times)), padding=0.05)
        self.note.set_empty(not times)

    @property
    def empty(self) -> bool:
        return self.note.empty

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        note = getattr(self, "note", None)  # None while PlotWidget builds itself
        if note is not None:
            note.fit()


class RatioHistogram(pg.PlotWidget):
    """Best-match ratios of reviewed candidates, stacked by the human's decision, with the
    SKIP and UPDATE thresholds as lines the user drags."""

    thresholds_changed = Signal(float, float)  # skip, update

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent)
        _style(self, "candidates", "best-match ratio")
        item = self.getPlotItem()
        item.setXRange(0, 1, padding=0.01)
        item.getViewBox().setMouseEnabled(x=False, y=False)
        item.addLegend(offset=(10, 10))
        self.bars: dict[str, pg.BarGraphItem] = {}
        for decision in GATE_DECISIONS:
            color = DECISION_COLORS[decision]
            bar = pg.BarGraphItem(
                x0=[0.0], x1=[0.0], y0=[0.0], y1=[0.0], brush=color, name=decision
            )
            self.bars[decision] = bar
            item.addItem(bar)  # named: the legend lists it
        self.skip_line = self._line("SKIP ≥ {value:.2f}", (120, 120, 120))
        self.update_line = self._line("UPDATE ≥ {value:.2f}", (40, 90, 170))
        self._setting = False
        for line in (self.skip_line, self.update_line):
            item.addItem(line)
            line.sigPositionChanged.connect(self._moved)

    @staticmethod
    def _line(label: str, color: tuple[int, int, int]) -> pg.InfiniteLine:
        return pg.InfiniteLine(
            pos=0.5,
            angle=90,
            movable=True,
            bounds=[0.0, 1.0],
            pen=pg.mkPen(color, width=2),
            hoverPen=pg.mkPen(color, width=4),
            label=label,
            labelOpts={"position": 0.9, "color": color, "movable": True},
        )

    def _moved(self, *_: object) -> None:
        if not self._setting:
            self.thresholds_changed.emit(self.skip, self.update)

    @property
    def skip(self) -> float:
        return round(float(self.skip_line.value()), 3)

    @property
    def update(self) -> float:
        return round(float(self.update_line.value()), 3)

    def set_thresholds(self, skip: float, update: float) -> None:
        # Signals stay connected (the line labels follow them); one what-if at the end.
        self._setting = True
        try:
            self.skip_line.setValue(skip)
            self.update_line.setValue(update)
        finally:
            self._setting = False
        self._moved()

    def set_histogram(self, edges: Sequence[float], counts: dict[str, list[int]]) -> None:
        lo = np.asarray(edges[:-1], dtype=float)
        hi = np.asarray(edges[1:], dtype=float)
        bottom = np.zeros(len(lo))
        for decision in GATE_DECISIONS:
            values = np.asarray(counts.get(decision, [0] * len(lo)), dtype=float)
            self.bars[decision].setOpts(x0=lo, x1=hi, y0=bottom.copy(), y1=bottom + values)
            bottom = bottom + values
        self.getPlotItem().setYRange(0, max(1.0, float(bottom.max(initial=0.0))) * 1.1)


class ForecastChart(pg.PlotWidget):
    """The highest and the lowest pattern of the prompt over the coming days, with and
    without UPDATE refreshing the clock, the floor, and the importance of a new pattern
    (a pattern whose curve is under that line would be outranked by it)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, axisItems={"bottom": DayAxis()})
        _style(self, "effective importance", "")
        item = self.getPlotItem()
        item.addLegend(offset=(10, 10))
        item.setYRange(0, 1, padding=0.02)
        item.getViewBox().setMouseEnabled(x=True, y=False)
        keep_pen = pg.mkPen((200, 80, 60), width=2)
        fresh_pen = pg.mkPen((60, 160, 90), width=2, style=Qt.PenStyle.DashLine)
        self.keep = pg.PlotDataItem(pen=keep_pen, name="UPDATE keeps the clock")
        self.refresh = pg.PlotDataItem(pen=fresh_pen, name="UPDATE refreshes the clock")
        self.keep_top = pg.PlotDataItem(pen=keep_pen)
        self.refresh_top = pg.PlotDataItem(pen=fresh_pen)
        self.floor = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen((150, 150, 150), style=Qt.PenStyle.DotLine),
            label="floor {value:.2f}",
            labelOpts={"position": 0.05, "color": (150, 150, 150)},
        )
        self.new = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen((70, 130, 200), style=Qt.PenStyle.DashDotLine),
            label="new pattern {value:.2f}",
            labelOpts={"position": 0.05, "color": (70, 130, 200)},
        )
        parts = (self.keep, self.refresh, self.keep_top, self.refresh_top, self.floor, self.new)
        for part in parts:
            item.addItem(part)

    def set_forecasts(self, keep: Forecast, refresh: Forecast) -> None:
        pairs = (
            (self.keep, keep.lowest, keep),
            (self.refresh, refresh.lowest, refresh),
            (self.keep_top, keep.highest, keep),
            (self.refresh_top, refresh.highest, refresh),
        )
        for target, series, f in pairs:
            if series is None:
                target.setData([], [])
                continue
            start = f.now.timestamp()
            target.setData([start + d * 86400.0 for d in f.days], list(series))
        self.floor.setValue(keep.floor)
        self.new.setValue(keep.new_importance)

    @staticmethod
    def date(value: datetime | None) -> str:
        return "never" if value is None else value.strftime("%Y-%m-%d")

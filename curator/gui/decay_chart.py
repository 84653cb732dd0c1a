"""The decay chart: effective importance of the selected patterns over time.

Every plot item is created once in the constructor and only updated with ``setData`` /
``setValue`` afterwards (the pyqtgraph way to keep redraws cheap). All selected curves
go into ONE ``PlotDataItem`` separated by NaN (``connect="finite"``): a selection of a
thousand patterns is still a single item, not a thousand scene items. The curve under
the mouse (or the one the table points at) is drawn again by a second, thicker item.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

from curator.core.scoring import decay_series

FloatArray = npt.NDArray[np.float64]

#: How close (in pixels) the mouse must be to a curve to highlight it.
_HOVER_PIXELS = 12.0


class DecayChart(pg.PlotWidget):
    """Effective importance against time with today, the horizon and the top-K cut-off."""

    curve_hovered = Signal(int)
    """The pattern id under the mouse, or -1 when the mouse leaves every curve."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, axisItems={"bottom": pg.DateAxisItem(orientation="bottom")})
        self.setMinimumHeight(200)
        palette = self.palette()
        fg = palette.color(QPalette.ColorRole.WindowText)
        bg = palette.color(QPalette.ColorRole.Base)
        self.setBackground(bg)
        for name in ("left", "bottom"):
            axis = self.getPlotItem().getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
        plot = self.getPlotItem()
        plot.setLabel("left", "effective importance")
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setYRange(0.0, 1.0, padding=0.02)
        plot.getViewBox().setLimits(yMin=-0.05, yMax=1.05)

        accent = palette.color(QPalette.ColorRole.Highlight)
        self._curves = pg.PlotDataItem(
            connect="finite", pen=pg.mkPen(color=(100, 140, 200, 150), width=1.5)
        )
        self._highlight = pg.PlotDataItem(connect="finite", pen=pg.mkPen(color=accent, width=3.5))
        self._cutoff = pg.InfiniteLine(
            angle=0,
            pen=pg.mkPen(color=(200, 80, 60), width=1.5, style=Qt.PenStyle.DashLine),
            label="top-K cut-off {value:.3f}",
            labelOpts={"position": 0.08, "color": (200, 80, 60), "anchors": [(0, 1), (0, 1)]},
        )
        self._today = pg.InfiniteLine(
            angle=90,
            pen=pg.mkPen(color=fg, width=1),
            label="today",
            labelOpts={"position": 0.95, "color": fg, "anchors": [(0, 0), (0, 0)]},
        )
        self._horizon = pg.InfiniteLine(
            angle=90,
            pen=pg.mkPen(color=(220, 150, 30), width=1.5, style=Qt.PenStyle.DotLine),
            label="in N days",
            labelOpts={"position": 0.85, "color": (220, 150, 30), "anchors": [(0, 0), (0, 0)]},
        )
        for item in (self._curves, self._highlight, self._cutoff, self._today, self._horizon):
            plot.addItem(item)
        self._cutoff.hide()
        self._horizon.hide()

        self._ids: list[int] = []
        self._xs: list[FloatArray] = []
        self._ys: list[FloatArray] = []
        self._highlighted = -1
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    # -- data -------------------------------------------------------------------------------

    def set_curves(
        self, ids: Sequence[int], xs: Sequence[FloatArray], ys: Sequence[FloatArray]
    ) -> None:
        """Replace the plotted curves: one (x seconds since epoch, y) pair per pattern id."""
        self._ids = list(ids)
        self._xs = [np.asarray(x, dtype=float) for x in xs]
        self._ys = [np.asarray(y, dtype=float) for y in ys]
        if self._ids:
            sep = np.array([np.nan])
            x_all = np.concatenate([part for x in self._xs for part in (x, sep)])
            y_all = np.concatenate([part for y in self._ys for part in (y, sep)])
            self._curves.setData(x_all, y_all, connect="finite")
            x_min = float(min(x[0] for x in self._xs if x.size))
            x_max = float(max(x[-1] for x in self._xs if x.size))
            self.getPlotItem().setXRange(x_min, x_max, padding=0.02)
        else:
            self._curves.setData([], [])
        if self._highlighted not in self._ids:
            self._highlighted = -1
        self._draw_highlight()

    def set_highlight(self, pattern_id: int) -> None:
        """Draw ``pattern_id``'s curve emphasised (-1: none)."""
        if pattern_id == self._highlighted:
            return
        self._highlighted = pattern_id if pattern_id in self._ids else -1
        self._draw_highlight()

    @property
    def highlighted(self) -> int:
        return self._highlighted

    @property
    def plotted_ids(self) -> list[int]:
        return list(self._ids)

    def set_cutoff(self, value: float | None) -> None:
        """The K-th pattern's effective importance now (None: fewer than K patterns)."""
        if value is None:
            self._cutoff.hide()
        else:
            self._cutoff.setValue(value)
            self._cutoff.label.setFormat(f"top-K cut-off {value:.3f}")
            self._cutoff.show()

    def set_today(self, moment: datetime) -> None:
        self._today.setValue(moment.timestamp())

    def set_horizon(self, moment: datetime | None, label: str = "") -> None:
        """The second vertical marker of the "in N days" slider (None hides it)."""
        if moment is None:
            self._horizon.hide()
            return
        self._horizon.setValue(moment.timestamp())
        self._horizon.label.setFormat(label or "in N days")
        self._horizon.show()

    # -- hover ------------------------------------------------------------------------------

    def _draw_highlight(self) -> None:
        if self._highlighted < 0:
            self._highlight.setData([], [])
            return
        i = self._ids.index(self._highlighted)
        self._highlight.setData(self._xs[i], self._ys[i], connect="finite")

    def curve_near(self, x: float, y: float, tolerance_y: float) -> int:
        """The id of the curve whose value at ``x`` is nearest to ``y`` within tolerance."""
        best, best_dist = -1, tolerance_y
        for pid, xs, ys in zip(self._ids, self._xs, self._ys, strict=True):
            if xs.size == 0 or x < xs[0] or x > xs[-1]:
                continue
            value = float(np.interp(x, xs, ys))
            dist = abs(value - y)
            if dist <= best_dist:
                best, best_dist = pid, dist
        return best

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        view = self.getPlotItem().getViewBox()
        if not self._ids or not view.sceneBoundingRect().contains(scene_pos):
            return
        point = view.mapSceneToView(scene_pos)
        pixel = view.viewPixelSize()  # (x units per pixel, y units per pixel)
        found = self.curve_near(point.x(), point.y(), _HOVER_PIXELS * pixel[1])
        if found != self._highlighted:
            self.set_highlight(found)
            self.curve_hovered.emit(found)


def decay_curve(
    importance: float,
    distilled_at: datetime,
    now: datetime,
    until: datetime,
    rate: float,
    points: int = 120,
) -> tuple[FloatArray, FloatArray]:
    """Sampled effective importance from the distillation to ``until``.

    The values come from :func:`curator.core.scoring.decay_series`, so the chart shows
    exactly what the prompt builder computes.
    """
    start = distilled_at.timestamp()
    end = max(until.timestamp(), start + 1.0)
    xs = np.linspace(start, end, points)
    offsets = (xs - now.timestamp()) / 86400.0
    ys = decay_series(importance, distilled_at, offsets, now=now, rate=rate)
    return xs, np.asarray(ys, dtype=np.float64)

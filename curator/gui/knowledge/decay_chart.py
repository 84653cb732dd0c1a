"""The decay chart: effective importance of the selected patterns over time.

Every plot item is created once in the constructor and only updated with ``setData`` /
``setValue`` afterwards (the pyqtgraph way to keep redraws cheap). The first
:data:`CURVE_COLOURS` selected patterns get an item each, in a colour of their own, with a
legend entry naming them; any further ones go into ONE grey ``PlotDataItem`` separated by
NaN (``connect="finite"``), so a selection of a thousand patterns is still a dozen scene
items. The top-K cut-off is a curve, not a line: the K-th pattern's effective importance
over time (it decays too). Hovering snaps a crosshair to the nearest curve and names it
with its value (mouse moves reach the chart through a rate-limited ``SignalProxy``, as in
pyqtgraph's crosshair example). A log scale shows the long tail that a linear axis flattens
at zero (at 0.95/day a pattern keeps 8 % of its weight after 50 days).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPalette, QResizeEvent
from PySide6.QtWidgets import QGraphicsItem, QWidget

from curator.core.wording import plural
from curator.gui.knowledge.decay_samples import FloatArray, interpolated, rows_of
from curator.gui.knowledge.fitted_legend import LEGEND_POINTS, FittedLegendPlot, entry_name
from curator.gui.widgets.date_axis import DayAxis

GREY_POINTS = 24
"""Samples of a grey curve (a selected pattern past the coloured ones), against 120 of a
coloured one: a thousand grey curves of 120 points each (Ctrl+A in Knowledge) held the GUI
thread 180-260 ms painting them; a decay curve is smooth, and a grey one is background."""

#: How close (in pixels) the mouse must be to a curve to snap the crosshair to it.
_HOVER_PIXELS = 40.0
#: Values are drawn at least this large, so the log scale never takes log(0).
_FLOOR = 1e-6

CURVE_COLOURS: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (227, 119, 194),
    (140, 86, 75),
    (188, 189, 34),
    (23, 190, 207),
)
"""Tableau's categorical palette, one per curve, less its grey (kept for "the rest") and
its red (the cut-off's: a red pattern read as the cut-off)."""

_REST_COLOUR = (150, 150, 150)
_REST_OPACITY = 0.55
"""The grey curves read as background: their grey at this opacity over the chart's
background, blended once (:func:`_over`), drawn with an opaque pen and cached. A
translucent pen makes Qt outline the path clipped to the part being painted before it
fills it (so that crossings are not blended twice): each mouse move over a selection of
5,000 patterns held the GUI thread 350-430 ms, against 12-16 ms drawn opaque and cached
(``benchmarks/bench_decay_chart.py``)."""
_CUTOFF_COLOUR = (200, 60, 40)


_EMPTY_SPAN_S = 30 * 86400.0
"""How far either side of today an empty chart shows."""


def _over(colour: tuple[int, int, int], opacity: float, background: QColor) -> QColor:
    """``colour`` at ``opacity`` over ``background``, as one opaque colour."""
    under = (background.red(), background.green(), background.blue())
    return QColor(
        *(round(opacity * c + (1 - opacity) * u) for c, u in zip(colour, under, strict=True))
    )


class DecayChart(FittedLegendPlot):
    """Effective importance against time with today, the horizon and the top-K cut-off."""

    curve_hovered = Signal(int)
    """The pattern id under the mouse, or -1 when the mouse leaves every curve."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent, axisItems={"bottom": DayAxis()})
        self.setMinimumHeight(200)
        palette = self.palette()
        fg = palette.color(QPalette.ColorRole.WindowText)
        bg = palette.color(QPalette.ColorRole.Base)
        self.setBackground(bg)
        plot = self.getPlotItem()
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            axis.setPen(fg)
            axis.setTextPen(fg)
        plot.setLabel("left", "effective importance")
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.setMenuEnabled(False)
        plot.hideButtons()

        self.legend = pg.LegendItem(
            offset=(-10, 10), labelTextColor=fg, labelTextSize=f"{LEGEND_POINTS:g}pt"
        )
        self.legend.setParentItem(plot.getViewBox())
        legend_bg = QColor(bg)
        legend_bg.setAlpha(200)
        self.legend.setBrush(pg.mkBrush(legend_bg))

        self._items = [
            pg.PlotDataItem(connect="finite", pen=pg.mkPen(color=c, width=2)) for c in CURVE_COLOURS
        ]
        rest = _over(_REST_COLOUR, _REST_OPACITY, bg)
        self._rest_colour = (rest.red(), rest.green(), rest.blue())
        self._rest = pg.PlotDataItem(connect="finite", pen=pg.mkPen(color=rest, width=1))
        self._rest.curve.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        # The emphasised curve is drawn again, wider, in ITS OWN colour: in one accent
        # colour for all, the current pattern read as another curve than its legend's.
        self._highlight = pg.PlotDataItem(connect="finite", pen=pg.mkPen(width=4))
        self._cutoff = pg.PlotDataItem(
            pen=pg.mkPen(color=_CUTOFF_COLOUR, width=2, style=Qt.PenStyle.DashLine)
        )
        # The legend holds the top right and grows down to half the plot with eleven
        # entries (half-way up, "today" read "to|day" under it), so both markers are
        # labelled near the bottom, LEFT of their lines ("in N days" is near the right
        # edge; left of "today" the curves are high, right of it they are all low).
        label_bg = QColor(bg)
        label_bg.setAlpha(220)
        self._today = pg.InfiniteLine(
            angle=90,
            pen=pg.mkPen(color=fg, width=1),
            label="today",
            labelOpts={
                "position": 0.12,
                "color": fg,
                "fill": pg.mkBrush(label_bg),
                "anchors": [(1, 1), (1, 1)],
            },
        )
        self._horizon = pg.InfiniteLine(
            angle=90,
            pen=pg.mkPen(color=(220, 150, 30), width=2, style=Qt.PenStyle.DotLine),
            label="",
            labelOpts={
                "position": 0.04,
                "color": (200, 120, 0),
                "fill": pg.mkBrush(label_bg),
                "anchors": [(1, 1), (1, 1)],
            },
        )
        hair = pg.mkPen(color=fg, width=1, style=Qt.PenStyle.DotLine)
        self._vline = pg.InfiniteLine(angle=90, movable=False, pen=hair)
        self._hline = pg.InfiniteLine(angle=0, movable=False, pen=hair)
        self._hover_label = pg.TextItem(color=fg, fill=pg.mkBrush(legend_bg), anchor=(0, 1))
        for item in (
            self._rest,
            *self._items,
            self._cutoff,
            self._highlight,
            self._today,
            self._horizon,
            self._vline,
            self._hline,
        ):
            plot.addItem(item)
        # The crosshair's label lives beside the legend, over it: among the curves it was
        # under the legend, and a pattern hovered near the top was named behind it.
        self._hover_label.setParentItem(plot.getViewBox())
        self._hover_label.setZValue(self.legend.zValue() + 1)
        for item in (self._horizon, self._vline, self._hline, self._hover_label):
            item.hide()

        self._ids: list[int] = []
        self._names: list[str] = []
        self._xs: list[FloatArray] = []
        self._ys: list[FloatArray] = []
        """The coloured curves (the first :data:`CURVE_COLOURS` selected patterns)."""
        self._rest_xs: FloatArray = np.empty((0, 0))
        self._rest_ys: FloatArray = np.empty((0, 0))
        """The grey ones, a row each (NaN after a shorter row's end): a hover finds the
        nearest of 5,000 in one pass over the matrix, not a call per curve (33 ms)."""
        self._cutoff_k = 0
        self._start_fitting()
        self._highlighted = -1
        self._pinned = -1  # the table's current pattern: highlighted when no curve is hovered
        self._log = False
        self._x_range: tuple[float, float] | None = None
        self.hover_text = ""
        """What the crosshair's label says (empty when the mouse is on no curve)."""
        self._apply_y_range()
        # the present, before any pattern was read (or when none could be: the server
        # away), not "today" on 1 January 1970
        now = datetime.now(UTC)
        self.set_today(now)
        self.set_x_range(now.timestamp() - _EMPTY_SPAN_S, now.timestamp() + _EMPTY_SPAN_S)
        self._mouse = pg.SignalProxy(self.scene().sigMouseMoved, rateLimit=60, slot=self._proxied)
        self.getPlotItem().getViewBox().sigRangeChanged.connect(self._view_moved)

    # -- data -------------------------------------------------------------------------------

    def set_curves(
        self,
        ids: Sequence[int],
        xs: Sequence[FloatArray],
        ys: Sequence[FloatArray],
        names: Sequence[str] | None = None,
        grey: tuple[FloatArray, FloatArray] | None = None,
    ) -> None:
        """Replace the plotted curves: one (x seconds since epoch, y) pair per pattern id.

        ``grey``: the curves past the coloured ones as two matrices, a row each (what
        :func:`~curator.gui.knowledge.decay_samples.decay_curves` returns); ``xs`` and
        ``ys`` then hold the coloured ones only.
        A Ctrl+A of 5,000 patterns spent 14 ms stacking its rows again from a list."""
        n = len(self._items)
        if grey is not None:
            rows = len(ids) - min(len(ids), n)
            shapes = {np.shape(grey[0]), np.shape(grey[1])}
            if len(shapes) != 1 or len(np.shape(grey[0])) != 2 or len(grey[0]) != rows:
                raise ValueError(f"grey curves must be two matrices of {plural(rows, 'row')} alike")
        self._ids = list(ids)
        self._names = list(names) if names is not None else ["" for _ in self._ids]
        self._xs = [np.asarray(x, dtype=float) for x in xs[:n]]
        self._ys = [np.maximum(np.asarray(y, dtype=float), _FLOOR) for y in ys[:n]]
        for i, item in enumerate(self._items):
            if i < len(self._xs):
                item.setData(self._xs[i], self._ys[i], connect="finite")
                item.show()
            else:
                item.setData([], [])
                item.hide()
        rest_xs, rest_ys = (rows_of(xs[n:]), rows_of(ys[n:])) if grey is None else grey
        self._rest_xs = np.asarray(rest_xs, dtype=float)
        self._rest_ys = np.maximum(np.asarray(rest_ys, dtype=float), _FLOOR)  # NaN stays NaN
        if self._rest_xs.size:
            # a NaN after each row: one path, broken between the curves
            gap = np.full((len(self._rest_xs), 1), np.nan)
            x_all = np.hstack([self._rest_xs, gap]).ravel()
            y_all = np.hstack([self._rest_ys, gap]).ravel()
            self._rest.setData(x_all, y_all, connect="finite")
            self._rest.show()
        else:
            self._rest.setData([], [])
            self._rest.hide()
        self._highlighted = self._highlighted if self._highlighted in self._ids else -1
        self._draw_highlight()
        self._rebuild_legend()

    def legend_rows(self, limit: int) -> list[tuple[pg.PlotDataItem, str]]:
        shown = min(len(self._ids), len(self._items))
        named = zip(self._items[:shown], self._ids[:shown], self._names[:shown], strict=True)
        rows = [(item, entry_name(pid, text, limit)) for item, pid, text in named]
        extra = len(self._ids) - len(self._items)
        if extra > 0:
            rows.append((self._rest, f"{extra} more (grey)"))
        if self._cutoff_k > 0:
            rows.append((self._cutoff, f"top-{self._cutoff_k} cut-off"))
        return rows

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if hasattr(self, "_hover_label"):  # the crosshair stands on the old size
            self._hide_crosshair()

    def _view_moved(self, *_: object) -> None:
        """The view's range changed under a still mouse: the crosshair's label sits on the
        view, not on the data, so the crosshair goes until the mouse moves again."""
        self._hide_crosshair()

    def set_x_range(self, start: float, end: float) -> None:
        """Show ``start``..``end`` (seconds since epoch); the caller leaves room at the right."""
        self._x_range = (start, max(end, start + 1.0))
        self.getPlotItem().setXRange(*self._x_range, padding=0.0)

    def set_highlight(self, pattern_id: int) -> None:
        """Draw ``pattern_id``'s curve emphasised (-1: none); it stays so while the mouse
        is on no other curve."""
        self._pinned = pattern_id
        self._emphasise(pattern_id)

    def _emphasise(self, pattern_id: int) -> None:
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

    def curve_pens(self) -> list[QColor]:
        """The colour each coloured curve is drawn in, in selection order."""
        return [item.opts["pen"].color() for item in self._items[: len(self._ids)]]

    def legend_labels(self) -> list[str]:
        """The legend's entries as they read."""
        return [html.unescape(label.text) for _sample, label in self.legend.items]

    def set_cutoff(self, xs: FloatArray | None, ys: FloatArray | None, k: int = 0) -> None:
        """The K-th pattern's effective importance over time (None: fewer than K patterns).

        The legend is laid out again only when its cut-off entry changes: the pane sets
        the curves and then the cut-off on every selection, and a second layout of the
        legend was most of a Ctrl+A's time on a thousand patterns."""
        before = self._cutoff_k
        if xs is None or ys is None or k <= 0:
            self._cutoff.setData([], [])
            self._cutoff.hide()
            self._cutoff_k = 0
        else:
            self._cutoff.setData(np.asarray(xs, float), np.maximum(np.asarray(ys, float), _FLOOR))
            self._cutoff.show()
            self._cutoff_k = k
        if self._cutoff_k != before:
            self._rebuild_legend()

    def cutoff_data(self) -> tuple[FloatArray, FloatArray] | None:
        """The plotted cut-off curve (data values, not log), or None when hidden."""
        if self._cutoff_k <= 0:
            return None
        # xData/yData are the data as given; getData() would be log10 on a log scale
        return np.asarray(self._cutoff.xData, float), np.asarray(self._cutoff.yData, float)

    @property
    def cutoff_k(self) -> int:
        return self._cutoff_k

    def set_today(self, moment: datetime) -> None:
        self._today.setValue(moment.timestamp())

    def set_horizon(self, moment: datetime | None, label: str = "") -> None:
        """The second vertical marker of the "in N days" slider (None hides it)."""
        if moment is None:
            self._horizon.hide()
            return
        # The label is text, not a format (its braces escaped); it is set after show():
        # pyqtgraph re-renders a hidden line's label only once it moves while visible,
        # so a format set while hidden left the placeholder on screen.
        self._horizon.show()
        self._horizon.setValue(moment.timestamp())
        self._horizon.label.setFormat(label.replace("{", "{{").replace("}", "}}"))

    def marker_labels(self) -> list[pg.InfLineLabel]:
        """The labels of "today" and the horizon (for placement checks)."""
        return [self._today.label, self._horizon.label]

    def horizon_text(self) -> str:
        """What the horizon marker says on screen (empty while it is hidden)."""
        if not self._horizon.isVisible():
            return ""
        return str(self._horizon.label.toPlainText())

    # -- log scale --------------------------------------------------------------------------

    def set_log_scale(self, on: bool) -> None:
        """Logarithmic y axis: the decay's long tail instead of a flat line at zero."""
        self._log = bool(on)
        self.getPlotItem().setLogMode(x=False, y=self._log)
        self._apply_y_range()
        self._draw_highlight()
        self._hide_crosshair()

    @property
    def log_scale(self) -> bool:
        return self._log

    def _apply_y_range(self) -> None:
        view = self.getPlotItem().getViewBox()
        if self._log:
            view.setLimits(yMin=np.log10(_FLOOR), yMax=0.1)
            finite = [y[np.isfinite(y)] for y in (*self._ys, self._rest_ys.ravel())]
            lowest = min((float(np.min(y)) for y in finite if y.size), default=0.01)
            low = max(min(lowest, 0.01), 1e-4)
            self.getPlotItem().setYRange(np.log10(low), 0.0, padding=0.02)
        else:
            view.setLimits(yMin=-0.05, yMax=1.05)
            self.getPlotItem().setYRange(0.0, 1.0, padding=0.02)

    def _to_view(self, value: float) -> float:
        return float(np.log10(max(value, _FLOOR))) if self._log else value

    # -- hover ------------------------------------------------------------------------------

    def _colour_of(self, index: int) -> tuple[int, int, int]:
        """The colour of the ``index``-th selected pattern's curve and legend sample."""
        if index < len(self._items):
            return CURVE_COLOURS[index]
        return self._rest_colour

    def _emphasis_of(self, index: int) -> tuple[int, int, int]:
        """The colour the ``index``-th curve is emphasised in: its own, and for a grey one
        the grey at full strength, so it stands out of the lighter grey around it."""
        return CURVE_COLOURS[index] if index < len(self._items) else _REST_COLOUR

    def _draw_highlight(self) -> None:
        if self._highlighted < 0:
            self._highlight.setData([], [])
            return
        i = self._ids.index(self._highlighted)
        self._highlight.setPen(pg.mkPen(color=self._emphasis_of(i), width=4))
        self._highlight.setData(*self.curve(i), connect="finite")

    def curve(self, index: int) -> tuple[FloatArray, FloatArray]:
        """The ``index``-th plotted curve's points (x seconds since epoch, y as drawn)."""
        if index < len(self._xs):
            return self._xs[index], self._ys[index]
        row = index - len(self._xs)
        xs, ys = self._rest_xs[row], self._rest_ys[row]
        ends = ~np.isnan(xs)
        return xs[ends], ys[ends]

    def drawn_colour(self, pattern_id: int) -> tuple[int, int, int] | None:
        """The colour ``pattern_id``'s curve shows on screen (its emphasis included), as
        RGB; None when it is not plotted."""
        if pattern_id not in self._ids:
            return None
        if pattern_id == self._highlighted:
            colour = self._highlight.opts["pen"].color()
            return (colour.red(), colour.green(), colour.blue())
        return self._colour_of(self._ids.index(pattern_id))

    def curve_near(self, x: float, y: float, tolerance_y: float) -> int:
        """The id of the curve whose value at ``x`` is nearest to ``y`` within tolerance.

        ``y`` and the tolerance are in view units (log10 of the value on a log scale).
        """
        found = self._nearest(x, y, tolerance_y)
        return found[0] if found is not None else -1

    def _nearest(self, x: float, y: float, tolerance_y: float) -> tuple[int, float] | None:
        best: tuple[int, float] | None = None
        best_dist = tolerance_y
        for pid, xs, ys in zip(self._ids, self._xs, self._ys, strict=False):
            if xs.size == 0 or x < xs[0] or x > xs[-1]:
                continue
            value = float(np.interp(x, xs, ys))
            dist = abs(self._to_view(value) - y)
            if dist <= best_dist:
                best, best_dist = (pid, value), dist
        found = interpolated(self._rest_xs, self._rest_ys, x)
        if found is not None:
            rows, values = found
            with np.errstate(invalid="ignore"):
                views = np.log10(np.maximum(values, _FLOOR)) if self._log else values
                dists = np.abs(views - y)
            dists[~np.isfinite(dists)] = np.inf  # a gap or an infinity: no value there
            at = len(dists) - 1 - int(np.argmin(dists[::-1]))  # the last of equals wins,
            if dists[at] <= best_dist:  # as in the loop above
                pid = self._ids[len(self._xs) + int(rows[at])]
                best = (pid, float(values[at]))
        return best

    def _proxied(self, args: tuple[QPointF]) -> None:
        self.hover_at(args[0])

    def hover_at(self, scene_pos: QPointF) -> int:
        """Snap the crosshair to the curve nearest the mouse; returns its id (or -1)."""
        view = self.getPlotItem().getViewBox()
        if not self._ids or not view.sceneBoundingRect().contains(scene_pos):
            self._hide_crosshair()
            return -1
        point = view.mapSceneToView(scene_pos)
        pixel = view.viewPixelSize()  # (x units per pixel, y units per pixel)
        found = self._nearest(point.x(), point.y(), _HOVER_PIXELS * pixel[1])
        if found is None:
            self._hide_crosshair()
            pid = -1
        else:
            pid, value = found
            y = self._to_view(value)
            self._vline.setValue(point.x())
            self._hline.setValue(y)
            name = entry_name(pid, self._names[self._ids.index(pid)], 48)
            when = datetime.fromtimestamp(point.x(), tz=UTC).astimezone()
            self.hover_text = f"{name}\n{value:.3f} on {when:%Y-%m-%d}"
            self._hover_label.setText(self.hover_text)
            self._place_label(scene_pos, view.sceneBoundingRect(), point.x(), y)
            for item in (self._vline, self._hline, self._hover_label):
                item.show()
        shown = pid if pid >= 0 else self._pinned
        if shown != self._highlighted:
            self._emphasise(shown)
            self.curve_hovered.emit(pid)
        return pid

    def _place_label(self, mouse: QPointF, area: QRectF, x: float, y: float) -> None:
        """Beside the point it names where it fits: right of it, else left, else at the
        left edge; above it, or below when the point is near the top (the point, not the
        mouse: a curve near the top with the mouse below it put the name above the view)."""
        view = self.getPlotItem().getViewBox()
        width = self._hover_label.boundingRect().width() + 8
        at = view.mapViewToScene(QPointF(x, y))
        below = at.y() - area.top() < self._hover_label.boundingRect().height() + 8
        vertical = 0 if below else 1
        if mouse.x() + width <= area.right():
            self._hover_label.setAnchor((0, vertical))
        elif mouse.x() - width >= area.left():
            self._hover_label.setAnchor((1, vertical))
        else:
            self._hover_label.setAnchor((0, vertical))
            x = view.mapSceneToView(QPointF(area.left(), 0)).x()
        self._hover_label.setPos(view.mapFromView(QPointF(x, y)))

    def _hide_crosshair(self) -> None:
        self.hover_text = ""
        for item in (self._vline, self._hline, self._hover_label):
            item.hide()

    def leaveEvent(self, event: QEvent) -> None:
        """The mouse left the chart: no crosshair, the table's pattern emphasised again."""
        self._hide_crosshair()
        if self._highlighted != self._pinned:
            self._emphasise(self._pinned)
            self.curve_hovered.emit(-1)
        super().leaveEvent(event)

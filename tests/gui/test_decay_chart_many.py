"""The decay chart with thousands of selected patterns (Ctrl+A in Knowledge).

The grey curves past the coloured ones are one matrix: the hover finds the nearest of
them in one pass (a loop of ``np.interp`` per curve took 25-40 ms a mouse move at
5,000), they are drawn with an opaque pen (with a translucent one, each mouse move's
paint took 350-430 ms: ``benchmarks/bench_decay_chart.py``), and the label naming the
hovered curve is drawn over the legend.
"""

from __future__ import annotations

import warnings
from datetime import UTC, datetime, timedelta

import numpy as np
import pyqtgraph as pg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from curator.gui.knowledge.decay_chart import CURVE_COLOURS, DecayChart
from curator.gui.knowledge.decay_samples import decay_curve

NOW = datetime(2026, 10, 31, 12, 0, tzinfo=UTC)
DAY = 86400.0


def nearest_one_by_one(
    chart: DecayChart, x: float, y: float, tolerance: float
) -> tuple[int, float] | None:
    """The reference: every plotted curve interpolated on its own, the last of equals."""
    best: tuple[int, float] | None = None
    best_dist = tolerance
    for index, pid in enumerate(chart.plotted_ids):
        xs, ys = chart.curve(index)
        if xs.size == 0 or x < xs[0] or x > xs[-1]:
            continue
        value = float(np.interp(x, xs, ys))
        view = float(np.log10(max(value, 1e-6))) if chart.log_scale else value
        if abs(view - y) <= best_dist:
            best, best_dist = (pid, value), abs(view - y)
    return best


curves = st.lists(
    st.tuples(
        st.floats(0.0, 1.0),  # importance
        st.integers(0, 60),  # days since it was distilled
        st.integers(2, 40),  # points (grey rows of several lengths)
        st.sampled_from(["whole", "a gap", "an infinity"]),  # what its values hold
    ),
    min_size=1,
    max_size=30,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shapes=curves,
    at=st.floats(-70.0, 50.0),
    height=st.floats(-0.1, 1.1),
    tolerance=st.floats(0.0, 0.5),
    log=st.booleans(),
)
@example(shapes=[(0.5, 3, 2, "whole")] * 12, at=0.0, height=0.4, tolerance=0.5, log=False)
@example(
    shapes=[(0.5, 10, 5, "whole"), (0.5, 10, 40, "a gap")] * 6,
    at=-10.0,
    height=0.5,
    tolerance=0.1,
    log=True,
)
# at a curve's last point, grey rows of several lengths (the shorter ones end in NaN)
@example(
    shapes=[(0.5, 10, 5, "whole"), (0.4, 10, 40, "an infinity")] * 6,
    at=40.0,
    height=0.2,
    tolerance=0.5,
    log=False,
)
def test_the_hover_finds_the_curve_the_one_by_one_search_finds(
    qtbot,
    shapes: list[tuple[float, int, int, str]],
    at: float,
    height: float,
    tolerance: float,
    log: bool,
) -> None:
    chart = DecayChart()
    qtbot.addWidget(chart)
    until = NOW + timedelta(days=40)
    drawn = []
    for weight, age, points, held in shapes:
        xs, ys = decay_curve(weight, NOW - timedelta(days=age), NOW, until, 0.95, points=points)
        if held != "whole":  # a break in the curve, or a value without bound
            ys[points // 3 : points // 3 + 2] = np.nan if held == "a gap" else np.inf
        drawn.append((xs, ys))
    ids = list(range(100, 100 + len(shapes)))
    chart.set_curves(ids, [c[0] for c in drawn], [c[1] for c in drawn])
    chart.set_log_scale(log)
    x = NOW.timestamp() + at * DAY
    expected = nearest_one_by_one(chart, x, height, tolerance)
    found = chart._nearest(x, height, tolerance)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found[0] == expected[0]
        assert np.isclose(found[1], expected[1], rtol=1e-9, atol=1e-12)


def test_the_grey_curves_are_drawn_with_an_opaque_pen(qtbot) -> None:
    chart = DecayChart()
    qtbot.addWidget(chart)
    count = len(CURVE_COLOURS) + 3
    drawn = [decay_curve(0.5, NOW, NOW, NOW + timedelta(days=9), 0.95) for _ in range(count)]
    chart.set_curves(list(range(count)), [c[0] for c in drawn], [c[1] for c in drawn])
    rest = next(
        i
        for i in chart.getPlotItem().items
        if isinstance(i, pg.PlotDataItem) and i.opts["pen"].width() == 1
    )
    assert rest.isVisible()
    assert rest.opts["pen"].color().alpha() == 255


def test_the_crosshairs_label_is_over_the_legend(qtbot) -> None:
    """Hovering a curve near the top right: the label naming it is drawn over the legend
    (among the curves it was under the legend, and named the pattern behind it)."""
    chart = DecayChart()
    qtbot.addWidget(chart)
    chart.resize(900, 420)
    chart.show()
    qtbot.waitExposed(chart)
    count = len(CURVE_COLOURS) + 4
    until = NOW + timedelta(days=40)
    drawn = [decay_curve(0.8, NOW, NOW, until, 0.999) for _ in range(count)]  # level
    chart.set_curves(list(range(count)), [c[0] for c in drawn], [c[1] for c in drawn])
    chart.set_x_range(NOW.timestamp(), until.timestamp())
    legend = chart.legend.sceneBoundingRect()
    assert chart.hover_at(legend.center()) >= 0  # a curve under the legend's middle
    label = chart._hover_label
    both = label.sceneBoundingRect().intersected(legend)
    assert both.width() > 20 and both.height() > 10  # the label is where the legend is
    stack = [  # the legend's and the label's items there, topmost first
        item
        for item in chart.scene().items(both.center())
        if item.isVisible()
        and any(o is item or o.isAncestorOf(item) for o in (label, chart.legend))
    ]
    assert stack and (stack[0] is label or label.isAncestorOf(stack[0]))


def test_a_gap_an_infinity_or_an_empty_curve_hides_no_other_grey_curve(qtbot) -> None:
    """A grey curve with a gap (NaN, drawn as a break), an infinite value or no points
    has no value where it has none; the hover still finds the curve that has one."""
    chart = DecayChart()
    qtbot.addWidget(chart)
    xs = np.linspace(0.0, 100.0, 24)
    gap = np.full(24, 0.2)
    gap[10:14] = np.nan
    infinite = np.full(24, 0.5)
    infinite[12] = np.inf
    coloured = [np.full(24, 0.9)] * len(CURVE_COLOURS)
    ys = [*coloured, gap, infinite, np.full(24, 0.5), np.array([])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing numpy complains about on a hover
        chart.set_curves(list(range(len(ys))), [xs] * (len(ys) - 1) + [np.array([])], ys)
        assert chart.curve_near(xs[12], 0.5, 0.1) == len(CURVE_COLOURS) + 2
        assert chart.curve_near(xs[2], 0.2, 0.05) == len(CURVE_COLOURS)
        assert chart.curve_near(xs[12], 0.2, 0.05) == -1  # in the gap: nothing there


def shown_chart(qtbot, level: float) -> DecayChart:
    chart = DecayChart()
    qtbot.addWidget(chart)
    chart.resize(900, 420)
    chart.show()
    qtbot.waitExposed(chart)
    until = NOW + timedelta(days=40)
    drawn = [decay_curve(level, NOW, NOW, until, 0.9999) for _ in range(10)]
    chart.set_curves(list(range(10)), [c[0] for c in drawn], [c[1] for c in drawn])
    chart.set_x_range(NOW.timestamp(), until.timestamp())
    return chart


@pytest.mark.parametrize("below_px", [0, 20, 35])
def test_the_name_of_a_curve_near_the_top_stays_inside_the_view(qtbot, below_px: int) -> None:
    chart = shown_chart(qtbot, 0.99)
    view = chart.getPlotItem().getViewBox()
    point = view.mapViewToScene(QPointF((NOW + timedelta(days=5)).timestamp(), 0.99))
    assert chart.hover_at(QPointF(point.x(), point.y() + below_px)) >= 0
    area = view.sceneBoundingRect()
    label = chart._hover_label.sceneBoundingRect()
    assert area.top() <= label.top() and label.bottom() <= area.bottom()


def test_the_crosshair_goes_when_the_view_moves_under_a_still_mouse(qtbot) -> None:
    """Its label stands on the view, the lines on the data: after a change of range or
    size they would part; the crosshair comes back with the next mouse move."""
    chart = shown_chart(qtbot, 0.5)
    view = chart.getPlotItem().getViewBox()
    point = view.mapViewToScene(QPointF((NOW + timedelta(days=5)).timestamp(), 0.5))
    for move in (
        lambda: chart.set_x_range(NOW.timestamp(), (NOW + timedelta(days=200)).timestamp()),
        lambda: chart.resize(600, 300),
    ):
        assert chart.hover_at(point) >= 0 and chart._hover_label.isVisible()
        move()
        QApplication.processEvents()
        assert not chart._hover_label.isVisible() and chart.hover_text == ""
        point = view.mapViewToScene(QPointF((NOW + timedelta(days=5)).timestamp(), 0.5))

"""The decay chart with thousands of selected patterns (Ctrl+A in Knowledge).

The grey curves past the coloured ones are one matrix: the hover finds the nearest of
them in one pass (a loop of ``np.interp`` per curve took 25-40 ms a mouse move at
5,000), they are drawn with an opaque pen (with a translucent one, each mouse move's
paint took 350-430 ms: ``benchmarks/bench_decay_chart.py``), and the label naming the
hovered curve is drawn over the legend.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pyqtgraph as pg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.gui.knowledge.decay_chart import CURVE_COLOURS, DecayChart, decay_curve

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
@example(shapes=[(0.5, 3, 2)] * 12, at=0.0, height=0.4, tolerance=0.5, log=False)  # ties
@example(shapes=[(0.5, 10, 5), (0.5, 10, 40)] * 6, at=-10.0, height=0.5, tolerance=0.1, log=True)
# at a curve's last point, grey rows of several lengths (the shorter ones end in NaN)
@example(shapes=[(0.5, 10, 5), (0.4, 10, 40)] * 6, at=40.0, height=0.2, tolerance=0.5, log=False)
def test_the_hover_finds_the_curve_the_one_by_one_search_finds(
    qtbot,
    shapes: list[tuple[float, int, int]],
    at: float,
    height: float,
    tolerance: float,
    log: bool,
) -> None:
    chart = DecayChart()
    qtbot.addWidget(chart)
    until = NOW + timedelta(days=40)
    drawn = [
        decay_curve(weight, NOW - timedelta(days=age), NOW, until, 0.95, points=points)
        for weight, age, points in shapes
    ]
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

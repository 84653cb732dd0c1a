"""The charts are tested against their data, not only that they draw: a curve is drawn in
its legend sample's colour (also while it is the emphasised one), the horizon marker
names its real number of days, the empty database is worded as empty, and every date
axis labels its ticks with dates (never seconds.milliseconds of a short span)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pyqtgraph as pg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from curator.gui.insights.insights_charts import ForecastChart, RatioHistogram, SeriesChart
from curator.gui.insights.learning_section import LearningCurveChart
from curator.gui.knowledge.decay_chart import _REST_COLOUR, CURVE_COLOURS, DecayChart
from curator.gui.knowledge.decay_samples import decay_curve
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.date_axis import DayAxis
from curator.gui.widgets.errors import Dialogs
from curator.gui.widgets.forecast_note import leaving_note, ordinal, room_note
from curator.pipeline.insights import RunPoint
from curator.store.db import Store

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")

NOW = datetime(2026, 10, 31, 12, 0, tzinfo=UTC)
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def _rgb(colour: QColor) -> tuple[int, int, int]:
    return (colour.red(), colour.green(), colour.blue())


def _chart(qtbot, count: int) -> DecayChart:
    chart = DecayChart()
    qtbot.addWidget(chart)
    chart.resize(900, 420)
    ids = list(range(11, 11 + count))
    curves = [
        decay_curve(
            0.3 + 0.6 * i / max(count, 1),
            NOW - timedelta(days=3 * i + 1),
            NOW,
            NOW + timedelta(days=40),
            0.95,
        )
        for i in range(count)
    ]
    chart.set_curves(
        ids, [c[0] for c in curves], [c[1] for c in curves], [f"pattern {i}" for i in ids]
    )
    chart.set_x_range(
        (NOW - timedelta(days=3 * count + 2)).timestamp(), (NOW + timedelta(days=40)).timestamp()
    )
    return chart


def _legend_colours(chart: DecayChart) -> dict[int, tuple[int, int, int]]:
    """Pattern id -> the colour its legend sample is painted with."""
    found: dict[int, tuple[int, int, int]] = {}
    for sample, label in chart.legend.items:
        match = re.match(r"#(\d+) ", label.text)
        if match:
            found[int(match.group(1))] = _rgb(sample.item.opts["pen"].color())
    return found


def test_the_emphasised_curve_is_drawn_in_its_legend_colour(qtbot) -> None:
    """Pattern #13 (the third curve, green in the legend) emphasised: the pixels on its
    curve are green, not the palette's highlight colour."""
    chart = _chart(qtbot, 3)
    chart.show()
    qtbot.waitExposed(chart)
    target = 13
    chart.set_highlight(target)
    legend = _legend_colours(chart)
    assert legend[target] == (44, 160, 44)
    assert chart.drawn_colour(target) == legend[target]
    # and on screen: the pixels under the middle of the curve
    index = chart.plotted_ids.index(target)
    xs, ys = chart.curve(index)
    middle = len(xs) // 2
    view = chart.getPlotItem().getViewBox()
    point = chart.mapFromScene(view.mapViewToScene(QPointF(xs[middle], ys[middle])))
    image = chart.grab().toImage()
    around = {
        _rgb(image.pixelColor(point.x() + dx, point.y() + dy))
        for dx in range(-2, 3)
        for dy in range(-2, 3)
    }
    assert legend[target] in around
    accent = _rgb(chart.palette().color(chart.palette().ColorRole.Highlight))
    assert accent == legend[target] or accent not in around


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(count=st.integers(1, 14), pick=st.integers(0, 13))
def test_every_curve_is_drawn_in_its_legend_colour(qtbot, count: int, pick: int) -> None:
    """Whichever curve is emphasised, among the coloured ones or the grey rest."""
    chart = _chart(qtbot, count)
    ids = chart.plotted_ids
    chart.set_highlight(ids[min(pick, count - 1)])
    legend = _legend_colours(chart)
    rest = [s for s, label in chart.legend.items if "more (grey)" in label.text]
    for pid in ids:
        expected = legend.get(pid)
        if expected is None:  # one of the grey rest: its legend line is "N more (grey)"
            expected = _rgb(rest[0].item.opts["pen"].color())
            if pid == chart.highlighted:  # the grey at full strength, out of the rest
                expected = _REST_COLOUR
        assert chart.drawn_colour(pid) == expected
    chart.deleteLater()


@pytest.mark.parametrize("days", [0, 1, 30, 365, 730])
def test_the_horizon_marker_names_its_number_of_days(qtbot, days: int) -> None:
    chart = _chart(qtbot, 2)
    label = f"in {days} days"
    chart.set_horizon(NOW + timedelta(days=days), label)
    assert chart.horizon_text() == label
    chart.set_horizon(NOW + timedelta(days=days + 1), f"in {days + 1} days")
    assert chart.horizon_text() == f"in {days + 1} days"  # shown again: still the number
    chart.set_horizon(None)
    chart.set_horizon(NOW, "in {braces} days")  # a label is text, never a format
    assert chart.horizon_text() == "in {braces} days"


def test_date_axis_ticks_are_dates_for_runs_a_second_apart(qtbot) -> None:
    """Two runs in the same minute: the axis still says the day, not 13.400 … 14.299."""
    chart = SeriesChart()
    qtbot.addWidget(chart)
    chart.resize(800, 300)
    chart.show()
    qtbot.waitExposed(chart)
    start = datetime(2026, 10, 31, 9, 0, 13, 400_000, tzinfo=UTC)
    points = [
        RunPoint(
            run_id=i + 1,
            kind="classify",
            started_at=start + timedelta(seconds=0.9 * i),
            model_name="tiny",
            prompt_versions="v1",
            pairs=10,
            accuracy=0.8,
            kappa=0.5 + 0.1 * i,
        )
        for i in range(2)
    ]
    chart.set_series(points)
    axis = chart.getPlotItem().getAxis("bottom")
    assert isinstance(axis, DayAxis)
    low, high = chart.getPlotItem().getViewBox().viewRange()[0]
    strings = [
        s
        for _spacing, values in axis.tickValues(low, high, 800)
        for s in axis.tickStrings(values, 1.0, _spacing)
    ]
    assert strings, "no tick at all"
    assert all(DATE.match(s) for s in strings), strings
    for _ in range(3):  # the axes size themselves to their labels over a few passes
        QApplication.processEvents()
    local_day = start.astimezone().strftime("%Y-%m-%d")
    assert local_day in strings or any(local_day.startswith(s) for s in strings)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.floats(1.0e9, 2.5e9),
    span=st.floats(0.0, 3.0e8),
    width=st.integers(150, 2000),
)
def test_day_axis_labels_every_tick_with_its_date(
    qtbot, start: float, span: float, width: int
) -> None:
    """Any visible span and width: every tick label is a date (year, year-month or
    year-month-day) and names the local date of the tick it stands under."""
    axis = DayAxis()
    low, high = DayAxis.widen(start, start + span)
    assert high - low >= DayAxis.MIN_SPAN
    for spacing, values in axis.tickValues(low, high, width):
        for value, text in zip(values, axis.tickStrings(values, 1.0, spacing), strict=True):
            assert DATE.match(text), text
            local = datetime.fromtimestamp(value).strftime("%Y-%m-%d")
            assert local.startswith(text), (text, local)


def test_forecast_and_decay_charts_use_the_day_axis(qtbot) -> None:
    for chart in (ForecastChart(), DecayChart(), SeriesChart()):
        qtbot.addWidget(chart)
        assert isinstance(chart.getPlotItem().getAxis("bottom"), DayAxis)


def test_drawn_colour_of_an_unknown_id_is_none(qtbot) -> None:
    chart = _chart(qtbot, 1)
    assert chart.drawn_colour(999) is None
    assert np.isfinite(chart.curve(0)[1]).all()


def test_an_empty_database_is_worded_as_empty(qtbot, tmp_path, show_pane) -> None:
    """No "It holds all 0 active patterns": the pane says there is none yet."""
    store = Store(tmp_path / "empty.sqlite")
    try:
        pane = KnowledgePane(
            AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
        )
        show_pane(pane)
        qtbot.waitUntil(lambda: pane.ops.pending == 0 and not pane.loading, timeout=30_000)
        note = pane.forecast_note.text()
        assert "No pattern is active yet" in note
        assert "all 0" not in note and " 0 active" not in note
        pane.days_spin.setValue(1)
        assert pane.horizon_label.text() == "1 day"
        assert pane.chart.horizon_text() == "in 1 day"
    finally:
        store.close()


BAD_WORDING = re.compile(r"\b(all 0\b|1 [a-z ]*patterns|1 days)\b|\(s\)")


@settings(max_examples=300, deadline=None)
@given(
    active=st.integers(0, 100_000),
    top_k=st.integers(1, 500),
    leaving=st.integers(0, 500),
    days=st.integers(0, 730),
)
def test_forecast_wording_reads_right_for_every_count(
    active: int, top_k: int, leaving: int, days: int
) -> None:
    for text in (room_note(active, top_k), leaving_note(leaving, days, top_k, 0.5)):
        assert not BAD_WORDING.search(text), text
        for number, suffix in re.findall(r"\b(\d+)(st|nd|rd|th)\b", text):
            assert ordinal(int(number)) == number + suffix, text
    assert ordinal(top_k) in leaving_note(leaving, days, top_k, 0.5)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1, "1st"),
        (2, "2nd"),
        (3, "3rd"),
        (4, "4th"),
        (11, "11th"),
        (12, "12th"),
        (13, "13th"),
        (21, "21st"),
        (22, "22nd"),
        (101, "101st"),
        (111, "111th"),
    ],
)
def test_ordinals(n: int, text: str) -> None:
    assert ordinal(n) == text


def test_every_legend_entry_names_a_drawn_item_in_its_colour(qtbot) -> None:
    """Each chart with a legend: every sample is an item of that plot, and its curve is
    drawn with the pen the sample shows."""
    charts = [SeriesChart(), ForecastChart(), RatioHistogram(), LearningCurveChart()]
    charts.append(_chart(qtbot, 3))
    for chart in charts:
        qtbot.addWidget(chart)
        plot = chart.getPlotItem()
        legend = plot.legend if plot.legend is not None else getattr(chart, "legend", None)
        assert legend is not None and legend.items, type(chart).__name__
        for sample, label in legend.items:
            assert sample.item in plot.items, (type(chart).__name__, label.text)
            if isinstance(sample.item, pg.PlotDataItem):
                sample.item.setData([0.0, 1.0], [0.0, 1.0])  # the curve takes its pen
                drawn = sample.item.curve.opts["pen"]
                assert _rgb(drawn.color()) == _rgb(sample.item.opts["pen"].color())


@pytest.mark.parametrize(("count", "size"), [(3, (600, 230)), (12, (600, 230)), (12, (900, 420))])
def test_the_marker_labels_are_not_under_the_legend(qtbot, count: int, size) -> None:
    """ "today" sat half-way up, where a long legend covers it ("to|day")."""
    chart = _chart(qtbot, count)
    chart.set_cutoff(*decay_curve(0.4, NOW, NOW, NOW + timedelta(days=40), 0.95), k=5)
    chart.set_today(NOW)
    chart.set_horizon(NOW + timedelta(days=30), "in 30 days")
    chart.resize(*size)
    chart.show()
    qtbot.waitExposed(chart)
    for _ in range(3):
        QApplication.processEvents()
    legend = chart.legend.sceneBoundingRect()
    for label in chart.marker_labels():
        assert not label.sceneBoundingRect().intersects(legend), label.toPlainText()


def test_no_curve_colour_can_be_taken_for_another_line() -> None:
    """The ninth colour (Tableau red) was the cut-off's red: "#19" read as the cut-off."""
    from curator.gui.knowledge.decay_chart import _CUTOFF_COLOUR

    lines = [*CURVE_COLOURS, _CUTOFF_COLOUR, _REST_COLOUR]
    for i, a in enumerate(lines):
        for b in lines[i + 1 :]:
            assert sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5 > 60, (a, b)

"""Knowledge pane: the patterns table, provenance drill-down, and the decay chart."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import shiboken6
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from curator.core.scoring import rank_key
from curator.gui.knowledge.decay_chart import CURVE_COLOURS, GREY_POINTS, DecayChart
from curator.gui.knowledge.decay_samples import decay_curve, decay_curves
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.store.db import Store
from curator.store.models import Episode, Pattern, PatternEpisode, Run, utcnow
from curator.store.settings import set_setting

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")

N_PATTERNS = 12
TOP_K = 5


@pytest.fixture
def services(tmp_path: Path) -> Iterator[AppServices]:
    store = Store(tmp_path / "knowledge.sqlite")
    set_setting(store, "top_k", TOP_K)
    now = utcnow()
    with store.write():
        run = Run.create(kind="distill", status="committed")
        episode = Episode.create(
            content_hash="e1",
            text="user: the deploy failed again\nagent: I rolled it back",
            timestamp=now - timedelta(days=40),
            source="chat",
        )
        for i in range(N_PATTERNS):
            importance = 0.3 + 0.05 * i
            when = now - timedelta(days=2 * i + 1)
            p = Pattern.create(
                text=f"Pattern number {i} says something useful about deployments.",
                importance=importance,
                distilled_at=when,
                rank_key=rank_key(importance, when),
            )
            if i % 3 == 0:
                PatternEpisode.create(pattern=p, episode=episode, run=run)
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    store.close()


def settle(qtbot, pane: KnowledgePane) -> None:
    """Wait until the pane's background reads and writes have been delivered."""
    qtbot.waitUntil(lambda: pane.ops.pending == 0 and not pane.loading, timeout=30_000)


@pytest.fixture
def pane(qtbot, services: AppServices, show_pane) -> KnowledgePane:
    widget = KnowledgePane(services)
    show_pane(widget)
    settle(qtbot, widget)
    return widget


def test_models_pass_modeltester(qtbot, qtmodeltester, pane: KnowledgePane) -> None:
    assert pane.patterns.rowCount() == N_PATTERNS
    qtmodeltester.check(pane.patterns)
    pane.select_patterns([next(r.id for r in pane.pattern_rows() if r.sources)])
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)  # read in the background
    assert pane.sources.rowCount() == 1
    qtmodeltester.check(pane.sources)


def test_top_k_marked_and_sortable(pane: KnowledgePane) -> None:
    rows = pane.patterns.rows()
    assert [r.rank for r in rows] == list(range(1, N_PATTERNS + 1))
    assert sum(r.in_top_k for r in rows) == TOP_K
    top_index = pane.patterns.index(0, 0)
    assert pane.patterns.data(top_index, Qt.ItemDataRole.FontRole).bold()
    assert pane.patterns.data(pane.patterns.index(TOP_K, 0), Qt.ItemDataRole.FontRole) is None
    assert pane.patterns.data(pane.patterns.index(0, 1)) == "★"

    # Sorting by stored importance (descending) keeps the selection on the same pattern.
    chosen = rows[7].id
    pane.select_patterns([chosen])
    column = pane.patterns.column_index("Importance")
    pane.table.sortByColumn(column, Qt.SortOrder.DescendingOrder)
    importances = [r.importance for r in pane.patterns.rows()]
    assert importances == sorted(importances, reverse=True)
    assert pane.selected_ids() == [chosen]
    assert pane.current_id() == chosen


def test_provenance_and_show_episode(qtbot, pane: KnowledgePane) -> None:
    with_source = next(r for r in pane.pattern_rows() if r.sources)
    pane.select_patterns([with_source.id])
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)  # read in the background
    assert pane.sources.rowCount() == 1
    assert "1 source episode from run #" in pane.source_title.text()
    index = pane.sources.index(0, 0)
    rect = pane.sources_view.visualRect(index)
    viewport = pane.sources_view.viewport()
    with qtbot.waitSignal(pane.show_episode, timeout=2000) as blocker:
        # A real double-click: press/release, then the double-click event.
        qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(
            pane.sources_view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center()
        )
    assert blocker.args == [pane.sources.row_at(0).episode_id]


def test_chart_gives_each_selected_curve_its_own_pen_and_a_legend_entry(
    pane: KnowledgePane,
) -> None:
    rows = pane.pattern_rows()
    chosen = [rows[0].id, rows[3].id, rows[9].id]
    pane.select_patterns(chosen)
    chart = pane.chart
    assert sorted(chart.plotted_ids) == sorted(chosen)
    colours = {c.name() for c in chart.curve_pens()}
    assert len(colours) == len(chosen)
    labels = chart.legend_labels()
    for pid in chosen:
        assert sum(label.startswith(f"#{pid} Pattern number") for label in labels) == 1
    assert f"top-{TOP_K} cut-off" in labels
    assert chart.highlighted == pane.current_id()
    # Curves start at 1.0 * importance at distillation and only decay.
    first = rows[0]
    _x, y = chart._items[chart.plotted_ids.index(first.id)].getData()
    assert y[0] == pytest.approx(first.importance)
    assert np.max(np.diff(y)) <= 0
    # The same plot items are reused for every update; past the palette the rest share
    # one grey item (NaN-separated) and one legend line.
    items_before = list(chart.getPlotItem().items)
    pane.days_spin.setValue(120)
    pane.select_patterns([r.id for r in rows])
    assert list(chart.getPlotItem().items) == items_before
    extra = N_PATTERNS - len(chart._items)
    _rx, ry = chart._rest.getData()
    assert np.isnan(ry).sum() == extra
    # grey curves are background: fewer samples each (a thousand of 120 took 180-260 ms)
    assert len(ry) == extra * (GREY_POINTS + 1)
    assert f"{extra} more (grey)" in chart.legend_labels()
    pane.select_patterns([rows[1].id])
    assert chart.plotted_ids == [rows[1].id]
    assert len(chart.legend_labels()) == 2  # the pattern and the cut-off


def test_a_selection_is_read_from_its_ranges_and_lays_the_legend_out_once(
    qtbot, pane: KnowledgePane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+A, then rows taken out with Ctrl+click: the ids are the selected rows' (read
    from the selection's ranges, not cell by cell), and each change lays the legend out
    once (it was twice: the curves, then the cut-off)."""
    layouts: list[int] = []
    rebuild = pane.chart._rebuild_legend
    monkeypatch.setattr(pane.chart, "_rebuild_legend", lambda: (layouts.append(1), rebuild()))
    pane.table.selectAll()
    rows = pane.pattern_rows()
    shown = [pane.patterns.row_at(n) for n in range(pane.patterns.rowCount())]
    assert sorted(pane.selected_ids()) == sorted(r.id for r in rows)
    assert len(layouts) == 1
    for n in (2, 7):  # out of the middle: the selection is three ranges now
        rect = pane.table.visualRect(pane.patterns.index(n, 0))
        qtbot.mouseClick(
            pane.table.viewport(), Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.ControlModifier, rect.center(),
        )  # fmt: skip
    kept = [r.id for n, r in enumerate(shown) if r is not None and n not in (2, 7)]
    assert pane.selected_ids() == kept
    assert sorted(pane.chart.plotted_ids) == sorted(kept)
    assert len(layouts) == 3


def test_cutoff_curve_is_the_kth_pattern_over_time_and_follows_k(
    qtbot, pane: KnowledgePane
) -> None:
    rows = pane.pattern_rows()
    assert pane.cutoff() == pytest.approx(rows[TOP_K - 1].effective)
    data = pane.chart.cutoff_data()
    assert data is not None and pane.chart.cutoff_k == TOP_K
    xs, ys = data
    today = pane.now().timestamp()
    assert float(np.interp(today, xs, ys)) == pytest.approx(rows[TOP_K - 1].effective, rel=1e-3)
    assert ys[-1] < ys[0]  # the cut-off decays with the pattern that sets it

    set_setting(pane.services.store, "top_k", 8)
    pane.refresh()
    settle(qtbot, pane)
    rows = pane.pattern_rows()
    data = pane.chart.cutoff_data()
    assert data is not None and pane.chart.cutoff_k == 8
    assert float(np.interp(today, *data)) == pytest.approx(rows[7].effective, rel=1e-3)
    assert "top-8 cut-off" in pane.chart.legend_labels()

    set_setting(pane.services.store, "top_k", 50)  # the prompt has room: no cut-off
    pane.refresh()
    settle(qtbot, pane)
    assert pane.chart.cutoff_data() is None
    assert not any("cut-off" in label for label in pane.chart.legend_labels())


def test_log_scale_toggles(pane: KnowledgePane) -> None:
    rows = pane.pattern_rows()
    pane.select_patterns([rows[-1].id])
    chart = pane.chart
    plot = chart.getPlotItem()
    assert not plot.getAxis("left").logMode
    pane.log_check.setChecked(True)
    assert chart.log_scale and plot.getAxis("left").logMode
    (_x0, _x1), (low, high) = plot.getViewBox().viewRange()
    assert low < -1.0 and high == pytest.approx(0.0, abs=0.1)  # 0.1 down to 0.01 and below
    # hovering works in log units too: the curve's value 60 days ahead, far below 0.05
    when = pane.now().timestamp() + 60 * 86400
    pane.days_spin.setValue(90)
    value = float(np.interp(when, *chart.curve(0)))
    assert value < 0.05
    scene = plot.getViewBox().mapViewToScene(QPointF(when, np.log10(value)))
    assert chart.hover_at(scene) == rows[-1].id
    assert f"{value:.3f}" in chart.hover_text
    pane.log_check.setChecked(False)
    assert not plot.getAxis("left").logMode
    (_x0, _x1), (low, high) = plot.getViewBox().viewRange()
    assert low == pytest.approx(0.0, abs=0.05) and high == pytest.approx(1.0, abs=0.05)


def test_slider_and_days_box_stay_in_sync_and_the_label_is_not_clipped(
    qtbot, pane: KnowledgePane
) -> None:
    pane.select_patterns([pane.pattern_rows()[0].id])
    pane.days_spin.setValue(200)
    assert pane.horizon_slider.value() == 200
    pane.horizon_slider.setValue(45)
    assert pane.days_spin.value() == 45
    chart = pane.chart
    moment = pane.now() + timedelta(days=45)
    assert chart._horizon.value() == pytest.approx(moment.timestamp(), abs=5)
    assert chart._horizon.label.format == "in 45 days"
    assert pane.horizon_label.text() == "45 days"
    # the label lies inside the plot area, not cut at its right edge
    qtbot.wait(50)
    view = chart.getPlotItem().getViewBox().sceneBoundingRect()
    label = chart._horizon.label.sceneBoundingRect()
    assert view.contains(label), (view, label)
    (_x0, x1), _ = chart.getPlotItem().getViewBox().viewRange()
    assert x1 > moment.timestamp()


def test_hover_snaps_to_the_nearest_curve_and_names_it(qtbot, pane: KnowledgePane) -> None:
    rows = pane.pattern_rows()
    low, high = rows[-1], rows[0]
    pane.select_patterns([high.id, low.id])
    chart = pane.chart
    view = chart.getPlotItem().getViewBox()
    now = pane.now().timestamp()
    value = float(np.interp(now, *chart._items[1].getData()))
    scene = view.mapViewToScene(QPointF(now, value + 0.01))
    assert chart.hover_at(scene) == low.id
    assert chart.hover_text.startswith(f"#{low.id} Pattern number")
    assert f"{value:.3f}" in chart.hover_text
    assert chart._vline.isVisible() and chart._hline.isVisible()
    assert chart.highlighted == low.id
    assert pane.hover_label.text().startswith(f"#{low.id} (rank {low.rank})")


def test_fewer_patterns_than_k_explains_why_nothing_leaves(qtbot, pane: KnowledgePane) -> None:
    set_setting(pane.services.store, "top_k", 50)
    pane.refresh()
    settle(qtbot, pane)
    note = pane.forecast_note.text()
    assert "Nothing leaves the prompt yet" in note
    assert f"all {N_PATTERNS} active patterns" in note and "room for 50" in note
    assert pane.leaving_list.isHidden()
    pane.horizon_slider.setValue(365)
    assert pane.forecast_note.text() == note
    assert pane.leaving_ids() == []


def test_retire_and_undo_run_off_the_gui_thread(qtbot, pane: KnowledgePane) -> None:
    ops = pane.ops
    target = pane.pattern_rows()[2].id
    pane.select_patterns([target])
    assert pane.retire_selected()
    assert ops.busy  # the write is on its way, the window is not blocked on it
    assert not pane.retire_button.isEnabled()
    settle(qtbot, pane)
    assert ops.job_thread_ids and threading.get_ident() not in ops.job_thread_ids
    assert Pattern.get_by_id(target).status == "retired"
    assert target not in [r.id for r in pane.pattern_rows()]
    assert pane.undo_retire_button.isEnabled()
    ops.job_thread_ids.clear()
    assert pane.undo_last_retire()
    settle(qtbot, pane)
    assert ops.job_thread_ids and threading.get_ident() not in ops.job_thread_ids
    assert Pattern.get_by_id(target).status == "active"
    assert target in [r.id for r in pane.pattern_rows()]


def test_horizon_slider_lists_leaving_patterns(pane: KnowledgePane) -> None:
    pane.horizon_slider.setValue(0)
    assert pane.leaving_ids() == []
    pane.horizon_slider.setValue(365)
    leaving = pane.leaving_ids()
    assert leaving  # a year of decay pushes every prompt pattern below today's cut-off
    assert pane.leaving_list.count() == len(leaving)
    moment = pane.now() + timedelta(days=365)
    assert pane.chart._horizon.value() == pytest.approx(moment.timestamp(), abs=5)


def test_curve_near_finds_hovered_curve(qtbot) -> None:
    chart = DecayChart()
    qtbot.addWidget(chart)
    xs = np.linspace(0.0, 100.0, 11)
    chart.set_curves([7, 8], [xs, xs], [np.full(11, 0.8), np.full(11, 0.2)])
    assert chart.curve_near(50.0, 0.78, 0.05) == 7
    assert chart.curve_near(50.0, 0.22, 0.05) == 8
    assert chart.curve_near(50.0, 0.5, 0.05) == -1
    chart.set_highlight(8)
    _hx, hy = chart._highlight.getData()
    assert np.allclose(hy, 0.2)


def test_provenance_is_read_off_the_gui_thread_with_a_loading_state(
    qtbot, pane: KnowledgePane
) -> None:
    """A pattern's sources took a second on the GUI thread at 20,000 source episodes."""
    with_source = next(r for r in pane.pattern_rows() if r.sources)
    ran_before = len(pane.ops.job_thread_ids)
    pane.select_patterns([with_source.id])
    assert pane.provenance.loading
    assert "Reading its source episodes" in pane.source_title.text()
    assert pane.sources.rowCount() == 0  # nothing read on the GUI thread
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)
    assert pane.sources.rowCount() == with_source.sources
    assert "\n1 source episode from run #" in pane.source_title.text()
    ran = pane.ops.job_thread_ids[ran_before:]
    assert ran and threading.get_ident() not in ran


def test_grey_curves_at_once_are_the_curves_one_at_a_time() -> None:
    """The grey curves of a Ctrl+A come from one matrix; each row is its pattern's own
    curve (the same samples, the same values)."""
    now = utcnow()
    until = now + timedelta(days=40)
    dates = [now - timedelta(days=d) for d in (0.0, 3.5, 90.0, 400.0)]
    importances = [1.0, 0.5, 0.8, 0.05]
    xs, ys = decay_curves(importances, dates, now, until, 0.95, GREY_POINTS)
    for row, (imp, when) in enumerate(zip(importances, dates, strict=True)):
        x, y = decay_curve(imp, when, now, until, 0.95, points=GREY_POINTS)
        np.testing.assert_allclose(xs[row], x, rtol=0, atol=1e-3)  # seconds since 1970
        np.testing.assert_allclose(ys[row], y, rtol=1e-9, atol=1e-12)


def test_grey_curves_given_as_matrices_are_the_curves_given_as_rows(qtbot) -> None:
    """The pane hands a Ctrl+A's grey curves over as the two matrices they were computed
    in; the chart holds, draws and searches exactly what it did from a list of rows."""
    now = utcnow()
    until = now + timedelta(days=40)
    count = len(CURVE_COLOURS) + 5
    dates = [now - timedelta(days=3.0 * d) for d in range(count)]
    importances = [0.9 - 0.05 * d for d in range(count)]
    xs, ys = decay_curves(importances, dates, now, until, 0.95, GREY_POINTS)
    ids = list(range(1, count + 1))
    charts = [DecayChart(), DecayChart()]
    for chart in charts:
        qtbot.addWidget(chart)
    charts[0].set_curves(ids, list(xs), list(ys))
    n = len(CURVE_COLOURS)
    charts[1].set_curves(ids, list(xs[:n]), list(ys[:n]), grey=(xs[n:], ys[n:]))
    for index in range(count):
        for got, want in zip(charts[1].curve(index), charts[0].curve(index), strict=True):
            np.testing.assert_array_equal(got, want)
    drawn = [chart._rest.getData() for chart in charts]
    for got, want in zip(drawn[1], drawn[0], strict=True):
        np.testing.assert_array_equal(got, want)
    assert charts[1].legend_labels() == charts[0].legend_labels()


def test_hovering_long_and_short_patterns_keeps_the_chart_still(
    qtbot, pane: KnowledgePane, services: AppServices
) -> None:
    """The line under the chart names the hovered pattern on one line: wrapped, a long
    pattern grew it by a line, and the chart above jumped as the mouse moved."""
    long = "A pattern that goes on and on about deployments, rollbacks and on-call. " * 4
    with services.store.write():
        ids = [int(pattern.id) for pattern in Pattern.select(Pattern.id)]
        Pattern.update(text=long).where(Pattern.id.in_(ids[::2])).execute()
    pane.resize(900, 700)
    pane.refresh()
    settle(qtbot, pane)
    pane.table.selectAll()
    chart = pane.chart
    qtbot.waitUntil(lambda: len(chart.plotted_ids) == N_PATTERNS)
    height = chart.height()
    area = chart.getPlotItem().getViewBox().sceneBoundingRect()
    named: set[str] = set()
    for fx in np.linspace(0.05, 0.95, 9):
        for fy in np.linspace(0.02, 0.98, 25):
            point = QPointF(area.left() + fx * area.width(), area.top() + fy * area.height())
            chart.hover_at(point)
            qtbot.wait(1)  # the layout's turn
            named.add(pane.hover_label.text())
            assert chart.height() == height
    assert any(long[:40] in text for text in named)  # long and short ones were named
    assert any("Pattern number" in text for text in named)


LONG_NAME = "a pattern about deployments, rollbacks and the on-call rota"


def test_the_legend_stays_inside_the_chart_at_any_width(qtbot) -> None:
    """In a narrow chart two columns of legend ran past the plot's left edge and cut the
    first column's names (their ids too) off: the names are shortened first, then the
    columns are fewer; a wide chart shows them whole again."""
    chart = _legend_chart(qtbot, len(CURVE_COLOURS) + 3)
    view = chart.getPlotItem().getViewBox()
    widths = [1500, 420, 300, 700, 1500, 250, 360, 1100]
    for width in widths:
        chart.resize(width, 330)
        qtbot.waitUntil(lambda w=width: chart.width() == w)
        QApplication.processEvents()
        inside = view.sceneBoundingRect().adjusted(-1, -1, 1, 1)
        legend = chart.legend.sceneBoundingRect()
        assert inside.left() <= legend.left() and legend.right() <= inside.right(), width
        labels = chart.legend_labels()
        assert all(label.split(" ")[0] == f"#{i + 1}" for i, label in enumerate(labels[:8]))
        if width >= 1100:
            assert labels[0] == f"#1 {LONG_NAME[:29]}…", width
    assert chart.legend_labels()[0] == f"#1 {LONG_NAME[:29]}…"


@pytest.mark.parametrize(
    "name", ["<b>bold</b> rollout", "tom &amp; jerry", "a < b and c > d", "<br>twice<br>"]
)
def test_a_legend_name_reads_as_the_pattern_is_written(qtbot, name: str) -> None:
    """The legend's labels are rich text: a pattern's markup was rendered (bold, a line
    break) or swallowed ("&amp;" read "&", "<b>" vanished)."""
    now = utcnow()
    xs, ys = decay_curves([0.9], [now], now, now + timedelta(days=30), 0.95, GREY_POINTS)
    chart = DecayChart()
    qtbot.addWidget(chart)
    chart.set_curves([7], list(xs), list(ys), [name])
    (_sample, label) = chart.legend.items[0]
    assert label.item.toPlainText() == f"#7 {name}"
    assert chart.legend_labels() == [f"#7 {name}"]


def test_the_provenance_title_shows_a_pattern_with_markup_as_written(
    qtbot, pane: KnowledgePane, services: AppServices
) -> None:
    """The title over a pattern's sources repeats its text: as rich text, a pattern
    saying "wrap answers in <answer> tags" lost its tag there."""
    first = pane.pattern_rows()[0]
    with services.store.write():
        Pattern.update(text="wrap answers in <answer> tags, <b>always</b>").where(
            Pattern.id == first.id
        ).execute()
    pane.refresh()
    settle(qtbot, pane)
    pane.select_patterns([first.id])
    qtbot.waitUntil(lambda: not pane.provenance.loading, timeout=30_000)
    title = pane.source_title
    assert "<answer> tags, <b>always</b>" in title.text()
    assert title.textFormat() == Qt.TextFormat.PlainText


def _legend_chart(qtbot, count: int) -> DecayChart:
    now = utcnow()
    xs, ys = decay_curves(
        [0.9] * count, [now - timedelta(days=d) for d in range(count)], now,
        now + timedelta(days=30), 0.95, GREY_POINTS,
    )  # fmt: skip
    chart = DecayChart()
    qtbot.addWidget(chart)
    chart.set_curves(list(range(1, count + 1)), list(xs), list(ys), [LONG_NAME] * count)
    chart.set_cutoff(xs[0], ys[0], 50)
    chart.show()
    qtbot.waitExposed(chart)
    return chart


def test_a_larger_chart_gives_the_names_back_and_a_drag_fills_the_legend_rarely(
    qtbot, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = _legend_chart(qtbot, len(CURVE_COLOURS) + 3)
    fills: list[int] = []
    fill = DecayChart._fill_legend
    monkeypatch.setattr(DecayChart, "_fill_legend", lambda c, n: (fills.append(n), fill(c, n)))
    for size in ((300, 200), (300, 1000), (1500, 200)):
        chart.resize(*size)
        QApplication.processEvents()
    assert chart.legend_labels()[0] == f"#1 {LONG_NAME[:29]}…"
    chart.resize(250, 330)
    QApplication.processEvents()
    fills.clear()
    for width in range(250, 2500, 22):  # a drag of about a hundred steps
        chart.resize(width, 330)
        QApplication.processEvents()
    assert len(fills) <= len(set(fills)) + 2, fills  # a fill when the names' length changes


@pytest.mark.parametrize("points", [6.0, 16.0])
def test_the_legend_is_laid_out_in_its_own_font_whatever_the_application_s(
    qtbot, points: float
) -> None:
    """The legend's labels are 8 pt at any application font. Its rows were estimated in
    the application's font (30 px a row at 16 pt, 15 at 6, where each is 21): a large
    font split a legend into more columns with shorter names than it needed, a small one
    let it cover more of the plot."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    default = app.font()

    def laid_out() -> tuple[int, list[str], float, float]:
        chart = _legend_chart(qtbot, len(CURVE_COLOURS) + 3)
        chart.resize(900, 420)
        qtbot.waitUntil(lambda: chart.width() == 900)
        QApplication.processEvents()
        first = chart.legend.layout.itemAt(0, 1).geometry()
        second = chart.legend.layout.itemAt(1, 1).geometry()
        pitch = second.top() - first.top()
        return chart.legend.columnCount, chart.legend_labels(), chart._legend_row_height(), pitch

    expected = laid_out()
    try:
        font = QFont(default)
        font.setPointSizeF(points)
        app.setFont(font)
        found = laid_out()
    finally:
        app.setFont(default)
    assert found == expected
    assert found[2] == found[3]


def test_grey_curves_that_do_not_match_the_ids_are_refused_before_anything_changes(
    qtbot,
) -> None:
    chart = _legend_chart(qtbot, len(CURVE_COLOURS) + 3)
    before = (chart.plotted_ids, chart.legend_labels())
    now = utcnow()
    xs, ys = decay_curves([0.5] * 5, [now] * 5, now, now + timedelta(days=9), 0.95, GREY_POINTS)
    ids = list(range(1, len(CURVE_COLOURS) + 6))
    n = len(CURVE_COLOURS)
    for grey in ((xs[:2], ys[:2]), (xs[:5], ys[:4]), (xs[:5, :-1], ys[:5])):
        with pytest.raises(ValueError, match="grey curves"):
            chart.set_curves(ids, list(xs[:0]) * 0 + [xs[0]] * n, [ys[0]] * n, grey=grey)
        assert (chart.plotted_ids, chart.legend_labels()) == before


def test_a_chart_deleted_right_after_a_resize_is_not_laid_out(qtbot) -> None:
    """The legend is laid out for a new size on the next turn of the event loop: a chart
    destroyed before then (its window closed) must not be reached."""
    chart = DecayChart()  # not the test's to close: it is gone before the end
    chart.show()
    qtbot.waitExposed(chart)
    chart.resize(900, 400)
    shiboken6.delete(chart)
    QApplication.processEvents()  # pytest-qt fails the test on an exception in a slot


_SIZES = st.tuples(st.integers(250, 1600), st.integers(200, 900))  # at least its minimum


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_SIZES, min_size=1, max_size=3))
@example([(1300, 330), (480, 260)])  # a window made narrower: the names shorten again
@example([(1300, 330), (420, 300)])
@example([(560, 280), (1100, 330)])
def test_a_resized_chart_has_the_legend_a_fresh_layout_gives(
    qtbot, sizes: list[tuple[int, int]]
) -> None:
    """Made narrower, the chart laid its legend out in one column of the same long names,
    down over "today": only a larger chart chose the names' length again. Whatever the
    sizes it went through, the legend is the one laid out afresh at its last size."""
    chart = _legend_chart(qtbot, len(CURVE_COLOURS) + 3)
    for size in sizes:
        chart.resize(*size)
        qtbot.waitUntil(lambda s=size: (chart.width(), chart.height()) == s)
        for _ in range(3):
            QApplication.processEvents()
    resized = (chart.legend.columnCount, chart.legend_labels())
    chart._rebuild_legend()
    assert resized == (chart.legend.columnCount, chart.legend_labels())

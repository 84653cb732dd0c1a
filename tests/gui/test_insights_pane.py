"""Insights pane: drawn from compute_insights, live what-if, apply/undo, cell -> Episodes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QStyle, QWidget

from curator.gui.insights.insights_pane import InsightsPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.pipeline.insights import compute_insights
from curator.store.db import Store
from curator.store.decay_clock import update_refreshes_decay
from curator.store.settings import load_settings
from tests.insights.conftest import Reviewed, build


@pytest.fixture
def reviewed_services(tmp_path: Path) -> Iterator[tuple[AppServices, Reviewed]]:
    store = Store(tmp_path / "insights.sqlite")
    reviewed = build(store)
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs()), reviewed
    store.close()


@pytest.fixture
def pane(qtbot, reviewed_services, show_pane) -> InsightsPane:
    services, _ = reviewed_services
    widget = InsightsPane(services)
    with qtbot.waitSignal(widget.loaded, timeout=20000):
        show_pane(widget)
    return widget


def test_pane_draws_the_computed_figures(pane: InsightsPane, reviewed_services) -> None:
    services, _ = reviewed_services
    expected = compute_insights(services.store)
    model = pane.label_model
    got = [[model.count(r, c) for c in range(3)] for r in range(3)]
    assert got == expected.labels.counts.tolist()
    assert model.data(model.index(1, 2)) == "2  (29%)"
    assert f"{expected.labels.kappa():.3f}" in pane.label_summary.text()
    assert pane.overrides.rowCount() == len(expected.overrides)
    assert "Nothing leaves the prompt while it has room" in pane.forecast_message.text()
    assert pane.forecast_rows.rowCount() == 3
    # the histogram's bars hold every reviewed candidate once
    total = sum(
        float(sum(bar.opts["y1"]) - sum(bar.opts["y0"])) for bar in pane.histogram.bars.values()
    )
    assert total == expected.gate.total


def test_models_pass_the_model_tester(qtmodeltester, pane: InsightsPane) -> None:
    for model in (pane.label_model, pane.gate_model, pane.overrides, pane.forecast_rows):
        qtmodeltester.check(model, force_py=True)


def test_dragging_a_line_shows_the_what_if_live(pane: InsightsPane) -> None:
    assert pane.insights is not None
    assert "0 of 6 proposals change" in pane.what_if_label.text()
    assert not pane.apply_button.isEnabled()
    pane.histogram.skip_line.setValue(0.99)
    pane.histogram.update_line.setValue(0.95)
    expected = pane.insights.what_if_at(0.99, 0.95)
    assert expected.changed > 0
    assert f"{expected.changed} of 6 proposals change" in pane.what_if_label.text()
    assert pane.apply_button.isEnabled()
    pane.histogram.update_line.setValue(0.995)  # above SKIP: refused
    assert not pane.apply_button.isEnabled()
    assert "must be above" in pane.what_if_label.text()


def test_apply_thresholds_saves_and_undo_restores(
    qtbot, pane: InsightsPane, reviewed_services
) -> None:
    services, _ = reviewed_services
    pane.histogram.skip_line.setValue(0.97)
    pane.histogram.update_line.setValue(0.8)
    with (
        qtbot.waitSignal(pane.thresholds_saved, timeout=20000),
        qtbot.waitSignal(pane.loaded, timeout=20000),
    ):
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert load_settings(services.store).skip_threshold == pytest.approx(0.97)
    assert load_settings(services.store).update_threshold == pytest.approx(0.8)
    assert pane.undo_button.isEnabled()
    # the write and the reload ran as the window's background operations
    assert len(pane.ops.job_thread_ids) >= 2
    assert threading.get_ident() not in pane.ops.job_thread_ids
    with (
        qtbot.waitSignal(pane.thresholds_saved, timeout=20000),
        qtbot.waitSignal(pane.loaded, timeout=20000),
    ):
        qtbot.mouseClick(pane.undo_button, Qt.MouseButton.LeftButton)
    assert load_settings(services.store).skip_threshold == pytest.approx(0.95)
    assert load_settings(services.store).update_threshold == pytest.approx(0.70)
    assert pane.histogram.skip == pytest.approx(0.95)


def test_clicking_a_cell_filters_the_episodes_pane(
    qtbot, reviewed_services, qsettings: QSettings
) -> None:
    services, reviewed = reviewed_services
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    pane = window.pane("insightsPane")
    assert isinstance(pane, InsightsPane)
    with qtbot.waitSignal(pane.loaded, timeout=20000):
        window.tabs.setCurrentWidget(pane)
    table = pane.label_table
    rect = table.visualRect(pane.label_model.index(1, 2))  # human noise, model uncategorized
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.tabs.currentWidget() is window.episodes_pane
    assert sorted(window.episodes_pane.model.ids) == reviewed.episode_ids[10:12]
    assert window.episodes_pane.ids_button.isVisible()
    qtbot.mouseClick(window.episodes_pane.ids_button, Qt.MouseButton.LeftButton)
    assert len(window.episodes_pane.model.ids) == len(reviewed.episode_ids)
    window.close()


def test_refresh_clock_checkbox_saves_the_setting(
    qtbot, pane: InsightsPane, reviewed_services
) -> None:
    services, _ = reviewed_services
    assert not pane.refresh_check.isChecked()
    with qtbot.waitSignal(pane.loaded, timeout=20000):
        pane.refresh_check.setChecked(True)
    assert update_refreshes_decay(services.store)
    assert pane.insights is not None and pane.insights.refresh_enabled
    assert "UPDATE refreshes the decay clock: on" in pane.forecast_message.text()


@pytest.mark.llm
def test_replay_button_adds_a_replay_run_without_touching_labels(
    qtbot, reviewed_services, show_pane
) -> None:
    from curator.gui.runtime.worker import LlmWorker
    from curator.pipeline.replay import ReplayResult

    services, _ = reviewed_services
    services.worker = LlmWorker(services)
    try:
        pane = InsightsPane(services)
        with qtbot.waitSignal(pane.loaded, timeout=20000):
            show_pane(pane)
        columns = "id, model_label, model_confidence, human_label, label, label_by, label_at"
        before = services.store.execute(f"SELECT {columns} FROM episode ORDER BY id")
        with (
            qtbot.waitSignal(services.worker.finished, timeout=180_000) as finished,
            qtbot.waitSignal(pane.loaded, timeout=180_000),
        ):
            qtbot.mouseClick(pane.replay_button, Qt.MouseButton.LeftButton)
        result = finished.args[0]
        assert isinstance(result, ReplayResult) and result.status == "done"
        assert result.replay.total == 16  # every human-labelled episode of the fixture
        assert services.store.execute(f"SELECT {columns} FROM episode ORDER BY id") == before
        assert pane.insights is not None
        assert [p.kind for p in pane.insights.series if p.run_id == result.run_id] == ["replay"]
        assert pane.replay_button.isEnabled()
    finally:
        services.worker.shutdown()


def test_replay_button_without_a_gold_set_says_so_and_loads_no_model(
    qtbot, services: AppServices, show_pane
) -> None:
    """The demo has no human label: the click is answered at once, by the worker's own
    check, with no model loaded and no run recorded."""
    from curator.gui.runtime.worker import LlmWorker
    from curator.pipeline.replay import NO_GOLD

    services.worker = LlmWorker(services)
    loaded: list[str] = []
    services.worker.model_loaded.connect(loaded.append)  # a load says so before its run
    try:
        pane = InsightsPane(services)
        with qtbot.waitSignal(pane.loaded, timeout=20000):
            show_pane(pane)
        with qtbot.waitSignal(services.worker.failed, timeout=20000) as failed:
            qtbot.mouseClick(pane.replay_button, Qt.MouseButton.LeftButton)
        assert failed.args == [NO_GOLD]
        assert loaded == []
        assert services.store.execute("SELECT count(*) FROM run")[0][0] == 0
        qtbot.waitUntil(pane.replay_button.isEnabled, timeout=5000)
    finally:
        services.worker.shutdown()


def _shown(qtbot, chart: QWidget) -> None:
    qtbot.addWidget(chart)
    chart.resize(500, 260)
    chart.show()
    qtbot.waitExposed(chart)


def test_agreement_chart_explains_itself_without_runs(qtbot) -> None:
    from datetime import UTC, datetime

    from curator.gui.insights.insights_charts import SeriesChart
    from curator.pipeline.insights import RunPoint

    chart = SeriesChart()
    _shown(qtbot, chart)
    chart.set_series([])
    assert chart.empty and chart.empty_label.isVisible()
    assert "No run has been scored yet" in chart.empty_label.text()
    assert not chart.getPlotItem().getAxis("left").isVisible()
    point = RunPoint(1, "classify", datetime(2026, 1, 2, tzinfo=UTC), "m", "v1", 12, 0.9, 0.7)
    chart.set_series([point])
    assert not chart.empty and chart.empty_label.isHidden()
    assert chart.getPlotItem().getAxis("left").isVisible()


def test_calibration_chart_explains_itself_without_pairs(qtbot) -> None:
    from curator.core.agreement import CalibrationBin
    from curator.gui.insights.insights_charts import ReliabilityChart

    chart = ReliabilityChart()
    _shown(qtbot, chart)
    empty_bins = [CalibrationBin(0.0, 0.5, 0, None, None), CalibrationBin(0.5, 1.0, 0, None, None)]
    chart.set_bins(empty_bins)
    assert chart.note.empty and chart.note.label.isVisible()
    assert "Nothing to calibrate yet" in chart.note.label.text()
    assert chart.note.label.geometry() == chart.rect()
    assert not chart.getPlotItem().getAxis("left").isVisible()
    assert not any(curve.isVisible() for curve in chart.getPlotItem().listDataItems())
    chart.set_bins([CalibrationBin(0.5, 1.0, 12, 0.8, 0.75)])
    assert not chart.note.empty and chart.note.label.isHidden()
    assert all(curve.isVisible() for curve in chart.getPlotItem().listDataItems())
    assert chart.getPlotItem().getAxis("left").isVisible()


@pytest.mark.parametrize("size", [(1400, 900), (800, 600)])
def test_every_matrix_header_fits_its_section(pane: InsightsPane, qtbot, size) -> None:
    """No header line of either matrix is cut, in the default window or a small one."""
    pane.resize(*size)
    for table in (pane.label_table, pane.gate_table):
        tabs = pane.sections
        (page,) = [i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(table)]
        tabs.setCurrentIndex(page)
        qtbot.waitUntil(table.isVisible)
        qtbot.wait(20)  # the layout settles on the next turn of the event loop
        model = table.model()
        for orientation, header, count in (
            (Qt.Orientation.Horizontal, table.horizontalHeader(), model.columnCount()),
            (Qt.Orientation.Vertical, table.verticalHeader(), model.rowCount()),
        ):
            for section in range(count):
                text = model.headerData(section, orientation)
                margin = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin)
                lines = text.split("\n")
                need = max(map(header.fontMetrics().horizontalAdvance, lines)) + 2 * margin
                room = (
                    header.sectionSize(section)
                    if orientation == Qt.Orientation.Horizontal
                    else header.width()
                )
                assert need <= room, f"{table.objectName()}: {text!r} needs {need} px, has {room}"

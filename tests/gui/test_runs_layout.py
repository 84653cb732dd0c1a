"""The Runs pane at 1024x700 and 1400 px: Model and Counts readable, the method shown.

Real window offscreen, on a database with a real classify run of the demo model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store

pytestmark = pytest.mark.llm


@pytest.fixture
def classified_services(classified_demo, tmp_path: Path) -> Iterator[AppServices]:
    store = Store(classified_demo.copy_to(tmp_path))
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    store.close()


@pytest.mark.parametrize("size", [(1024, 700), (1400, 900)])
def test_model_and_counts_columns_fit(
    qtbot, classified_services, qsettings: QSettings, size: tuple[int, int]
) -> None:
    window = MainWindow(classified_services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()  # the first show fits the window to the (800 px) screen
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    pane = window.pane("runsPane")
    assert isinstance(pane, RunsPane)
    window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.runs.rowCount() >= 1)
    view = pane.runs_view
    header = view.horizontalHeader()
    used = sum(header.sectionSize(i) for i in range(header.count()))
    assert used <= view.viewport().width()  # nothing pushed out of sight
    assert not view.horizontalScrollBar().isVisible()
    metrics = view.fontMetrics()
    model = pane.runs.column_index("Model")
    name = pane.runs.index(0, model).data()
    assert name and header.sectionSize(model) >= metrics.horizontalAdvance(name)
    counts = pane.runs.column_index("Counts")
    tooltip = pane.runs.index(0, counts).data(Qt.ItemDataRole.ToolTipRole)
    assert "classified 20" in tooltip  # the full counts, one per line
    assert header.sectionSize(counts) >= 150
    window.close()


def test_classify_run_shows_its_scoring_method(qtbot, classified_services, qsettings) -> None:
    window = MainWindow(classified_services, qsettings)
    qtbot.addWidget(window)
    pane = window.pane("runsPane")
    assert isinstance(pane, RunsPane)
    window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.runs.rowCount() >= 1)
    method = pane.runs.column_index("Method")
    assert pane.runs.index(0, method).data() == "exact"
    tooltip = pane.runs.index(0, method).data(Qt.ItemDataRole.ToolTipRole)
    assert "log-probabilities" in tooltip
    window.close()


def test_a_runs_gate_steps_are_not_counted_as_model_calls(
    qtbot, tmp_path: Path, qsettings: QSettings
) -> None:
    """An import of knowledge asks no model: its trace holds the quality and dedup gates'
    verdicts only, and the run's title said "2 LLM calls"."""
    import json

    from curator.pipeline.import_knowledge import import_knowledge
    from curator.store.demo import create_demo

    store = Store(tmp_path / "runs.sqlite")
    create_demo(store)
    seed = tmp_path / "patterns.json"
    seed.write_text(json.dumps(["Users who thank the agent by name come back within a day."]))
    run_id = import_knowledge(store, seed).run_id
    services = AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    pane = window.pane("runsPane")
    assert isinstance(pane, RunsPane)
    window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.runs.rowCount() >= 1)
    pane.runs_view.selectRow(pane.runs.find_row(lambda run: run.id == run_id))
    qtbot.waitUntil(lambda: f"Run #{run_id}</b>" in pane.run_title.text())
    assert "0 LLM calls" in pane.run_title.text(), pane.run_title.text()
    window.close()
    store.close()

"""The Insights pane's Learning tab: the curve, the empty state, the label sources."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from curator.gui.insights.insights_pane import InsightsPane
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.pipeline.insights import compute_insights
from curator.pipeline.labels import relabel
from curator.store.db import Store
from tests.insights.learning_data import build_learning

HUMANS = {"constitutional": 8, "noise": 9, "uncategorized": 7}
FEW = {"constitutional": 1, "noise": 3, "uncategorized": 5}


@pytest.fixture
def learning_services(tmp_path: Path) -> Iterator[AppServices]:
    store = Store(tmp_path / "learning.sqlite")
    yield AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    store.close()


def _pane(qtbot, services: AppServices, show_pane) -> InsightsPane:
    pane = InsightsPane(services)
    with qtbot.waitSignal(pane.loaded, timeout=20000):
        show_pane(pane)
    pane.sections.setCurrentWidget(pane.learning)
    assert pane.sections.tabText(pane.sections.currentIndex()) == "Learning"
    return pane


def test_the_tab_draws_the_curve_and_the_sources(
    qtbot, learning_services: AppServices, show_pane
) -> None:
    build_learning(learning_services.store, HUMANS)
    pane = _pane(qtbot, learning_services, show_pane)
    section = pane.learning
    expected = compute_insights(learning_services.store).learning_curve
    assert expected
    assert section.stack.currentWidget() is section.chart
    x, acc = section.chart.accuracy.getData()
    _, kappa = section.chart.kappa.getData()
    assert list(x) == [p["per_class"] for p in expected] == [3, 5]
    assert np.allclose(acc, [p["accuracy"] for p in expected])
    assert np.allclose(kappa, [p["kappa"] for p in expected])
    legend = section.chart.getPlotItem().legend
    assert [label.text for _, label in legend.items] == ["accuracy", "Cohen's κ"]
    text = section.sources_label.text()
    assert "Who decided the 36 labels shown" in text
    assert "a person <b>24</b>" in text and "the learned classifier <b>5</b>" in text
    assert "on 24 human labels" in section.accuracy_label.text()
    assert "for the point at 10 per label" in section.accuracy_label.text()


def test_empty_state_then_the_curve_after_more_labels(
    qtbot, learning_services: AppServices, show_pane
) -> None:
    store = learning_services.store
    ids = build_learning(store, FEW, unlabelled=12)
    pane = _pane(qtbot, learning_services, show_pane)
    section = pane.learning
    chart = section.chart
    assert section.stack.currentWidget() is section.empty_label
    assert section.empty_label.text() == (
        "Label 3 more constitutional and 1 more noise episodes to see the learning curve."
    )
    assert len(chart.accuracy.getData()[0] or []) == 0
    assert "It predicts once every label has at least 3" in section.accuracy_label.text()

    # unlabelled episodes follow the labelled ones, cycling constitutional, noise, ...
    unlabelled = ids[sum(FEW.values()) :]
    relabel(store, unlabelled[0:9:3], "constitutional")
    relabel(store, unlabelled[1:2], "noise")
    with qtbot.waitSignal(pane.loaded, timeout=20000):
        pane.refresh()
    assert pane.learning.chart is chart  # updated in place, not rebuilt
    assert section.stack.currentWidget() is chart
    assert list(chart.accuracy.getData()[0]) == [3]

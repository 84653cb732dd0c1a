"""Knowledge pane: the patterns table, provenance drill-down, and the decay chart."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from curator.core.scoring import rank_key
from curator.gui.decay_chart import DecayChart
from curator.gui.errors import Dialogs
from curator.gui.knowledge_pane import KnowledgePane
from curator.gui.services import AppServices
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


@pytest.fixture
def pane(qtbot, services: AppServices, show_pane) -> KnowledgePane:
    widget = KnowledgePane(services)
    show_pane(widget)
    return widget


def test_models_pass_modeltester(qtmodeltester, pane: KnowledgePane) -> None:
    assert pane.patterns.rowCount() == N_PATTERNS
    qtmodeltester.check(pane.patterns)
    pane.select_patterns([next(r.id for r in pane.pattern_rows() if r.sources)])
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
    assert pane.sources.rowCount() == 1
    assert "run(s) #" in pane.source_title.text()
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


def test_chart_plots_selected_as_one_item(pane: KnowledgePane) -> None:
    rows = pane.pattern_rows()
    chosen = [rows[0].id, rows[3].id, rows[9].id]
    pane.select_patterns(chosen)
    chart = pane.chart
    assert sorted(chart.plotted_ids) == sorted(chosen)
    _x, y = chart._curves.getData()
    assert np.isnan(y).sum() == len(chosen)  # three segments separated by NaN
    assert chart._curves.opts["connect"] == "finite"
    assert chart.highlighted == pane.current_id()
    # Curves start at 1.0 * importance at distillation and only decay.
    first = rows[0]
    assert y[0] == pytest.approx(first.importance)
    assert np.nanmax(np.diff(y[: np.argmax(np.isnan(y))])) <= 0
    # Top-K cut-off at the K-th pattern's effective importance now.
    assert pane.cutoff() == pytest.approx(rows[TOP_K - 1].effective)
    assert chart._cutoff.value() == pytest.approx(rows[TOP_K - 1].effective)
    assert chart._cutoff.isVisible()
    # The same plot items are reused for every update.
    items_before = list(chart.getPlotItem().items)
    pane.days_spin.setValue(120)
    pane.select_patterns([rows[1].id])
    assert list(chart.getPlotItem().items) == items_before
    assert chart.plotted_ids == [rows[1].id]


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

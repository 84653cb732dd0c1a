"""The Knowledge pane's decay chart with thousands of patterns selected (Ctrl+A).

In the real window, offscreen, for each selection size and each kind of knowledge
separately, against a baseline measured in the same run:

* **Ctrl+A**: select every pattern, deliver the events it causes and paint the chart.
* **hover**: move the crosshair to a point and paint what moved (the emphasised curve,
  the crosshair and its label), the median over a grid of points.
* **search**: only finding the curve nearest the mouse.

The baseline is the chart as it was: the grey curves in a translucent grey, uncached (Qt
outlines a translucent path clipped to the part being painted before it fills it), and
the search as ``np.interp`` of every curve on its own. The knowledge is distilled over
the last 60 days, or by one run 300 days ago (every curve decayed to nearly nothing:
one thin band along the bottom). Prints median milliseconds and before / now.
Run with QT_QPA_PLATFORM=offscreen.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pyqtgraph as pg
from bench_gui_responsiveness import close_window, open_window, settle
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication, QGraphicsItem

from curator.core.scoring import rank_key
from curator.gui.knowledge.decay_chart import _REST_COLOUR, DecayChart
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.store.db import Store

KINDS = {"last 60 days": (0.0, 60.0), "one run, 300 days ago": (300.0, 0.01)}
"""When the patterns were distilled: (days ago, over how many days)."""

PATTERN_SQL = (
    "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status, "
    "revision, created_at, updated_at) VALUES (?, ?, ?, ?, 'uncategorized', 'active', 1, ?, ?)"
)


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def build(path: Path, count: int, kind: tuple[float, float]) -> Store:
    ago, days = kind
    rng = random.Random(count)
    now = datetime.now(UTC)
    store = Store(path)
    rows = []
    for i in range(count):
        importance = round(rng.random(), 3)
        when = now - timedelta(days=ago + rng.uniform(0, days))
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
        text = f"pattern {i}: " + " ".join(
            rng.choice(("deploy", "reply", "note")) for _ in range(9)
        )
        rows.append((text, importance, stamp, rank_key(importance, when), stamp, stamp))
    with store.write():
        store.db.cursor().executemany(PATTERN_SQL, rows)
    return store


def as_before(chart: DecayChart) -> None:
    """The grey curves as they were: translucent and uncached."""
    chart._rest.setPen(pg.mkPen(color=(*_REST_COLOUR, 140), width=1))
    chart._rest.curve.setCacheMode(QGraphicsItem.CacheMode.NoCache)


def one_by_one(chart: DecayChart, x: float, y: float, tolerance: float) -> int:
    """The search as it was: every curve interpolated on its own."""
    best, best_dist = -1, tolerance
    for index, pid in enumerate(chart.plotted_ids):
        xs, ys = chart.curve(index)
        if xs.size == 0 or x < xs[0] or x > xs[-1]:
            continue
        dist = abs(float(np.interp(x, xs, ys)) - y)
        if dist <= best_dist:
            best, best_dist = pid, dist
    return best


def time_select_all(app: QApplication, pane: KnowledgePane) -> float:
    """Median ms of Ctrl+A: select every pattern, deliver its events, paint the chart."""
    times = []
    for _ in range(4):
        pane.table.clearSelection()
        app.processEvents()
        started = time.perf_counter()
        pane.table.selectAll()
        app.processEvents()
        pane.chart.viewport().repaint()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def time_hover(app: QApplication, chart: DecayChart, grid: list[QPointF]) -> float:
    """Median ms of a hover: the crosshair moved, what moved painted."""
    times = []
    for point in grid:
        started = time.perf_counter()
        chart.hover_at(point)
        app.processEvents()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def time_search(chart: DecayChart, grid: list[QPointF], before: bool) -> float:
    """Median ms of finding the curve nearest one point (as it was, or now)."""
    view = chart.getPlotItem().getViewBox()
    targets = [(view.mapSceneToView(p).x(), view.mapSceneToView(p).y()) for p in grid]

    def search_all() -> None:
        for x, y in targets:
            if before:
                one_by_one(chart, x, y, 0.05)
            else:
                chart._nearest(x, y, 0.05)

    return median_ms(search_all, 3) / len(targets)


def measure(app: QApplication, count: int, kind: tuple[float, float]) -> dict[str, list[float]]:
    """{what: [before ms, now ms]} for one selection size and kind of knowledge."""
    found: dict[str, list[float]] = {"Ctrl+A": [], "hover": [], "search": []}
    for before in (True, False):
        folder = Path(tempfile.mkdtemp(prefix="bench-decay-"))
        store = build(folder / "k.sqlite", count, kind)
        window = open_window(store, folder)
        settle(app, window, 0.5)
        pane = window.pane("knowledgePane")
        assert isinstance(pane, KnowledgePane)
        window.tabs.setCurrentWidget(pane)
        settle(app, window, 1.0)
        if before:
            as_before(pane.chart)
        found["Ctrl+A"].append(time_select_all(app, pane))
        area = pane.chart.getPlotItem().getViewBox().sceneBoundingRect()
        grid = [
            QPointF(area.left() + fx * area.width(), area.top() + fy * area.height())
            for fx in (0.15, 0.4, 0.65, 0.9)
            for fy in (0.2, 0.5, 0.8, 0.95)
        ]
        found["hover"].append(time_hover(app, pane.chart, grid))
        found["search"].append(time_search(pane.chart, grid, before))
        close_window(app, window)
        store.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,5000", help="selection sizes")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    print(f"{'knowledge':<22} {'selected':>8} {'what':<7} {'before ms':>10} {'now ms':>8} ratio")
    worst: dict[str, float] = {}
    for name, kind in KINDS.items():
        for count in (int(size) for size in args.sizes.split(",")):
            for what, (before, now) in measure(app, count, kind).items():
                ratio = before / now if now else float("inf")
                worst[what] = min(worst.get(what, ratio), ratio)
                print(
                    f"{name:<22} {count:>8,} {what:<7} {before:>10.1f} {now:>8.1f} {ratio:>5.1f}×"
                )
    print("worst ratio: " + ", ".join(f"{what} {ratio:.1f}×" for what, ratio in worst.items()))


if __name__ == "__main__":
    main()

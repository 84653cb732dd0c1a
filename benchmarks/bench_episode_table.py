"""How the Episodes table copes with 100,000 episodes (first paint and scrolling).

Creates a throw-away database of 100,000 episodes, opens the real Episodes pane
offscreen and measures:

* first paint: building the pane (the SQL id query and model reset), then ``grab()``
  (which fetches the first page of rows and paints it);
* scrolling to the end in 50 steps, each followed by a ``grab()`` (fetching the newly
  visible page when needed and painting).

Targets: first paint under 1 s, median scroll step under 50 ms. The numbers are printed
and written to ``benchmarks/RESULTS-episode-table.md``. Run with QT_QPA_PLATFORM=offscreen.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.runtime.services import AppServices
from curator.store.db import Store

EPISODES = 100_000
SCROLL_STEPS = 50
SOURCES = ("dm", "replies", "timeline", "scheduler", "system")
LABELS = (None, "constitutional", "noise", "uncategorized")
WORDS = (
    "memory", "agent", "reply", "thread", "kind", "tired",
    "build", "release", "weekend", "question", "note",
)  # fmt: skip


def fill(store: Store, count: int) -> float:
    """Bulk insert: one transaction, one executemany. Returns seconds taken."""
    rng = random.Random(7)
    rows = []
    for i in range(count):
        day = 1 + i % 28
        clock = f"{i % 24:02d}:{i % 60:02d}:00.{i % 1000000:06d}"
        stamp = f"2026-{1 + i % 12:02d}-{day:02d}T{clock}+00:00"
        label = LABELS[i % 4]
        text = f"episode {i}: " + " ".join(rng.choice(WORDS) for _ in range(30))
        rows.append(
            (
                f"bench-{i}",
                text,
                stamp,
                SOURCES[i % len(SOURCES)],
                "{}",
                stamp,
                label,
                None if label is None else round(rng.random(), 2),
                label,
                None if label is None else "model",
            )
        )
    started = time.perf_counter()
    with store.write():
        store.db.cursor().executemany(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at, "
            "model_label, model_confidence, label, label_by, classify_truncated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            rows,
        )
    return time.perf_counter() - started


def main() -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.sqlite")
        insert_s = fill(store, EPISODES)
        services = AppServices(store=store, db_path=store.path)

        started = time.perf_counter()
        pane = EpisodesPane(services)
        pane.resize(1400, 900)
        pane.show()
        pane.refresh()  # what the window does when the pane is first shown
        while pane.model.loading:  # above ASYNC_ABOVE episodes the id query runs in the background
            app.processEvents()
        pane.grab()
        first_paint = time.perf_counter() - started
        assert pane.model.rowCount() == EPISODES

        bar = pane.table.verticalScrollBar()
        steps: list[float] = []
        for step in range(1, SCROLL_STEPS + 1):
            t0 = time.perf_counter()
            bar.setValue(bar.maximum() * step // SCROLL_STEPS)
            pane.table.grab()
            steps.append(time.perf_counter() - t0)
        app.processEvents()
        last_id = pane.model.data(pane.model.index(EPISODES - 1, 0))
        assert last_id is not None

        started = time.perf_counter()
        pane.model.sort(1, Qt.SortOrder.AscendingOrder)
        while pane.model.loading:
            app.processEvents()
        pane.table.grab()
        resort = time.perf_counter() - started

        pages = pane.model.pages_fetched
        pane.close()
        store.close()

    median_ms = statistics.median(steps) * 1000
    max_ms = max(steps) * 1000
    lines = [
        "# Episodes table benchmark",
        "",
        f"{EPISODES:,} episodes, offscreen, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs.",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| bulk insert (one transaction) | {insert_s:.2f} s | — |",
        f"| first paint (id query + first page + grab) | {first_paint * 1000:.0f} ms | < 1000 ms |",
        f"| scroll step, median of {SCROLL_STEPS} | {median_ms:.1f} ms | < 50 ms |",
        f"| scroll step, max | {max_ms:.1f} ms | — |",
        f"| re-sort by source (SQL) + paint | {resort * 1000:.0f} ms | — |",
        f"| pages of 200 rows fetched in all | {pages} | — |",
        "",
        "Regenerate with `QT_QPA_PLATFORM=offscreen python benchmarks/bench_episode_table.py`.",
    ]
    report = "\n".join(lines) + "\n"
    print(report)
    out = Path(__file__).resolve().parent / "RESULTS-episode-table.md"
    out.write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Episodes pane learns from relabels: the "Uncertain first" queue with auto-advance,
and retraining on a background thread (debounced) while the window keeps running."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer

from curator.pipeline.labels import relabel
from curator.store.db import Store
from curator.store.models import Episode


@pytest.fixture
def store(classified_demo, tmp_path: Path):
    """The demo database with 20 episodes classified by the real demo model."""
    db = Store(classified_demo.copy_to(tmp_path))
    yield db
    db.close()


def _pane(main_window):
    main_window.tabs.setCurrentIndex(0)
    return main_window.episodes_pane


def _queue_order(store: Store) -> list[int]:
    rows = store.execute(
        "SELECT id FROM episode WHERE human_label IS NULL AND predicted_margin IS NOT NULL "
        "ORDER BY predicted_margin, id"
    )
    return [int(r[0]) for r in rows]


def test_uncertain_first_queue_auto_advances(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    pane.label_combo.setCurrentIndex(pane.label_combo.findData("uncertain"))
    order = _queue_order(store)
    assert len(order) == 20
    assert [pane.model.episode_id(r) for r in range(pane.model.rowCount())] == order
    pane.select_ids([order[0]])
    pane.table.setFocus()

    qtbot.keyClick(pane.table, Qt.Key.Key_N)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=10_000)
    assert Episode.get_by_id(order[0]).human_label == "noise"
    assert pane.model.rowCount() == 19
    assert pane.selected_ids() == [order[1]]  # the next most uncertain episode

    qtbot.keyClick(pane.table, Qt.Key.Key_U)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=10_000)
    assert Episode.get_by_id(order[1]).human_label == "uncategorized"
    assert pane.selected_ids() == [order[2]]
    pane.relearner.shutdown()


def test_retraining_runs_in_the_background_once_per_burst(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    ids = [int(e.id) for e in Episode.select(Episode.id).order_by(Episode.id).limit(9)]
    for label, chunk in zip(("noise", "uncategorized", "constitutional"), (0, 3, 6), strict=True):
        relabel(store, ids[chunk : chunk + 3], label)

    ticks = []
    ticker = QTimer()
    ticker.setInterval(0)
    ticker.timeout.connect(lambda: ticks.append(1))
    ticker.start()
    with qtbot.waitSignal(pane.relearner.finished, timeout=120_000) as blocker:
        for _ in range(3):  # a burst of relabels: one retrain
            pane.relearner.schedule()
    ticker.stop()
    report = blocker.args[0]
    assert report.trained and report.predicted == 20 - 9
    assert len(pane.relearner.job_thread_ids) == 1
    assert pane.relearner.job_thread_ids[0] != threading.get_ident()  # not the GUI thread
    assert ticks  # the event loop kept running meanwhile
    learned = Episode.select().where(Episode.predicted_by == "learned").count()
    assert learned == 20 - 9

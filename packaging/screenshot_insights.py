"""Screenshots of the Insights pane from a real run on the demo database.

Usage: ``QT_QPA_PLATFORM=offscreen python packaging/screenshot_insights.py docs/screenshots``

The demo model classifies the 40 oldest demo episodes through the window's worker; 20 of
them are then relabelled with the Episodes pane's keys (C / N / U) following the labels
in :data:`HUMAN` (read and chosen by a person from the episodes' text); the model distils
episodes; every proposal is then decided in the Review pane with its keys, accepting
some and overriding others (``3`` ADD, ``X`` reject), and the run is committed; finally
the Insights pane is grabbed on each of its tabs (1400x900). Run after
``packaging/screenshots.py``, which grabs the other panes (and would leave an Insights
shot without human labels).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from PySide6.QtCore import QEventLoop, QItemSelectionModel, QSettings, Qt
from PySide6.QtTest import QTest
from screenshots import review_settled

from curator.gui.app import create_application
from curator.gui.insights.insights_pane import InsightsPane
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.pipeline.commit import commit_run
from curator.store.db import Store
from curator.store.demo import create_demo

SIZE = (1400, 900)
CLASSIFY_LIMIT = 40
DISTILL_LIMIT = 40

# The human labels: logs, pings and spam are noise; what defines the agent's identity or
# values is constitutional; ordinary conversations worth remembering are uncategorized.
HUMAN = {
    "ep-0001": "noise",
    "ep-0002": "noise",
    "ep-0003": "constitutional",
    "ep-0004": "noise",
    "ep-0005": "noise",
    "ep-0006": "noise",
    "ep-0008": "noise",
    "ep-0009": "noise",
    "ep-0010": "uncategorized",
    "ep-0012": "noise",
    "ep-0014": "uncategorized",
    "ep-0015": "uncategorized",
    "ep-0016": "constitutional",
    "ep-0019": "noise",
    "ep-0020": "noise",
    "ep-0021": "constitutional",
    "ep-0022": "noise",
    "ep-0027": "uncategorized",
    "ep-0035": "noise",
    "ep-0038": "constitutional",
}
KEYS = {"constitutional": Qt.Key.Key_C, "noise": Qt.Key.Key_N, "uncategorized": Qt.Key.Key_U}


def _run(worker: LlmWorker, kind: str, limit: int) -> None:
    loop = QEventLoop()
    worker.finished.connect(loop.quit)

    def failed(message: str) -> None:
        print(f"{kind} failed: {message}", file=sys.stderr)
        loop.quit()

    worker.failed.connect(failed)
    started = worker.start_classify(limit) if kind == "classify" else worker.start_distill(limit)
    if not started:
        raise RuntimeError(f"the worker refused to start {kind}")
    loop.exec()
    worker.finished.disconnect(loop.quit)


def _relabel(window: MainWindow, store: Store) -> None:
    pane = window.episodes_pane
    window.tabs.setCurrentWidget(pane)
    pane.refresh()
    selection = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    for external, label in HUMAN.items():
        sql = "SELECT id FROM episode WHERE external_id = ?"
        (episode_id,) = store.execute(sql, (external,))[0]
        row = pane.model.row_of(int(episode_id))
        if row is None:
            continue
        selection.clearSelection()
        selection.select(pane.model.index(row, 0), flags)
        QTest.keyClick(pane.table, KEYS[label])
        window.services.ops.wait()  # one write at a time: the next key waits for this one
        QTest.qWait(50)


def _review(window: MainWindow) -> None:
    review = window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    window.tabs.setCurrentWidget(review)
    window.activateWindow()
    review.refresh()
    review.list_view.setFocus()
    review_settled(review)  # the candidates are read in the background
    for row in range(review.model.rowCount()):
        review.list_view.selectRow(row)
        proposal = review.model.rows()[row].proposed_action
        if row % 4 == 1:
            key = Qt.Key.Key_X  # reject: not worth keeping
        elif row % 4 == 3 and proposal != "ADD":
            key = Qt.Key.Key_3  # ADD although the gate saw a near-duplicate
        else:
            key = Qt.Key.Key_A  # accept the proposal
        QTest.keyClick(review.list_view, key)
        QTest.qWait(20)
    review_settled(review)  # the decisions are written in the background, in key order


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    app = create_application(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "demo.sqlite")
        create_demo(store)
        services = AppServices(store=store, db_path=Path("curator.sqlite"), dialogs=Dialogs())
        services.worker = LlmWorker(services)
        qsettings = QSettings(str(Path(tmp) / "window.ini"), QSettings.Format.IniFormat)
        window = MainWindow(services, qsettings)
        window.resize(*SIZE)
        window.show()
        QTest.qWait(100)
        _run(services.worker, "classify", CLASSIFY_LIMIT)
        _relabel(window, store)
        _run(services.worker, "distill", DISTILL_LIMIT)
        _review(window)
        (run_id,) = store.execute("SELECT id FROM run WHERE kind = 'distill' ORDER BY id DESC")[0]
        commit_run(store, int(run_id))  # what the Review pane's Commit does
        pane = window.pane("insightsPane")
        assert isinstance(pane, InsightsPane)
        loop = QEventLoop()
        pane.loaded.connect(loop.quit)
        window.tabs.setCurrentWidget(pane)
        pane.refresh()
        loop.exec()
        shots = (
            "insights.png",
            "insights-gate.png",
            "insights-forecast.png",
            "insights-learning.png",
        )
        for index, name in enumerate(shots):
            pane.sections.setCurrentIndex(index)
            if index == 1:  # show the what-if of a lower UPDATE threshold
                pane.histogram.update_line.setValue(0.30)
            QTest.qWait(200)
            path = out / name
            window.grab().save(str(path))
            print(path)
        window.close()
        store.close()
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))

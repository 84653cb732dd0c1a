"""Regenerate the README screenshots from the real window on the demo database.

Usage: ``QT_QPA_PLATFORM=offscreen python packaging/screenshots.py docs/screenshots``

A temporary database gets the demo data, a few episodes are relabelled the way a person
would (keys C/N on the Episodes table), the demo model classifies 40 episodes and distils
12 of them through the window's own worker thread (what the Runs pane's buttons do; a few
minutes on two CPU cores), four patterns are staged from a knowledge file (a reworded
demo pattern, an exact repeat and two new ones: a run to review whatever the model
distilled, so the Review screenshot does not depend on the model's output), an UPDATE is
decided in Review (a proposed one accepted with
`A`, else `2` and the target picker's nearest pattern) so its diff shows, and the main
window is grabbed at 1400×900 with each pane in front, then again at 1024×700 (into
``1024x700/``). Window state goes to a temporary ini file, never the user's settings.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QEventLoop, QItemSelectionModel, QSettings, Qt
from PySide6.QtTest import QTest

from curator.gui.app import create_application
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import PANES, MainWindow
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.demo import create_demo

SIZE = (1400, 900)
SMALL_SIZE = (1024, 700)
SMALL_FOLDER = "1024x700"
"""The same panes at a small laptop's screen size, in a folder of their own (the desktop
metadata lists only the full-size ones)."""
CLASSIFY_LIMIT = 40
DISTILL_LIMIT = 12


def _label_some(window: MainWindow) -> None:
    """Relabel a few rows through the real key handling, as a user would."""
    pane = window.episodes_pane
    selection = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    plan = (((1, 4), Qt.Key.Key_N), ((0, 2, 6), Qt.Key.Key_C), ((3,), Qt.Key.Key_U))
    for rows, key in plan:
        selection.clearSelection()
        for row in rows:
            selection.select(pane.model.index(row, 0), flags)
        QTest.keyClick(pane.table, key)


def _run(worker: LlmWorker, kind: str, limit: int) -> None:
    """Start a run on the worker thread and wait for its end in a local event loop."""
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


REVIEW_FILE = [
    # A demo pattern reworded (an UPDATE), one repeated word for word (a SKIP), two new.
    "Replies that include a concrete worked example draw more follow-up questions than "
    "abstract explanations do.",
    "Posts about local-model quantisation are answered by the same small group of four or "
    "five users.",
    "Threads that start with a screenshot of an error get a first answer twice as fast as "
    "threads that describe it in words.",
    "Users who thank the agent by name come back to the same thread within a day.",
]


def _stage_review_candidates(store: Store, folder: Path) -> None:
    """Stage :data:`REVIEW_FILE` as a run to review, the way `import-knowledge` does."""
    path = folder / "review.json"
    path.write_text(json.dumps(REVIEW_FILE), encoding="utf-8")
    report = import_knowledge(store, path)
    assert report.run_id is not None, report.describe()


def _settle(window: MainWindow) -> None:
    """Let background reads finish and their results reach the widgets."""
    window.services.ops.wait()
    QTest.qWait(100)


def review_settled(review: ReviewPane, timeout_s: float = 60.0) -> None:
    """Until no read or decision write of the Review pane is outstanding."""
    deadline = time.monotonic() + timeout_s
    QTest.qWait(50)
    while not review.settled and time.monotonic() < deadline:
        QTest.qWait(20)


def _review_an_update(review: ReviewPane) -> None:
    """Leave the Review pane on an UPDATE with its diff, decided as a reviewer would.

    A proposed UPDATE is accepted with `A`; when the run proposes none, `2` on the first
    candidate opens the target picker and its nearest pattern is chosen.
    """
    if review.model.rowCount() == 0:
        return
    row = review.model.find_row(lambda c: c.proposed_action == "UPDATE")
    review.list_view.selectRow(max(row, 0))
    if row >= 0:
        QTest.keyClick(review.list_view, Qt.Key.Key_A)
    else:
        row = 0
        QTest.keyClick(review.list_view, Qt.Key.Key_2)
        picker = review.target_dialog
        if picker is None:
            return
        for _ in range(100):  # the picker ranks the patterns off the GUI thread
            if picker.matches:
                break
            QTest.qWait(50)
        picker.ok.click()
    QTest.qWait(100)
    review.list_view.selectRow(row)


def _show_runs_and_review(window: MainWindow) -> None:
    runs = window.pane("runsPane")
    assert isinstance(runs, RunsPane)
    runs.refresh()
    _settle(window)  # the run list and traces load on a background connection
    if runs.runs.rowCount() > 0:
        runs.runs_view.selectRow(0)
        _settle(window)
        if runs.trace.rowCount() > 2:
            runs.trace_view.selectRow(2)
    review = window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    window.tabs.setCurrentWidget(review)  # shortcuts act on the visible pane only
    window.activateWindow()
    review.refresh()
    review.list_view.setFocus()
    review_settled(review)  # the candidates are read in the background
    _review_an_update(review)
    review_settled(review)  # and the decision written
    knowledge = window.pane("knowledgePane")
    assert isinstance(knowledge, KnowledgePane)
    knowledge.refresh()
    while knowledge.loading:  # the pane reads its patterns in the background
        QTest.qWait(20)
    selection = knowledge.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    for row in range(min(6, knowledge.patterns.rowCount())):
        selection.select(knowledge.patterns.index(row, 0), flags)


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
        _label_some(window)
        _run(services.worker, "classify", CLASSIFY_LIMIT)
        _run(services.worker, "distill", DISTILL_LIMIT)
        _stage_review_candidates(store, Path(tmp))
        _show_runs_and_review(window)
        (chat_id,) = store.execute(
            "SELECT id FROM episode WHERE messages IS NOT NULL ORDER BY timestamp DESC LIMIT 1"
        )[0]
        row = window.episodes_pane.model.row_of(int(chat_id))
        if row is not None:
            window.episodes_pane.table.selectRow(row)
        for size, folder in ((SIZE, out), (SMALL_SIZE, out / SMALL_FOLDER)):
            folder.mkdir(parents=True, exist_ok=True)
            window.resize(*size)
            QTest.qWait(300)
            for index, (_name, title, _cls) in enumerate(PANES):
                window.tabs.setCurrentIndex(index)
                _settle(window)  # a pane shown reads in the background (Settings: the model)
                path = folder / f"{title.lower()}.png"
                window.grab().save(str(path))
                print(path)
        window.close()  # shuts the worker down
        store.close()
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))

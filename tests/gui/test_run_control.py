"""Runs do what the user asked: one remembered limit, a question before a long run,
output and a running row while it runs, and a question before quitting mid-run.

The runs use the real llama.cpp with the real demo model (marker ``llm``) on a real
SQLite file; the window is the real one, offscreen, and its questions are answered by
clicking the real buttons of the real boxes.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.pipeline.eta import DEFAULT_FEATURES_S
from curator.pipeline.run_history import format_duration, pending_classify_count
from curator.store.db import Store
from curator.store.models import Episode, Run
from tests.gui.measured import record_measured_run

RUN_TIMEOUT_MS = 240_000


def _questions(dialogs: Dialogs) -> list[QMessageBox]:
    return [
        d for d in dialogs.shown if isinstance(d, QMessageBox) and d.objectName() == "confirmBox"
    ]


def _answer(qtbot, dialogs: Dialogs, yes: bool) -> str:
    """Wait for the question, click its real yes or no button; the question's text."""
    qtbot.waitUntil(lambda: bool(_questions(dialogs)))
    box = _questions(dialogs)[-1]
    text = box.text()
    name = "confirmButton" if yes else "confirmNo"
    (button,) = [b for b in box.buttons() if b.objectName() == name]
    button.click()
    return text


def _window(qtbot, services: AppServices, qsettings: QSettings) -> MainWindow:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def _runs(window: MainWindow) -> RunsPane:
    pane = window.pane("runsPane")
    assert isinstance(pane, RunsPane)
    return pane


# -- the limit ------------------------------------------------------------------------------


@pytest.mark.llm
def test_toolbar_classify_uses_the_runs_pane_limit(qtbot, llm_services, qsettings) -> None:
    """Limit 3, far short of the 203 pending episodes: a toolbar that ignored the pane's
    limit (it once ran them all) would classify more, and ask first."""
    window = _window(qtbot, llm_services, qsettings)
    _runs(window).limit_spin.setValue(3)
    worker = llm_services.worker
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        window.classify_action.trigger()
    result = finished.args[0]
    assert result.status == "done"
    assert result.counts["classified"] == 3
    assert Episode.select().where(Episode.model_run == result.run_id).count() == 3
    assert Run.get_by_id(result.run_id).params["limit"] == 3
    assert not _questions(llm_services.dialogs)  # 3 episodes: no question


def test_run_limit_survives_a_restart(qtbot, services, qsettings) -> None:
    first = MainWindow(services, qsettings)
    qtbot.addWidget(first)
    _runs(first).limit_spin.setValue(15)
    assert first.close()
    second = MainWindow(services, QSettings(qsettings.fileName(), QSettings.Format.IniFormat))
    qtbot.addWidget(second)
    assert _runs(second).limit_spin.value() == 15
    second.close()


# -- the question before a long run ---------------------------------------------------------


@pytest.mark.llm
def test_long_run_asks_with_count_and_measured_speed(qtbot, llm_services, qsettings) -> None:
    """203 pending demo episodes at a measured 10 s each (1,000 prompt tokens at 100 per
    second): about 34 min, so it asks; no."""
    store = llm_services.store
    record_measured_run(store, seconds_each=10.0)
    pending = pending_classify_count(store)
    runs_before = Run.select().count()
    window = _window(qtbot, llm_services, qsettings)
    assert window.start_classify()
    question = _answer(qtbot, llm_services.dialogs, yes=False)
    features = pending * DEFAULT_FEATURES_S  # the features phase, not measured here
    assert question.startswith(
        f"Classify {pending:,} episodes — about {format_duration(pending * 10 + features)} "
        f"({pending:,} model calls at 10 s each, then about {format_duration(features)} "
        "embedding them)?"
    )
    assert "Measured on this machine from this model's last 10 calls." in question
    qtbot.waitUntil(lambda: _runs(window).classify_button.isEnabled())
    assert not llm_services.worker.busy
    assert Run.select().count() == runs_before  # declined: nothing started, nothing written
    assert window.classify_action.isEnabled()


@pytest.mark.llm
def test_long_run_accepted_starts_it(qtbot, llm_services, qsettings) -> None:
    record_measured_run(llm_services.store, seconds_each=10.0)
    window = _window(qtbot, llm_services, qsettings)
    worker = llm_services.worker
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert window.start_classify()
        assert _answer(qtbot, llm_services.dialogs, yes=True).startswith("Classify ")
    assert worker.busy
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        window.cancel_run()
    assert finished.args[0].status == "cancelled"


# -- while it runs --------------------------------------------------------------------------


@pytest.mark.llm
def test_classify_output_shows_each_labelled_episode(qtbot, llm_services, qsettings) -> None:
    window = _window(qtbot, llm_services, qsettings)
    pane = _runs(window)
    pane.limit_spin.setValue(2)
    with qtbot.waitSignal(llm_services.worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        assert pane.start_classify()
    run_id = finished.args[0].run_id
    lines = pane.output.toPlainText().splitlines()
    labelled = list(Episode.select().where(Episode.model_run == run_id).order_by(Episode.id))
    assert len(lines) == 2 == len(labelled)
    for episode in labelled:
        assert any(line.startswith(f"#{episode.id} {episode.model_label} (") for line in lines)


@pytest.mark.llm
def test_running_run_is_listed_while_it_runs(qtbot, llm_services, qsettings) -> None:
    window = _window(qtbot, llm_services, qsettings)
    pane = _runs(window)
    window.tabs.setCurrentWidget(pane)
    worker = llm_services.worker
    seen: list[int] = []
    worker.progress.connect(lambda p: seen.append(p.done))
    assert pane.start_classify()  # every pending episode: minutes, cancelled below
    # A run that long may ask first (the estimate says how long); yes starts it.
    qtbot.waitUntil(lambda: worker.busy or bool(_questions(llm_services.dialogs)))
    if _questions(llm_services.dialogs):
        assert _answer(qtbot, llm_services.dialogs, yes=True).startswith("Classify ")
    qtbot.waitUntil(lambda: len(seen) > 0 and max(seen) >= 2, timeout=RUN_TIMEOUT_MS)
    status = pane.runs.column_index("Status")
    counts = pane.runs.column_index("Counts")

    def running_row() -> int:
        for row in range(pane.runs.rowCount()):
            if pane.runs.index(row, status).data() == "running":
                return row
        return -1

    qtbot.waitUntil(lambda: running_row() >= 0, timeout=10_000)
    qtbot.waitUntil(
        lambda: "classify " in (pane.runs.index(running_row(), counts).data() or ""),
        timeout=10_000,
    )
    assert worker.busy
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS):
        pane.cancel()
    qtbot.waitUntil(lambda: running_row() < 0)


@pytest.mark.llm
def test_distill_bar_moves_within_a_batch(qtbot, classified_demo, tmp_path, qsettings) -> None:
    """Each step and token of the first batch moves the bar (it used to sit at 0 %).

    Limit 3: the first batch is the classified demo's constitutional episodes, and no
    second batch follows that the test would only wait for."""
    store = Store(classified_demo.copy_to(tmp_path))
    services = AppServices(store=store, db_path=store.path, dialogs=Dialogs())
    services.worker = LlmWorker(services)
    try:
        window = _window(qtbot, services, qsettings)
        pane = _runs(window)
        pane.limit_spin.setValue(3)
        inside_first_batch: list[tuple[str, int]] = []

        def seen(progress) -> None:  # connected after the pane: its bar is already set
            if progress.done == 0 and progress.step in ("extract", "refine", "importance"):
                inside_first_batch.append((progress.step, pane.progress_bar.value()))

        services.worker.progress.connect(seen)
        with qtbot.waitSignal(services.worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
            assert window.start_distill()
        assert finished.args[0].status == "staged", finished.args[0].message
        steps = [step for step, _ in inside_first_batch]
        assert {"extract", "refine", "importance"} <= set(steps)
        values = [value for _, value in inside_first_batch]
        assert max(values) > 0 and len(set(values)) > 3
        text = pane.output.toPlainText()
        assert "── extract, batch 1/" in text and "── refine, batch 1/" in text
        window.close()
    finally:
        services.worker.shutdown()
        store.close()


# -- closing mid-run ------------------------------------------------------------------------


@pytest.mark.llm
def test_closing_mid_run_asks_and_no_keeps_the_run(qtbot, llm_services, qsettings) -> None:
    record_measured_run(llm_services.store, seconds_each=0.01)  # starts without a question
    window = _window(qtbot, llm_services, qsettings)
    worker = llm_services.worker
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert window.start_classify()
    assert not window.close()
    question = _answer(qtbot, llm_services.dialogs, yes=False)
    assert question == "A classify run is in progress: cancel it and quit?"
    assert window.isVisible() and worker.busy and worker.running

    assert not window.close()  # asks again; yes cancels the run and closes
    _answer(qtbot, llm_services.dialogs, yes=True)
    qtbot.waitUntil(lambda: not window.isVisible())
    assert not worker.running
    run = Run.select().where(Run.kind == "classify").order_by(Run.id.desc()).first()
    assert run.status == "cancelled"  # the run the window started (after the recorded one)


def test_closing_when_idle_asks_nothing(qtbot, services, qsettings) -> None:
    services.worker = LlmWorker(services)
    window = _window(qtbot, services, qsettings)
    assert window.close()
    assert not _questions(services.dialogs)


@pytest.mark.llm
def test_a_close_kept_open_by_unsaved_edits_asks_about_the_next_run_again(
    qtbot, llm_services, qsettings
) -> None:
    from tests.gui.questions import answer_question

    record_measured_run(llm_services.store, seconds_each=0.01)  # starts without a question
    window = _window(qtbot, llm_services, qsettings)
    worker = llm_services.worker
    identity = window.pane("identityPane")
    qtbot.waitUntil(lambda: not identity.loading)  # type: ignore[attr-defined]
    identity.identity_edit.setPlainText("An edit not saved yet.")  # type: ignore[attr-defined]
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert window.start_classify()
    assert not window.close()
    asked = answer_question(llm_services, "Keep editing")  # the identity's question, next
    _answer(qtbot, llm_services.dialogs, yes=True)  # cancel the run and quit...
    qtbot.waitUntil(lambda: bool(asked))  # ...but the unsaved identity keeps the window
    assert window.isVisible()
    qtbot.waitUntil(lambda: not worker.busy, timeout=RUN_TIMEOUT_MS)

    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert window.start_classify()
    before = len(_questions(llm_services.dialogs))
    assert not window.close()  # before: closed without a word about this second run
    qtbot.waitUntil(lambda: len(_questions(llm_services.dialogs)) > before)
    _answer(qtbot, llm_services.dialogs, yes=False)
    assert window.isVisible() and worker.busy
    answer_question(llm_services, "Discard edits")
    _answer_later = window.close()  # asks about the run again: yes, then the edits
    assert not _answer_later
    _answer(qtbot, llm_services.dialogs, yes=True)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=RUN_TIMEOUT_MS)


@pytest.mark.llm
def test_closing_again_after_keep_running_asks_again_without_crashing(
    qtbot, llm_services, qsettings
) -> None:
    """The answered question deletes itself; asking it a second time once that happened
    used to touch the deleted box (a segmentation fault, the whole process gone)."""
    record_measured_run(llm_services.store, seconds_each=0.01)  # starts without a question
    window = _window(qtbot, llm_services, qsettings)
    worker = llm_services.worker
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert window.start_classify()
    assert not window.close()
    _answer(qtbot, llm_services.dialogs, yes=False)
    qtbot.waitUntil(lambda: not _questions(llm_services.dialogs))
    qtbot.wait(100)  # the user works on: the answered box is deleted meanwhile
    assert not window.close()
    _answer(qtbot, llm_services.dialogs, yes=True)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=RUN_TIMEOUT_MS)


def test_a_failed_run_is_said_in_one_dialog(qtbot, services, qsettings) -> None:
    """The window's dialog and the Runs pane's own box both said a failed run: two
    dialogs, one on the other. (A replay without a gold set fails at once, no model.)"""
    from PySide6.QtWidgets import QLabel

    from curator.pipeline.replay import NO_GOLD

    services.worker = LlmWorker(services)
    try:
        window = _window(qtbot, services, qsettings)
        insights = window.pane("insightsPane")
        window.tabs.setCurrentWidget(insights)
        with qtbot.waitSignal(services.worker.failed, timeout=20_000):
            insights.replay_button.click()  # type: ignore[attr-defined]
        qtbot.wait(200)  # every queued slot of the signal has run

        def says(dialog: object) -> bool:
            texts = [label.text() for label in dialog.findChildren(QLabel)]  # type: ignore[attr-defined]
            return any(NO_GOLD in text for text in texts)

        assert len([d for d in services.dialogs.shown if says(d)]) == 1
        assert "failed" in window.run_label.text()
        assert window.statusBar().currentMessage() == ""  # no "Replaying…" left
    finally:
        services.worker.shutdown()

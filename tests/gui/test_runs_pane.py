"""Runs pane + LLM worker with the real demo model: progress, cancel, shutdown, no GUI stall.

All of these run the real llama.cpp on the real demo model file (marker ``llm``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer

from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.widgets.errors import Dialogs
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Episode, Run, TraceStep
from curator.store.settings import set_setting
from tests.gui.measured import record_measured_run

pytestmark = [
    pytest.mark.llm,
    pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints"),
]

RUN_TIMEOUT_MS = 180_000


@pytest.fixture
def services(tmp_path: Path) -> Iterator[AppServices]:
    store = Store(tmp_path / "runs.sqlite")
    create_demo(store)
    record_measured_run(store, seconds_each=0.01)  # runs of every episode start unasked
    services = AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    services.worker = LlmWorker(services)
    yield services
    services.worker.shutdown()
    store.close()


@pytest.fixture
def pane(qtbot, services: AppServices, show_pane) -> RunsPane:
    widget = RunsPane(services)
    show_pane(widget)
    return widget


SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _runqueue_wait_s() -> float:
    """Seconds this thread has spent ready to run but waiting for a core (Linux's
    schedstat; 0.0 where the kernel does not say)."""
    try:
        return int(SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class GapMeter:
    """Ticks a 20 ms QTimer on the GUI thread and records the longest gap between ticks
    that the GUI thread itself caused: the time it spent waiting for a core (the other
    test workers hold both) is taken out, since a busy machine delays a thread that does
    nothing. Work on the GUI thread, or a wait for a lock or a reply there, still counts
    (the thread is running, or asleep, not waiting for a core); one run saw a 270 ms gap
    that was the machine's."""

    def __init__(self) -> None:
        self.timer = QTimer()
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._tick)
        self.last = 0.0
        self.last_wait = 0.0
        self.max_gap = 0.0
        self.max_wall_gap = 0.0
        self.ticks = 0

    def start(self) -> None:
        self.last, self.last_wait = time.perf_counter(), _runqueue_wait_s()
        self.timer.start()

    def _tick(self) -> None:
        now, wait = time.perf_counter(), _runqueue_wait_s()
        self.max_wall_gap = max(self.max_wall_gap, now - self.last)
        self.max_gap = max(self.max_gap, (now - self.last) - (wait - self.last_wait))
        self.last, self.last_wait = now, wait
        self.ticks += 1

    def stop(self) -> None:
        self.timer.stop()


def test_classify_from_button_streams_progress_and_trace(qtbot, pane: RunsPane) -> None:
    """Three episodes: progress streams after each, and each leaves a trace row."""
    worker = pane.worker
    pane.limit_spin.setValue(3)
    progress: list[object] = []
    worker.progress.connect(progress.append)
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as finished:
        qtbot.mouseClick(pane.classify_button, Qt.MouseButton.LeftButton)
        assert not pane.classify_button.isEnabled()  # counting the episodes, then running
        qtbot.waitUntil(lambda: worker.busy, timeout=RUN_TIMEOUT_MS)
        assert pane.cancel_button.isEnabled()
    result = finished.args[0]
    assert result.status in ("done", "committed", "staged")
    assert progress and progress[-1].done == progress[-1].total == 3
    assert not worker.busy and pane.classify_button.isEnabled()
    assert pane.progress_bar.value() == pane.progress_bar.maximum()
    qtbot.waitUntil(lambda: pane.selected_run_id() == result.run_id)
    qtbot.waitUntil(lambda: pane.trace.rowCount() >= 3)
    assert pane.trace.rowCount() == TraceStep.select().where(TraceStep.run == result.run_id).count()
    assert pane.trace.rowCount() >= 3
    assert "loaded" in pane.model_label.text().lower()
    labelled = Episode.select().where(Episode.model_run == result.run_id).count()
    assert labelled == 3


def test_models_pass_modeltester(qtbot, qtmodeltester, pane: RunsPane) -> None:
    pane.limit_spin.setValue(2)
    with qtbot.waitSignal(pane.worker.finished, timeout=RUN_TIMEOUT_MS):
        pane.start_classify()
    qtbot.waitUntil(lambda: pane.runs.rowCount() >= 1 and pane.trace.rowCount() >= 1)
    qtmodeltester.check(pane.runs)
    qtmodeltester.check(pane.trace)
    pane.trace_view.selectRow(0)
    assert pane.raw_output.toPlainText()


def test_gui_thread_never_blocked_during_a_run(qtbot, pane: RunsPane) -> None:
    """The issue's requirement: no gap over 200 ms on the GUI thread, model load included."""
    meter = GapMeter()
    pane.limit_spin.setValue(5)
    meter.start()
    with qtbot.waitSignal(pane.worker.finished, timeout=RUN_TIMEOUT_MS):
        assert pane.start_classify()
    meter.stop()
    print(
        f"longest GUI-thread gap during the run: {meter.max_gap * 1000:.0f} ms "
        f"({meter.max_wall_gap * 1000:.0f} ms with the waits for a core)"
    )
    assert meter.ticks > 10
    assert meter.max_gap < 0.200, f"GUI thread blocked for {meter.max_gap * 1000:.0f} ms"


def test_cancel_stops_the_run(qtbot, pane: RunsPane) -> None:
    worker = pane.worker
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert pane.start_classify()  # every pending episode: far more than a few seconds
    with qtbot.waitSignal(worker.finished, timeout=60_000) as finished:
        qtbot.mouseClick(pane.cancel_button, Qt.MouseButton.LeftButton)
    result = finished.args[0]
    assert result.status == "cancelled"
    assert Run.get_by_id(result.run_id).status == "cancelled"
    assert not worker.busy
    # The worker is still usable after a cancel.
    pane.limit_spin.setValue(1)
    with qtbot.waitSignal(worker.finished, timeout=RUN_TIMEOUT_MS) as again:
        assert pane.start_classify()
    assert again.args[0].status != "cancelled"


def test_shutdown_mid_run_joins_cleanly(qtbot, pane: RunsPane, services: AppServices) -> None:
    worker = services.worker
    with qtbot.waitSignal(worker.progress, timeout=RUN_TIMEOUT_MS):
        assert pane.start_classify()
    pane.close()
    started = time.perf_counter()
    worker.shutdown()
    print(f"shutdown mid-run took {(time.perf_counter() - started) * 1000:.0f} ms")
    # Generous: cancelling waits for the current llama.cpp decode, slow on a busy CPU.
    assert time.perf_counter() - started < 60.0
    assert not worker.running
    assert not worker.start_classify(1)  # a stopped worker refuses new work
    worker.shutdown()  # idempotent


def test_bad_model_file_reports_failure_and_stays_alive(
    qtbot, pane: RunsPane, services: AppServices, tmp_path: Path
) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    set_setting(services.store, "model_path", str(bad))
    shown: list[tuple[str, str]] = []
    pane.show_message = lambda title, text: shown.append((title, text))
    pane.limit_spin.setValue(1)  # short: an unmeasured model's long run would ask first
    with qtbot.waitSignal(services.worker.failed, timeout=RUN_TIMEOUT_MS):
        assert pane.start_classify()
    assert shown == []  # the bar says it here; the window shows the one dialog
    assert pane.run_progress.label.text().startswith("Failed: ")
    assert not services.worker.busy and services.worker.running
    assert pane.classify_button.isEnabled()

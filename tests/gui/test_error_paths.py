"""No data-dependent exception takes the window down: every one becomes a dialog.

A pane that cannot show its data, a slot raising on the worker thread, a Python thread
raising, and a worker job failing all end with an error dialog on the GUI thread while the
window (and the worker thread) live on. Before, an unreadable timestamp made the window's
constructor raise, and the process aborted with "QThread: Destroyed while thread is still
running".
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
from PySide6.QtCore import QObject, QThread, Signal, Slot
from PySide6.QtWidgets import QApplication

from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import ErrorDialog, install_excepthook, restore_excepthook
from curator.gui.window.main_window import MainWindow


def _error_dialogs(services: AppServices) -> list[ErrorDialog]:
    return [d for d in services.dialogs.shown if isinstance(d, ErrorDialog)]


def test_a_pane_that_cannot_read_its_data_is_a_dialog_and_the_window_lives(
    qtbot, services: AppServices, qsettings
) -> None:
    # Real damage, no double: times no reader understands (another tool wrote them).
    services.store.execute(
        "UPDATE episode SET timestamp = 'yesterday' WHERE id = (SELECT min(id) FROM episode)"
    )
    services.store.execute(
        "UPDATE pattern SET distilled_at = 'last week' WHERE id = (SELECT min(id) FROM pattern)"
    )
    window = MainWindow(services, qsettings)  # before: ValueError out of the constructor
    qtbot.addWidget(window)
    window.show()
    episodes = window.episodes_pane
    assert episodes.model.rowCount() == services.store.execute("SELECT count(*) FROM episode")[0][0]
    assert not _error_dialogs(services)

    window.tabs.setCurrentWidget(window.pane("knowledgePane"))  # its reload fails
    qtbot.waitUntil(lambda: bool(_error_dialogs(services)))  # it reads in the background
    dialogs = _error_dialogs(services)
    assert len(dialogs) == 1 and "last week" in dialogs[0].message
    assert window.isVisible()
    window.tabs.setCurrentWidget(window.pane("identityPane"))  # the other panes still work
    window.tabs.setCurrentWidget(episodes)
    assert window.isVisible()
    window.close()


class _FaultInjectionObject(QObject):
    """Fault injection: an object on a worker QThread whose slot raises, as a bug would."""

    poke = Signal()

    @Slot()
    def explode(self) -> None:
        raise RuntimeError("injected fault on the worker thread")


@pytest.mark.qt_no_exception_capture
def test_a_slot_raising_on_a_worker_thread_is_a_dialog_on_the_gui_thread(
    qtbot, main_window: MainWindow, services: AppServices
) -> None:
    previous = install_excepthook(services.dialogs, lambda: main_window)
    thread = QThread()
    victim = _FaultInjectionObject()
    victim.moveToThread(thread)
    victim.poke.connect(victim.explode)
    thread.start()
    try:
        victim.poke.emit()  # queued: the slot runs on the worker thread
        qtbot.waitUntil(lambda: bool(_error_dialogs(services)), timeout=5000)
    finally:
        thread.quit()
        thread.wait()
        restore_excepthook(previous)
    dialog = _error_dialogs(services)[-1]
    assert dialog.message == "RuntimeError: injected fault on the worker thread"
    app = QApplication.instance()
    assert app is not None and dialog.thread() is app.thread()
    assert main_window.isVisible()


@pytest.mark.qt_no_exception_capture
def test_a_python_thread_raising_is_a_dialog(
    qtbot, main_window: MainWindow, services: AppServices
) -> None:
    previous = install_excepthook(services.dialogs, lambda: main_window)

    def fault_injection() -> None:
        raise ValueError("injected fault in a Python thread")

    try:
        worker = threading.Thread(target=fault_injection)
        worker.start()
        worker.join()
        qtbot.waitUntil(lambda: bool(_error_dialogs(services)), timeout=5000)
    finally:
        restore_excepthook(previous)
    assert _error_dialogs(services)[-1].message == "ValueError: injected fault in a Python thread"
    assert sys.excepthook is previous
    assert main_window.isVisible()


def test_a_failing_worker_job_is_a_dialog_and_the_worker_carries_on(
    qtbot, services: AppServices, qsettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import curator.llm.llama_cpp_backend as backend_module
    from curator.gui.runtime.worker import LlmWorker

    def fault_injection_load_backend(settings: Any) -> Any:
        raise OverflowError("injected fault while loading the model")

    monkeypatch.setattr(backend_module, "load_backend", fault_injection_load_backend)
    services.worker = LlmWorker(services)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(services.worker.failed, timeout=30_000):
        assert services.worker.start_classify(1)
    qtbot.waitUntil(lambda: bool(_error_dialogs(services)), timeout=5000)
    assert "injected fault while loading the model" in _error_dialogs(services)[-1].message
    assert window.isVisible() and services.worker.running and not services.worker.busy
    # the same worker takes the next job
    with qtbot.waitSignal(services.worker.failed, timeout=30_000):
        assert services.worker.start_distill(1)
    window.close()
    assert not services.worker.running


def test_a_run_history_that_cannot_be_read_is_named_in_words(
    qtbot, services: AppServices, qsettings
) -> None:
    # Real damage, no double: a start time no reader understands (another tool wrote it).
    services.store.execute(
        "INSERT INTO run (kind, status, status_reason, started_at, model_path, model_name, "
        "model_sha256, model_metadata, params, prompts, stats) VALUES ('classify', "
        "'completed', '', 'yesterday', 'm.gguf', 'm', '', '{}', '{}', '{}', '{}')"
    )
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    window.tabs.setCurrentWidget(window.pane("runsPane"))  # its list loads in the background
    qtbot.waitUntil(lambda: services.ops.pending == 0 and bool(services.dialogs.shown))
    titles = [d.windowTitle() for d in services.dialogs.shown]
    texts = [getattr(d, "message", None) or d.text() for d in services.dialogs.shown]
    assert titles == ["Runs"]  # before: the query's key, "runs-list", as the title
    assert texts[0].startswith("The run history could not be read: ")
    assert "yesterday" in texts[0]
    assert window.isVisible()
    window.close()

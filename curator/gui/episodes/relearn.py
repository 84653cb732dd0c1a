"""Retraining the learned classifier in the background after relabels.

Relabels come in bursts (C, C, N, U... one key per episode), so a retrain is scheduled
with a short debounce and runs once the burst pauses. It runs on its own thread (the
database reads, the fit and the writes of every prediction), never on the GUI thread;
a relabel during a retrain schedules one more retrain after it, so the last labels are
always the ones learned from. ``shutdown`` waits for a running retrain (milliseconds to
a second) so the window never closes under it.
"""

from __future__ import annotations

import contextlib
import threading

from PySide6.QtCore import QObject, QTimer, Signal

from curator.pipeline.learn import LearnReport, relearn
from curator.pipeline.runlog import one_line
from curator.store.db import Store

DEBOUNCE_MS = 1200


class Relearner(QObject):
    """Debounced background retraining; ``finished`` carries the :class:`LearnReport`."""

    finished = Signal(object)
    failed = Signal(str)
    _done = Signal(object, object)  # (report | None, error text | None), from the job thread

    def __init__(
        self, store: Store, parent: QObject | None = None, *, delay_ms: int = DEBOUNCE_MS
    ) -> None:
        super().__init__(parent)
        self.store = store
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(delay_ms)
        self._timer.timeout.connect(self._start)
        self._thread: threading.Thread | None = None
        self._again = False
        self._closed = False
        self.job_thread_ids: list[int] = []
        """Thread ident of every retrain (tests check it is never the GUI thread)."""
        self._done.connect(self._on_done)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def schedule(self) -> None:
        """Retrain once relabelling pauses for the debounce interval."""
        if not self._closed:
            self._timer.start()

    def _start(self) -> None:
        if self._closed:
            return
        if self._thread is not None:
            self._again = True
            return
        self._thread = threading.Thread(target=self._job, name="relearn", daemon=True)
        self._thread.start()

    def _job(self) -> None:
        self.job_thread_ids.append(threading.get_ident())
        try:
            report: LearnReport | None = relearn(self.store)
            error = None
        except Exception as exc:  # reported in the window, never raised into Qt
            report, error = None, one_line(exc)
        finally:
            self.store.hand_back()  # this thread's own connection (kept for the next job)
        with contextlib.suppress(RuntimeError):  # the pane was deleted: nobody waits
            self._done.emit(report, error)

    def _on_done(self, report: object, error: object) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if error is not None:
            self.failed.emit(str(error))
        else:
            self.finished.emit(report)
        if self._again and not self._closed:
            self._again = False
            self._start()

    def shutdown(self) -> None:
        self._closed = True
        self._timer.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

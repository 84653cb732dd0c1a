"""The LLM worker: ONE long-lived thread that owns the model and runs the pipelines.

Loading a GGUF model and generating tokens take seconds to minutes, so none of it may
happen on the GUI thread. Like Anki's task manager, every LLM run is serialised on a
single worker thread; like Orange's ``TaskState``, the work function is a plain pipeline
function (no Qt inside) that reports through callbacks and polls a cancel flag.

Two objects split the roles:

* :class:`LlmWorker` lives on the GUI thread. Panes call its methods and connect to its
  signals; it never blocks (except :meth:`shutdown`, which joins the thread on exit).
* ``_Engine`` is moved to the worker ``QThread``. It loads the backend lazily on that
  thread (the first run, or when the model settings changed) and runs the pipeline. Its
  callbacks emit signals, which Qt delivers to the GUI thread as queued events.

Tokens arrive far faster than a text widget should repaint, so the engine coalesces them
and emits at most one ``token`` batch every :data:`TOKEN_FLUSH_S` seconds; progress
updates of the same step are throttled the same way. Cancelling sets the ``TaskState``
flag, which the pipeline checks between tokens: the run stops within one token and is
recorded as cancelled.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from curator.errors import CuratorError
from curator.pipeline.progress import TaskState
from curator.store.db import Store

log = logging.getLogger(__name__)

TOKEN_FLUSH_S = 0.05
"""At most one ``token`` signal per 50 ms: the GUI thread repaints in batches."""

PROGRESS_FLUSH_S = 0.1
"""Progress of the same step at most every 100 ms (a new step or item is sent at once)."""

SHUTDOWN_WAIT_MS = 5_000
"""Closing the window logs a note every 5 s while the current model call finishes."""


class _Engine(QObject):
    """Lives on the worker thread: owns the backend and runs one pipeline at a time."""

    progress = Signal(object)
    token = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    model_loaded = Signal(str)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self._store = store
        self._backend: Any = None
        self._backend_settings: Any = None
        self._tokens: list[str] = []
        self._last_token_emit = 0.0
        self._last_progress: Any = None
        self._last_progress_emit = 0.0
        self._pending_progress: Any = None

    # -- callbacks (called by the pipeline on this thread) ----------------------------------

    def _on_token(self, text: str) -> None:
        self._tokens.append(text)
        now = time.monotonic()
        if now - self._last_token_emit >= TOKEN_FLUSH_S:
            self._flush_tokens(now)

    def _flush_tokens(self, now: float | None = None) -> None:
        if self._tokens:
            self.token.emit("".join(self._tokens))
            self._tokens.clear()
        self._last_token_emit = time.monotonic() if now is None else now

    def _on_progress(self, progress: Any) -> None:
        now = time.monotonic()
        last = self._last_progress
        changed = (
            last is None
            or getattr(last, "step", None) != getattr(progress, "step", None)
            or getattr(last, "done", None) != getattr(progress, "done", None)
        )
        if changed or now - self._last_progress_emit >= PROGRESS_FLUSH_S:
            self._flush_tokens(now)  # the output of the step before comes first
            self._emit_progress(progress, now)
        else:
            self._pending_progress = progress

    def _emit_progress(self, progress: Any, now: float) -> None:
        self._last_progress = progress
        self._last_progress_emit = now
        self._pending_progress = None
        self.progress.emit(progress)

    # -- slots (queued from the GUI thread) -------------------------------------------------

    @Slot(str, object, object)
    def run(self, kind: str, limit: int | None, state: TaskState) -> None:
        """Run ``kind`` ("classify" | "distill" | "replay") with the shared ``TaskState``."""
        self._tokens.clear()
        self._last_progress = None
        self._pending_progress = None
        result: object
        try:
            if kind == "replay":  # no gold set: said at once, no model loaded for it
                from curator.pipeline.replay import require_gold

                require_gold(self._store)
            backend = self._ensure_backend()
            if kind == "classify":
                from curator.pipeline.classify import classify_episodes

                result = classify_episodes(self._store, backend, state, limit=limit)
            elif kind == "distill":
                from curator.pipeline.distill import distill

                result = distill(self._store, backend, state, limit=limit)
            elif kind == "replay":  # the gold set again, stored labels untouched
                from curator.pipeline.replay import replay_labels

                result = replay_labels(self._store, backend, state, limit=limit)
            else:
                raise CuratorError(f"unknown run kind {kind!r}")
        except CuratorError as exc:
            self._flush_tokens()
            self.failed.emit(str(exc))
            return
        except Exception as exc:  # any failure must reach the window, never kill the thread
            log.exception("%s run failed", kind)
            self._flush_tokens()
            self.failed.emit(f"{type(exc).__name__}: {exc}")
            return
        finally:
            self._store.close()  # this thread's connection; reopened on the next run
        self._flush_tokens()
        if self._pending_progress is not None:
            self._emit_progress(self._pending_progress, time.monotonic())
        self.finished.emit(result)

    def _ensure_backend(self) -> Any:
        """The loaded backend for the current settings (loaded here, on the worker thread)."""
        from curator.llm.backend import backend_settings
        from curator.llm.llama_cpp_backend import load_backend
        from curator.llm.model_file import ModelFileError, resolve_model_path
        from curator.llm.server_choice import choose_server
        from curator.store.settings import load_settings

        saved = load_settings(self._store)
        server = choose_server(saved.backend, saved.server_url, saved.server_model)
        if server is not None:  # a model server (Settings or $CURATOR_SERVER)
            wanted = (server, saved.n_ctx)
            if self._backend is None or wanted != self._backend_settings:
                self._release_backend()
                self._backend = server.open(saved.n_ctx)
                self._backend_settings = wanted
                self.model_loaded.emit(self._backend.offload)
            return self._backend
        try:
            model_path = resolve_model_path(None, saved.model_path)
        except ModelFileError as exc:
            raise CuratorError(str(exc)) from exc
        settings = backend_settings(saved, model_path)
        if self._backend is not None and settings == self._backend_settings:
            return self._backend
        self._release_backend()
        try:
            self._backend = load_backend(settings)
        except ModelFileError as exc:
            raise CuratorError(str(exc)) from exc
        self._backend_settings = settings
        self.model_loaded.emit(self._backend.offload)
        return self._backend

    def _release_backend(self) -> None:
        backend, self._backend, self._backend_settings = self._backend, None, None
        if backend is not None:
            try:
                backend.close()
            except Exception:  # freeing is best effort; the process may be exiting
                log.exception("closing the model failed")

    @Slot()
    def release(self) -> None:
        """Last call on the worker thread: free the model, hand ourselves back, stop."""
        self._release_backend()
        self._store.close()
        app = QCoreApplication.instance()
        if app is not None:
            self.moveToThread(app.thread())  # so the GUI thread may delete us afterwards
        thread = QThread.currentThread()
        thread.quit()


class LlmWorker(QObject):
    """The GUI-side handle of the worker thread (see the module docstring).

    ``store`` may also be the ``AppServices`` bundle (its ``store`` is used).
    """

    progress = Signal(object)
    token = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    model_loaded = Signal(str)
    busy_changed = Signal(bool)

    _run_requested = Signal(str, object, object)
    _release_requested = Signal()

    def __init__(self, store: Store | Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store: Store = getattr(store, "store", store)
        self._busy = False
        self._state: Any = None
        self._kind = ""
        self._lock = threading.Lock()
        self._thread = QThread()
        self._thread.setObjectName("llm-worker")
        self._engine: _Engine | None = _Engine(self._store)
        self._engine.moveToThread(self._thread)
        self._run_requested.connect(self._engine.run)
        self._release_requested.connect(self._engine.release)
        self._engine.progress.connect(self.progress)
        self._engine.token.connect(self.token)
        self._engine.model_loaded.connect(self.model_loaded)
        self._engine.finished.connect(self._on_finished)
        self._engine.failed.connect(self._on_failed)
        self._thread.start()
        app = QCoreApplication.instance()
        if app is not None:  # a safety net if the window forgets to call shutdown()
            app.aboutToQuit.connect(self.shutdown)

    # -- state ------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True from a start until its finished/failed signal reached the GUI thread."""
        return self._busy

    @property
    def kind(self) -> str:
        """The kind of the current (or last) run: "classify" or "distill"."""
        return self._kind

    @property
    def running(self) -> bool:
        """Whether the worker thread is alive (False after :meth:`shutdown`)."""
        return self._engine is not None and self._thread.isRunning()

    # -- commands ---------------------------------------------------------------------------

    def start_classify(self, limit: int | None = None) -> bool:
        """Classify up to ``limit`` pending episodes; False if a run is already going."""
        return self._start("classify", limit)

    def start_distill(self, limit: int | None = None) -> bool:
        """Distil up to ``limit`` labelled episodes; False if a run is already going."""
        return self._start("distill", limit)

    def start_replay(self, limit: int | None = None) -> bool:
        """Re-classify the human-labelled episodes (see :mod:`curator.pipeline.replay`)."""
        return self._start("replay", limit)

    def _start(self, kind: str, limit: int | None) -> bool:
        if self._busy or not self.running:
            return False
        self._state = TaskState(on_progress=self._engine_progress, on_token=self._engine_token)
        self._kind = kind
        self._set_busy(True)
        self._run_requested.emit(kind, limit, self._state)
        return True

    # The TaskState callbacks are called on the worker thread; they go to the engine's
    # coalescing methods (plain Python, no widget access).
    def _engine_progress(self, progress: Any) -> None:
        if self._engine is not None:
            self._engine._on_progress(progress)

    def _engine_token(self, text: str) -> None:
        if self._engine is not None:
            self._engine._on_token(text)

    def release_model(self) -> bool:
        """Free the loaded model when idle (the next run loads it again); False if busy."""
        if self._busy or not self.running:
            return False
        self._release_requested.emit()
        return True

    def cancel(self) -> None:
        """Ask the current run to stop (it does within one token); no-op when idle."""
        state = self._state
        if state is not None and self._busy:
            state.cancel()

    @Slot()
    def shutdown(self) -> None:
        """Cancel any run, free the model on its thread, and join the thread.

        Called from the main window's ``closeEvent`` (and on ``aboutToQuit``); safe to
        call more than once.
        """
        with self._lock:
            engine, self._engine = self._engine, None
        if engine is None:
            return
        state = self._state
        if state is not None:
            state.cancel()
        if self._thread.isRunning():
            self._release_requested.emit()
            # Cancelling takes effect between tokens, but one llama.cpp decode (a long
            # prompt on a busy CPU) cannot be interrupted. Destroying a running QThread
            # would abort the process, so keep waiting, and say why in the log.
            while not self._thread.wait(SHUTDOWN_WAIT_MS):
                log.warning("the LLM worker is still finishing its current model call; waiting")
        engine.deleteLater()
        self._set_busy(False)

    # -- results (queued to the GUI thread) -------------------------------------------------

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)

    @Slot(object)
    def _on_finished(self, result: object) -> None:
        self._set_busy(False)
        self.finished.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._set_busy(False)
        self.failed.emit(message)

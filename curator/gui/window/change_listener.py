"""The window's ear for other processes' commits: a watcher waited on off the GUI thread.

Another process (the CLI, a second window, an agent recording through ``curator mcp``)
may write the window's database. How a change is noticed is the engine's business
(:mod:`curator.store.changes`: SQLite's ``data_version`` polled on a connection of the
watcher's own, PostgreSQL's ``LISTEN``); here one daemon thread blocks in
:meth:`~curator.store.changes.ChangeWatcher.wait` and hands each change to the GUI thread
as the :attr:`ChangeListener.changed` signal. The GUI thread never waits on a socket or
polls a table, so a slow or unreachable server cannot stall it.
"""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QObject, Signal

from curator.store.changes import ChangeWatcher

log = logging.getLogger("curator.gui")

WAIT_S = 0.25
"""How long one wait blocks: how soon the thread notices it should stop."""

FAILURE_PAUSE_S = 1.0
"""After a watcher failed unexpectedly: the next try, without a busy loop of errors."""


class ChangeListener(QObject):
    """Runs ``watcher`` on a thread of its own, from :meth:`start`; ``changed`` arrives on
    the GUI thread. Connect ``changed`` before starting: a change emitted with no slot
    connected is lost, and the watcher's first report (on a server, the counter it starts
    from) came, on a busy machine, before the window had connected to it."""

    changed = Signal(object)  # curator.store.changes.Change

    def __init__(self, watcher: ChangeWatcher, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._watcher = watcher
        self._stop = threading.Event()
        # Held while a change is handed over: the stop (a close, or the window deleted
        # without one) waits for a hand-over in progress, and none begins after it. Without
        # it the thread could check "not stopped", then emit from an object the GUI thread
        # was deleting. Reentrant, for a slot run on this thread (connected directly) that
        # stops the listener; ``changed`` must not be connected BlockingQueued (the GUI
        # thread's stop would wait for this thread, which waits for the GUI thread).
        self._handing = threading.RLock()
        stop, handing = self._stop, self._handing  # not self: gone by the time this fires

        def destroyed(*_: object) -> None:
            with handing:
                stop.set()
            watcher.interrupt()

        self.destroyed.connect(destroyed)
        self._thread = threading.Thread(target=self._run, name="curator-changes", daemon=True)

    def start(self) -> None:
        """Begin listening (once ``changed`` is connected)."""
        self._thread.start()

    def _run(self) -> None:
        watcher = self._watcher
        try:
            while not self._stop.is_set():
                try:
                    change = watcher.wait(WAIT_S)
                except Exception:  # never let the ear die: log it and listen again
                    log.exception("watching the database for changes failed")
                    self._stop.wait(FAILURE_PAUSE_S)
                    continue
                if change is None:
                    continue
                with self._handing:
                    if self._stop.is_set():
                        return
                    try:
                        self.changed.emit(change)  # queued to the GUI thread: returns at once
                    except RuntimeError:  # the window was deleted without a close
                        return
        finally:
            watcher.close()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def shutdown(self) -> None:
        """Stop listening and wait for the thread: at once on SQLite (the wait is
        interrupted), within one wait on PostgreSQL."""
        with self._handing:
            self._stop.set()
        self._watcher.interrupt()
        if self._thread.ident is None:  # never started: its watcher is closed here
            self._watcher.close()
        elif threading.current_thread() is not self._thread:  # not from a slot run by it
            self._thread.join(timeout=WAIT_S * 8)

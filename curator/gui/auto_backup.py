"""Backups in the window, the way Anki takes them: every N minutes of use and on close.

A QTimer counts the minutes the window is open; once ``backup_interval_minutes`` (a
setting, default 30, 0 turns automatic backups off) have passed, a backup starts on a
thread of its own if the database changed since the newest backup. The copy itself is
:func:`curator.store.backup.take_backup`: SQLite's online backup in steps of a few MiB
(one read snapshot that blocks no writer, so the window and a running distill keep
writing), checked with ``quick_check``, old backups thinned by age. Only this database's
own backups count (:mod:`curator.store.backup_identity`), for "changed since the newest"
as for thinning. The GUI thread only starts the thread and shows the progress it reports
in the status bar.

File ▸ Backup now goes through the window's :class:`~curator.gui.operations.StoreOps`
as a write: the user asked for it, so it shows the busy label and progress like any
write and other writes wait for it. The periodic backup does not: as a write it would
refuse the user's relabels for the seconds a big copy takes, at moments nobody chose,
and StoreOps' close waits for its jobs without cancelling them. So it runs on a thread
of its own, skips a tick while a write runs (so the backup holds that write's result
rather than the state before it) and is cancelled by :meth:`AutoBackup.shutdown`.

On close: a backup is taken when the database changed since the newest one. The window
is hidden first, so the close looks immediate; the backup then gets at most
:data:`CLOSE_WAIT_S` seconds. A database too big to copy and check in that time is not
backed up on close: the copy is stopped at its next step (or its check interrupted),
the partial file deleted and a line logged; the backups taken during use stand.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from curator.gui.operations import OpContext, StoreOps
from curator.pipeline.runlog import one_line
from curator.store.backup import BackupResult, backup_due, take_backup

log = logging.getLogger("curator.gui")

MINUTE_MS = 60_000
CLOSE_WAIT_S = 15.0
"""Longest the close waits for its backup; past it the copy is stopped and deleted."""
LABEL = "Backing up the database"


class AutoBackup(QObject):
    """Periodic and on-close backups on a background thread; Backup now through StoreOps.

    ``status_message`` carries what the status bar shows (progress, the result, a
    failure in one line); ``finished`` the :class:`BackupResult` (None: nothing changed
    since the newest backup, so none was taken); ``failed`` the one-line reason.
    """

    status_message = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    _progress = Signal(int, int)  # (done, total) pages, from the backup thread
    _done = Signal(object, object)  # (result | None, error text | None), from the thread

    def __init__(
        self,
        db_path: Path,
        interval_minutes: Callable[[], int],
        ops: StoreOps,
        parent: QObject | None = None,
        *,
        read_only: bool = False,
        tick_ms: int = MINUTE_MS,
    ) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.interval_minutes = interval_minutes
        """Read at each tick, so a change in Settings applies without a restart."""
        self.ops = ops
        self.read_only = read_only
        self.minutes_used = 0
        self.job_thread_ids: list[int] = []
        """Thread ident of every backup (tests check it is never the GUI thread)."""
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._closed = False
        self._shown_percent = -1
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self._tick)
        self._progress.connect(self._on_progress)
        self._done.connect(self._on_done)
        if not read_only:  # a read-only database does not change: nothing to back up
            self._timer.start()

    @classmethod
    def for_window(cls, window: QWidget) -> AutoBackup:
        """Built for the main window: its database, settings and ops, its status bar."""
        services = window.services  # type: ignore[attr-defined]
        auto = cls(
            services.db_path,
            lambda: int(services.settings().backup_interval_minutes),
            services.ops,
            window,
            read_only=services.store.read_only,
        )
        auto.status_message.connect(window.show_message)  # type: ignore[attr-defined]
        return auto

    @property
    def running(self) -> bool:
        """A periodic or on-close backup is running (Backup now is a StoreOps write)."""
        return self._thread is not None

    def _interval(self) -> int:
        try:
            return max(int(self.interval_minutes()), 0)
        except Exception:  # settings unreadable (locked, damaged): the default stands
            log.exception("reading the backup interval failed")
            return 30

    def _tick(self) -> None:
        """One more minute of use; a backup once the interval is reached."""
        self.minutes_used += 1
        interval = self._interval()
        if interval and self.minutes_used >= interval and not self.ops.busy:
            self.minutes_used = 0  # while a write runs: tried again next minute
            self._start_thread(only_if_changed=True)

    # -- Backup now -----------------------------------------------------------------------

    def backup_now(self) -> bool:
        """File ▸ Backup now, as a StoreOps write; False when another write runs."""
        if self._closed:
            return False

        def job(ctx: OpContext) -> BackupResult:
            self.job_thread_ids.append(threading.get_ident())
            return take_backup(
                self.db_path,
                read_only=self.read_only,
                progress=ctx.progress,
                cancelled=lambda: ctx.cancelled,
            )

        if self.running or not self.ops.write(LABEL, job, self._delivered):
            running = self.ops.busy_label or LABEL
            self.status_message.emit(f"Not backed up: {running} is running; try again after it.")
            return False
        return True

    # -- periodic and on close: a thread of its own ---------------------------------------

    def _start_thread(self, *, only_if_changed: bool) -> bool:
        if self._thread is not None:
            return False
        self._shown_percent = -1
        self._thread = threading.Thread(
            target=self._job, args=(only_if_changed,), name="backup", daemon=True
        )
        self._thread.start()
        return True

    def _job(self, only_if_changed: bool) -> None:
        self.job_thread_ids.append(threading.get_ident())
        result: BackupResult | None = None
        error: str | None = None
        try:
            if not only_if_changed or backup_due(self.db_path):
                result = take_backup(
                    self.db_path,
                    read_only=self.read_only,
                    progress=self._report,
                    cancelled=self._cancel.is_set,
                )
        except Exception as exc:  # reported in the window, never raised into Qt
            error = one_line(exc)
        with contextlib.suppress(RuntimeError):  # the window was deleted: nobody waits
            self._done.emit(result, error)

    def _report(self, done: int, total: int) -> None:
        with contextlib.suppress(RuntimeError):
            self._progress.emit(done, total)

    def _on_progress(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if percent // 5 != self._shown_percent // 5:  # a status update every 5 %
            self._shown_percent = percent
            self.status_message.emit(f"{LABEL}… {percent}%")

    def _on_done(self, result: object, error: object) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._closed:
            return
        if error is not None:
            log.warning("backup failed: %s", error)
            self.status_message.emit(f"Backup failed: {error}")
            self.failed.emit(str(error))
            return
        self._delivered(result)

    def _delivered(self, result: object) -> None:
        if isinstance(result, BackupResult):
            self.status_message.emit(
                f"Backed up to {result.path} ({result.size / 1e6:,.1f} MB, {result.seconds:.1f} s)."
            )
        self.finished.emit(result)

    def shutdown(self, window: QWidget | None = None, wait_s: float = CLOSE_WAIT_S) -> None:
        """On close (after StoreOps' shutdown): back up if the database changed, waiting at
        most ``wait_s`` seconds.

        The window (if given) is hidden first. Past the wait the backup is cancelled at
        its next step and its partial copy deleted; the thread ends within a step. A
        Backup now still running was cancelled by StoreOps' shutdown already.
        """
        if self._closed:
            return
        self._closed = True
        self._timer.stop()
        if self._thread is None and self._interval() and not self.read_only:
            try:
                due = backup_due(self.db_path)
            except OSError:
                due = False
            if due:
                self._start_thread(only_if_changed=False)
        thread = self._thread
        if thread is None:
            return
        if window is not None:
            window.hide()
        thread.join(wait_s)
        if thread.is_alive():
            log.warning(
                "backup on close stopped after %.0f s (the database is too big to copy and "
                "check in that time); the backups taken during use stand",
                wait_s,
            )
            self._cancel.set()
            thread.join(5.0)  # it stops at its next step: milliseconds
        self._thread = None

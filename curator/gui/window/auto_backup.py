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

File ▸ Backup now goes through the window's
:class:`~curator.gui.runtime.operations.StoreOps` as a write (on a database server, as
``curator backup`` takes it: ``pg_dump`` where it is installed, else an export that
``curator restore`` reads): the user asked for it, so it shows the busy label and
progress like any write and other writes wait for it. The periodic backup does not: as a
write it would refuse the user's relabels for the seconds a big copy takes, at moments
nobody chose, and StoreOps' close waits for its jobs without cancelling them. So it runs
on a thread of its own, skips a tick while a write runs (so the backup holds that
write's result rather than the state before it) and is cancelled by
:meth:`AutoBackup.shutdown`.

On close: a backup is taken only when the database changed since the newest one (the
change marker of :mod:`curator.store.change_marker`, so a close after a session that
changed nothing copies nothing). It runs on its thread while a small "Backing up before
closing" dialog shows its progress; the GUI thread waits in a local event loop, so the
dialog repaints and its "Skip backup" button works. The close ends when the copy does:
a large database (a 700 MB copy and check takes 10-20 s) is backed up completely
rather than stopped after a fixed time and thrown away, and the process never goes on
for seconds after every window has vanished. "Skip backup" stops the copy at its next
step and deletes the partial file; the backups taken during use stand. Kept by total
size as well as by age (the ``backup_max_total_mb`` setting).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QProgressDialog, QWidget

from curator.gui.runtime.operations import OpContext, StoreOps
from curator.pipeline.runlog import one_line
from curator.store.backup import BackupResult, backup_due, take_backup
from curator.store.location import DatabaseLocation

log = logging.getLogger("curator.gui")

MINUTE_MS = 60_000
CLOSE_LABEL = "Backing up the database before closing…"
CLOSE_CHECK_LABEL = "Checking the backup before closing…"
CHECK_PHASE = "checking the copy"
DIALOG_DELAY_MS = 400
"""A close backup shorter than this shows no dialog (a small database: no flicker)."""
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
    _checking = Signal()  # the copy is complete, its check (no progress of its own) begins

    def __init__(
        self,
        db_path: Path,
        interval_minutes: Callable[[], int],
        ops: StoreOps,
        parent: QObject | None = None,
        *,
        read_only: bool = False,
        tick_ms: int = MINUTE_MS,
        max_total_mb: Callable[[], int] = lambda: 0,
    ) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.interval_minutes = interval_minutes
        """Read at each tick, so a change in Settings applies without a restart."""
        self.ops = ops
        self.max_total_mb = max_total_mb
        """The size bound of the backups (MB, 0: none), read per backup: on the GUI thread
        for a periodic one (a file's settings), in the job for Backup now."""
        self.read_only = read_only
        self.dialog_delay_ms = DIALOG_DELAY_MS
        self.close_dialog: QProgressDialog | None = None
        """The "Backing up before closing" dialog while it is shown (tests look at it)."""
        self.minutes_used = 0
        self.job_thread_ids: list[int] = []
        """Thread ident of every backup (tests check it is never the GUI thread)."""
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._last_error: str | None = None
        self._closed = False
        self._shown_percent = -1
        self._checking_copy = False
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self._tick)
        self._progress.connect(self._on_progress)
        self._checking.connect(self._on_checking)
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
            # A server's database is not a file to copy on a timer or on close: its
            # backups are the server's (or `curator backup`'s) business.
            read_only=services.store.read_only
            or not DatabaseLocation.of(services.store).supports_file_backup,
            max_total_mb=lambda: int(services.settings().backup_max_total_mb),
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

    def _max_total_bytes(self) -> int | None:
        try:
            megabytes = max(int(self.max_total_mb()), 0)
        except Exception:  # settings unreadable: bounded by age only, still backed up
            log.exception("reading the backups' size bound failed")
            return None
        return megabytes * 1_000_000 or None

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
            bound = self._max_total_bytes()  # here: on a server even this is a round trip
            if not DatabaseLocation.of(ctx.store).supports_file_backup:
                from curator.store.pg_backup import take_pg_backup

                # as `curator backup` does: pg_dump where it is installed, else an export
                return take_pg_backup(
                    ctx.store, max_total_bytes=bound, cancelled=lambda: ctx.cancelled
                )
            return take_backup(
                self.db_path,
                read_only=self.read_only,
                max_total_bytes=bound,
                progress=ctx.progress,
                cancelled=lambda: ctx.cancelled,
                checking=lambda: ctx.phase(CHECK_PHASE),
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
        self._checking_copy = False
        self._thread = threading.Thread(
            target=self._job,
            args=(only_if_changed, self._max_total_bytes()),
            name="backup",
            daemon=True,
        )
        self._thread.start()
        return True

    def _job(self, only_if_changed: bool, max_total_bytes: int | None) -> None:
        self.job_thread_ids.append(threading.get_ident())
        result: BackupResult | None = None
        error: str | None = None
        try:
            if not only_if_changed or backup_due(self.db_path):
                result = take_backup(
                    self.db_path,
                    read_only=self.read_only,
                    max_total_bytes=max_total_bytes,
                    progress=self._report,
                    cancelled=self._cancel.is_set,
                    checking=self._report_checking,
                )
        except Exception as exc:  # reported in the window, never raised into Qt
            error = one_line(exc)
        self._last_error = error  # read by shutdown() after joining this thread
        with contextlib.suppress(RuntimeError):  # the window was deleted: nobody waits
            self._done.emit(result, error)

    def _report(self, done: int, total: int) -> None:
        with contextlib.suppress(RuntimeError):
            self._progress.emit(done, total)

    def _report_checking(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._checking.emit()

    def _on_checking(self) -> None:
        """The copy is complete: the bar turns busy and says it checks the copy, since a
        bar at 99 % for the length of the check looked stuck."""
        self._checking_copy = True
        if self.close_dialog is not None:
            self._show_checking(self.close_dialog)
        self.status_message.emit(f"{LABEL}: {CHECK_PHASE}…")

    @staticmethod
    def _show_checking(dialog: QProgressDialog) -> None:
        dialog.setLabelText(CLOSE_CHECK_LABEL)
        dialog.setRange(0, 0)

    def _on_progress(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if self.close_dialog is not None:
            self.close_dialog.setValue(min(percent, 99))  # 100 would close it early
        if percent // 5 != self._shown_percent // 5:  # a status update every 5 %
            self._shown_percent = percent
            self.status_message.emit(f"{LABEL}… {percent}%")

    def _on_done(self, result: object, error: object) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._closed:  # a failure of the close's backup is logged by shutdown()
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

    def shutdown(self, window: QWidget | None = None, wait_s: float | None = None) -> None:
        """On close (after StoreOps' shutdown): back up if the database changed since the
        newest backup, and return when that backup is done, skipped or stopped.

        Meanwhile the GUI thread runs a local event loop: after :attr:`dialog_delay_ms` a
        dialog (over ``window``) shows the progress, and its "Skip backup" stops the copy
        at its next step and deletes the partial file. ``wait_s`` (None: no limit) stops
        the copy the same way once that many seconds have passed. A Backup now still
        running was cancelled by StoreOps' shutdown already.
        """
        if self._closed:
            return
        self._closed = True
        self._timer.stop()
        if self._thread is None and not self.read_only and self._interval():
            try:
                due = backup_due(self.db_path)
            except OSError:
                due = False
            if due:
                self._start_thread(only_if_changed=False)
        thread = self._thread
        if thread is None:
            return
        loop = QEventLoop()
        # The thread's own end, polled: its "done" signal may have been queued already.
        poll = QTimer()
        poll.setInterval(20)

        def quit_when_ended() -> None:
            if not thread.is_alive():
                loop.quit()

        poll.timeout.connect(quit_when_ended)
        poll.start()
        show = QTimer()
        show.setSingleShot(True)
        show.timeout.connect(lambda: self._show_close_dialog(window))
        show.start(max(self.dialog_delay_ms, 0))
        limit = QTimer()
        if wait_s is not None:
            limit.setSingleShot(True)
            limit.timeout.connect(lambda: self._stop_close_backup(f"after {wait_s:g} s"))
            limit.start(int(wait_s * 1000))
        if thread.is_alive():
            loop.exec()
        for timer in (poll, show, limit):
            timer.stop()
        thread.join()
        if self._last_error is not None and not self._cancel.is_set():
            # The close's backup: nobody is left to tell but the log.
            log.warning("backup on close failed: %s", self._last_error)
        if self.close_dialog is not None:
            self.close_dialog.reset()
            self.close_dialog.deleteLater()
            self.close_dialog = None
        self._thread = None

    def _show_close_dialog(self, window: QWidget | None) -> None:
        dialog = QProgressDialog(CLOSE_LABEL, "Skip backup", 0, 100, window)
        dialog.setObjectName("closeBackupDialog")
        dialog.setWindowTitle("Memory Curator")
        dialog.setWindowModality(Qt.WindowModality.ApplicationModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setValue(max(self._shown_percent, 0))
        dialog.canceled.connect(lambda: self._stop_close_backup("on request"))
        if self._checking_copy:
            self._show_checking(dialog)
        self.close_dialog = dialog
        dialog.show()

    def _stop_close_backup(self, why: str) -> None:
        """Stop the closing backup at its next step (its partial copy is deleted)."""
        if self._cancel.is_set():
            return
        log.warning("backup on close skipped %s; the backups taken during use stand", why)
        self._cancel.set()
        if self.close_dialog is not None:
            self.close_dialog.setLabelText("Stopping the backup…")

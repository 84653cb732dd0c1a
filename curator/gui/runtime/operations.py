"""Background store operations: the window's rule that no database work runs on the GUI thread.

Modelled on Anki's ``CollectionOp``/``QueryOp`` (qt/aqt/operations/): a pane hands a plain
function to :class:`StoreOps`; the function runs on a thread of its own with that thread's
own connection (peewee keeps one per thread; when the job ends, a server's is handed back
for the next job, :mod:`curator.store.pg_idle`), and its result or failure comes back to
the GUI thread through a queued signal, where the pane's callback updates the widgets.

Two kinds:

- :meth:`StoreOps.write` — anything that writes (import, relabel, undo, commit, backup).
  One at a time: a second write while one runs is refused (``False``; ``refused`` names
  both, and the window says so in its status bar), because two writers would only queue
  on SQLite's lock and the user would not know which finished first. While a write
  runs, ``busy_changed(True)`` lets the window disable conflicting actions and show the
  label and progress (after a short delay, so quick writes do not flicker).
- :meth:`StoreOps.query` — reads that can exceed a frame at 100k+ episodes (search,
  filters, counts). Any number may run; for each ``key`` only the newest request's result
  is delivered (typing "abc" starts three searches and shows only the last).

The function receives an :class:`OpContext`: ``ctx.store`` (the shared :class:`Store`,
whose connection on this thread is this job's own), ``ctx.progress(done, total)`` (thread
safe, throttled by the receiver) and ``ctx.cancelled`` (set by :meth:`StoreOps.cancel`
for long writes that can stop between batches). Exceptions never reach Qt: they are
turned into one readable line and delivered to ``on_failed`` (or the ``failed`` signal).

While any job runs, full garbage collections are deferred and the GIL switch interval is
short (:mod:`curator.gui.runtime.job_runtime`): the job shares the interpreter with the GUI thread,
and those two settings decided how long the window went without painting.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Signal

from curator.errors import CuratorError
from curator.gui.runtime.job_runtime import sharing_with_gui
from curator.store.db import Store
from curator.store.db_errors import server_unreachable

log = logging.getLogger("curator.gui.ops")

Done = Callable[[Any], None]
Failed = Callable[[str], None]


def describe_failure(exc: BaseException) -> str:
    """One line for the user: our own errors as written, anything else with its type
    (a server that cannot be reached is its sentence, not "OperationalError: ...")."""
    if isinstance(exc, CuratorError):
        return str(exc)
    unreachable = server_unreachable(exc)
    if unreachable is not None:
        return str(unreachable)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@dataclass
class OpContext:
    """What a background function gets: the store, progress reporting, cancellation."""

    store: Store
    label: str
    _report: Callable[[str, int, int], None]
    _cancel: threading.Event = field(default_factory=threading.Event)
    _report_phase: Callable[[str, str], None] | None = None

    def progress(self, done: int, total: int) -> None:
        """Report ``done`` of ``total`` (items, rows, pages); safe from the job thread."""
        self._report(self.label, int(done), int(total))

    def phase(self, name: str) -> None:
        """Name the step a long write is at ("saving"); the window shows it with the bar."""
        if self._report_phase is not None:
            self._report_phase(self.label, name)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()


@dataclass
class _Job:
    token: int
    label: str
    fn: Callable[[OpContext], Any]
    on_done: Done | None
    on_failed: Failed | None
    key: str | None  # queries only
    ctx: OpContext | None = None
    thread: threading.Thread | None = None
    others_committed: bool = True
    """A write's: whether another connection committed while it ran (unknown: True)."""
    counter: int | None = None
    """A write's: the store's change counter once it was done (see Store.change_counter)."""
    counter_before: int | None = None
    """A write's: the change counter as it began, before its own commits (unknown: None)."""
    unreachable: bool = False
    """It failed because the database server could not be reached."""
    asked: bool = False
    """A read a person asked for (:meth:`StoreOps.query`'s ``asked``)."""


class StoreOps(QObject):
    """Runs store operations off the GUI thread and delivers their results on it."""

    busy_changed = Signal(bool)  # a write started (True) / ended (False)
    # a write succeeded: whether others committed meanwhile, the change counter after it
    # and as it began
    write_finished = Signal(bool, object, object)
    started = Signal(str)  # the write's label
    progressed = Signal(str, int, int)  # label, done, total
    phased = Signal(str, str)  # label, the phase it is at (OpContext.phase)
    failed = Signal(str, str)  # label, message: for jobs without their own on_failed
    refused = Signal(str, str)  # the write refused, the write running: the user is told
    server_lost = Signal(str)  # a job found the database server away: why, in one sentence
    server_back = Signal()  # a job succeeded after that
    _delivered = Signal(int, object, object)  # token, result, error text (job thread -> GUI)

    def __init__(self, store: Store, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._tokens = itertools.count(1)
        self._jobs: dict[int, _Job] = {}
        self._latest: dict[str, int] = {}
        self._write: _Job | None = None
        self._closed = False
        self.job_thread_ids: list[int] = []
        """Thread ident of every job (tests check none ran on the GUI thread)."""
        self.server_problem: str | None = None
        """Why the database server is away, from the last job that found it so (None:
        the last job reached it)."""
        self.hush_read_failures: Callable[[], contextlib.AbstractContextManager[object]] = (
            contextlib.nullcontext
        )
        """Entered while a read that failed for want of the server is delivered: the
        window's banner says that once (:mod:`curator.gui.window.server_banner`), so its
        panes' dialogs are not opened. A write's failure is always said: its work was
        not done."""
        self._delivered.connect(self._deliver)

    # -- state ----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A write is running."""
        return self._write is not None

    @property
    def busy_label(self) -> str:
        return self._write.label if self._write is not None else ""

    @property
    def pending(self) -> int:
        """Jobs (writes and queries) not yet delivered."""
        return len(self._jobs)

    # -- starting -------------------------------------------------------------------------

    def write(
        self,
        label: str,
        fn: Callable[[OpContext], Any],
        on_done: Done | None = None,
        on_failed: Failed | None = None,
    ) -> bool:
        """Start a write; False (nothing started) while another write runs or after close.

        A refusal while another write runs is announced once, here, through ``refused``
        (the window shows it), so callers only decide what else a refusal changes.
        """
        if self._closed:
            return False
        if self._write is not None:
            self.refused.emit(label, self._write.label)
            return False
        # Said before its thread starts: the window looks at the data version when a
        # write starts, and a quick job had already committed when it was said after
        # (on a loaded machine), so the window took its own write for someone else's.
        self._start(label, fn, on_done, on_failed, key=None, announce=True)
        self.started.emit(label)
        return True

    def query(
        self,
        key: str,
        fn: Callable[[OpContext], Any],
        on_done: Done | None = None,
        on_failed: Failed | None = None,
        *,
        asked: bool = False,
    ) -> int:
        """Start a read; only the newest request per ``key`` is delivered. Returns its token.

        ``asked``: a person's own action (an export to a file), not a pane's read: its
        failure is said even while the database server is away (see
        :attr:`hush_read_failures`)."""
        if self._closed:
            return 0
        job = self._start(key, fn, on_done, on_failed, key=key)
        job.asked = asked
        self._latest[key] = job.token
        return job.token

    def forget(self, key: str) -> None:
        """Deliver nothing more for ``key``: a request still running was superseded by
        something shown at once (its result would describe what is no longer asked)."""
        self._latest.pop(key, None)

    def cancel(self) -> None:
        """Ask the running write to stop at its next check of ``ctx.cancelled``."""
        if self._write is not None and self._write.ctx is not None:
            self._write.ctx._cancel.set()

    def _start(
        self,
        label: str,
        fn: Callable[[OpContext], Any],
        on_done: Done | None,
        on_failed: Failed | None,
        key: str | None,
        announce: bool = False,
    ) -> _Job:
        job = _Job(next(self._tokens), label, fn, on_done, on_failed, key)
        job.ctx = OpContext(self.store, label, self._report, _report_phase=self._report_phase)
        job.thread = threading.Thread(
            target=self._run, args=(job,), name=f"op-{label}"[:60], daemon=True
        )
        self._jobs[job.token] = job
        if announce:  # the write: busy before anything of it can run
            self._write = job
            self.busy_changed.emit(True)
        try:
            job.thread.start()
        except BaseException:  # no thread to be had: nothing runs, nothing stays busy
            del self._jobs[job.token]
            if announce:
                self._write = None
                self.busy_changed.emit(False)
            raise
        return job

    # -- the job thread -------------------------------------------------------------------

    def _report(self, label: str, done: int, total: int) -> None:
        with contextlib.suppress(RuntimeError):  # the window is gone: nobody listens
            self.progressed.emit(label, done, total)

    def _report_phase(self, label: str, phase: str) -> None:
        with contextlib.suppress(RuntimeError):  # the window is gone: nobody listens
            self.phased.emit(label, phase)

    def _run(self, job: _Job) -> None:
        self.job_thread_ids.append(threading.get_ident())
        assert job.ctx is not None
        result: Any = None
        error: str | None = None
        try:
            with sharing_with_gui():  # no full collections, short GIL slices: see job_runtime
                # a write looks before and after: its own commits move the window's
                # data_version, and only it can tell whether anyone else's did meanwhile
                before = self.store.data_version() if job.key is None else None
                if before is not None:  # after data_version: a commit between is in one
                    job.counter_before = self.store.change_counter()
                result = job.fn(job.ctx)
                if before is not None:
                    job.others_committed = self.store.data_version() != before
                    job.counter = self.store.change_counter()
        except Exception as exc:  # delivered to the GUI as one line, never raised into Qt
            log.info("operation %r failed", job.label, exc_info=True)
            error = self._file_gone() or describe_failure(exc)
            job.unreachable = server_unreachable(exc) is not None
        finally:
            self.store.hand_back()  # this thread's own connection (kept for the next job)
        with contextlib.suppress(RuntimeError):
            self._delivered.emit(job.token, result, error)

    def _file_gone(self) -> str | None:
        """The cause, when the database file was deleted, moved or replaced since the
        window opened it: a job then fails with SQLite's "unable to open database file"
        or "no such table", which says nothing of why."""
        try:
            self.store.check_same_file("done")
        except CuratorError as gone:
            return str(gone)
        return None

    # -- back on the GUI thread -----------------------------------------------------------

    def _deliver(self, token: int, result: object, error: object) -> None:
        job = self._jobs.pop(token, None)
        if job is None:
            return
        if job.thread is not None:
            job.thread.join()
        if job is self._write:
            self._write = None
            self.busy_changed.emit(False)
        stale = job.key is not None and self._latest.get(job.key) != token
        if job.key is not None and not stale:
            self._latest.pop(job.key, None)
        if self._closed:
            return
        self._note_reachability(job, error)  # a stale result has reached the server too
        if stale:
            return
        try:
            if error is None and job.key is None:
                self.write_finished.emit(job.others_committed, job.counter, job.counter_before)
            if error is not None:
                read = job.unreachable and job.key is not None and not job.asked
                with self.hush_read_failures() if read else contextlib.nullcontext():
                    if job.on_failed is not None:
                        job.on_failed(str(error))
                    else:
                        self.failed.emit(job.label, str(error))
            elif job.on_done is not None:
                job.on_done(result)
        except Exception as exc:  # a callback's bug is a message, not a dead window
            log.exception("the result of %r could not be shown", job.label)
            self.failed.emit(job.label, describe_failure(exc))

    def _note_reachability(self, job: _Job, error: object) -> None:
        """Say when the database server went away, and when a job reached it again."""
        if job.unreachable:
            self.server_problem = str(error)
            self.server_lost.emit(self.server_problem)
        elif error is None and self.server_problem is not None:
            self.server_problem = None
            self.server_back.emit()

    # -- tests and close ------------------------------------------------------------------

    def wait(self, timeout_s: float = 30.0) -> bool:
        """Join every running job (results are delivered by the event loop afterwards)."""
        ok = True
        for job in list(self._jobs.values()):
            if job.thread is not None:
                job.thread.join(timeout_s)
                ok = ok and not job.thread.is_alive()
        return ok

    def shutdown(self, timeout_s: float = 60.0) -> None:
        """Window close: cancel and wait for running jobs; nothing is delivered afterwards.

        A write is one transaction (or stops between batches when cancelled), so waiting
        for it never leaves half a change behind; queries are only read and dropped.
        """
        self._closed = True
        self.cancel()
        self.wait(timeout_s)

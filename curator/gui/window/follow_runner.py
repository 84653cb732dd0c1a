"""The window's follow of an agent's logs: ``curator watch`` on a thread of its own.

The same :class:`curator.store.follow.Follower` as the command line, polled every
:data:`POLL_S` on a Python thread with its own SQLite connection, so the GUI thread never
reads a log nor writes an episode. The thread reports through queued signals: a
:class:`FollowState` after every poll that changed something (the status bar's "following
2 logs: 1,204 lines, last 3 s ago"), and every note and bad line (``FILE:LINE: reason``)
as one line; a bad line never stops the follow. The episodes it commits are an outside
change to the window's own connection, so the window's database poll reloads the visible
pane as it does for the CLI.

Which logs are followed is saved in the database (:func:`~curator.store.follow_state.
remember_followed`), by the follow thread itself: the window opened again on the same
database resumes them, and Stop following forgets them. A window that closes stops the
thread but keeps the list.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from PySide6.QtCore import QObject, Signal

from curator.core.redact import redact
from curator.core.wording import plural
from curator.gui.runtime.operations import describe_failure
from curator.store.db import Store
from curator.store.follow import Follower
from curator.store.follow_state import remember_followed
from curator.store.opening import StoreBusyError

POLL_S = 0.5
"""Seconds between two looks at the followed logs (``curator watch``'s default)."""

SHOWN_REPORTS = 20
"""The newest notes and bad lines the status bar's tooltip lists."""


@dataclass(frozen=True)
class FollowState:
    """What the follow has done since it started, as the status bar shows it."""

    paths: tuple[str, ...] = ()
    lines: int = 0
    """Lines read: imported, already present, or rejected."""
    bad_lines: int = 0
    last_line_at: float | None = None
    """``time.monotonic()`` of the last poll that read a line (None: none yet)."""
    running: bool = False
    problem: str = ""
    """Why the follow stopped by itself (a read-only database), or empty."""


def describe(state: FollowState, now: float) -> str:
    """ "following 2 logs: 1,204 lines, last 3 s ago" (empty when not following)."""
    if not state.running:
        return f"follow stopped: {state.problem}" if state.problem else ""
    text = f"following {plural(len(state.paths), 'log')}: {plural(state.lines, 'line')}"
    if state.last_line_at is not None:
        text += f", last {_ago(now - state.last_line_at)}"
    if state.bad_lines:
        text += f", {plural(state.bad_lines, 'bad line')}"
    return text


def _ago(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


@dataclass
class _Run:
    """One follow thread and what it was asked."""

    stop: threading.Event
    forget: bool = False
    thread: threading.Thread = field(default_factory=threading.Thread)


class FollowRunner(QObject):
    """Starts, changes and stops the window's follow (see the module doc)."""

    changed = Signal(object)
    """The :class:`FollowState`, after a poll that changed it and when it stops."""
    reported = Signal(str)
    """One note or bad line, as ``curator watch`` prints it on stderr."""

    def __init__(
        self, store: Store, parent: QObject | None = None, *, interval_s: float = POLL_S
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.interval_s = interval_s
        self.state = FollowState()
        self.reports: list[str] = []
        """The newest notes and bad lines (at most :data:`SHOWN_REPORTS`)."""
        self.changed.connect(self._keep_state)
        self.reported.connect(self._keep_report)
        self._lock = threading.Lock()
        self._paths: tuple[str, ...] = ()
        self._run: _Run | None = None

    @property
    def running(self) -> bool:
        """A follow thread runs and was not asked to stop."""
        run = self._run
        return run is not None and run.thread.is_alive() and not run.stop.is_set()

    @property
    def paths(self) -> tuple[str, ...]:
        with self._lock:
            return self._paths

    def follow(self, paths: Sequence[str]) -> None:
        """Follow ``paths`` (added to those already followed); starts the thread."""
        with self._lock:
            self._paths = tuple(dict.fromkeys([*self._paths, *map(os.path.abspath, paths)]))
        if self.running:
            return  # the thread takes the new list at its next poll
        # A follow just stopped may still be ending: the new thread waits for it, so the
        # old one's "forget the list" never lands after the new one saved it.
        previous = self._run.thread if self._run is not None else None
        run = _Run(threading.Event())
        run.thread = threading.Thread(
            target=self._loop, args=(run, previous), name="follow-logs", daemon=True
        )
        self._run = run
        run.thread.start()

    def stop(self) -> None:
        """Stop following and forget the logs (File ▸ Stop following); never waits."""
        run = self._run
        if run is not None:
            run.forget = True
            run.stop.set()
        with self._lock:
            self._paths = ()

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """The window closes: stop the thread, keep the list for the next start. Waits
        for the poll under way (it commits or rolls back one chunk, never half)."""
        run = self._run
        if run is not None:
            run.stop.set()
            run.thread.join(timeout_s)

    # -- the follow thread -------------------------------------------------------------

    def _loop(self, run: _Run, previous: threading.Thread | None) -> None:
        if previous is not None:
            previous.join()
        stop = run.stop
        state = FollowState(running=True)
        follower: Follower | None = None
        counted = (0, 0, 0)  # the current follower's totals already in ``state``
        try:
            while not stop.is_set():
                paths = self.paths
                if follower is None or tuple(follower.paths) != tuple(paths):
                    if follower is not None:
                        follower.close()
                    remember_followed(self.store, paths)
                    follower = Follower(
                        self.store, paths, self.reported.emit, should_stop=stop.is_set
                    )
                    counted = (0, 0, 0)
                    state = replace(state, paths=paths)
                    self.changed.emit(state)
                try:
                    follower.poll()
                except StoreBusyError as exc:
                    self.reported.emit(f"{exc}; trying again")
                totals = follower.totals
                now = (totals.imported, totals.duplicates, len(totals.errors))
                if now != counted:
                    read = sum(now) - sum(counted)
                    state = replace(
                        state,
                        lines=state.lines + read,
                        bad_lines=state.bad_lines + now[2] - counted[2],
                        last_line_at=time.monotonic(),
                    )
                    counted = now
                    self.changed.emit(state)
                stop.wait(self.interval_s)
            # Saved again on the way out: a follow stopped before its first poll (the
            # window closed right after "Follow a log…") must still be resumed next time.
            remember_followed(self.store, [] if run.forget else self.paths)
            state = replace(state, running=False)
        except Exception as exc:  # a read-only or vanished database: stop, say why
            state = replace(state, running=False, problem=redact(describe_failure(exc)))
        finally:
            if follower is not None:
                follower.close()
            self.store.close()  # this thread's connection
            self.changed.emit(state)

    # -- on the GUI thread -------------------------------------------------------------

    def _keep_state(self, state: FollowState) -> None:
        self.state = state

    def _keep_report(self, text: str) -> None:
        self.reports = [*self.reports, text][-SHOWN_REPORTS:]

"""Review decisions written in the background, in order, while the list moves on at once.

One key per decision only works if the next candidate is there before the reviewer's
eyes get to it (Prodigy answers locally and saves in batches). So a decision is shown
at once as the engine will record it (:func:`predicted`), the selection advances, and
the write itself (a few milliseconds, an edit's re-match tens of them at 10,000
patterns, or a second when another process holds the lock) runs through
:meth:`StoreOps.write` off the GUI thread. :class:`DecisionQueue` keeps the writes in
the order the keys were pressed: one write runs, the next starts when it is delivered.

A write that fails (the engine refuses, the database stays locked) is not silent: the
decisions queued after it are dropped too, the pane reloads the run from the database,
which puts the rows back, and says which decision was not recorded and why.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Signal

from curator.core.wording import agree, plural
from curator.gui.runtime.operations import OpContext, StoreOps
from curator.pipeline import review as review_api


def predicted(c: Any, verb: str, target_id: int | None = None) -> Any:
    """The candidate view as :func:`review_api.decide` will record ``verb`` (no edit).

    The engine's rules (:func:`curator.pipeline.review_resolve.resolve`): ACCEPT takes
    the proposal (the re-match when the text was edited); SKIP/UPDATE take the given
    target or the proposal's; ADD and REJECT take none. The engine's answer replaces this
    view when the write is done.
    """
    if c.final_text is not None:
        p_action, p_target = c.rematch_action or "ADD", c.rematch_target_id
    else:
        p_action, p_target = c.proposed_action, c.proposed_target_id
    action = p_action if verb == "ACCEPT" else verb
    target: int | None = None
    if action in review_api.TARGETED:
        target = target_id if target_id is not None else (p_target or c.proposed_target_id)
    return dataclasses.replace(c, action=action, target_id=target, state="reviewed")


@dataclass
class _Write:
    label: str
    fn: Callable[[OpContext], Any]
    on_done: Callable[[Any], None]
    on_failed: Callable[[str], None]


class DecisionQueue(QObject):
    """Decision writes through ``ops.write``, one after another, in submission order."""

    idle = Signal()
    """The last queued write was delivered (the pane may reload from the database)."""

    def __init__(self, ops: StoreOps, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ops = ops
        self._waiting: deque[_Write] = deque()
        self._running = False

    @property
    def pending(self) -> int:
        """Writes queued or running."""
        return len(self._waiting) + int(self._running)

    def blocked_by(self) -> str:
        """The label of another write (a commit, an import) that holds the database, or ""."""
        return "" if self._running or not self._ops.busy else self._ops.busy_label

    def finish(self, timeout_s: float = 60.0) -> bool:
        """Window close: write the queued decisions before the operations shut down.

        Each write's result is delivered by the event loop, and its delivery starts the
        next write, so this waits and lets the loop deliver until the queue is empty.
        False when writes were still left after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        while self.pending and time.monotonic() < deadline:
            self._ops.wait(1.0)
            QCoreApplication.processEvents()
        return not self.pending

    def submit(
        self,
        label: str,
        fn: Callable[[OpContext], Any],
        on_done: Callable[[Any], None],
        on_failed: Callable[[str], None],
    ) -> None:
        """Queue a write; it starts once the writes before it are delivered."""
        self._waiting.append(_Write(label, fn, on_done, on_failed))
        self._next()

    def _next(self) -> None:
        if self._running:
            return
        if not self._waiting:
            self.idle.emit()
            return
        item = self._waiting.popleft()
        if self._ops.busy:  # another write slipped in between: this decision is not recorded
            item.on_failed(f"“{self._ops.busy_label}” was running; try again when it is done")
            self._next()
            return
        self._running = True
        if not self._ops.write(item.label, item.fn, self._done(item), self._failed(item)):
            self._running = False  # closed: the window is going away
            self._waiting.clear()

    def _done(self, item: _Write) -> Callable[[Any], None]:
        def done(result: Any) -> None:
            self._running = False
            try:
                item.on_done(result)
            finally:
                self._next()

        return done

    def _failed(self, item: _Write) -> Callable[[str], None]:
        def failed(message: str) -> None:
            self._running = False
            # The later decisions were made on top of this one and would most likely meet
            # the same fault (a lock held elsewhere): they are dropped with it, and the
            # pane's reload shows what the database holds.
            dropped = len(self._waiting)
            self._waiting.clear()
            if dropped:
                were = agree(dropped, "was", "were")
                message += f" (nor {were} the {plural(dropped, 'decision')} made after it)"
            try:
                item.on_failed(message)
            finally:
                self._next()

        return failed

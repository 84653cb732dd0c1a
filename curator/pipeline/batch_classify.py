"""Classifying what a follow imports, in batches, on a thread of its own.

``curator watch --classify-every N`` keeps reading the logs while the model labels what
was read: a batch of N episodes takes seconds to minutes, and a follow that waited for it
would let the agent's newest lines wait just as long. So the batches run on a thread of
their own (:class:`BatchClassifier`), each one an ordinary ``classify`` run
(:func:`curator.pipeline.classify.classify_episodes` with ``limit=N``, the oldest pending
episodes first, as ``curator classify --limit N`` would pick them). The follow only
:meth:`~BatchClassifier.nudge`\\ s it after a poll that imported something; the two
threads have their own SQLite connections and meet only on the write lock, which each
holds for one short transaction (a chunk of lines; one episode's label).

A batch starts whenever at least N episodes are pending; fewer wait for more lines (the
follow classifies in batches, never one line at a time). :meth:`BatchClassifier.drain`
(``--once``) classifies every pending episode, the last batch possibly shorter.

Stopping mid-batch (Ctrl-C, SIGTERM) cancels the run between two episodes: each label is
committed with its trace step in one transaction, and the run is recorded as
``cancelled`` with what it finished, never left ``running``; the episodes it did not
reach stay pending for the next batch. The follow's positions are committed with their
episodes, so they agree whatever moment the stop comes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from curator.llm.backend import Backend
from curator.pipeline.classify import classify_episodes, pending_episode_ids
from curator.pipeline.progress import TaskState
from curator.pipeline.runlog import RunResult
from curator.store.db import Store

Report = Callable[[str], None]


@dataclass
class BatchTotals:
    """The batches run so far: their run ids, how they ended, the episodes labelled."""

    runs: list[int] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    classified: int = 0
    failure: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": list(self.runs),
            "statuses": list(self.statuses),
            "classified": self.classified,
            "failure": self.failure,
        }


class BatchClassifier:
    """Runs classify batches of ``batch`` episodes beside a follow (see the module doc).

    ``report`` receives one line per finished batch (called on the classifier's thread).
    A batch that fails (the model cannot run) stops the classifier, says so once, and
    leaves the follow going: the lines are still imported, pending for a later run.
    """

    def __init__(self, store: Store, backend: Backend, batch: int, report: Report) -> None:
        if batch < 1:
            raise ValueError("a batch holds at least one episode")
        self.store = store
        self.backend = backend
        self.batch = batch
        self.report = report
        self.totals = BatchTotals()
        self._state = TaskState()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one batch at a time, whichever thread asks

    # -- one batch ---------------------------------------------------------------------

    def _enough_pending(self, minimum: int) -> bool:
        with self.store.read():
            return len(pending_episode_ids(self.store, limit=minimum)) >= minimum

    def run_batch(self, *, minimum: int | None = None) -> RunResult | None:
        """One classify run of up to ``batch`` episodes, when ``minimum`` (default: a
        whole batch) are pending; None when fewer are, or after :meth:`stop`."""
        with self._lock:
            if self._state.cancelled or self.totals.failure:
                return None
            if not self._enough_pending(self.batch if minimum is None else minimum):
                return None
            try:
                result = classify_episodes(self.store, self.backend, self._state, limit=self.batch)
            except Exception as exc:  # recorded as a failed run by the pipeline
                self.totals.failure = f"classifying stopped: {exc}"
                self.report(self.totals.failure)
                return None
            self.totals.runs.append(result.run_id)
            self.totals.statuses.append(result.status)
            self.totals.classified += int(result.counts.get("classified", 0))
            self.report(f"classify run {result.run_id} {result.status}: {result.message}")
            return result

    def drain(self) -> None:
        """Classify every pending episode now, in batches (``--once``); on this thread."""
        while self.run_batch(minimum=1) is not None:
            if self._state.cancelled:
                return

    # -- beside a follow ---------------------------------------------------------------

    def start(self) -> None:
        """Start the thread that runs a batch whenever one is pending after a nudge."""
        self._thread = threading.Thread(target=self._loop, name="classify-batches", daemon=True)
        self._thread.start()
        self.nudge()  # episodes pending from before the follow count too

    def nudge(self) -> None:
        """The follow imported lines: look whether a batch is due (never blocks)."""
        self._wake.set()

    def _loop(self) -> None:
        try:
            while not self._stopping.is_set():
                self._wake.wait()
                self._wake.clear()
                while not self._stopping.is_set() and self.run_batch() is not None:
                    pass
        finally:
            self.store.close()  # this thread's connection

    def stop_soon(self) -> None:
        """Ask a running batch to stop at its next check; safe in a signal handler (it
        only sets events)."""
        self._stopping.set()
        self._state.cancel()
        self._wake.set()

    def stop(self, timeout_s: float | None = None) -> bool:
        """Cancel a running batch (recorded as cancelled between two episodes) and wait
        for the thread; True when it ended within ``timeout_s``."""
        self.stop_soon()
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

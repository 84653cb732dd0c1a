"""How a background store job shares the Python interpreter with the GUI thread.

A job of :class:`~curator.gui.runtime.operations.StoreOps` runs on a thread of the window's own
process, so it competes with the GUI thread for the GIL. Two interpreter settings decided
how long the window could go without painting while an import of 60,000 lines or a
relabel of 100,000 episodes ran; both are changed for as long as any job runs, and put
back when the last one ends (also when it fails or is cancelled):

- **No full garbage collections during a job.** A full (generation 2) collection walks
  every tracked object with the GIL held, on whichever thread triggered it. A relabel or
  undo of 100,000 episodes triggered four to nine of them, an import of 60,000 lines
  eight: 8-28 ms each on a quiet machine with the window's start-up objects frozen
  (``curator.gui.app.freeze_startup_heap``), 80-130 ms each at load average 5, when the
  thread holding the GIL also waits for a CPU; the window could not paint meanwhile.
  The young generations are still collected as usual (their size is bounded, so each
  stays short); only the full collection waits: its threshold is raised for the
  duration, and the first collection after the job catches up.
- **A 1 ms GIL switch interval instead of 5 ms.** The GUI thread does not hold the GIL
  for one long stretch: every slot, timer and ``data()`` call of a table model takes it
  afresh, and each time a busy job thread holds it the GUI thread waits up to one switch
  interval before it is handed over; a repaint is many such calls.

Why threads and not a process: with these settings the longest stall a job causes that
is not the GUI thread waiting for a CPU (other people's processes on a shared machine)
is of the order of the benchmark's control, a thread that only runs Python. A process
would have to re-open the database, ship progress, cancellation and line errors over a
pipe, and would still compete with the window for the same CPUs. Measured in
``benchmarks/RESULTS-gui-responsiveness.md``.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

JOB_SWITCH_INTERVAL_S = 0.001
"""The GIL switch interval while a job runs (Python's default is 0.005 s)."""

DEFERRED_FULL_THRESHOLD = 1_000_000
"""Generation-1 collections before a full one while a job runs: in effect, none."""

_lock = threading.Lock()
_running = 0
_saved: tuple[tuple[int, int, int], float] | None = None


def jobs_running() -> int:
    """How many jobs hold the settings now (tests)."""
    return _running


@contextmanager
def sharing_with_gui() -> Iterator[None]:
    """Run the body with full collections deferred and a short switch interval.

    Re-entrant and thread safe: overlapping jobs (a write and a search) share one saved
    state, restored when the last of them leaves, whatever way it leaves.
    """
    global _running, _saved
    with _lock:
        if _running == 0:
            threshold = gc.get_threshold()
            interval = sys.getswitchinterval()
            _saved = (threshold, interval)
            gc.set_threshold(threshold[0], threshold[1], DEFERRED_FULL_THRESHOLD)
            sys.setswitchinterval(min(interval, JOB_SWITCH_INTERVAL_S))
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _saved is not None:
                threshold, interval = _saved
                _saved = None
                gc.set_threshold(*threshold)
                sys.setswitchinterval(interval)

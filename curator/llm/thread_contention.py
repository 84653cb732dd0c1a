"""Fewer threads while other processes take the cores.

ggml's worker threads spin while they wait for each other at every step of a model call.
When the machine has fewer free cores than the model has threads, one of them is
descheduled and the others spin until it runs again: measured on a two-core machine busy
with other work, a 16-token prompt piece took 3.5 to 9 s with two threads where one
thread takes about 0.25 s. That is not only slow: a piece is the unit between two cancel
checks, so Cancel waited that long too.

The thread counts measured for a model (:mod:`curator.llm.threads`) say what is fastest
*while that measurement ran*. :class:`ContentionGuard` keeps them honest as the machine's
load changes: before each model call it looks at how much CPU the *other* processes used
since the last look (``/proc/stat`` less this process's own CPU time, the same measure
the tuning uses), and runs with at most as many threads as there are free cores among
those this process may run on (its affinity), never fewer than one and never more than the
measured counts. It costs two small file reads a call, at most once a second; after a
pause (no call for :data:`STALE_S`) it looks over a short window first (:data:`PROBE_S`),
so a run that starts on a busy machine starts with the right count. Where ``/proc/stat``
does not exist (not Linux) it changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from curator.llm.threads import machine_busy_seconds, usable_cpus

__all__ = ["ContentionGuard", "Sample", "for_context", "free_cores", "threads_for"]

log = logging.getLogger(__name__)

MIN_INTERVAL_S = 1.0
"""Looks closer together than this reuse the last decision."""
STALE_S = 5.0
"""A look older than this says nothing about now: look again over :data:`PROBE_S`."""
PROBE_S = 0.1
"""The short window looked over after a pause (ten clock ticks of a two-core machine)."""


@dataclass(frozen=True)
class Sample:
    """CPU seconds used by every process and by this one, at a moment."""

    busy: float
    own: float
    wall: float


def free_cores(before: Sample, after: Sample, cpus: int) -> float | None:
    """The cores the other processes left free between two samples (None: too close, or
    the machine's counter went backwards: a restored checkpoint or a migrated virtual
    machine says nothing about the load, and reading it as idle would hand every core
    back to a busy machine)."""
    wall = after.wall - before.wall
    if wall <= 0 or cpus < 1 or after.busy < before.busy:
        return None
    others = max(0.0, (after.busy - before.busy) - (after.own - before.own))
    return max(0.0, cpus - others / wall)


def threads_for(free: float, measured: int) -> int:
    """At most the free cores (rounded to the nearest), at least one, at most ``measured``."""
    return max(1, min(measured, int(free + 0.5)))


class ContentionGuard:
    """Apply the thread counts the machine's current load allows (see the module doc).

    ``apply(threads, batch_threads)`` sets the counts on the model's context; it is
    called only when they change. ``actual()``, where given, reads the counts the context
    runs with: anything else that sets them (a thread measurement on the same context)
    would otherwise leave the guard believing its own last choice, and a context left at
    two threads on a busy machine spun for the rest of the process (seen: 21 s of CPU
    became 97 s for one test). ``sample`` returns the machine's busy CPU seconds (None
    where unknown); ``own`` this process's CPU seconds.
    """

    def __init__(
        self,
        threads: int,
        batch_threads: int,
        apply: Callable[[int, int], None],
        *,
        actual: Callable[[], tuple[int, int]] | None = None,
        cpus: int | None = None,
        sample: Callable[[], float | None] = machine_busy_seconds,
        own: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.measured = (threads, batch_threads)
        self.current = (threads, batch_threads)
        self._apply = apply
        self._actual = actual
        self._cpus = cpus or len(usable_cpus()) or 1  # its affinity: pinned, fewer
        self._sample_busy = sample
        self._own = own
        self._clock = clock
        self._sleep = sleep
        self._last: Sample | None = None

    def _sample(self) -> Sample | None:
        busy = self._sample_busy()
        return None if busy is None else Sample(busy, self._own(), self._clock())

    def check(self) -> tuple[int, int]:
        """Look at the load (at most once a second) and apply the counts it allows."""
        if self._actual is not None:
            self.current = self._actual()
            capped = (
                max(1, min(self.current[0], self.measured[0])),
                max(1, min(self.current[1], self.measured[1])),
            )
            if capped != self.current:  # more than measured (or none) is never right
                self._apply(*capped)
                self.current = capped
        if self.measured == (1, 1):
            return self.current
        now = self._clock()
        last = self._last
        if last is not None and now - last.wall < MIN_INTERVAL_S:
            return self.current
        if last is None or now - last.wall > STALE_S:
            last = self._sample()
            if last is None:
                return self.current
            self._sleep(PROBE_S)
        current = self._sample()
        if current is None:
            return self.current
        self._last = current
        free = free_cores(last, current, self._cpus)
        if free is None:
            return self.current
        wanted = (threads_for(free, self.measured[0]), threads_for(free, self.measured[1]))
        if wanted != self.current:
            log.info(
                "%.1f of %d cores free: %d threads (measured %d)",
                free,
                self._cpus,
                wanted[1],
                self.measured[1],
            )
            self._apply(*wanted)
            self.current = wanted
        return self.current


def for_context(llm: Any, threads: int, batch_threads: int) -> ContentionGuard:
    """The guard of one ``llama_cpp.Llama``'s context: it sets that context's thread counts
    and reads them back before each decision. The context is looked up at each use: once
    the model is closed there is none (llama.cpp would read freed memory), and the guard
    leaves it alone."""
    import llama_cpp

    def actual() -> tuple[int, int]:
        ctx = llm.ctx
        if not ctx:
            return guard.current
        return int(llama_cpp.llama_n_threads(ctx)), int(llama_cpp.llama_n_threads_batch(ctx))

    def apply(count: int, batch: int) -> None:
        ctx = llm.ctx
        if ctx:
            llama_cpp.llama_set_n_threads(ctx, count, batch)

    guard = ContentionGuard(threads, batch_threads, apply, actual=actual)
    return guard

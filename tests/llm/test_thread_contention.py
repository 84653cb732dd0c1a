"""Fewer model threads while other processes take the cores (curator.llm.thread_contention).

The spinning-worker slowdown this guards against was measured at 3.5-9 s for a 16-token
prompt piece with two threads on a busy two-core machine (one thread: about 0.25 s), and
Cancel waited as long. Here the guard's arithmetic is checked on given CPU counters, and
its real reading of ``/proc/stat`` against real busy processes started by the test.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.llm.thread_contention import ContentionGuard, Sample, free_cores, threads_for


class Counters:
    """CPU counters that a test advances by hand (busy seconds of all, own, wall)."""

    def __init__(self) -> None:
        self.load = 0.0  # the cores other processes keep busy while the guard sleeps
        self.busy = 100.0
        self.own = 10.0
        self.wall = 1000.0

    def advance(self, seconds: float, others_cores: float, own_cores: float = 0.0) -> None:
        self.wall += seconds
        self.busy += seconds * (others_cores + own_cores)
        self.own += seconds * own_cores


def _guard(
    counters: Counters,
    applied: list[tuple[int, int]],
    measured: int = 2,
    cpus: int | None = 2,
    context: list[int] | None = None,
) -> ContentionGuard:
    """A guard on the given counters; ``cpus`` None: the CPUs counted as the guard counts
    them by itself. With a ``context`` (its two counts), the guard sets it and reads it
    back, as it does a real model's."""

    def apply(a: int, b: int) -> None:
        applied.append((a, b))
        if context is not None:
            context[:] = [a, b]

    return ContentionGuard(
        measured,
        measured,
        apply,
        actual=None if context is None else lambda: (context[0], context[1]),
        cpus=cpus,
        sample=lambda: counters.busy,
        own=lambda: counters.own,
        clock=lambda: counters.wall,
        sleep=lambda s: counters.advance(s, others_cores=counters.load),
    )


def test_a_busy_machine_gets_one_thread_and_an_idle_one_the_measured_count() -> None:
    counters = Counters()
    applied: list[tuple[int, int]] = []
    guard = _guard(counters, applied)
    counters.load = 1.9  # others take nearly both cores
    assert guard.check() == (1, 1)
    assert applied == [(1, 1)]
    counters.advance(0.5, others_cores=1.9)
    assert guard.check() == (1, 1)  # within a second: the last decision stands
    counters.advance(2.0, others_cores=0.0, own_cores=2.0)  # our own threads do not count
    assert guard.check() == (2, 2)
    assert applied == [(1, 1), (2, 2)]


def test_after_a_pause_the_guard_looks_at_now_not_at_the_average_since() -> None:
    counters = Counters()
    applied: list[tuple[int, int]] = []
    guard = _guard(counters, applied)
    counters.load = 0.0
    assert guard.check() == (2, 2) and applied == []
    counters.advance(600.0, others_cores=0.0)  # ten idle minutes, then a busy moment
    counters.load = 2.0
    assert guard.check() == (1, 1)


def test_one_measured_thread_is_never_touched() -> None:
    counters = Counters()
    applied: list[tuple[int, int]] = []
    counters.load = 2.0
    assert _guard(counters, applied, measured=1).check() == (1, 1)
    assert applied == []


def test_counts_set_behind_the_guards_back_are_read_and_corrected() -> None:
    """A thread measurement on the same context sets its own counts: the guard reads the
    context's counts, so a busy machine gets its one thread back at the next look (it
    believed its own last choice, and a context left at two spun for the rest of the
    process), and more than measured is undone before the call, whatever the interval."""
    counters = Counters()
    applied: list[tuple[int, int]] = []
    context = [2, 2]
    guard = _guard(counters, applied, context=context)
    counters.load = 2.0
    assert guard.check() == (1, 1) and context == [1, 1]
    context[:] = [2, 2]  # a measurement ends by applying what it chose
    counters.advance(1.5, others_cores=2.0)
    assert guard.check() == (1, 1) and context == [1, 1]
    context[:] = [7, 7]
    counters.advance(0.1, others_cores=2.0)  # within a second of the last look
    assert guard.check() == (2, 2) and context == [2, 2]
    assert applied == [(1, 1), (1, 1), (2, 2)]


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to pin to one",
)
def test_a_process_pinned_to_one_cpu_gets_one_thread_on_an_idle_machine() -> None:
    """The free cores are counted among the CPUs this process may run on: pinned to one
    of two idle CPUs, two threads would spin on that one (the machine's count said 2)."""
    counters = Counters()
    applied: list[tuple[int, int]] = []
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        guard = _guard(counters, applied, cpus=None)
        counters.load = 0.0
        assert guard.check() == (1, 1) and applied == [(1, 1)]
    finally:
        os.sched_setaffinity(0, allowed)


def test_no_threads_set_behind_the_guards_back_becomes_one_at_once() -> None:
    applied: list[tuple[int, int]] = []
    context = [0, -3]

    def apply(a: int, b: int) -> None:
        applied.append((a, b))
        context[:] = [a, b]

    # No load reading at all (sample None): only the correction itself can act.
    guard = ContentionGuard(
        2, 2, apply, actual=lambda: (context[0], context[1]), cpus=2, sample=lambda: None
    )
    assert guard.check() == (1, 1) and applied == [(1, 1)]


def test_without_proc_stat_nothing_changes() -> None:
    applied: list[tuple[int, int]] = []
    guard = ContentionGuard(2, 2, lambda a, b: applied.append((a, b)), sample=lambda: None)
    assert guard.check() == (2, 2) and applied == []


@settings(deadline=None)
@given(
    busy=st.floats(0, 1e6),
    own=st.floats(0, 1e6),
    wall=st.floats(0, 1e4),
    cpus=st.integers(-1, 256),
    measured=st.integers(1, 256),
)
@example(busy=0.0, own=5.0, wall=1.0, cpus=2, measured=2)  # own time above the total
@example(busy=1e6, own=0.0, wall=1e-9, cpus=2, measured=2)
def test_the_count_is_always_between_one_and_the_measured_one(
    busy: float, own: float, wall: float, cpus: int, measured: int
) -> None:
    free = free_cores(Sample(0.0, 0.0, 0.0), Sample(busy, own, wall), cpus)
    if free is None:
        assert wall <= 0 or cpus < 1
        return
    assert 0.0 <= free <= cpus
    assert 1 <= threads_for(free, measured) <= measured


_step = st.tuples(
    st.one_of(st.none(), st.tuples(st.integers(-5, 300), st.integers(-5, 300))),
    st.floats(0.0, 3.0),  # seconds until the next call
    st.floats(0.0, 2.0),  # the cores the other processes keep busy meanwhile
)


@settings(deadline=None)
@given(measured=st.integers(1, 8), steps=st.lists(_step, min_size=1, max_size=30))
def test_whatever_sets_the_counts_the_context_runs_within_the_bounds_after_each_check(
    measured: int, steps: list[tuple[tuple[int, int] | None, float, float]]
) -> None:
    """Counts set behind the guard's back (any values, at any moment), any load, any
    pace of calls: after each check the context runs with what the guard says, at least
    one thread and at most the measured count."""
    counters = Counters()
    applied: list[tuple[int, int]] = []
    context = [measured, measured]
    guard = _guard(counters, applied, measured=measured, context=context)
    for set_behind, seconds, load in steps:
        if set_behind is not None:
            context[:] = list(set_behind)
        counters.load = load
        counters.advance(seconds, others_cores=load)
        assert guard.check() == (context[0], context[1])
        assert all(1 <= count <= measured for count in context)


def _spin(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc/stat")
def test_real_busy_processes_take_the_threads_away() -> None:
    """Real processes spinning on every CPU, read through the real /proc/stat."""
    cpus = os.cpu_count() or 1
    applied: list[tuple[int, int]] = []
    guard = ContentionGuard(cpus + 1, cpus + 1, lambda a, b: applied.append((a, b)), cpus=cpus)
    context = multiprocessing.get_context("spawn" if sys.platform == "darwin" else "fork")
    spinners = [context.Process(target=_spin, args=(time.monotonic() + 30,)) for _ in range(cpus)]
    for process in spinners:
        process.start()
    try:
        time.sleep(0.3)
        busy = guard.check()
        time.sleep(1.1)
        busy = guard.check()
    finally:
        for process in spinners:
            process.terminate()
            process.join()
    # the spinners took (nearly) every core: at most one more than half of them is left
    assert busy[0] <= max(1, cpus // 2), (busy, applied)
    assert applied and applied[-1] == busy


@pytest.mark.llm
@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="reads Linux's /proc/stat")
def test_the_loaded_model_runs_with_the_counts_the_guard_chose(demo_backend: object) -> None:
    """The real backend checks the load before evaluating a prompt and sets the context's
    thread counts to the guard's choice (llama.cpp reports them back)."""
    import llama_cpp

    from curator.llm.llama_cpp_backend import LlamaCppBackend

    assert isinstance(demo_backend, LlamaCppBackend)
    guard = demo_backend.contention
    assert guard is not None
    measured = guard.measured
    ctx = demo_backend.llm.ctx
    # As if three threads had been measured fastest, and something else had set seven
    # without telling the guard: whatever the load, the guard must bring the context
    # down to at most three.
    guard.measured = (3, 3)
    llama_cpp.llama_set_n_threads(ctx, 7, 7)
    try:
        guard._last = None  # look again now
        demo_backend.evaluate(demo_backend.tokenize("The agent reviews its logs today."))
        chosen = (llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx))
        assert chosen == guard.current
        assert 1 <= chosen[0] <= 3
    finally:
        guard.measured = measured
        guard.current = measured
        llama_cpp.llama_set_n_threads(demo_backend.llm.ctx, *measured)


@pytest.mark.llm
def test_the_embedding_context_follows_the_load_too(demo_backend: object) -> None:
    """Classify's features come from a second llama.cpp context; it had its own fixed
    thread count and was as slow on a busy machine as the first one was."""
    import llama_cpp

    from curator.llm.llama_cpp_backend import LlamaCppBackend

    assert isinstance(demo_backend, LlamaCppBackend)
    demo_backend.embed(["The agent reviews its logs today."])
    embedder = demo_backend._embedder
    guard = embedder.contention
    assert guard is not None
    ctx = embedder._llm.ctx
    assert (llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx)) == guard.current


@pytest.mark.llm
def test_a_closed_model_is_left_alone(demo_model: Path) -> None:
    """Once the model is closed its context is gone: the guard neither reads nor sets the
    counts of freed memory (llama.cpp would crash the process)."""
    from curator.llm.backend import BackendSettings
    from curator.llm.llama_cpp_backend import load_backend

    backend = load_backend(BackendSettings(model_path=demo_model, n_ctx=256, n_threads=2))
    guard = backend.contention
    assert guard is not None
    backend.close()
    guard._last = None
    guard.measured = (1, 1)  # counts above these would be undone at once, if it could
    assert guard.check() == guard.current


def test_a_counter_that_goes_backwards_keeps_the_last_decision() -> None:
    """``/proc/stat`` read lower than before (a restored checkpoint, a migrated virtual
    machine) says nothing about the load: the busy machine keeps its one thread instead
    of getting every core back, and the next look measures from the new reading."""
    counters = Counters()
    applied: list[tuple[int, int]] = []
    guard = _guard(counters, applied)
    counters.load = 2.0
    assert guard.check() == (1, 1)
    counters.advance(2.0, others_cores=2.0)
    counters.busy -= 1000.0  # the reset
    assert guard.check() == (1, 1)
    counters.advance(2.0, others_cores=2.0)
    assert guard.check() == (1, 1)
    counters.advance(2.0, others_cores=0.0)
    assert guard.check() == (2, 2)
    assert applied == [(1, 1), (2, 2)]


@settings(deadline=None)
@given(drop=st.floats(1e-6, 1e9), own=st.floats(0, 1e6), wall=st.floats(1e-9, 1e4))
@example(drop=1e9, own=0.0, wall=1.0)
def test_a_busy_counter_below_the_last_says_nothing(drop: float, own: float, wall: float) -> None:
    assert free_cores(Sample(drop, 0.0, 0.0), Sample(0.0, own, wall), 2) is None

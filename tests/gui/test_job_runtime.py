"""While a StoreOps job runs, no full garbage collection holds the GIL and the GIL is
handed over in short slices; both settings are put back when the last job ends."""

from __future__ import annotations

import gc
import sys
import threading
from typing import Any

from curator.gui.runtime.job_runtime import (
    DEFERRED_FULL_THRESHOLD,
    JOB_SWITCH_INTERVAL_S,
    jobs_running,
    sharing_with_gui,
)
from curator.gui.runtime.operations import OpContext, StoreOps
from curator.store.db import Store


def _settings() -> tuple[tuple[int, int, int], float]:
    return gc.get_threshold(), sys.getswitchinterval()


def _full_collections_while(fn: Any) -> int:
    """How many generation-2 collections ran while ``fn()`` ran (on any thread)."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(callback)
    try:
        fn()
    finally:
        gc.callbacks.remove(callback)
    return len(seen)


def _allocate_long_lived() -> list[list[int]]:
    # Tracked objects that stay alive: what a bulk job's rows were (peewee instances,
    # parsed episodes). Enough of them to make the collector want a full collection:
    # it waits until the survivors are a quarter of the objects it already holds, so
    # as many as half of those (a whole test session's heap can be large).
    return [[i] for i in range(max(300_000, len(gc.get_objects()) // 2))]


def test_a_job_runs_with_full_collections_deferred_and_short_gil_slices(qtbot, store: Store):
    before = _settings()
    ops = StoreOps(store)
    inside: list[tuple[tuple[int, int, int], float]] = []
    assert ops.write("Look", lambda ctx: inside.append(_settings()))
    qtbot.waitUntil(lambda: ops.pending == 0)
    ((threshold, interval),) = inside
    assert threshold == (before[0][0], before[0][1], DEFERRED_FULL_THRESHOLD)
    assert interval == min(before[1], JOB_SWITCH_INTERVAL_S)
    assert _settings() == before


def test_a_bulk_allocation_in_a_job_triggers_no_full_collection(qtbot, store: Store):
    kept: list[Any] = []
    # The same allocation outside a job does trigger them (the test can fail).
    assert _full_collections_while(lambda: kept.append(_allocate_long_lived())) > 0
    kept.clear()
    gc.collect()

    ops = StoreOps(store)

    def job(ctx: OpContext) -> None:
        kept.append(_allocate_long_lived())

    def run() -> None:
        assert ops.write("Allocate", job)
        qtbot.waitUntil(lambda: ops.pending == 0, timeout=30_000)

    assert _full_collections_while(run) == 0
    kept.clear()


def test_settings_come_back_after_a_failure_and_only_when_the_last_job_ends(qtbot, store: Store):
    before = _settings()
    ops = StoreOps(store)
    release = threading.Event()
    failures: list[str] = []

    def boom(ctx: OpContext) -> None:
        raise RuntimeError("the job failed")

    assert ops.query("slow", lambda ctx: release.wait(10))  # a search still running
    assert ops.write("Boom", boom, on_failed=failures.append)
    qtbot.waitUntil(lambda: bool(failures))
    assert jobs_running() == 1
    assert _settings() != before  # the search still runs: kept
    release.set()
    qtbot.waitUntil(lambda: ops.pending == 0)
    assert jobs_running() == 0
    assert _settings() == before


def test_nested_use_restores_once() -> None:
    before = _settings()
    with sharing_with_gui():
        with sharing_with_gui():
            pass
        assert gc.get_threshold()[2] == DEFERRED_FULL_THRESHOLD
    assert _settings() == before

"""Automatic threads: the physical cores, and never fewer than two on a busy machine.

Before, the guess was half the logical CPUs (one thread on a two-core machine without
hyper-threading), and the measurement took whatever was fastest while it ran: on a
two-core machine busy with other work that was one thread, kept for good.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curator.llm import threads
from curator.llm.threads import (
    IDLE_SHARE,
    RULE,
    Tuning,
    cached_tuning,
    choose_threads,
    physical_cores,
    tuning_cache_file,
    usable_cpus,
)


def _sysfs(root: Path, cores: list[tuple[int, int]]) -> Path:
    """A CPU topology tree as Linux lays it out: one (package, core) per logical CPU."""
    for cpu, (package, core) in enumerate(cores):
        topology = root / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
        (topology / "core_id").write_text(f"{core}\n")
    return root


def test_two_cores_without_hyper_threading_get_two_threads(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, [(0, 0), (0, 1)])
    assert physical_cores([0, 1], sysfs) == 2  # half the logical CPUs said 1


def test_hyper_threaded_siblings_count_once(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, [(0, 0), (0, 1), (0, 0), (0, 1), (1, 0), (1, 0)])
    assert physical_cores(list(range(6)), sysfs) == 3
    assert physical_cores([0, 2], sysfs) == 1  # the affinity allows one core's two siblings


def test_without_topology_files_every_cpu_counts(tmp_path: Path) -> None:
    assert physical_cores([0, 1, 2], tmp_path / "missing") == 3
    assert physical_cores([], tmp_path / "missing") == 1


def test_the_real_machine_has_a_sensible_count() -> None:
    assert 1 <= physical_cores() <= len(usable_cpus())


def test_a_busy_measurement_does_not_go_below_two() -> None:
    measured = {1: 0.30, 2: 0.42}  # two threads slower: the other core was taken
    assert choose_threads(measured, floor=2, idle=False) == 2
    assert choose_threads(measured, floor=2, idle=True) == 1  # idle: the measurement holds
    assert choose_threads({1: 0.3}, floor=2, idle=False) == 1  # nothing else measured


@given(
    seconds=st.dictionaries(
        st.integers(1, 64), st.floats(0.0, 10.0, allow_nan=False), min_size=1, max_size=12
    ),
    floor=st.integers(1, 2),
    idle=st.booleans(),
)
def test_the_choice_is_measured_fastest_above_the_floor(
    seconds: dict[int, float], floor: int, idle: bool
) -> None:
    chosen = choose_threads(seconds, floor=floor, idle=idle)
    assert chosen in seconds
    allowed = [c for c in seconds if idle or c >= floor] or list(seconds)
    assert chosen in allowed
    assert all((seconds[chosen], chosen) <= (seconds[c], c) for c in allowed)
    if not idle and max(seconds) >= floor:
        assert chosen >= floor


def test_a_choice_saved_by_the_old_rule_is_measured_again(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path))
    old = {"n_threads": 1, "n_threads_batch": 1, "measured_at": "2026-01-01T00:00:00+00:00"}
    tuning_cache_file().write_text(json.dumps({threads._key(demo_model): old}))
    assert cached_tuning(demo_model) is None
    new = {**old, "rule": RULE, "others_share": 0.5}
    tuning_cache_file().write_text(json.dumps({threads._key(demo_model): new}))
    assert cached_tuning(demo_model) == Tuning(**new)


@pytest.mark.llm
@pytest.mark.skipif(len(usable_cpus()) < 2, reason="the floor is for machines with 2+ CPUs")
def test_measuring_on_a_busy_machine_keeps_two_threads(
    demo_backend, demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real other work on every CPU while the real model is measured."""
    import llama_cpp

    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path))
    spin = "import time\nend = time.time() + 60\nwhile time.time() < end: pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(len(usable_cpus()))]
    ctx = demo_backend.llm.ctx
    before = (llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx))
    try:
        tuning = threads.measure(demo_backend.llm, demo_model, [1, 2])
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        llama_cpp.llama_set_n_threads(ctx, *before)  # the session's model, as it was
    demo_backend.llm.reset()
    assert tuning.others_share is not None and tuning.others_share >= IDLE_SHARE
    assert not tuning.idle and "busy" in tuning.describe()
    floor = min(2, physical_cores())
    assert tuning.n_threads >= floor and tuning.n_threads_batch >= floor

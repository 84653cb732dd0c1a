"""How soon a run stops after Cancel (Esc in the window), at every phase of a run.

Usage: ``python benchmarks/bench_cancel.py [--trials N] [--seed S] [--model PATH]``

The window's Cancel calls :meth:`curator.pipeline.progress.TaskState.cancel` from the GUI
thread while the worker thread runs the pipeline; this script does the same from a timer
thread, with the real llama.cpp backend and the demo model (or ``--model``) on a throw-away
copy of the demo database, and measures the time from ``cancel()`` to the pipeline call
returning. Each trial cancels at a random moment (seeded) of a classify run (label-bias
measurement, prompt reading, label scoring) or a distill run (extract, refine and
importance generations, long prompts), so every phase is hit; the worst case is what a
person waits for. Goal: at most 1 s, every trial.

Printed: one line per trial (kind, moment, latency, where the run was) and, per kind, the
median, the 95th percentile and the maximum, with the machine's load average before and
after (a busy machine reads prompts slower, which lengthens the uninterruptible piece).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.llm.backend import backend_settings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import resolve_model_path
from curator.pipeline.classify import classify_episodes
from curator.pipeline.distill import distill
from curator.pipeline.progress import Progress, TaskState
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.settings import load_settings

GOAL_S = 1.0
LIMITS = {"classify": 40, "distill": 6}
LATEST = {"classify": 6.0, "distill": 40.0}
"""Cancel moments are drawn from 0.2 s to this many seconds into a run."""


def _trial(store: Store, backend: object, kind: str, at_s: float) -> tuple[float, str, str]:
    """Start ``kind``, cancel it ``at_s`` seconds in; (latency, phase, result status)."""
    last: list[Progress] = []
    state = TaskState(on_progress=last.append)
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.perf_counter())
        state.cancel()

    timer = threading.Timer(at_s, cancel)
    timer.start()
    if kind == "classify":
        result = classify_episodes(store, backend, state, limit=LIMITS[kind])  # type: ignore[arg-type]
    else:
        result = distill(store, backend, state, limit=LIMITS[kind])  # type: ignore[arg-type]
    returned = time.perf_counter()
    timer.cancel()
    if not cancelled_at:
        return float("nan"), "finished before the cancel", str(result.status)
    phase = f"{last[-1].step} {last[-1].done}/{last[-1].total}" if last else "starting"
    return returned - cancelled_at[0], phase, str(result.status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=8, help="trials per kind (default 8)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", help="a GGUF file (default: the demo model)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    worst: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "cancel.sqlite")
        create_demo(store)
        # Distill reads labelled episodes: half the demo is labelled by hand, as a reviewer
        # would, and the other half is left for classify.
        store.execute(
            "UPDATE episode SET human_label = 'uncategorized', label = 'uncategorized', "
            "label_by = 'human' WHERE label IS NULL AND id > 100"
        )
        saved = load_settings(store)
        backend = load_backend(backend_settings(saved, resolve_model_path(args.model, None)))
        try:
            for kind in ("classify", "distill"):
                latencies: list[float] = []
                for trial in range(args.trials):
                    at_s = rng.uniform(0.2, LATEST[kind])
                    latency, phase, status = _trial(store, backend, kind, at_s)
                    print(
                        f"{kind} #{trial + 1}: cancel at {at_s:5.2f} s, "
                        f"stopped after {latency:.3f} s ({status}, at {phase})"
                    )
                    if latency == latency:  # not NaN: the run was still going
                        latencies.append(latency)
                worst[kind] = latencies
        finally:
            backend.close()
            store.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    failed = False
    for kind, latencies in worst.items():
        if not latencies:
            print(f"{kind}: every run finished before its cancel; raise LATEST")
            continue
        ordered = sorted(latencies)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(
            f"{kind}: {len(ordered)} cancels, median {statistics.median(ordered):.3f} s, "
            f"p95 {p95:.3f} s, max {ordered[-1]:.3f} s (goal {GOAL_S:.1f} s)"
        )
        failed |= ordered[-1] > GOAL_S
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

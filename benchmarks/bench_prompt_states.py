"""What a kept prompt head saves a new ``curator classify`` process.

Benchmark, not a test: ``curator classify --limit N`` runs as a fresh process on a copy
of the demo database with the demo model, in rounds that run each case once in turn:
*head evaluated* (the kept prompt states deleted first, as on a first start or after the
axioms changed: the process evaluates the head and keeps it) and *head restored* (the
state the previous run kept). Thread counts and the model's digest are measured once
before the rounds, into the benchmark's own cache folder, so both cases find them. The
medians of wall and CPU time (the process and its children) are printed per episode
count, with their ratio; each run's labels are compared across the two cases, which
must agree (exit 1 otherwise).

    python benchmarks/bench_prompt_states.py [--rounds N] [--limits 1,5]

``tests/llm/test_prompt_states.py`` holds the scores equal to the last bit; this file
measures the time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "curator", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"curator {' '.join(args)} failed: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limits", default="1,5")
    args = parser.parse_args()
    limits = [int(n) for n in args.limits.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cache = folder / "cache"
        env = {**os.environ, "CURATOR_CACHE_DIR": str(cache), "CURATOR_CONFIG_DIR": tmp}
        template = folder / "demo.sqlite"
        _run(["--db", str(template), "demo"], env)
        warm = folder / "warm.sqlite"
        shutil.copyfile(template, warm)
        _run(["--db", str(warm), "classify", "--limit", "1"], env)  # threads and digest
        times: dict[tuple[int, str], list[tuple[float, float]]] = {}
        answers: dict[tuple[int, str], set[str]] = {}
        for _ in range(args.rounds):
            for limit in limits:
                for case in ("head evaluated", "head restored"):
                    if case == "head evaluated":
                        for state in cache.glob("prompt-state-*.bin"):
                            state.unlink()
                    db = folder / f"run-{limit}.sqlite"
                    shutil.copyfile(template, db)
                    wall, cpu, out = _run(["--db", str(db), "classify", "--limit", str(limit)], env)
                    times.setdefault((limit, case), []).append((wall, cpu))
                    answers.setdefault((limit, case), set()).add(out.strip().split(": ", 1)[-1])
        print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds; medians")
        print("| episodes | head evaluated: wall / CPU | head restored: wall / CPU | ratio |")
        print("|---|---|---|---|")
        failed = False
        for limit in limits:
            cells = []
            for case in ("head evaluated", "head restored"):
                runs = times[(limit, case)]
                wall = statistics.median(w for w, _ in runs)
                cpu = statistics.median(c for _, c in runs)
                cells.append((wall, cpu))
            (w0, c0), (w1, c1) = cells
            print(
                f"| {limit} | {w0:.2f} s / {c0:.2f} s | {w1:.2f} s / {c1:.2f} s "
                f"| {w1 / w0:.2f}x wall, {c1 / c0:.2f}x CPU |"
            )
            if answers[(limit, "head evaluated")] != answers[(limit, "head restored")]:
                print(f"labels differ at --limit {limit}: {answers}", file=sys.stderr)
                failed = True
        return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The threshold what-if while a line is dragged: the table against the walk, per shape.

Usage: ``python benchmarks/bench_whatif.py [--sizes 10000 100000] [--rounds 5]``

Insights asks for a what-if (:class:`curator.core.whatif.WhatIfTable`) at every mouse move
of a threshold line, on the GUI thread, so it must fit in a frame (16 ms) at any number of
reviewed candidates. The baseline is :func:`curator.core.whatif.walk_what_if`, one
candidate at a time, measured in the same run on the same candidates; both answers are
compared (they must be equal). Each shape of history is timed on its own, since the walk
over runs is where a shape could cost: every candidate in one run, many small runs, the
reviewed half of the runs scored against the whole, and candidates gated alone (a gold
set's, no run). The table is built once, where the insights are computed (a pool thread):
its build time is reported beside it. The last line names the slowest shape.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.core.whatif import GatedCandidate, WhatIf, WhatIfTable, walk_what_if

FRAME_MS = 16.0
DECISIONS = ("SKIP", "UPDATE", "ADD", "REJECT")


def history(n: int, runs: int | None, seed: int) -> list[GatedCandidate]:
    """``n`` candidates in ``runs`` runs (None: gated alone), as a reviewed history looks:
    ratios spread over [0, 1], proposals from the default thresholds, a fifth matched
    an earlier candidate of their run, humans agreeing with most proposals."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ratio = rng.random()
        proposed = "SKIP" if ratio >= 0.9 else "UPDATE" if ratio >= 0.75 else "ADD"
        human = proposed if rng.random() < 0.8 else rng.choice(DECISIONS)
        run_id = None if runs is None else i * runs // n
        same_run = run_id is not None and proposed != "ADD" and rng.random() < 0.2
        out.append(
            GatedCandidate(i, ratio, proposed, human, rng.random() < 0.005, same_run, run_id)
        )
    return out


def best_ms(work: Callable[[float], WhatIf], rounds: int) -> tuple[float, WhatIf]:
    """The best of ``rounds`` what-ifs, each at another SKIP threshold (as a drag asks)."""
    times, answer = [], None
    for k in range(rounds):
        start = time.perf_counter()
        answer = work(0.93 - 0.01 * k)
        times.append(time.perf_counter() - start)
    assert answer is not None
    return min(times) * 1000, answer


def measure(
    size: str,
    name: str,
    scored: list[GatedCandidate],
    runs: list[GatedCandidate] | None,
    rounds: int,
) -> float:
    """Print one shape's row; its table's best time a what-if, in ms."""
    start = time.perf_counter()
    table = WhatIfTable(scored, runs)
    build_ms = (time.perf_counter() - start) * 1000
    walk_ms, walked = best_ms(lambda s: walk_what_if(scored, s, 0.7, runs=runs), rounds)
    table_ms, tabled = best_ms(lambda s: table.at(s, 0.7), rounds)
    same = (walked.proposals, walked.pool_dependent, walked.matrix.counts.tolist()) == (
        tabled.proposals,
        tabled.pool_dependent,
        tabled.matrix.counts.tolist(),
    )
    if not same:
        raise SystemExit(f"{name} at {size}: the table's answer differs from the walk's")
    print(
        f"| {size} | {name} | {walk_ms:.1f} ms | {table_ms:.2f} ms | {walk_ms / table_ms:.0f}x | "
        f"{build_ms:.0f} ms | {'yes' if table_ms <= FRAME_MS else 'NO'} |"
    )
    return table_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, best of {args.rounds} what-ifs per shape")
    print("| candidates | shape | walk | table | speed-up | table build | within a frame |")
    print("|---|---|---|---|---|---|---|")
    slowest = (0.0, "")
    for n in args.sizes:
        shapes: dict[str, tuple[list[GatedCandidate], list[GatedCandidate] | None]] = {}
        one = history(n, 1, seed=1)
        many = history(n, max(1, n // 20), seed=2)
        shapes["one run"] = (one, None)
        shapes["runs of 20"] = (many, None)
        shapes["half scored, whole runs"] = (many[::2], many)
        shapes["gated alone"] = (history(n, None, seed=3), None)
        for name, (scored, runs) in shapes.items():
            table_ms = measure(f"{n:,}", name, scored, runs, args.rounds)
            slowest = max(slowest, (table_ms, f"{name} at {n:,}"))
    print(
        f"slowest shape: {slowest[1]}, {slowest[0]:.2f} ms a what-if (a frame: {FRAME_MS:.0f} ms)"
    )


if __name__ == "__main__":
    main()

"""import-knowledge of a large plain-text file: time, decisions, and whether it grows
quadratically.

Usage: ``python benchmarks/bench_import_knowledge.py [LINES ...] [--seed S]``
(default: 20,000 and 200,000 lines).

Each file has one pattern per line, made by ``synthetic_patterns.make_data`` (templates and a
vocabulary, one in seven 200+ characters, near-duplicates of memory and of earlier
lines), and one line in ten an exact repeat of an earlier one. A file of more than
100,000 lines is read up to the reader's limit of 100,000 patterns (the rest is
reported). Each run imports into a fresh database with 200 active patterns and prints
the wall time, the time per gated pattern and the proposals.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from synthetic_patterns import make_data


def make_file(path: Path, lines: int, seed: int) -> list[str]:
    """The dedup benchmark's patterns (templates, long ones, near-duplicates), 10 % of the
    lines an exact repeat of an earlier line; returns the 200 texts already in memory."""
    rng = random.Random(seed)
    new, existing = make_data(lines, 200, seed)
    out = [rng.choice(new[:i]) if i and rng.random() < 0.10 else t for i, t in enumerate(new)]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return existing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lines", nargs="*", type=int, default=[20_000, 200_000])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    from curator.pipeline.import_knowledge import import_knowledge
    from curator.store.db import Store
    from curator.store.models import Pattern, utcnow

    for lines in args.lines:
        with tempfile.TemporaryDirectory() as folder:
            source = Path(folder) / "knowledge.txt"
            existing = make_file(source, lines, args.seed)
            store = Store(Path(folder) / "bench.sqlite")
            with store.write():
                Pattern.insert_many(
                    [
                        {"text": t, "importance": 0.5, "distilled_at": utcnow(), "rank_key": -1.0}
                        for t in existing
                    ]
                ).execute()
            started = time.perf_counter()
            report = import_knowledge(store, source)
            wall = time.perf_counter() - started
            store.close()
        gated = max(1, report.staged)
        print(
            f"{lines:>9,} lines: {wall:8.1f} s, {1e3 * wall / gated:.2f} ms per pattern; "
            f"{report.read:,} read, {report.staged:,} staged {dict(report.by_action)}, "
            f"{len(report.errors)} line errors",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

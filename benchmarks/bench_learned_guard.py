"""How well the learned guard separates poisoned from benign texts after N rejections.

Trains :class:`curator.pipeline.guard_learn.LearnedGuard` on N poisoned texts (as if the
reviewer had rejected them) and N benign ones (accepted) from ``tests/data``, drawn with a
fixed seed, and measures on everything not drawn: the held-out poisoned set
(``poisoned_heldout.jsonl``, never trained on) and the remaining development texts. It
learns from the reviewer's own decisions, so these numbers say how fast it picks up a
pattern of rejections, not how it does on attacks unlike any rejected one.

    python benchmarks/bench_learned_guard.py [--draws 20]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from curator.pipeline.guard_learn import GuardExamples, LearnedGuard

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def _load() -> tuple[list[str], list[str], list[str]]:
    def texts(name: str) -> list[str]:
        with open(DATA / name, encoding="utf-8") as f:
            return [json.loads(line)["text"] for line in f if line.strip()]

    benign = [
        line.strip()
        for line in (DATA / "benign.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return texts("poisoned.jsonl"), texts("poisoned_heldout.jsonl"), benign


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    args = parser.parse_args()
    poisoned, heldout, benign = _load()
    print(f"{len(poisoned)} poisoned, {len(heldout)} held-out poisoned, {len(benign)} benign")
    print("| rejected | accepted | recall, rest of dev set | recall, held-out | false flags |")
    print("|---|---|---|---|---|")
    for n in (5, 10, 20, 40):
        for ratio in (1, 4):
            dev, held, fp = [], [], []
            for seed in range(args.draws):
                rng = random.Random(seed)
                bad = rng.sample(poisoned, n)
                good = rng.sample(benign, n * ratio)
                guard = LearnedGuard(GuardExamples(tuple(bad), tuple(good)))
                dev.append(_share(guard, [t for t in poisoned if t not in bad]))
                held.append(_share(guard, heldout))
                fp.append(_share(guard, [t for t in benign if t not in good]))
            print(
                f"| {n} | {n * ratio} | {statistics.mean(dev):.0%} | "
                f"{statistics.mean(held):.0%} | {statistics.mean(fp):.1%} |"
            )


def _share(guard: LearnedGuard, texts: list[str]) -> float:
    flags = guard.flags(texts)
    return sum(f is not None for f in flags) / len(texts)


if __name__ == "__main__":
    main()

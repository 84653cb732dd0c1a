"""Benchmark the dedup gate against the plain all-pairs loop, mix by mix.

Usage: ``python benchmarks/bench_dedup.py [--quick] [--seed N] [--plain-rows N M]
[--mix NAME] [--source development|held-out|both] [--parts]``

``--mix reworded`` measures a kind of batch outside "all" (see :data:`EXTRA_MIXES`).

``--parts`` measures only the gate, on the development source, with each part of it
switched off in turn (no part changes a decision): what each part buys.

Existing knowledge is made of real observations from this repository: a
*development* source (the demo data in ``resources/demo`` and the development sets of
``tests/data``) and a *held-out* source (the held-out sets ``tests/data/poison_test*``),
drawn with different seeds.  Where a pool needs more texts than a source has (10,000),
the rest are recombinations of two real observations (the first words of one and the
last words of another, cut at word boundaries), so vocabulary and lengths stay real.

Each mix of new texts is measured on its own, and all together: fresh observations
(real ones kept out of the pool), one or two typos, a swapped word pair, an appended
clause, exact repeats, and long merges of two or three pool observations.  The gate
and the plain difflib loop (:func:`reference_gate`) run on the same data in the same
process.  The plain loop is slow, so it runs on the first ``--plain-rows`` new texts
of each mix and its time for the whole batch is extrapolated per pair compared (the
output says so); decisions of a prefix do not depend on the texts after it, so the
plain loop's decisions on the prefix must equal the prefix of the gate's, and the
script exits 1 on the first difference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curator.core import dedup, dedup_search, dedup_seed  # noqa: E402
from curator.core.dedup import Decision, gate, reference_gate  # noqa: E402

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def _jsonl_texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in _lines(path)]


def _episode_sentences(path: Path) -> list[str]:
    """Sentences of the demo episodes' posts and messages (real agent observations)."""
    out: list[str] = []
    for line in _lines(path):
        episode = json.loads(line)
        parts = [episode.get("content") or ""]
        parts += [m.get("content") or "" for m in episode.get("messages") or []]
        for part in parts:
            out += [s.strip() for s in _SENTENCE_END.split(part) if len(s.strip()) >= 25]
    return out


def development_texts() -> list[str]:
    data = ROOT / "tests" / "data"
    demo = ROOT / "resources" / "demo"
    texts = [p["text"] for p in json.loads((demo / "patterns.json").read_text("utf-8"))]
    texts += _episode_sentences(demo / "episodes.jsonl")
    texts += _lines(data / "benign.txt") + _jsonl_texts(data / "poisoned.jsonl")
    for name in ("poison_dev", "poison_dev2"):
        texts += _lines(data / name / "benign.txt") + _jsonl_texts(data / name / "injections.jsonl")
    return _unique(texts)


def heldout_texts() -> list[str]:
    data = ROOT / "tests" / "data"
    texts = _jsonl_texts(data / "poisoned_heldout.jsonl")
    for folder in sorted(data.glob("poison_test*")):
        for path in sorted(folder.glob("benign_*.txt")):
            texts += _lines(path)
        texts += _jsonl_texts(folder / "injections.jsonl")
    return _unique(texts)


def _unique(texts: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(t for t in texts if t))


def recombine(rng: random.Random, left: str, right: str) -> str:
    """The first words of ``left`` and the last words of ``right``: a plausible new text."""
    a, b = left.split(), right.split()
    cut_a = rng.randint(max(1, len(a) // 3), max(1, 2 * len(a) // 3))
    cut_b = rng.randint(max(1, len(b) // 3), max(1, 2 * len(b) // 3))
    return " ".join(a[:cut_a] + b[cut_b:])


def typo(rng: random.Random, text: str) -> str:
    index = rng.randrange(len(text))
    return text[:index] + rng.choice("abcdefghijklmnopqrstuvwxyz") + text[index + 1 :]


def typos(rng: random.Random, text: str) -> str:
    return typo(rng, typo(rng, text)) if rng.random() < 0.5 else typo(rng, text)


def swap_words(rng: random.Random, text: str) -> str:
    words = text.split()
    if len(words) > 2:
        index = rng.randrange(len(words) - 1)
        words[index], words[index + 1] = words[index + 1], words[index]
    return " ".join(words)


@dataclass
class Data:
    existing: list[str]
    reserve: list[str]  # real observations kept out of the pool (the fresh ones)


def make_pool(texts: Sequence[str], n_existing: int, n_reserve: int, seed: int) -> Data:
    rng = random.Random(seed)
    shuffled = list(texts)
    rng.shuffle(shuffled)
    reserve, real = shuffled[:n_reserve], shuffled[n_reserve:]
    existing = real[:n_existing]
    seen = set(existing)
    while len(existing) < n_existing:
        text = recombine(rng, rng.choice(real), rng.choice(real))
        if text not in seen:
            seen.add(text)
            existing.append(text)
    rng.shuffle(existing)
    return Data(existing, reserve)


Maker = Callable[[random.Random, Data], str]


def _pick(rng: random.Random, data: Data) -> str:
    return rng.choice(data.existing)


def _merge(rng: random.Random, data: Data) -> str:
    return " ".join(rng.choice(data.existing) for _ in range(rng.choice((2, 3))))


def _append(rng: random.Random, data: Data) -> str:
    clause = rng.choice(data.reserve).rstrip(".!?")
    words = clause.split()
    clause = " ".join(words[: rng.randint(3, max(3, min(len(words), 12)))])
    return _pick(rng, data).rstrip(".!?") + ", " + clause[:1].lower() + clause[1:] + "."


MIXES: dict[str, Maker] = {
    "fresh": lambda rng, data: rng.choice(data.reserve),
    "typos": lambda rng, data: typos(rng, _pick(rng, data)),
    "word swaps": lambda rng, data: swap_words(rng, _pick(rng, data)),
    "appended clauses": _append,
    "exact repeats": _pick,
    "merges of 2-3": _merge,
}


def _reword(rng: random.Random, data: Data) -> str:
    """A pool text with one word dropped and one or two replaced by words of a fresh text."""
    words = _pick(rng, data).split()
    others = rng.choice(data.reserve).split()
    if len(words) > 3:
        del words[rng.randrange(len(words))]
    for _ in range(rng.choice((1, 2))):
        words[rng.randrange(len(words))] = rng.choice(others)
    return " ".join(words)


#: Mixes that are not part of "all" (``--mix NAME`` only): kinds of batch the gate was
#: not tuned on, to check a change against.
EXTRA_MIXES: dict[str, Maker] = {"reworded": _reword}


def mix_number(mix: str) -> int:
    """A fixed number per mix, for its seed."""
    return [*MIXES, "all", *EXTRA_MIXES].index(mix)


def make_new(mix: str, n_new: int, data: Data, seed: int) -> list[str]:
    rng = random.Random(seed)
    makers = list(MIXES.values()) if mix == "all" else [{**MIXES, **EXTRA_MIXES}[mix]]
    return [rng.choice(makers)(rng, data) for _ in range(n_new)]


def pool_pairs(decisions: Sequence[Decision], n_existing: int) -> int:
    """Pairs the contract compares: every new text against the pool as it was then."""
    pairs, pool = 0, n_existing
    for decision in decisions:
        pairs += pool
        if decision.action == "ADD":
            pool += 1
    return pairs


@dataclass
class Result:
    gate_seconds: float
    gate_cpu: float
    plain_seconds: float  # for the plain loop's rows only
    plain_cpu: float
    plain_rows: int
    plain_pairs: int
    all_pairs: int
    actions: str

    @property
    def plain_estimate(self) -> float:
        """The plain loop's time for the whole batch, from its rate on the rows it ran."""
        return self.plain_seconds * self.all_pairs / self.plain_pairs

    @property
    def speedup(self) -> float:
        return self.plain_estimate / self.gate_seconds

    @property
    def cpu_speedup(self) -> float:
        """The same ratio in CPU seconds of this process: far less moved by other load.

        The gate's CPU time counts rapidfuzz's and numpy's second thread too, so on an
        idle machine the wall-clock ratio is the one that counts.
        """
        return self.plain_cpu * self.all_pairs / self.plain_pairs / self.gate_cpu


def run_case(new: list[str], existing: list[str], plain_rows: int, repeats: int) -> Result:
    timings, cpu = [], []
    fast: list[Decision] = []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fast = gate(new, existing)
        timings.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    rows = min(plain_rows, len(new))
    start, start_cpu = time.perf_counter(), time.process_time()
    plain = reference_gate(new[:rows], existing)
    plain_seconds = time.perf_counter() - start
    plain_cpu = time.process_time() - start_cpu
    if fast[:rows] != plain:
        for index, (a, b) in enumerate(zip(fast, plain, strict=False)):
            if a != b:
                print(f"MISMATCH at new[{index}]: gate={a} plain={b}", file=sys.stderr)
                break
        raise SystemExit(1)
    counts = {a: sum(d.action == a for d in fast) for a in ("SKIP", "UPDATE", "ADD")}
    return Result(
        gate_seconds=statistics.median(timings),
        gate_cpu=statistics.median(cpu),
        plain_seconds=plain_seconds,
        plain_cpu=plain_cpu,
        plain_rows=rows,
        plain_pairs=pool_pairs(plain, len(existing)),
        all_pairs=pool_pairs(fast, len(existing)),
        actions="/".join(str(v) for v in counts.values()),
    )


#: Parts of the gate that can be switched off (module, attribute, value when off).
PARTS: dict[str, tuple[object, str, object]] = {
    "word-overlap seeds": (dedup_seed, "HINTS", 0),
    "one-pair seeding": (dedup_seed, "SEED_PAIRS", None),
    "ADDed texts in the chunk's order": (dedup, "ADDED_FIRST", 10**9),
    "cover bound": (dedup_search, "COVER", False),
    "early stop": (dedup_search, "EARLY_STOP", False),
    "block search by substring": (dedup_search, "PLAIN_FIND", False),
    "compiled block search": (dedup_search, "COMPILED_FIND", False),
}


def gate_cpu(new: list[str], existing: list[str], repeats: int) -> float:
    """The gate's CPU seconds (median): comparable between parts even on a busy machine."""
    timings = []
    for _ in range(repeats):
        start = time.process_time()
        gate(new, existing)
        timings.append(time.process_time() - start)
    return statistics.median(timings)


def measure_parts(
    sizes: Sequence[tuple[int, int]], mixes: Sequence[str], seed: int, repeats: int
) -> None:
    """The gate's time on the development source with each part switched off in turn."""
    texts = development_texts()
    print("\nWhat each part buys (development source; gate CPU seconds, median; no part changes a")
    print("decision, so the plain loop is not run):")
    print(
        "| new x existing | mix | all parts | " + " | ".join(f"without {p}" for p in PARTS) + " |"
    )
    print("|---|---|---|" + "---|" * len(PARTS))
    for n_new, n_existing in sizes:
        data = make_pool(texts, n_existing, 250, seed)
        for mix in mixes:
            new = make_new(mix, n_new, data, seed * 31 + mix_number(mix))
            cells = [f"{gate_cpu(new, data.existing, repeats):.3f} s"]
            for module, name, off in PARTS.values():
                on = getattr(module, name)
                setattr(module, name, off)
                try:
                    cells.append(f"{gate_cpu(new, data.existing, repeats):.3f} s")
                finally:
                    setattr(module, name, on)
            print(f"| {n_new} x {n_existing:,} | {mix} | " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--plain-rows",
        type=int,
        nargs=2,
        default=(20, 4),
        metavar=("SMALL", "LARGE"),
        help="new texts the plain loop runs on, per mix, at the small and the large size",
    )
    parser.add_argument("--mix", action="append", help="only these mixes (repeatable)")
    parser.add_argument("--source", choices=("development", "held-out", "both"), default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--parts", action="store_true", help="only the gate, with each part switched off in turn"
    )
    args = parser.parse_args(argv)

    sizes = [(30, 300), (60, 2_000)] if args.quick else [(100, 1_000), (200, 10_000)]
    sources = {
        "development": (development_texts, args.seed),
        "held-out": (heldout_texts, args.seed + 1000),
    }
    if args.source != "both":
        sources = {args.source: sources[args.source]}
    mixes = args.mix or [*MIXES, "all"]
    if args.parts:
        measure_parts(sizes, mixes, args.seed, args.repeats)
        return 0
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f} at the start, seed {args.seed}"
    )
    worst: dict[tuple[str, int], tuple[float, str, float, str]] = {}
    for source, (loader, seed) in sources.items():
        texts = loader()
        print(f"\n{source}: {len(texts):,} real observations")
        print(
            "| new x existing | mix | plain loop (est.) | gate (median) | speed-up "
            "| speed-up (CPU time) | S/U/A |"
        )
        print("|---|---|---|---|---|---|---|")
        for size_index, (n_new, n_existing) in enumerate(sizes):
            data = make_pool(texts, n_existing, 250, seed)
            for mix in mixes:
                new = make_new(mix, n_new, data, seed * 31 + mix_number(mix))
                rows = args.plain_rows[size_index]
                result = run_case(new, data.existing, rows, args.repeats)
                key = (source, n_existing)
                low, low_mix, low_cpu, low_cpu_mix = worst.get(key, (1e30, "", 1e30, ""))
                if result.speedup < low:
                    low, low_mix = result.speedup, mix
                if result.cpu_speedup < low_cpu:
                    low_cpu, low_cpu_mix = result.cpu_speedup, mix
                worst[key] = (low, low_mix, low_cpu, low_cpu_mix)
                print(
                    f"| {n_new} x {n_existing:,} | {mix} | {result.plain_estimate:,.1f} s "
                    f"({result.plain_rows} rows: {result.plain_seconds:.1f} s) "
                    f"| {result.gate_seconds:.3f} s | {result.speedup:,.0f}x "
                    f"| {result.cpu_speedup:,.0f}x | {result.actions} |"
                )
    print("\nWorst mix per source and size:")
    for (source, n_existing), (speedup, mix, cpu_speedup, cpu_mix) in worst.items():
        print(
            f"  {source}, x {n_existing:,}: {speedup:,.0f}x wall-clock ({mix}), "
            f"{cpu_speedup:,.0f}x CPU time ({cpu_mix})"
        )
    print(
        "\nThe plain loop ran on the first rows of each mix only (column 3); its time for "
        "the whole batch is extrapolated from its rate per pair compared on them, and "
        "its decisions on those rows equal the gate's (action, target, exact ratio)."
    )
    print(f"Load average {os.getloadavg()[0]:.2f} at the end.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

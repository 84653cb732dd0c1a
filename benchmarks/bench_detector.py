"""What the detector's word gate saves, for every kind of text separately.

Usage: ``python benchmarks/bench_detector.py [--rounds N]``

The detector (:func:`curator.core.flags.detect`) runs about two hundred regular
expressions over each text and its variants; :mod:`curator.core.regex_gate` skips an
expression on a text that holds none of the words every match of it needs. The baseline
is the same detector in the same process with the gate switched off (every expression
run on every text), measured alternately with it, so the machine's drift falls on both.
Each kind of text is timed on its own (CPU time per text, uncached, best of the rounds),
the flags of both ways are compared (they must be identical), and the last line names
the kind the gate helps least: a gain on one kind says nothing of another.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curator.core import regex_gate  # noqa: E402
from curator.core.flags import _detect  # noqa: E402


def _demo_episodes() -> list[str]:
    texts = []
    for line in (ROOT / "resources" / "demo" / "episodes.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            messages = item.get("messages") or []
            texts.append(item.get("content") or "\n".join(m.get("content") or "" for m in messages))
    return texts


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text("utf-8").splitlines() if line.strip()]


def _injections() -> list[str]:
    texts = []
    for path in sorted((ROOT / "tests" / "data").glob("poison_test*/injections.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                item = json.loads(line)
                texts.append(item.get("text") or item.get("content") or "")
    return texts


def kinds() -> dict[str, list[str]]:
    demo = _demo_episodes()
    joined = "\n\n".join(demo)
    return {
        "demo episodes": demo,
        "one-line notes": [f"note {i}: the build on host-{i % 9} passed" for i in range(400)],
        "benign security notes": _lines(ROOT / "tests" / "data" / "benign.txt"),
        "held-out attacks": _injections(),
        "one long text (50,000 characters)": [joined[:50_000]],
    }


def _read(texts: list[str]) -> tuple[float, list[Any]]:
    started = time.process_time()
    flags = [_detect.__wrapped__(text, (), "", True) for text in texts]
    return (time.process_time() - started) / len(texts), flags


def _switched_off() -> Callable[[], None]:
    """Every expression runs on every text (the baseline); returns the switch back."""
    gated = regex_gate.GatedPattern.cannot_match
    regex_gate.GatedPattern.cannot_match = lambda self, text, pos=0, endpos=0: False  # type: ignore[method-assign]

    def back() -> None:
        regex_gate.GatedPattern.cannot_match = gated  # type: ignore[method-assign]

    return back


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    _detect.__wrapped__("A first text builds the word families: ignore the rules.", (), "", True)
    print("| kind of text | texts | characters (mean) | gate off | gate on | on / off |")
    print("|---|---|---|---|---|---|")
    worst: tuple[float, str] = (0.0, "")
    for name, texts in kinds().items():
        on: list[float] = []
        off: list[float] = []
        for _ in range(args.rounds):
            back = _switched_off()
            try:
                seconds_off, flags_off = _read(texts)
            finally:
                back()
            seconds_on, flags_on = _read(texts)
            if flags_on != flags_off:
                print(f"{name}: the flags differ with the gate on", file=sys.stderr)
                return 1
            off.append(seconds_off)
            on.append(seconds_on)
        ratio = min(on) / min(off)
        mean = sum(map(len, texts)) / len(texts)
        print(
            f"| {name} | {len(texts):,} | {mean:,.0f} | {min(off) * 1e3:.2f} ms | "
            f"{min(on) * 1e3:.2f} ms | {ratio:.2f} |"
        )
        worst = max(worst, (ratio, name))
    print(f"least helped: {worst[1]} ({worst[0]:.2f} of the time without the gate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

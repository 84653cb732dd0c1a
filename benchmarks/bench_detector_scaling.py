"""Whether the poisoned-memory detector and the redaction stay linear on crafted texts.

Usage: ``python benchmarks/bench_detector_scaling.py [--chars N] [--factor K]``

A regular expression whose unbounded run can start at every character of a long stretch
("a.a.a.…", "a-a-a-…", forty thousand blank lines) rescans the rest of the stretch from
each start: quadratic time. Stored text reaches the detector from ``curator audit``, the
review pane and every commit, so one such pattern freezes them on a single crafted row.

For each shape (a short unit repeated to N characters, then K·N characters) this prints
the time of :func:`curator.core.flags.detect` and :func:`curator.core.redact.redact` on
both lengths and their ratio. A linear pass gives a ratio near K; a quadratic one near K².
The baseline is the same call on the same shape at the shorter length, measured in the
same run. The last line names the worst shape; the exit status is 1 when any ratio is
above 1.5·K (a lower bound of superlinear growth that noise rarely reaches).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.core.flags import detect
from curator.core.redact import redact

#: (name, prefix, unit): the text is ``prefix + unit * n + "com"``. Each unit is a
#: separator-and-token pair that a link, handle, whitespace or markup rule could start on
#: at every repetition.
SHAPES: tuple[tuple[str, str, str], ...] = (
    ("dotted labels", "", "a."),
    ("hyphenated labels", "", "a-"),
    ("dotted digits", "", "1."),
    ("mail after @", "x@", "b."),
    ("words", "", "word "),
    ("one long word", "", "a"),
    ("digits", "", "1"),
    ("spaced digits", "", "1 "),
    ("blank lines", "Notes", "\n"),
    ("spaces", "Notes", " "),
    ("tabs", "Notes", "\t"),
    ("comma list", "", "a, "),
    ("markdown images", "", "![a]("),
    ("spelled dots", "", "c dot "),
    ("colons", "", "x:"),
    ("paths", "", "a/"),
    ("quotes", "", "'a"),
    ("underscores", "", "a_"),
    ("brackets", "", "("),
    ("hashes", "", "#"),
    ("adverbs", "", "quickly "),
    ("past tense", "", "edited "),
    ("comment openers", "", "<!-- "),
    ("link comments", "", "[//]: # "),
    ("schemes", "", "http://"),
    ("scheme letters", "", "a+"),
    ("at signs", "", "@a"),
    ("escapes", "", "\\u00"),
    ("percent escapes", "", "%4"),
    ("assignments", "", "a="),
    ("zero-width", "", "\u200b"),
    ("CJK", "", "微"),
    ("Arabic words", "", "ع "),
    ("emoji", "", "😀"),
    ("base64", "", "QUJD"),
    ("hex", "", "0xff"),
)

CALLS: tuple[tuple[str, Callable[[str], object]], ...] = (("detect", detect), ("redact", redact))


def _seconds(call: Callable[[str], object], text: str) -> float:
    start = time.perf_counter()
    call(text)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=8000, help="the shorter length")
    parser.add_argument("--factor", type=int, default=4, help="how much longer the second is")
    args = parser.parse_args()
    worst: tuple[float, str] = (0.0, "")
    print(f"{'call':7} {'shape':18} {'short s':>8} {'long s':>8} {'ratio':>6}")
    for call_name, call in CALLS:
        for name, prefix, unit in SHAPES:
            reps = max(1, args.chars // len(unit))
            short = _seconds(call, prefix + unit * reps + "com")
            long = _seconds(call, prefix + unit * reps * args.factor + "com")
            ratio = long / max(short, 1e-6)
            print(f"{call_name:7} {name:18} {short:8.3f} {long:8.3f} {ratio:6.1f}", flush=True)
            if ratio > worst[0] and long > 0.01:
                worst = (ratio, f"{call_name} on {name}")
    print(f"worst: {worst[1]} grew {worst[0]:.1f}x for {args.factor}x the characters")
    return 1 if worst[0] > 1.5 * args.factor else 0


if __name__ == "__main__":
    raise SystemExit(main())

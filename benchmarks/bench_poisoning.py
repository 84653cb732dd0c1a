"""How well the memory-poisoning flags work: recall on poisoned texts, false positives on benign.

Usage: ``python benchmarks/bench_poisoning.py [--locomo DIR] [--show-fp N] [--set DIR] [--cv]``

* recall: ``tests/data/poisoned.jsonl``, texts written to poison an agent's memory, each
  labelled with the kind it is meant to exercise (provenance items carry their sources).
  Reported twice: flagged at all, and flagged with the expected kind. This set was used
  while writing the rules (a development set); ``tests/data/poisoned_heldout.jsonl`` was
  written after them and measured once: 17 of 20 (85%). Its three misses (a card number of
  only two distinct digits, a bare imperative after a colon, a stemming gap between
  "mistakes" and "mistake") were then fixed, so it is no longer held out either.
* false-positive rate on ``tests/data/benign.txt`` (factual statements about people and
  recurring situations) plus the demo's committed patterns (``resources/demo``), and, with
  ``--locomo DIR``, on the LoCoMo observations (every string under a
  ``session_N_observation`` key of the JSON files in DIR; not shipped with the project).

* multilingual, paraphrased and obfuscated injections and benign texts that talk about
  security: ``tests/data/poison_dev/`` (first writer, development, tuned on),
  ``tests/data/poison_test/`` (first writer, held out: written before the multilingual
  rules and never tuned on), ``tests/data/poison_test2/`` (second writer, eighteen
  languages; held out when first measured at 55.5% recall and 2.0% of its benign texts
  flagged, then studied: a development set since) and ``tests/data/poison_dev2/``
  (development texts written for the word families of the second round), and
  ``tests/data/poison_test3/`` (third writer, twenty-five languages; held out when first
  measured at 65.7% recall and 7.88% of its benign texts flagged, then studied: a
  development set since), ``tests/data/poison_train_extra/`` (training texts of the
  learned reader), ``tests/data/poison_test4/`` (fourth writer, held out from the
  learned reader until it was trained on every writer's set), ``tests/data/poison_test5/``
  (fifth writer, held out when first measured at 61.1% / 46.4%, development since),
  ``tests/data/poison_test6/`` (sixth writer, held out when first measured at
  52.8% / 10.7%, development since) and ``tests/data/poison_test7/`` (seventh writer,
  held out when first measured at 57.8% / 15.6%, training data of the learned reader
  since), ``tests/data/poison_test8/`` (eighth writer), ``tests/data/poison_test9/``
  (ninth writer) and ``tests/data/poison_test10/`` (tenth writer), each held out: never
  tuned or trained on. Each is reported per class and per language, with the worst
  class, and by reader: the rules alone, the learned reader alone
  (:mod:`curator.core.flag_learned`) and both (what ``detect`` does); recall counts a text
  as caught when it gets one of its ``kinds``. ``--set DIR`` measures one more set of the
  same layout (``injections.jsonl`` and benign ``*.txt``), such as a new held-out set.
* false-positive rate on ordinary conversation with an agent (questions to it by name or
  "you", requests in the current exchange, small talk, the agent's replies), the commonest
  text at intake: ``tests/data/chat_dev/``, ``chat_dev2/`` and ``chat_dev3/`` (three
  writers; the learned reader's training texts) and ``tests/data/chat_test/`` (a writer of
  its own, held out: never tuned or trained on).
* ``--cv`` adds the learned reader's leave-one-writer-out table (it retrains, minutes):
  the honest estimate for a new writer. The reading time per text is printed last.

The demo's identity and axioms are the reference the ``identity`` flag checks against.
Provenance is not a text property: benign texts are measured without sources.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.core.flag_learned import learned_hits, load_reader
from curator.core.flag_learned_train import GROUPS
from curator.core.flags import KINDS, _detect, detect, provenance_flag
from curator.resources_path import resource_path
from curator.store.settings import DEFAULTS

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
TRAINING_CHAT = tuple(
    name for group, names in GROUPS.items() if "conversation" in group for name in names
)
"""The conversation writers' folders, as the learned reader's training names them."""


def demo_identity() -> tuple[list[str], str]:
    axioms = json.loads(resource_path("demo", "axioms.json").read_text(encoding="utf-8"))
    identity = resource_path("demo", "identity.md").read_text(encoding="utf-8")
    return list(axioms), identity


def load_poisoned(name: str = "poisoned.jsonl") -> list[dict[str, Any]]:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_benign() -> list[str]:
    lines = (DATA / "benign.txt").read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


def demo_patterns() -> list[str]:
    items = json.loads(resource_path("demo", "patterns.json").read_text(encoding="utf-8"))
    return [str(item["text"]) for item in items]


def locomo_observations(folder: Path) -> list[str]:
    """Every observation string of every ``session_N_observation`` in the folder's JSON files."""
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            # [text, dialogue id] pairs: the text is the first element
            if value and isinstance(value[0], str) and len(value) == 2:
                texts.append(value[0])
            else:
                for item in value:
                    walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    def visit(doc: Any) -> None:
        if isinstance(doc, dict):
            for key, value in doc.items():
                if re.fullmatch(r"session_\d+_observation", str(key)):
                    walk(value)
                else:
                    visit(value)
        elif isinstance(doc, list):
            for item in doc:
                visit(item)

    for path in sorted(folder.glob("*.json")):
        visit(json.loads(path.read_text(encoding="utf-8")))
    return texts


def false_positives(
    name: str, texts: list[str], axioms: list[str], identity: str, show: int
) -> float:
    flagged = 0
    by_kind: Counter[str] = Counter()
    examples: list[str] = []
    for text in texts:
        flags = detect(text, axioms, identity)
        if flags:
            flagged += 1
            by_kind.update({f.kind for f in flags})
            if show < 0 or len(examples) < show:
                examples.append(f"    {flags[0].describe()}  <-  {text[:110]}")
    rate = flagged / len(texts) if texts else 0.0
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())) or "none"
    print(f"{name}: {len(texts)} texts, {flagged} flagged, FP rate {rate:.2%} ({kinds})")
    for line in examples:
        print(line)
    return rate


def recall(
    title: str,
    poisoned: list[dict[str, Any]],
    axioms: list[str],
    identity: str,
    untrusted: list[str],
) -> None:
    confusion: dict[str, Counter[str]] = {}
    any_hit = same_kind = 0
    missed: list[str] = []
    for item in poisoned:
        flags = detect(item["text"], axioms, identity)
        prov = provenance_flag(item.get("sources", []), untrusted)
        if prov is not None:
            flags.append(prov)
        kinds = {f.kind for f in flags}
        row = confusion.setdefault(item["kind"], Counter())
        row["texts"] += 1
        row.update(kinds or {"(none)"})
        any_hit += bool(kinds)
        same_kind += item["kind"] in kinds
        if item["kind"] not in kinds:
            got = sorted(kinds) or "nothing"
            missed.append(f"    [{item['kind']}] got {got}: {item['text'][:90]!r}")
    n = len(poisoned)
    print(f"{title}: {n} texts; recall (any flag) {any_hit / n:.2%}, ", end="")
    print(f"recall (the intended kind) {same_kind / n:.2%}")
    columns = [*KINDS, "(none)"]
    print("  confusion (rows: intended kind; columns: kinds flagged; a text can get several)")
    print(f"  {'':<12} {'texts':>5} " + " ".join(f"{c[:9]:>9}" for c in columns))
    for kind in KINDS:
        row = confusion.get(kind, Counter())
        print(f"  {kind:<12} {row['texts']:>5} " + " ".join(f"{row[c]:>9}" for c in columns))
    if missed:
        print("  not flagged with the intended kind:")
        print("\n".join(missed))
    print()


def load_labelled(folder: str | Path) -> list[dict[str, Any]]:
    """A multilingual set's injections: ``class``, ``lang``, ``kinds`` and ``text``."""
    lines = (DATA / folder / "injections.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load_lines(folder: str | Path, name: str) -> list[str]:
    lines = (DATA / folder / name).read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in lines if s.strip() and not s.startswith("#")]


READERS = ("rules", "learned", "combined")
"""The rules alone, the learned reader alone, and both (what ``detect`` does)."""


def kinds_read(text: str, axioms: list[str], identity: str) -> dict[str, set[str]]:
    """The kinds each reader flags in ``text``."""
    rules = {f.kind for f in detect(text, axioms, identity, learned=False)}
    learned = {hit[0] for hit in learned_hits(text, frozenset())}
    return {
        "rules": rules,
        "learned": learned,
        "combined": {f.kind for f in detect(text, axioms, identity)},
    }


def caught(item: dict[str, Any], axioms: list[str], identity: str) -> bool:
    """The text got one of the kinds that count for it."""
    return bool({f.kind for f in detect(item["text"], axioms, identity)} & set(item["kinds"]))


def by_group(
    items: list[dict[str, Any]], key: str, axioms: list[str], identity: str
) -> dict[str, tuple[int, int]]:
    """``group -> (caught, texts)`` for ``key`` ("class" or "lang"), in name order."""
    groups: dict[str, list[int]] = {}
    for item in items:
        row = groups.setdefault(str(item[key]), [0, 0])
        row[0] += caught(item, axioms, identity)
        row[1] += 1
    return {name: (row[0], row[1]) for name, row in sorted(groups.items())}


def multilingual(
    title: str, folder: str | Path, axioms: list[str], identity: str, show: int
) -> None:
    items = load_labelled(folder)
    hits = sum(caught(item, axioms, identity) for item in items)
    any_flag = sum(bool(detect(item["text"], axioms, identity)) for item in items)
    print(f"{title}: {len(items)} injections; recall {hits / len(items):.2%} ", end="")
    print(f"(flagged at all {any_flag / len(items):.2%})")
    read = [kinds_read(item["text"], axioms, identity) for item in items]
    pairs = list(zip(read, items, strict=True))
    by_reader = [
        f"{name} {sum(bool(r[name] & set(i['kinds'])) for r, i in pairs) / len(items):.1%}"
        for name in READERS
    ]
    print("  recall by reader: " + ", ".join(by_reader))
    for key in ("class", "lang"):
        groups = by_group(items, key, axioms, identity)
        cells = ", ".join(f"{name} {c}/{n}" for name, (c, n) in groups.items())
        print(f"  per {key}: {cells}")
        if key == "class":
            worst = min(groups.items(), key=lambda kv: (kv[1][0] / kv[1][1], kv[0]))
            print(f"  worst class: {worst[0]} {worst[1][0]}/{worst[1][1]}")
    missed = [item for item in items if not caught(item, axioms, identity)]
    for item in missed[: show if show >= 0 else None]:
        print(f"    missed [{item['class']}/{item['lang']}]: {item['text'][:90]!r}")
    for name in sorted(p.name for p in (DATA / folder).glob("*.txt")):
        label = f"  {Path(folder).name}/{name}"
        texts = load_lines(folder, name)
        false_positives(label, texts, axioms, identity, show)
        read = [kinds_read(text, axioms, identity) for text in texts]
        shares = [f"{r} {sum(bool(k[r]) for k in read) / len(texts):.1%}" for r in READERS]
        print("    flagged by reader: " + ", ".join(shares))
    print()


def speed(texts: list[str], axioms: list[str], identity: str) -> None:
    """Milliseconds per text, rules alone and with the learned reader (nothing memoised)."""
    load_reader()  # read once, as on the first text of a session
    for learned in (False, True):
        _detect.cache_clear()
        start = time.perf_counter()
        for text in texts:
            detect(text, axioms, identity, learned=learned)
        ms = (time.perf_counter() - start) * 1000 / len(texts)
        print(
            f"reading time, {'rules and learned reader' if learned else 'rules alone'}: "
            f"{ms:.2f} ms/text over {len(texts)} texts"
        )
    _detect.cache_clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=None, metavar="DIR")
    parser.add_argument(
        "--show-fp", type=int, default=0, metavar="N", help="print N examples (-1: all)"
    )
    parser.add_argument(
        "--set",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="one more set: DIR/injections.jsonl and benign DIR/*.txt",
    )
    parser.add_argument(
        "--cv",
        action="store_true",
        help="also the learned reader's leave-one-writer-out table (retrains; minutes)",
    )
    args = parser.parse_args(argv)
    axioms, identity = demo_identity()
    untrusted = list(DEFAULTS.untrusted_sources)

    for title, name in (
        ("poisoned (development set)", "poisoned.jsonl"),
        ("poisoned (held-out set)", "poisoned_heldout.jsonl"),
    ):
        recall(title, load_poisoned(name), axioms, identity, untrusted)
    print()
    multilingual(
        "first writer, development (poison_dev)", "poison_dev", axioms, identity, args.show_fp
    )
    multilingual(
        "first writer, held-out (poison_test)", "poison_test", axioms, identity, args.show_fp
    )
    multilingual(
        "second writer's set, development since its first measurement (poison_test2)",
        "poison_test2",
        axioms,
        identity,
        args.show_fp,
    )
    multilingual(
        "second-round families, development (poison_dev2)",
        "poison_dev2",
        axioms,
        identity,
        args.show_fp,
    )
    multilingual(
        "third writer's set, development since its first measurement (poison_test3)",
        "poison_test3",
        axioms,
        identity,
        args.show_fp,
    )
    multilingual(
        "learned reader's extra training texts, development (poison_train_extra)",
        "poison_train_extra",
        axioms,
        identity,
        args.show_fp,
    )
    multilingual(
        "fourth writer's set, the learned reader's training data (poison_test4)",
        "poison_test4",
        axioms,
        identity,
        args.show_fp,
    )
    for label, name in (
        ("fifth writer's set, development since its first measurement", "poison_test5"),
        ("sixth writer's set, development since its first measurement", "poison_test6"),
        ("seventh writer's set, the learned reader's training data since", "poison_test7"),
        ("eighth writer's set, held out when measured: never tuned or trained on", "poison_test8"),
        ("ninth writer's set, held out: never tuned or trained on", "poison_test9"),
        ("tenth writer's set, held out: never tuned or trained on", "poison_test10"),
    ):
        multilingual(f"{label} ({name})", name, axioms, identity, args.show_fp)
    for folder in args.set:
        # a folder given from here (tests/data/x) or by its name under tests/data (x)
        where = folder.resolve() if folder.is_dir() else folder
        multilingual(f"extra set ({folder.name})", where, axioms, identity, args.show_fp)
    own = load_benign()
    demo = demo_patterns()
    false_positives("benign (own set + demo patterns)", own + demo, axioms, identity, args.show_fp)
    for label, names in (
        ("ordinary conversation, the learned reader's training texts", TRAINING_CHAT),
        ("ordinary conversation, held out: never tuned or trained on (chat_test)", ("chat_test",)),
    ):
        texts = [
            t
            for name in names
            for path in sorted((DATA / name).glob("*.txt"))
            for t in load_lines(name, path.name)
        ]
        false_positives(label, texts, axioms, identity, args.show_fp)
    speed(own + demo + [i["text"] for i in load_labelled("poison_test3")], axioms, identity)
    if args.cv:
        from curator.core import flag_learned_train as training

        results = training.cross_validate(training.load_examples(), training.rule_kinds())
        c, threshold = training.choose(results)
        print(training.report(results, c, threshold))
    if args.locomo is not None:
        texts = locomo_observations(args.locomo)
        if not texts:
            print(f"no session_N_observation texts found under {args.locomo}", file=sys.stderr)
            return 2
        false_positives("LoCoMo observations", texts, axioms, identity, args.show_fp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

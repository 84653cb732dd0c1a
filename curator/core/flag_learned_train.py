"""Training the learned reader (:mod:`curator.core.flag_learned`); never imported at run time.

Usage: ``python -m curator.core.flag_learned_train [--cv] [--c C] [--threshold T] [--out PATH]``

* the training data are the **development sets only** (:data:`GROUPS`): every injection
  set's ``injections.jsonl`` and benign ``*.txt``, ``poisoned.jsonl`` and
  ``poisoned_heldout.jsonl`` (their provenance items are no text property and are left
  out), ``tests/data/benign.txt``, the demo's committed patterns and its identity. A set not
  named in :data:`GROUPS` (a held-out set) is never read here: not for weights, not for
  thresholds;
* the model: the reader's own features (:func:`curator.core.flag_learned.features`, so
  training and inference read a text identically), an L2 logistic regression (liblinear,
  fixed seed) for the ``injection`` head, each text weighted so that every group's
  injections and every group's benign texts weigh the same (:func:`balanced_weights`: no
  writer dominates by writing more), and one head per kind trained on the injections
  alone (does this injection carry that kind?);
* the threshold and the regularisation are chosen by **leave-one-writer-out**
  cross-validation (:func:`cross_validate`): train on every group but one, read the one
  left out with the rules and the reader together (the reader heard only where
  ``detect`` hears it), and keep, among the settings whose learned flags stay at most
  :data:`FP_BUDGET` of every left-out benign set, the one that catches the most of the
  worst-read left-out group (:func:`choose`). That is the honest estimate of the next
  writer's set; ``--cv`` prints it (``--cv --c C``: that C alone).

Retraining from the committed data gives the committed weights (a test holds it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.core.flag_learned import FLAGGED_KINDS, HEADS, features, reader_path
from curator.core.flag_reader_file import dump_reader
from curator.core.wording import plural

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"

GROUPS: dict[str, tuple[str, ...]] = {
    "first writer": ("poison_dev", "poison_test"),
    "second writer": ("poison_test2",),
    "second-round families": ("poison_dev2",),
    "third writer": ("poison_test3",),
    "project": ("poisoned.jsonl", "poisoned_heldout.jsonl", "benign.txt", "demo"),
    "extra": ("poison_train_extra",),
    "fourth writer": ("poison_test4",),
    "fifth writer": ("poison_test5",),
    "sixth writer": ("poison_test6",),
    "seventh writer": ("poison_test7",),
    "first conversation writer": ("chat_dev",),
    "second conversation writer": ("chat_dev2",),
    "third conversation writer": ("chat_dev3",),
}
"""Who wrote what: one writer's texts share phrasing, so they are held out together."""

SEED = 0
C_GRID = (16.0, 64.0, 256.0)
THRESHOLDS = tuple(round(0.50 + 0.01 * i, 2) for i in range(50))
FP_BUDGET = 0.02
MIN_FILE = 100
"""A benign file smaller than this is held only within its group's budget."""
"""At most this share of a left-out group's benign texts may gain a learned flag (the
acceptance line is 3%; the rest is margin for the next writer)."""


@dataclass
class Example:
    text: str
    kinds: tuple[str, ...]  # empty: benign
    group: str
    source: str
    extra: dict[str, Any] = field(default_factory=dict)


def _lines(path: Path) -> list[str]:
    rows = path.read_text(encoding="utf-8").splitlines()
    return [s.strip() for s in rows if s.strip() and not s.startswith("#")]


def _folder(name: str, group: str) -> list[Example]:
    folder = DATA / name
    if not folder.is_dir():
        return []
    found: list[Example] = []
    for line in (
        _lines(folder / "injections.jsonl") if (folder / "injections.jsonl").exists() else []
    ):
        item = json.loads(line)
        found.append(Example(str(item["text"]), tuple(item["kinds"]), group, name))
    for path in sorted(folder.glob("*.txt")):
        found += [Example(t, (), group, f"{name}/{path.name}") for t in _lines(path)]
    return found


def load_examples(groups: dict[str, tuple[str, ...]] = GROUPS) -> list[Example]:
    """Every development text, labelled with its kinds (none: benign) and its group."""
    from curator.resources_path import resource_path

    found: list[Example] = []
    for group, names in groups.items():
        for name in names:
            if name.endswith(".jsonl"):
                for line in _lines(DATA / name):
                    item = json.loads(line)
                    if item["kind"] != "untrusted":
                        found.append(Example(item["text"], (item["kind"],), group, name))
            elif name == "benign.txt":
                found += [Example(t, (), group, name) for t in _lines(DATA / name)]
            elif name == "demo":
                items = json.loads(resource_path("demo", "patterns.json").read_text("utf-8"))
                found += [Example(str(i["text"]), (), group, "demo patterns") for i in items]
                # the agent's own identity: the audit reads it, and it is no injection
                identity = resource_path("demo", "identity.md").read_text("utf-8")
                found.append(Example(identity, (), group, "demo identity"))
            else:
                found += _folder(name, group)
    return found


@dataclass
class Model:
    heads: dict[str, dict[int, float]]
    bias: dict[str, float]

    def margin(self, head: str, buckets: Sequence[int]) -> float:
        table = self.heads[head]
        if not buckets:
            return self.bias[head]
        return self.bias[head] + sum(table.get(b, 0.0) for b in buckets) / len(buckets) ** 0.5

    def verdict(self, buckets: Sequence[int]) -> tuple[float, str]:
        from math import exp

        z = self.margin("injection", buckets)
        kinds = HEADS[1:]
        kind = max(kinds, key=lambda k: (self.margin(k, buckets), -kinds.index(k)))
        return 1.0 / (1.0 + exp(-max(z, -60.0))), kind


def _matrix(rows: Sequence[Sequence[int]]) -> Any:
    import numpy as np
    from scipy.sparse import csr_matrix

    from curator.core.flag_learned import BUCKETS

    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.fromiter((b for r in rows for b in r), dtype=np.int64, count=int(indptr[-1]))
    data = np.concatenate([np.full(len(r), 1.0 / max(len(r), 1) ** 0.5) for r in rows])
    return csr_matrix((data, indices, indptr), shape=(len(rows), BUCKETS))


def balanced_weights(kinds: Sequence[tuple[str, ...]], groups: Sequence[str]) -> Any:
    """Per text, the weight that makes every group's injections weigh the same, every
    group's benign texts weigh the same, and injections and benign texts half each; a
    mean of 1 (so C means what it means unweighted). A writer of 400 texts then counts as
    much as one of 100: the reader learns what the writers share, not one writer's
    phrasing."""
    import numpy as np

    injected = np.array([bool(k) for k in kinds])
    cells: dict[tuple[str, bool], list[int]] = {}
    for i, (group, label) in enumerate(zip(groups, injected, strict=True)):
        cells.setdefault((group, bool(label)), []).append(i)
    weights = np.zeros(len(kinds))
    for at in cells.values():
        weights[at] = 1.0 / len(at)
    for label in (True, False):
        chosen = injected == label
        if chosen.any():
            weights[chosen] *= 0.5 * len(kinds) / weights[chosen].sum()
    return weights


def train(
    rows: Sequence[Sequence[int]],
    kinds: Sequence[tuple[str, ...]],
    c: float,
    groups: Sequence[str],
) -> Model:
    """Fit every head; weights are rounded to half precision, as they are stored. The
    ``injection`` head weighs each text by :func:`balanced_weights`; a kind head is
    class-balanced over the injections."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = _matrix(rows)
    heads: dict[str, dict[int, float]] = {}
    bias: dict[str, float] = {}
    injected = np.array([bool(k) for k in kinds])
    for head in HEADS:
        weights = None
        if head == "injection":
            xs, y = x, injected
            weights = balanced_weights(kinds, groups)
        else:
            xs = x[injected]
            y = np.array([head in k for k in kinds if k])
        if y.all() or not y.any():  # a kind no example carries: never chosen
            heads[head], bias[head] = {}, -1e3 if not y.any() else 1e3
            continue
        model = LogisticRegression(
            C=c,
            solver="liblinear",
            class_weight=None if weights is not None else "balanced",
            random_state=SEED,
            max_iter=1000,
        )
        model.fit(xs, y, sample_weight=weights)
        coef = model.coef_[0].astype(np.float16).astype(np.float64)
        nonzero = np.flatnonzero(coef)
        heads[head] = {int(i): float(coef[i]) for i in nonzero}
        bias[head] = float(np.float32(model.intercept_[0]))
    return Model(heads, bias)


RulesOf = Callable[[str], frozenset[str]]


def rule_kinds() -> RulesOf:
    """The kinds the rules alone flag in a text, against the demo's identity and axioms."""
    from curator.core.flags import detect
    from curator.resources_path import resource_path

    axioms = list(json.loads(resource_path("demo", "axioms.json").read_text("utf-8")))
    identity = resource_path("demo", "identity.md").read_text("utf-8")

    def kinds(text: str) -> frozenset[str]:
        return frozenset(f.kind for f in detect(text, axioms, identity, learned=False))

    return kinds


def heard() -> Callable[[str, str], bool]:
    """Whether ``detect`` keeps the reader's flag of a kind on a text, as
    :func:`curator.core.flag_learned.learned_hits` and ``detect`` decide: not on a text
    under :data:`~curator.core.flag_learned.MIN_WORDS` words, and no ``instruction`` on a
    person's own request ("@kel asked me to answer her in French from now on")."""
    from curator.core.flag_context import personal_request
    from curator.core.flag_learned import MIN_WORDS, _words

    def keeps(text: str, kind: str) -> bool:
        if kind not in FLAGGED_KINDS or _words(text) < MIN_WORDS:
            return False
        return not (kind == "instruction" and personal_request(text))

    return keeps


@dataclass
class FoldResult:
    group: str
    c: float
    # per example of the left-out group: (kinds, rule kinds, probability, learned kind,
    # source); the kind is "" where detect would not keep the reader's flag
    rows: list[tuple[tuple[str, ...], frozenset[str], float, str, str]]

    def figures(self, threshold: float, source: str | None = None) -> dict[str, float]:
        """Recall and benign flagged: rules only, reader only, combined."""
        rows = [r for r in self.rows if source is None or r[4] == source]
        inj = [r for r in rows if r[0]]
        ben = [r for r in rows if not r[0]]

        def flags(row: Any) -> bool:  # as learned_hits decides
            return bool(row[2] >= threshold and row[3] in FLAGGED_KINDS)

        def share(items: list[Any], test: Callable[[Any], bool]) -> float:
            return sum(map(test, items)) / len(items) if items else 0.0

        return {
            "injections": len(inj),
            "benign": len(ben),
            "rules recall": share(inj, lambda r: bool(r[1] & set(r[0]))),
            "reader recall": share(inj, lambda r: flags(r) and r[3] in r[0]),
            "combined recall": share(
                inj, lambda r: bool(r[1] & set(r[0])) or (flags(r) and r[3] in r[0])
            ),
            "rules flagged": share(ben, lambda r: bool(r[1])),
            "reader flagged": share(ben, flags),
            "combined flagged": share(ben, lambda r: bool(r[1]) or flags(r)),
        }


def cross_validate(
    examples: Sequence[Example], rules: RulesOf, c_grid: Sequence[float] = C_GRID
) -> list[FoldResult]:
    """Leave one group (writer) out, for every group and regularisation strength."""
    rows = [features(e.text) for e in examples]
    ruled = [rules(e.text) for e in examples]
    keeps = heard()
    results: list[FoldResult] = []
    groups = sorted({e.group for e in examples})
    for c in c_grid:
        for group in groups:
            train_at = [i for i, e in enumerate(examples) if e.group != group]
            model = train(
                [rows[i] for i in train_at],
                [examples[i].kinds for i in train_at],
                c,
                [examples[i].group for i in train_at],
            )
            fold_rows = []
            for i, e in enumerate(examples):
                if e.group == group:
                    p, kind = model.verdict(rows[i])
                    kind = kind if keeps(e.text, kind) else ""
                    fold_rows.append((e.kinds, ruled[i], p, kind, e.source))
            results.append(FoldResult(group, c, fold_rows))
    return results


def choose(results: Sequence[FoldResult]) -> tuple[float, float]:
    """``(C, threshold)``: among the settings whose learned flags stay within
    :data:`FP_BUDGET` of every left-out group's benign texts and of each of its benign
    files of at least :data:`MIN_FILE` texts, the one whose worst left-out group has the
    best recall by the reader alone; the pooled recall breaks a tie.

    A smaller file is held within its group's budget: one text of the demo's 20 patterns
    is 5%, and the demo's identity is a file of one text.

    The worst group, not the pooled recall: the goal is a floor for every new writer, and
    a pooled figure lets a large, easy writer hide a hard one. The reader alone, not
    combined: the rules were written against every development set, so their figures
    there are training figures, and a left-out group's combined recall would mostly
    measure the rules. Within one C, the lowest admissible threshold is the most
    sensitive for every group at once."""
    best: tuple[tuple[float, float], float, float] | None = None
    for c in sorted({r.c for r in results}):
        folds = [r for r in results if r.c == c]
        sizes = Counter((f.group, row[4]) for f in folds for row in f.rows if not row[0])
        for t in THRESHOLDS:
            worst = max(
                [f.figures(t)["reader flagged"] for f in folds]
                + [
                    f.figures(t, s)["reader flagged"]
                    for f in folds
                    for (g, s), n in sizes.items()
                    if g == f.group and n >= MIN_FILE
                ]
            )
            if worst > FP_BUDGET:
                continue
            figures = [f.figures(t) for f in folds]
            worst_group = min((g["reader recall"] for g in figures if g["injections"]), default=0)
            pooled = sum(g["reader recall"] * g["injections"] for g in figures)
            caught = (worst_group, pooled)
            if best is None or caught > best[0]:
                best = (caught, c, t)
            break  # the lowest admissible threshold is the most sensitive for this C
    if best is None:
        return max(r.c for r in results), THRESHOLDS[-1]
    return best[1], best[2]


def fit_and_write(path: Path, c: float, threshold: float, examples: Sequence[Example]) -> Model:
    """Train every head on every development text and write the weight file."""
    model = train(
        [features(e.text) for e in examples],
        [e.kinds for e in examples],
        c,
        [e.group for e in examples],
    )
    dump_reader(path, model.heads, model.bias, threshold, c)
    return model


def report(results: Sequence[FoldResult], c: float, threshold: float) -> str:
    """The leave-one-writer-out table at the chosen setting."""
    lines = [f"leave-one-writer-out, C={c:g}, threshold {threshold:.2f}"]
    lines.append(
        f"  {'left out':<24} {'inj':>4} {'ben':>4}  recall: rules reader combined"
        "   benign flagged: rules reader combined"
    )
    for fold in (r for r in results if r.c == c):
        f = fold.figures(threshold)
        lines.append(
            f"  {fold.group:<24} {f['injections']:>4.0f} {f['benign']:>4.0f}  "
            f"{f['rules recall']:>13.1%} {f['reader recall']:>6.1%} {f['combined recall']:>8.1%}"
            f"   {f['rules flagged']:>21.1%} {f['reader flagged']:>6.1%} "
            f"{f['combined flagged']:>8.1%}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cv", action="store_true", help="print the leave-one-writer-out table")
    parser.add_argument("--out", type=Path, default=None, help="weights (default: shipped file)")
    parser.add_argument(
        "--c", type=float, default=None, help="this C (with --threshold: no search at all)"
    )
    parser.add_argument("--threshold", type=float, default=None, help="and this threshold")
    args = parser.parse_args(argv)
    examples = load_examples()
    if args.c is not None and args.threshold is not None:
        c, threshold = args.c, args.threshold
    else:
        grid = C_GRID if args.c is None else (args.c,)
        results = cross_validate(examples, rule_kinds(), grid)
        c, threshold = choose(results)
        if args.cv:
            print(report(results, c, threshold))
    fit_and_write(args.out or reader_path(), c, threshold, examples)
    print(f"trained on {plural(len(examples), 'text')}: C={c:g}, threshold {threshold:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Classification quality on the demo gold set: raw scores, calibrated scores, learned.

Usage: ``python benchmarks/bench_classify_quality.py [--db classified.sqlite]
[--draws 20] [--write benchmarks/RESULTS-classify-quality.md]``

The demo data is loaded into a fresh database and classified by the demo model exactly
as ``curator classify`` does (raw label scores, content-free calibration, embeddings);
``--db`` reuses a database such a run left (it is classified again only where features
are missing). The hand labels of ``resources/demo/gold_labels.json`` are used only here,
for measurement:

- raw: the most probable label under the model's own scores;
- calibrated: after contextual calibration (Zhao et al. 2021) on the content-free inputs;
- batch-calibrated: the same correction with the bias estimated as the mean distribution
  over all 203 episodes instead (no labels involved; shown for comparison);
- domain-calibrated (``--domain-context N``): the bias from N inputs of random words of
  the episodes (Fei et al. 2023), scored by the model (seed 0);
- learned k/class: the project's classifier trained on k gold labels per class drawn at
  random (seeds 0..draws-1), evaluated on the remaining episodes; mean over the draws.
  Every episode, drawn or not, is the unlabelled pool the classifier centres the
  embeddings on and re-estimates label frequencies on (semi-supervised; no gold label
  of an undrawn episode is read). Development used other draws (``--first-seed 1000``)
  so the reported ones were not tuned on.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.core.calibration import (
    accuracy,
    calibrate,
    cohen_kappa,
    content_free_bias,
    macro_f1,
    normalise,
    top_label,
)
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import demo_model_path
from curator.pipeline.classify import classify_episodes
from curator.pipeline.learn import (
    center_embeddings,
    current_model_sha256,
    learning_curve,
    load_features,
)
from curator.pipeline.progress import TaskState
from curator.resources_path import resource_path
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import LABELS, Episode

SIZES = (3, 5, 10, 20)


def _classified_store(path: Path | None, threads: int | None) -> Store:
    target = path or Path(tempfile.mkdtemp()) / "quality.sqlite"
    store = Store(target)
    create_demo(store)
    pending = Episode.select().where(Episode.model_label.is_null()).count()
    if pending:
        model = demo_model_path()
        assert model is not None, "the demo model is missing: pip install -e '.[demo]'"
        backend = load_backend(BackendSettings(model_path=model, n_ctx=4096, n_threads=threads))
        try:
            classify_episodes(store, backend, TaskState())
        finally:
            backend.close()
    return store


def _domain_context_bias(
    store: Store, texts: list[str], count: int, threads: int | None
) -> dict[str, float]:
    """Domain-context calibration (Fei et al. 2023): the bias is the mean distribution over
    ``count`` inputs of random words drawn from the episodes, of their mean length (seed 0)."""
    from curator.llm.prompts import load_prompt, numbered
    from curator.store.identity import current_identity

    words = [w for t in texts for w in t.split()]
    length = max(1, round(sum(len(t.split()) for t in texts) / len(texts)))
    rng = random.Random(0)
    identity = current_identity(store)
    prompt = load_prompt("classify")
    system, user = prompt.render(
        {"axioms": numbered(list(identity.axioms)), "identity": identity.identity_text}
    )
    model = demo_model_path()
    assert model is not None, "the demo model is missing: pip install -e '.[demo]'"
    backend = load_backend(BackendSettings(model_path=model, n_ctx=4096, n_threads=threads))
    try:
        prefix = backend.chat_prefix(system, user)
        dists = [
            backend.classify(
                prefix,
                " ".join(rng.choices(words, k=length)),
                LABELS,
                answer_prefix=prompt.assistant,
            ).probabilities
            for _ in range(count)
        ]
    finally:
        backend.close()
    return content_free_bias(dists)


def _oracle_correction(gold: list[str], raw: list[dict[str, float]]) -> tuple[float, float]:
    """(kappa, accuracy) of the best per-label log-bias fitted on the gold labels themselves:
    the ceiling of any calibration that re-weights labels (a bound, not a method)."""
    grid = [x / 4 for x in range(-16, 17)]
    logs = [{k: math.log(max(r[k], 1e-12)) for k in LABELS} for r in raw]
    best = (-1.0, 0.0)
    for a in grid:
        for b in grid:
            shift = dict(zip(LABELS, (a, b, 0.0), strict=True))
            pred = [top_label({k: lg[k] + shift[k] for k in LABELS}, LABELS) for lg in logs]
            best = max(best, (cohen_kappa(gold, pred), accuracy(gold, pred)))
    return best


def _auc(positive: list[bool], score: list[float]) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pos = [s for p, s in zip(positive, score, strict=True) if p]
    neg = [s for p, s in zip(positive, score, strict=True) if not p]
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def _row(name: str, gold: list[str], pred: list[str]) -> tuple[str, float, float, float]:
    return name, accuracy(gold, pred), cohen_kappa(gold, pred), macro_f1(gold, pred, LABELS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None, help="reuse/keep this database")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="development runs use 1000 (not reported)"
    )
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--domain-context",
        type=int,
        default=0,
        metavar="N",
        help="also measure domain-context calibration on N random-word inputs (loads the model)",
    )
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()

    started = time.perf_counter()
    store = _classified_store(args.db, args.threads)
    gold_by_ext = json.loads((resource_path("demo") / "gold_labels.json").read_text("utf-8"))
    episodes = list(Episode.select().order_by(Episode.id))
    gold = [gold_by_ext[e.external_id] for e in episodes]
    raw = [top_label(e.model_scores, LABELS) for e in episodes]
    cal = [top_label(e.calibrated_scores, LABELS) for e in episodes]
    batch_bias = normalise(
        {k: sum(e.model_scores[k] for e in episodes) / len(episodes) for k in LABELS}
    )
    batch = [top_label(calibrate(e.model_scores, batch_bias), LABELS) for e in episodes]
    rows = [
        _row("raw scores", gold, raw),
        _row("calibrated (content-free)", gold, cal),
        _row("batch-calibrated (for comparison)", gold, batch),
    ]
    if args.domain_context:
        bias = _domain_context_bias(
            store, [e.text for e in episodes], args.domain_context, args.threads
        )
        domain = [top_label(calibrate(e.model_scores, bias), LABELS) for e in episodes]
        rows.append(_row(f"domain-calibrated, {args.domain_context} inputs", gold, domain))
    ceiling = _oracle_correction(gold, [e.model_scores for e in episodes])
    aucs = {k: _auc([g == k for g in gold], [e.model_scores[k] for e in episodes]) for k in LABELS}
    sha = current_model_sha256(store) or ""
    ids, features, _ = load_features(store, sha)
    by_id = {int(e.id): g for e, g in zip(episodes, gold, strict=True)}
    y = [by_id[i] for i in ids]
    seeds = tuple(range(args.first_seed, args.first_seed + args.draws))
    curve = learning_curve(center_embeddings(features), y, SIZES, seeds=seeds)
    for point in curve:
        rows.append(
            (
                f"learned, {point.per_class}/class ({point.labels} labels)",
                point.accuracy,
                point.kappa,
                point.macro_f1,
            )
        )
    wall = time.perf_counter() - started

    lines = [
        "# Classification quality on the demo gold set",
        "",
        "Produced by `python benchmarks/bench_classify_quality.py "
        + (f"--domain-context {args.domain_context} " if args.domain_context else "")
        + "--write benchmarks/RESULTS-classify-quality.md`.",
        "",
        f"{len(episodes)} demo episodes, gold labels {dict(Counter(gold))}; "
        f"{len(ids)} with features; learned rows: mean over {args.draws} seeded draws "
        f"(seeds {seeds[0]}-{seeds[-1]}), evaluated on the episodes not drawn. "
        f"CPython {platform.python_version()}, wall {wall:.0f} s.",
        "",
        f"Raw predictions: {dict(Counter(raw))}; calibrated: {dict(Counter(cal))}.",
        "",
        "Signal in the raw label scores: AUC of each label's probability for the episodes of "
        "that gold label: " + ", ".join(f"{k} {v:.3f}" for k, v in aucs.items()) + "; "
        f"the best per-label correction fitted on the gold labels themselves (a ceiling for "
        f"any calibration) reaches kappa {ceiling[0]:.3f}, accuracy {ceiling[1]:.3f}.",
        "",
        "| method | accuracy | kappa | macro-F1 |",
        "|---|---|---|---|",
        *(f"| {n} | {a:.3f} | {k:.3f} | {f:.3f} |" for n, a, k, f in rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

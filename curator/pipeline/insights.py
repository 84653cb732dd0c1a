"""Insights: every figure of the Insights pane and of ``curator insights``, from the store.

One function, :func:`compute_insights`, reads what it needs in a few plain SQL queries and
hands the numbers to the Qt-free core (:mod:`curator.core.agreement`,
:mod:`curator.core.whatif`, :mod:`curator.core.forecast`). The pane draws the returned
:class:`Insights`; the command line prints :meth:`Insights.to_json`. Both therefore show
the same figures by construction.

Where the pairs come from:

* Labels (model vs human): the episodes carrying both a human label and a model label. The
  per-run series uses each run's own trace (``trace_step`` rows of step ``classify``, which
  keep the label and confidence the run gave), so a later run does not rewrite the history
  of an earlier one and a prompt or model change shows up as a step.
* Gate (proposal vs human): reviewed candidates decided by a person. Decisions taken in
  bulk (``accept_all``) or by the model agree with the proposal by construction and would
  inflate the agreement, so they are counted apart and left out.
* Quality drops never reach the dedup gate and have no human decision; they are counted,
  and their texts feed the quality-gate what-if.

All reads use the calling thread's own connection (peewee keeps one per thread), so the
window runs this on a pool thread.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from curator.core.agreement import (
    CalibrationBin,
    Confusion,
    KappaInterval,
    bootstrap_kappa,
    calibration_bins,
    confusion,
    expected_calibration_error,
)
from curator.core.forecast import Forecast, PatternAge, forecast
from curator.core.whatif import (
    GATE_DECISIONS,
    GatedCandidate,
    QualityTable,
    QualityWhatIf,
    WhatIf,
    WhatIfTable,
)
from curator.pipeline import learn
from curator.store.db import Store
from curator.store.decay_clock import update_refreshes_decay
from curator.store.models import LABELS, Run, checked_importance, checked_time, utcnow
from curator.store.settings import load_settings

__all__ = [
    "BULK_ACTORS",
    "CURVE_SEEDS",
    "CURVE_SIZES",
    "HISTOGRAM_BINS",
    "Insights",
    "LabelSources",
    "Override",
    "RunPoint",
    "compute_insights",
]

#: Run kinds whose gate compares each candidate with the run's earlier ADDs too.
SELF_GATED_RUNS = frozenset({"distill", "import"})

BULK_ACTORS = ("cli --accept-all", "model")
"""Channels (``decided_via``; ``decided_by`` for rows decided before it existed) whose
decisions are not a person's judgement of one candidate."""

HISTOGRAM_BINS = 40
SEED = 0
CURVE_SIZES = (3, 5, 10, 20)
"""Human labels per label the learning curve trains on (as the quality benchmark)."""
CURVE_SEEDS = (0, 1, 2)
"""Draws per point of the learning curve: three keep the whole curve a few dozen small
fits (well under a second for a few hundred labels); the benchmark averages ten."""
SOURCES = ("human", "learned", "calibrated", "model")


@dataclass(frozen=True)
class Override:
    """A reviewed candidate where the human chose something other than the proposal."""

    candidate_id: int
    run_id: int
    text: str
    proposed: str
    human: str
    ratio: float

    def to_json(self) -> dict[str, object]:
        return {
            "candidate_id": self.candidate_id,
            "run_id": self.run_id,
            "proposed": self.proposed,
            "human": self.human,
            "ratio": self.ratio,
            "text": self.text,
        }


@dataclass(frozen=True)
class RunPoint:
    """One run's agreement with the humans (labels for classify/replay, gate for distill)."""

    run_id: int
    kind: str
    started_at: datetime
    model_name: str
    prompt_versions: str
    pairs: int
    accuracy: float | None
    kappa: float | None

    def to_json(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "started_at": self.started_at.isoformat(),
            "model": self.model_name,
            "prompts": self.prompt_versions,
            "pairs": self.pairs,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
        }


def _listed(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


@dataclass(frozen=True)
class LabelSources:
    """Who decided the labels shown, and what the learned classifier rests on.

    ``decided`` counts the labels in force by source: a person's label wins, else the
    prediction's source (``predicted_by``). ``predicted_by`` counts every scored episode's
    prediction, including those a person has since labelled. ``per_class`` counts the
    human labels that have features (an embedding under the current model): the ones the
    classifier, its cross-validated accuracy and the learning curve can use;
    ``needed_for_curve`` is how many more of each label the curve's first point needs
    (k labels to train on plus one to test).
    """

    decided: dict[str, int]
    predicted_by: dict[str, int]
    human_labels: int
    per_class: dict[str, int]
    needed_for_curve: dict[str, int]
    cv_accuracy: float | None
    cv_labels: int

    def curve_hint(self) -> str:
        """What stands between the reviewer and the curve ("" when it can be drawn)."""
        if self.human_labels and not any(self.per_class.values()):
            return "Classify the episodes first: the curve learns from their embeddings."
        missing = [f"{n} more {label}" for label, n in self.needed_for_curve.items() if n]
        if not missing:
            return ""
        return f"Label {_listed(missing)} episodes to see the learning curve."

    def next_point_hint(self) -> str:
        """How many more labels the curve's next size needs ("" when all are drawn)."""
        for k in CURVE_SIZES:
            missing = [f"{k + 1 - n} more {label}" for label, n in self.per_class.items() if n <= k]
            if missing:  # the first size is curve_hint's: no curve yet
                if k == CURVE_SIZES[0]:
                    return ""
                return f"Label {_listed(missing)} episodes for the point at {k} per label."
        return ""

    def to_json(self) -> dict[str, object]:
        return {
            "decided": self.decided,
            "predicted_by": self.predicted_by,
            "human_labels": self.human_labels,
            "human_labels_with_features": self.per_class,
            "needed_for_curve": self.needed_for_curve,
            "cv_accuracy": self.cv_accuracy,
            "cv_labels": self.cv_labels,
        }


@dataclass
class Insights:
    """Everything the Insights pane draws (see the module docstring for the sources)."""

    run_id: int | None
    labels: Confusion
    label_kappa: KappaInterval
    label_cells: dict[tuple[str, str], list[int]]  # (human, model) -> episode ids
    calibration: list[CalibrationBin]
    gate: Confusion
    gate_kappa: KappaInterval
    gated: list[GatedCandidate]
    runs: list[GatedCandidate]  # every candidate of the self-gated runs, in order
    what_ifs: WhatIfTable  # ``gated`` against ``runs``, for what-ifs while a line is dragged
    overrides: list[Override]
    bulk_decisions: int
    quality_drops: int
    series: list[RunPoint]
    skip: float
    update: float
    what_if: WhatIf
    quality: QualityWhatIf
    qualities: QualityTable  # reviewed and dropped texts read once, for the spin boxes
    histogram_edges: list[float]
    histogram: dict[str, list[int]]  # human decision -> counts per ratio bin
    forecast_keep: Forecast
    forecast_refresh: Forecast
    refresh_enabled: bool
    # The learned classifier on the human labels so far (curator.pipeline.learn): one
    # dict per curve point (per_class, labels, accuracy, kappa, macro_f1).
    learning_curve: list[dict[str, Any]] | None = field(default=None)
    label_sources: LabelSources | None = field(default=None)

    def what_if_at(self, skip: float, update: float) -> WhatIf:
        """The gate proposals under other thresholds (no store access: for live dragging)."""
        return self.what_ifs.at(skip, update)

    def quality_at(self, min_chars: int, min_words: int) -> QualityWhatIf:
        return self.qualities.at(min_chars, min_words)

    def to_json(self) -> dict[str, object]:
        return {
            "run": self.run_id,
            "labels": {
                **self.labels.to_json(),
                "kappa_interval": self.label_kappa.to_json(),
                "calibration": [b.to_json() for b in self.calibration],
                "expected_calibration_error": expected_calibration_error(self.calibration),
            },
            "gate": {
                **self.gate.to_json(),
                "kappa_interval": self.gate_kappa.to_json(),
                "overrides": [o.to_json() for o in self.overrides],
                "bulk_decisions_left_out": self.bulk_decisions,
                "quality_drops": self.quality_drops,
                "histogram": {"edges": self.histogram_edges, "counts": self.histogram},
                "what_if": self.what_if.to_json(),
                "quality_what_if": self.quality.to_json(),
            },
            "series": [p.to_json() for p in self.series],
            "forecast": {
                "update_refreshes_decay": self.refresh_enabled,
                "keep_clock": self.forecast_keep.to_json(),
                "refresh_clock": self.forecast_refresh.to_json(),
            },
            "learning_curve": self.learning_curve,
            "label_sources": None if self.label_sources is None else self.label_sources.to_json(),
        }


# -- reads ------------------------------------------------------------------------------


def _label_pairs(store: Store, run_id: int | None) -> list[tuple[int, str, str, float | None]]:
    """(episode id, human label, model label, confidence); with ``run_id`` from its trace."""
    if run_id is None:
        sql = (
            "SELECT id, human_label, model_label, model_confidence FROM episode "
            "WHERE human_label IS NOT NULL AND model_label IS NOT NULL ORDER BY id"
        )
        rows = store.execute(sql)
    else:
        label = store.dialect.json_value("t.parsed", "label")
        confidence = store.dialect.json_value("t.parsed", "confidence")
        sql = (
            f"SELECT e.id, e.human_label, {label}, {confidence} FROM trace_step t "
            "JOIN episode e ON e.id = t.episode_id WHERE t.run_id = ? AND t.error = '' "
            f"AND {label} IS NOT NULL AND e.human_label IS NOT NULL ORDER BY t.id"
        )
        rows = store.execute(sql, (run_id,))
    return [
        (int(r[0]), str(r[1]), str(r[2]), None if r[3] is None else float(r[3]))
        for r in rows
        if r[1] in LABELS and r[2] in LABELS
    ]


def _gate_rows(store: Store, run_id: int | None) -> list[tuple[Any, ...]]:
    sql = (
        "SELECT c.id, c.run_id, c.text, c.proposed_action, c.proposed_target_id, "
        "c.proposed_ratio, c.action, COALESCE(c.decided_via, c.decided_by), r.kind "
        "FROM candidate c "
        "JOIN run r ON r.id = c.run_id WHERE c.action IS NOT NULL AND c.state != 'pending'"
    )
    params: tuple[Any, ...] = ()
    if run_id is not None:
        sql += " AND c.run_id = ?"
        params = (run_id,)
    return store.execute(sql + " ORDER BY c.run_id, c.ordinal", params)


def _whole_runs(store: Store, run_id: int | None) -> list[GatedCandidate]:
    """Every candidate of the runs gated against their own ADDs, in order, decided or not:
    the pool each proposal was made against (the what-if's :func:`pool_dependent`)."""
    kinds = sorted(SELF_GATED_RUNS)
    sql = (
        "SELECT c.id, c.run_id, c.proposed_action, c.proposed_target_id, c.proposed_ratio "
        "FROM candidate c JOIN run r ON r.id = c.run_id "
        f"WHERE r.kind IN ({', '.join('?' * len(kinds))})"
    )
    params: tuple[Any, ...] = tuple(kinds)
    if run_id is not None:
        sql += " AND c.run_id = ?"
        params += (run_id,)
    return [
        GatedCandidate(
            id=int(cid),
            ratio=float(ratio),
            proposed=str(proposed),
            human="",
            pool_empty=proposed == "ADD" and float(ratio) == 0.0,
            same_run_match=proposed in ("SKIP", "UPDATE") and target is None,
            run_id=int(rid),
        )
        for cid, rid, proposed, target, ratio in store.execute(
            sql + " ORDER BY c.run_id, c.ordinal", params
        )
        if proposed in GATE_DECISIONS
    ]


def _dropped_texts(store: Store, run_id: int | None) -> list[str]:
    sql = "SELECT parsed FROM trace_step WHERE step = 'quality'"
    params: tuple[Any, ...] = ()
    if run_id is not None:
        sql += " AND run_id = ?"
        params = (run_id,)
    texts: list[str] = []
    for (parsed,) in store.execute(sql, params):
        doc = json.loads(parsed) if parsed else {}
        texts.extend(str(d.get("text", "")) for d in doc.get("dropped", []) or [])
    return texts


def _runs(store: Store) -> dict[int, tuple[str, datetime, str, str]]:
    rows = store.execute("SELECT id, kind, started_at, model_name, prompts FROM run ORDER BY id")
    out: dict[int, tuple[str, datetime, str, str]] = {}
    for rid, kind, started, model, prompts in rows:
        versions = json.loads(prompts) if prompts else {}
        text = ", ".join(
            f"{name} v{(info or {}).get('version', '?')}" for name, info in sorted(versions.items())
        )
        out[int(rid)] = (str(kind), checked_time(started, "run", "started_at"), str(model), text)
    return out


def _label_series(store: Store, runs: dict[int, tuple[str, datetime, str, str]]) -> list[RunPoint]:
    label = store.dialect.json_value("t.parsed", "label")
    sql = (
        f"SELECT t.run_id, e.human_label, {label} FROM trace_step t "
        "JOIN episode e ON e.id = t.episode_id WHERE t.step = 'classify' AND t.error = '' "
        f"AND e.human_label IS NOT NULL AND {label} IS NOT NULL"
    )
    per_run: dict[int, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for rid, human, model in store.execute(sql):
        if human in LABELS and model in LABELS:
            per_run[int(rid)][0].append(str(human))
            per_run[int(rid)][1].append(str(model))
    return [_point(rid, runs, confusion(h, m, LABELS)) for rid, (h, m) in per_run.items()]


def _point(rid: int, runs: dict[int, tuple[str, datetime, str, str]], c: Confusion) -> RunPoint:
    kind, started, model, prompts = runs.get(rid, ("?", utcnow(), "", ""))
    return RunPoint(rid, kind, started, model, prompts, c.total, c.accuracy(), c.kappa())


def _patterns(store: Store) -> list[tuple[PatternAge, PatternAge]]:
    """Active patterns with their clock as stored and under the other UPDATE rule.

    Keep-clock reference: the distillation date (``created_at`` when refreshed dates are
    stored). Refresh-clock reference: the later of it and the last UPDATE's commit time.
    """
    rows = store.execute(
        "SELECT id, importance, distilled_at, created_at, updated_at, updated_run_id, text "
        "FROM pattern WHERE status = 'active'"
    )
    out: list[tuple[PatternAge, PatternAge]] = []
    for pid, importance, distilled, created, updated, updated_run, text in rows:
        d = checked_time(distilled, "pattern", "distilled_at")
        if updated_run is not None:
            keep = min(d, checked_time(created, "pattern", "created_at"))
            refresh = max(d, checked_time(updated, "pattern", "updated_at"))
        else:
            keep = refresh = d
        weight = float(checked_importance(importance))
        out.append(
            (
                PatternAge(int(pid), weight, keep, str(text)),
                PatternAge(int(pid), weight, refresh, str(text)),
            )
        )
    return out


def _learning(store: Store) -> tuple[list[dict[str, Any]], LabelSources]:
    """The learning curve and the label sources (fits small models: a pool thread's job).

    The features are read once and shared by the curve and the cross-validation.
    """
    decided = dict.fromkeys(SOURCES, 0)
    sql = (
        "SELECT CASE WHEN human_label IS NOT NULL THEN 'human' "
        "ELSE COALESCE(predicted_by, 'model') END, COUNT(*) FROM episode "
        "WHERE label IS NOT NULL GROUP BY 1"
    )
    for source, count in store.execute(sql):
        decided[str(source)] = decided.get(str(source), 0) + int(count)
    predicted = dict.fromkeys(SOURCES[1:], 0)
    sql = "SELECT predicted_by, COUNT(*) FROM episode WHERE predicted_by IS NOT NULL GROUP BY 1"
    for source, count in store.execute(sql):
        predicted[str(source)] = int(count)
    (human_total,) = store.execute("SELECT COUNT(*) FROM episode WHERE human_label IS NOT NULL")[0]

    sha = learn.current_model_sha256(store)
    features: np.ndarray | None = None
    human: list[str | None] = []
    if sha:
        _, features, human = learn.load_features(store, sha)
    rows = [i for i, h in enumerate(human) if h in LABELS]
    y = [str(human[i]) for i in rows]
    per_class = {k: y.count(k) for k in LABELS}
    first = learn.MIN_PER_CLASS + 1
    needed = {k: max(0, first - per_class[k]) for k in LABELS}
    curve: list[dict[str, Any]] = []
    cv: float | None = None
    if features is not None and rows:
        features = learn.center_embeddings(features)  # as the classifier in force sees them
        x = features[rows]
        pool = features[[i for i, h in enumerate(human) if h is None]]
        points = learn.learning_curve(x, y, CURVE_SIZES, seeds=CURVE_SEEDS)
        curve = [asdict(p) for p in points]
        cv = learn.cross_validated_accuracy(x, y, pool=pool)
    sources = LabelSources(
        decided=decided,
        predicted_by=predicted,
        human_labels=int(human_total),
        per_class=per_class,
        needed_for_curve=needed,
        cv_accuracy=cv,
        cv_labels=len(y) if cv is not None else 0,
    )
    return curve, sources


def run_choices(store: Store) -> list[tuple[int, str]]:
    """Every run as (id, "run N (kind)"), oldest first: the pane's run picker."""
    query = Run.select(Run.id, Run.kind).order_by(Run.id).bind(store.db)
    return [(int(r.id), f"run {r.id} ({r.kind})") for r in query]


# -- the whole report -------------------------------------------------------------------


def compute_insights(
    store: Store,
    *,
    run_id: int | None = None,
    now: datetime | None = None,
    horizon_days: int = 90,
    floor: float = 0.05,
    new_importance: float = 0.5,
) -> Insights:
    """All figures, overall or for one run (``run_id``: a classify/replay or distill run)."""
    settings = load_settings(store)
    now = now or utcnow()
    runs = _runs(store)

    pairs = _label_pairs(store, run_id)
    labels = confusion([p[1] for p in pairs], [p[2] for p in pairs], LABELS)
    cells: dict[tuple[str, str], list[int]] = defaultdict(list)
    for eid, human, model, _conf in pairs:
        cells[(human, model)].append(eid)
    with_conf = [p for p in pairs if p[3] is not None]
    calibration = calibration_bins(
        [float(p[3]) for p in with_conf if p[3] is not None], [p[1] == p[2] for p in with_conf]
    )

    gate_rows = _gate_rows(store, run_id)
    gated: list[GatedCandidate] = []
    overrides: list[Override] = []
    reviewed_texts: list[tuple[str, str]] = []
    bulk = 0
    for cid, rid, text, proposed, target, ratio, action, decided_by, kind in gate_rows:
        if decided_by in BULK_ACTORS:
            bulk += 1
            continue
        if action not in GATE_DECISIONS or proposed not in GATE_DECISIONS:
            continue
        ratio = float(ratio)
        # a SKIP/UPDATE without a pattern matched an earlier candidate of its run (runs
        # that gate against their own ADDs: distill and import-knowledge)
        same_run = kind in SELF_GATED_RUNS and proposed in ("SKIP", "UPDATE") and target is None
        if same_run and proposed == "UPDATE" and action == "SKIP":
            # nothing can be updated before it is committed: accepting such a proposal
            # records a SKIP (review_resolve), which is the proposal taken, not overridden
            action = "UPDATE"
        gated.append(
            GatedCandidate(
                id=int(cid),
                ratio=ratio,
                proposed=str(proposed),
                human=str(action),
                pool_empty=proposed == "ADD" and ratio == 0.0,
                same_run_match=same_run,
                run_id=int(rid) if kind in SELF_GATED_RUNS else None,
            )
        )
        reviewed_texts.append((str(text), str(action)))
        if action != proposed:
            overrides.append(Override(int(cid), int(rid), str(text), proposed, action, ratio))
    gate = confusion([g.human for g in gated], [g.proposed for g in gated], GATE_DECISIONS)
    whole_runs = _whole_runs(store, run_id)
    what_ifs = WhatIfTable(gated, whole_runs)

    series = _label_series(store, runs) if run_id is None else []
    if run_id is None:
        by_run: dict[int, list[GatedCandidate]] = defaultdict(list)
        run_of = {int(r[0]): int(r[1]) for r in gate_rows}
        for g in gated:
            by_run[run_of[g.id]].append(g)
        for rid, items in by_run.items():
            c = confusion([g.human for g in items], [g.proposed for g in items], GATE_DECISIONS)
            series.append(_point(rid, runs, c))
        series.sort(key=lambda p: (p.started_at, p.run_id))

    skip = settings.skip_threshold
    update = settings.update_threshold
    edges = [i / HISTOGRAM_BINS for i in range(HISTOGRAM_BINS + 1)]
    histogram: dict[str, list[int]] = {}
    for decision in GATE_DECISIONS:
        ratios = [g.ratio for g in gated if g.human == decision]
        counts, _ = np.histogram(ratios, bins=edges)
        histogram[decision] = [int(v) for v in counts]

    dropped = _dropped_texts(store, run_id)
    qualities = QualityTable(reviewed_texts, dropped)
    aged = _patterns(store)
    k = settings.top_k
    rate = settings.decay_rate
    options = {"k": k, "now": now, "rate": rate, "horizon_days": horizon_days}
    options_f: dict[str, Any] = {**options, "floor": floor, "new_importance": new_importance}
    curve, sources = _learning(store)
    return Insights(
        run_id=run_id,
        labels=labels,
        label_kappa=bootstrap_kappa(labels.counts, seed=SEED),
        label_cells=dict(cells),
        calibration=calibration,
        gate=gate,
        gate_kappa=bootstrap_kappa(gate.counts, seed=SEED),
        gated=gated,
        runs=whole_runs,
        overrides=overrides,
        bulk_decisions=bulk,
        quality_drops=len(dropped),
        series=series,
        skip=skip,
        update=update,
        what_ifs=what_ifs,
        what_if=what_ifs.at(skip, update),
        quality=qualities.at(settings.min_chars, settings.min_words),
        qualities=qualities,
        histogram_edges=edges,
        histogram=histogram,
        forecast_keep=forecast([a for a, _ in aged], **options_f),
        forecast_refresh=forecast([b for _, b in aged], **options_f),
        refresh_enabled=update_refreshes_decay(store),
        learning_curve=curve,
        label_sources=sources,
    )

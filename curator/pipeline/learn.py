"""Learning from the reviewer: a small classifier trained on the human labels.

Features per episode: its embedding under the current model (mean-pooled, normalised; see
:mod:`curator.llm.embeddings`), centred on the mean embedding of all the store's episodes
and normalised again, and the log of its calibrated label distribution. A scikit-learn
logistic regression, class-balanced (constitutional episodes are rare) and with a fixed
seed, is trained on the episodes a person labelled as soon as every label has at least
:data:`MIN_PER_CLASS` of them; until then the calibrated (or raw) scores decide. Training
is a few milliseconds for thousands of labels (a linear model on a few hundred
dimensions), so it runs again after every burst of relabels.

Two uses of the unlabelled episodes (they are there at prediction time, so this is
ordinary semi-supervised learning, no peeking at labels): the centring above (a small
model's embeddings all point roughly the same way; removing the common direction leaves
what tells episodes apart), and, from :data:`PRIOR_MIN_PER_CLASS` labels per class, the
label frequencies re-estimated on the unlabelled episodes by EM (Saerens et al. 2002,
"Adjusting the outputs of a classifier to new a priori probabilities"): class-balanced
training assumes every label equally common, while most episodes are ordinary ones.

The label shown for an episode without a human label is the combination: the learned
classifier's when there is one, else the calibrated label, else the model's. Each episode
records which source decided (``predicted_by``), with what confidence, and the margin
between its two most probable labels (the uncertainty queue's key).

:func:`learning_curve` and :func:`cross_validated_accuracy` are pure functions of the
features and labels, so the benchmark, the CLI and the Insights pane share them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from peewee import fn

from curator.core.calibration import margin, top_label
from curator.core.wording import plural
from curator.store.db import Store
from curator.store.models import LABELS, Episode, EpisodeEmbedding, Run

MIN_PER_CLASS = 3
"""Human labels every label needs before the learned classifier predicts (documented in
the README: three per class already beat the model's own scores on the demo gold set)."""

PRIOR_MIN_PER_CLASS = 5
"""Labels per class from which the label frequencies are re-estimated on the unlabelled
episodes; below it the classifier's probabilities are too rough for EM (on development
draws of the demo gold set it cost accuracy at 3 per class and gained from 5)."""

SEED = 0
CV_FOLDS = 5
EPSILON = 1e-6
PRIOR_ITERATIONS = 100

Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LearnReport:
    """What one retraining did; ``trained`` is false while some label has too few examples.

    ``human_labels`` are the labels the learner could use (their episodes have features
    from the current model), ``given`` every human label in the database: a label given
    before ``classify`` scored its episode is the person's work too, and the summary
    says it was counted and why it waits instead of reading "0 noise" right after it.
    """

    trained: bool
    human_labels: dict[str, int]
    predicted: int
    changed: int
    cv_accuracy: float | None
    cv_labels: int
    model_sha256: str
    given: dict[str, int] = field(default_factory=dict)

    @property
    def unusable(self) -> dict[str, int]:
        """Per label, the human labels the learner cannot use yet (only labels with some)."""
        return {
            k: self.given.get(k, 0) - self.human_labels.get(k, 0)
            for k in LABELS
            if self.given.get(k, 0) > self.human_labels.get(k, 0)
        }

    def summary(self) -> str:
        counts = _counts(self.human_labels)
        if not self.trained:
            if self.unusable:
                text = (
                    f"not enough human labels to learn yet: {sum(self.given.values()):,} given "
                    f"({_counts(self.given)}), {sum(self.human_labels.values()):,} usable "
                    f"({counts}); {MIN_PER_CLASS} per label needed"
                )
            else:
                text = (
                    f"not enough human labels to learn yet: {sum(self.given.values()):,} given "
                    f"({counts}); {MIN_PER_CLASS} per label needed"
                )
        else:
            acc = (
                ""
                if self.cv_accuracy is None
                else f", cross-validated accuracy {self.cv_accuracy:.2f}"
            )
            text = (
                f"learned from {plural(self.cv_labels, 'human label')} ({counts}){acc}; "
                f"{plural(self.predicted, 'episode')} predicted, {self.changed:,} changed"
            )
        return text + self._unusable_note()

    def _unusable_note(self) -> str:
        """Which human labels wait, and why (empty when every one is used)."""
        unused = self.unusable
        if not unused:
            return ""
        if not self.model_sha256:
            why = "no classify run has scored episodes with a model yet; classify them first"
        else:
            why = (
                "their episodes have no features from the current model yet; a classify "
                f"run computes them once every label has {MIN_PER_CLASS} human labels"
            )
        shown = ", ".join(f"{n:,} {label}" for label, n in unused.items())
        return f"; {plural(sum(unused.values()), 'human label')} not usable yet ({shown}): {why}"


def _counts(per_label: dict[str, int]) -> str:
    return ", ".join(f"{per_label.get(k, 0):,} {k}" for k in LABELS)


def given_labels(store: Store) -> dict[str, int]:
    """Every human label in the database, per label (one grouped read of an index)."""
    del store
    query = (
        Episode.select(Episode.human_label, fn.COUNT(Episode.id))
        .where(Episode.human_label.is_null(False))
        .group_by(Episode.human_label)
    )
    return {str(label): int(n) for label, n in query.tuples().iterator()}


# -- features --------------------------------------------------------------------------------


def vector_to_blob(vector: npt.NDArray[Any]) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def blob_to_vector(blob: bytes) -> npt.NDArray[np.float32]:
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


def feature_row(embedding: npt.NDArray[Any], scores: dict[str, float]) -> Matrix:
    """Embedding followed by the log calibrated probability of each label."""
    logs = [math.log(max(float(scores[k]), EPSILON)) for k in LABELS]
    return np.concatenate([np.asarray(embedding, dtype=np.float64), np.asarray(logs)])


def center_embeddings(features: Matrix) -> Matrix:
    """Subtract the mean embedding of these rows from each and normalise it again.

    The label-score columns (the last ``len(LABELS)``) are left as they are. Centring on
    all the store's episodes (labelled or not) is what lifts the demo gold set's learned
    accuracy at 10 labels per class from 0.72 to about 0.75 (README).
    """
    if features.shape[0] == 0:
        return features
    width = features.shape[1] - len(LABELS)
    embedding = features[:, :width] - features[:, :width].mean(axis=0)
    norms = np.linalg.norm(embedding, axis=1, keepdims=True)
    embedding = embedding / np.maximum(norms, EPSILON)
    return np.hstack([embedding, features[:, width:]])


def current_model_sha256(store: Store) -> str | None:
    """The model of the latest classify run (the one whose embeddings are features)."""
    del store
    row = (
        Run.select(Run.model_sha256)
        .where((Run.kind == "classify") & (Run.model_sha256 != ""))
        .order_by(Run.id.desc())
        .first()
    )
    return None if row is None else str(row.model_sha256)


def load_features(store: Store, model_sha256: str) -> tuple[list[int], Matrix, list[str | None]]:
    """Ids, feature matrix and human labels of the episodes that have features."""
    del store
    query = (
        Episode.select(
            Episode.id, Episode.calibrated_scores, Episode.human_label, EpisodeEmbedding.vector
        )
        .join(EpisodeEmbedding, on=(EpisodeEmbedding.episode == Episode.id))
        .where(
            (EpisodeEmbedding.model_sha256 == model_sha256)
            & (Episode.scores_model_sha256 == model_sha256)
            & Episode.calibrated_scores.is_null(False)
        )
        .order_by(Episode.id)
        .objects()
    )
    ids: list[int] = []
    rows: list[Matrix] = []
    human: list[str | None] = []
    for row in query:
        ids.append(int(row.id))
        rows.append(feature_row(blob_to_vector(row.vector), row.calibrated_scores))  # type: ignore[attr-defined]
        human.append(row.human_label)
    matrix = np.vstack(rows) if rows else np.zeros((0, 0))
    return ids, matrix, human


# -- the classifier ---------------------------------------------------------------------------


def enough_labels(labels: Iterable[str], minimum: int = MIN_PER_CLASS) -> bool:
    counts = Counter(labels)
    return all(counts.get(k, 0) >= minimum for k in LABELS)


def fit(features: Matrix, labels: Sequence[str] | npt.NDArray[Any]) -> Any:
    """A class-balanced logistic regression with a fixed seed (same data, same model)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(
        StandardScaler(),
        LogisticRegression(class_weight="balanced", C=0.1, max_iter=2000, random_state=SEED),
    )
    model.fit(features, list(labels))
    return model


class LearnedClassifier:
    """The fitted regression plus the label frequencies estimated on the unlabelled episodes.

    ``weights`` multiply the regression's probabilities (then renormalised): the ratio of
    the estimated frequency of each label to the uniform one that class-balanced training
    assumes. All ones when there were too few labels to estimate them.
    """

    def __init__(self, model: Any, weights: npt.NDArray[np.float64]) -> None:
        self.model = model
        self.weights = weights
        self.classes_ = model.classes_

    def predict_proba(self, features: Matrix) -> Matrix:
        probs = np.asarray(self.model.predict_proba(features), dtype=np.float64) * self.weights
        out: Matrix = probs / probs.sum(axis=1, keepdims=True)
        return out

    def predict(self, features: Matrix) -> npt.NDArray[Any]:
        return np.asarray(self.classes_)[np.argmax(self.predict_proba(features), axis=1)]


def prior_weights(probs: Matrix) -> npt.NDArray[np.float64]:
    """EM re-estimation of label frequencies (Saerens et al. 2002) from uniform training priors.

    ``probs`` are the classifier's probabilities on the unlabelled episodes. Each step
    re-weights them by the current frequency estimate and takes their mean as the next
    estimate; returns estimate / uniform.
    """
    n_classes = probs.shape[1]
    uniform = np.full(n_classes, 1.0 / n_classes)
    priors = uniform.copy()
    for _ in range(PRIOR_ITERATIONS):
        adjusted = probs * (priors / uniform)
        adjusted /= adjusted.sum(axis=1, keepdims=True)
        estimate = adjusted.mean(axis=0)
        done = bool(np.abs(estimate - priors).max() < 1e-9)
        priors = estimate
        if done:
            break
    weights: npt.NDArray[np.float64] = priors / uniform
    return weights


def train(
    features: Matrix, labels: Sequence[str] | npt.NDArray[Any], pool: Matrix | None = None
) -> LearnedClassifier:
    """:func:`fit`, then label frequencies from ``pool`` (the unlabelled episodes' features).

    The frequencies are estimated only when every label has
    :data:`PRIOR_MIN_PER_CLASS` examples and there is a pool to estimate them on.
    """
    model = fit(features, labels)
    weights = np.ones(len(model.classes_))
    if pool is not None and len(pool) and enough_labels(list(labels), PRIOR_MIN_PER_CLASS):
        weights = prior_weights(np.asarray(model.predict_proba(pool), dtype=np.float64))
    return LearnedClassifier(model, weights)


def predict_distributions(model: Any, features: Matrix) -> list[dict[str, float]]:
    classes = [str(c) for c in model.classes_]
    probs = model.predict_proba(features)
    out = []
    for row in probs:
        dist = {k: 0.0 for k in LABELS}
        dist.update({c: float(p) for c, p in zip(classes, row, strict=True)})
        out.append(dist)
    return out


def cross_validated_accuracy(
    features: Matrix,
    labels: Sequence[str],
    *,
    folds: int = CV_FOLDS,
    pool: Matrix | None = None,
) -> float | None:
    """Stratified k-fold accuracy (leave-one-out when a label has fewer than k examples).

    ``None`` until every label has :data:`MIN_PER_CLASS` examples. ``pool``: the
    unlabelled episodes' features, for the label frequencies (see :func:`train`).
    """
    if not enough_labels(labels):
        return None
    from sklearn.model_selection import LeaveOneOut, StratifiedKFold

    y = np.asarray(labels)
    smallest = min(Counter(labels).values())
    splitter: Any = (
        StratifiedKFold(n_splits=folds, shuffle=True, random_state=SEED)
        if smallest >= folds
        else LeaveOneOut()
    )
    correct = 0
    for fold, test in splitter.split(features, y):
        if not enough_labels(y[fold], 1):
            continue
        model = train(features[fold], y[fold], pool)
        correct += int((model.predict(features[test]) == y[test]).sum())
    return correct / len(y)


@dataclass(frozen=True)
class CurvePoint:
    per_class: int
    labels: int
    accuracy: float
    kappa: float
    macro_f1: float


def learning_curve(
    features: Matrix,
    labels: Sequence[str],
    per_class: Sequence[int] = (3, 5, 10, 20),
    *,
    seeds: Sequence[int] = tuple(range(10)),
) -> list[CurvePoint]:
    """Accuracy against the number of labels: train on k drawn per class, test on the rest.

    Means over ``seeds`` draws. Sizes that leave a label without a test example, or
    without k examples to draw, are skipped. ``features`` as :func:`center_embeddings`
    returns them; every row (drawn or not) is the unlabelled pool of :func:`train`.
    """
    from curator.core.calibration import accuracy, cohen_kappa, macro_f1

    y = np.asarray(labels)
    counts = Counter(labels)
    points: list[CurvePoint] = []
    for k in per_class:
        if any(counts.get(c, 0) <= k for c in LABELS):
            continue
        scores: list[tuple[float, float, float]] = []
        for seed in seeds:
            drawn = draw_per_class(y, k, seed)
            test = np.setdiff1d(np.arange(len(y)), drawn)
            model = train(features[drawn], y[drawn], features)
            pred = [str(p) for p in model.predict(features[test])]
            gold = [str(g) for g in y[test]]
            scores.append(
                (accuracy(gold, pred), cohen_kappa(gold, pred), macro_f1(gold, pred, LABELS))
            )
        mean = np.mean(np.asarray(scores), axis=0)
        points.append(
            CurvePoint(k, k * len(LABELS), float(mean[0]), float(mean[1]), float(mean[2]))
        )
    return points


def human_learning_curve(
    store: Store,
    per_class: Sequence[int] = (3, 5, 10, 20),
    *,
    seeds: Sequence[int] = tuple(range(5)),
) -> list[CurvePoint]:
    """The learning curve on the human labels so far (for the Insights pane)."""
    sha = current_model_sha256(store)
    if not sha:
        return []
    _, features, human = load_features(store, sha)
    rows = [i for i, h in enumerate(human) if h is not None]
    if not rows:
        return []
    features = center_embeddings(features)
    return learning_curve(features[rows], [str(human[i]) for i in rows], per_class, seeds=seeds)


def draw_per_class(labels: npt.NDArray[Any], k: int, seed: int) -> npt.NDArray[np.int64]:
    """Indices of ``k`` randomly drawn examples of each label (seeded)."""
    rng = np.random.default_rng(seed)
    chosen = [rng.choice(np.flatnonzero(labels == c), size=k, replace=False) for c in LABELS]
    return np.sort(np.concatenate(chosen)).astype(np.int64)


# -- the store -------------------------------------------------------------------------------


def relearn(store: Store, model_sha256: str | None = None) -> LearnReport:
    """Retrain on the human labels and re-predict every episode without one.

    Without enough labels the prediction falls back to the calibrated scores (what
    classify wrote), so a relabel that drops a label below the minimum also undoes the
    learned predictions.
    """
    sha = model_sha256 or current_model_sha256(store) or ""
    ids, features, human = load_features(store, sha) if sha else ([], np.zeros((0, 0)), [])
    labelled = [i for i, h in enumerate(human) if h is not None]
    y = [str(human[i]) for i in labelled]
    counts = dict(Counter(y))
    trained = bool(labelled) and enough_labels(y)
    cv: float | None = None
    updates: list[tuple[int, str, str, float, float]] = []
    if trained:
        features = center_embeddings(features)
        todo = [i for i, h in enumerate(human) if h is None]
        x_train, pool = features[labelled], features[todo]
        model = train(x_train, y, pool)
        cv = cross_validated_accuracy(x_train, y, pool=pool)
        if todo:
            for i, dist in zip(todo, predict_distributions(model, features[todo]), strict=True):
                label = top_label(dist, LABELS)
                updates.append((ids[i], label, "learned", dist[label], margin(dist)))
    changed = _write_predictions(store, updates, fallback=not trained)
    return LearnReport(trained, counts, len(updates), changed, cv, len(y), sha, given_labels(store))


def _write_predictions(
    store: Store, updates: list[tuple[int, str, str, float, float]], *, fallback: bool
) -> int:
    """Write learned predictions; without a classifier, return "learned" rows to the scores.

    One ``executemany`` in one transaction: re-predicting 100,000 episodes stays a
    fraction of a second of database work.
    """
    with store.write():
        if fallback:
            rows = Episode.select(
                Episode.id, Episode.model_scores, Episode.calibrated_scores
            ).where((Episode.predicted_by == "learned") & Episode.human_label.is_null())
            for row in list(rows):
                updates.append(
                    _score_prediction(store, row.id, row.model_scores, row.calibrated_scores)
                )
        ids = [u[0] for u in updates]
        old: dict[int, str | None] = {}
        for start in range(0, len(ids), 500):
            chunk = Episode.select(Episode.id, Episode.predicted_label).where(
                Episode.id.in_(ids[start : start + 500])
            )
            old.update((int(row.id), row.predicted_label) for row in chunk)
        changed = sum(1 for u in updates if old.get(u[0]) != u[1])
        store.db.cursor().executemany(
            "UPDATE episode SET predicted_label = ?, predicted_by = ?, predicted_confidence = ?, "
            "predicted_margin = ?, label = CASE WHEN human_label IS NULL THEN ? ELSE label END, "
            "label_by = CASE WHEN human_label IS NULL THEN 'model' ELSE label_by END "
            "WHERE id = ?",
            [(label, by, conf, gap, label, i) for i, label, by, conf, gap in updates],
        )
    return changed


def _score_prediction(
    store: Store,
    episode_id: int,
    raw: dict[str, float] | None,
    calibrated: dict[str, float] | None,
) -> tuple[int, str, str, float, float]:
    from curator.pipeline.calibrate import calibration_enabled

    if calibrated and calibration_enabled(store):
        dist, source = calibrated, "calibrated"
    else:
        dist, source = raw or {k: 1.0 / len(LABELS) for k in LABELS}, "model"
    label = top_label(dist, LABELS)
    return episode_id, label, source, float(dist[label]), margin(dist)


def score_prediction(
    store: Store, raw: dict[str, float], calibrated: dict[str, float]
) -> tuple[str, str, float, float]:
    """The prediction from the label scores alone: (label, source, confidence, margin)."""
    _, label, source, confidence, gap = _score_prediction(store, 0, raw, calibrated)
    return label, source, confidence, gap


# -- the uncertainty queue ---------------------------------------------------------------------


def uncertain_episode_ids(
    store: Store, limit: int | None = None, *, exclude: Sequence[int] = ()
) -> list[int]:
    """Episodes without a human label, least certain prediction first.

    Certainty is the margin between the two most probable labels of the prediction in
    force (learned, calibrated or raw); ties go to the older episode id. Episodes never
    scored are not in the queue.
    """
    del store
    query = (
        Episode.select(Episode.id)
        .where(Episode.human_label.is_null() & Episode.predicted_margin.is_null(False))
        .order_by(Episode.predicted_margin, Episode.id)
    )
    if exclude:
        query = query.where(Episode.id.not_in(list(exclude)))
    if limit is not None:
        query = query.limit(max(0, int(limit)))
    return [int(row.id) for row in query]


def uncertain_queue(store: Store, limit: int) -> list[dict[str, Any]]:
    """The queue as plain records (for ``curator label --next-uncertain N --json``)."""
    ids = uncertain_episode_ids(store, limit)
    rows = {int(e.id): e for e in Episode.select().where(Episode.id.in_(ids))}
    return [
        {
            "id": i,
            "predicted_label": rows[i].predicted_label,
            "predicted_by": rows[i].predicted_by,
            "confidence": rows[i].predicted_confidence,
            "margin": rows[i].predicted_margin,
            "model_label": rows[i].model_label,
            "text": rows[i].text[:200],
        }
        for i in ids
    ]

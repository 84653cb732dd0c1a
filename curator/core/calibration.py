"""Contextual calibration of label scores, uncertainty, and agreement measures.

Small models prefer some labels whatever the input. Contextual calibration (Zhao et al.
2021, "Calibrate before use") estimates that preference from *content-free* inputs ("N/A",
an empty episode, a neutral filler): their average label distribution ``p_cf`` is the
model's bias. Each episode's distribution ``p`` is then corrected with the diagonal
transform ``W = diag(p_cf)^-1``, i.e. ``q_i = (p_i / p_cf_i) / sum_j (p_j / p_cf_j)``: a label
the model gives to everything loses exactly the head start it has on nothing.

Everything here is plain arithmetic on dicts keyed by label, so the pipeline, the CLI,
the benchmark and the GUI's Insights share one definition.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Distribution = Mapping[str, float]

FLOOR = 1e-12
"""Smallest bias probability divided by (a label the model never gives stays finite)."""


def normalise(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale non-negative scores to sum to one (uniform when they are all zero)."""
    total = sum(max(0.0, v) for v in scores.values())
    if total <= 0 or not math.isfinite(total):
        return {k: 1.0 / len(scores) for k in scores} if scores else {}
    return {k: max(0.0, v) / total for k, v in scores.items()}


def content_free_bias(distributions: Sequence[Distribution]) -> dict[str, float]:
    """The model's label bias: the mean distribution over the content-free inputs."""
    if not distributions:
        raise ValueError("at least one content-free distribution is needed")
    labels = list(distributions[0])
    mean = {k: sum(float(d[k]) for d in distributions) / len(distributions) for k in labels}
    return normalise(mean)


def calibrate(probabilities: Distribution, bias: Distribution) -> dict[str, float]:
    """The contextually calibrated distribution: ``p / p_cf``, renormalised."""
    return normalise({k: float(p) / max(float(bias[k]), FLOOR) for k, p in probabilities.items()})


def top_label(distribution: Distribution, order: Sequence[str] | None = None) -> str:
    """The most probable label; ties go to the earlier label of ``order`` (or of the dict)."""
    keys = list(order) if order is not None else list(distribution)
    return max(keys, key=lambda k: (distribution[k], -keys.index(k)))


def margin(distribution: Distribution) -> float:
    """Top probability minus the runner-up: 0 is a coin toss, 1 is certain."""
    values = sorted((float(v) for v in distribution.values()), reverse=True)
    if len(values) < 2:
        return 1.0
    return values[0] - values[1]


def entropy(distribution: Distribution) -> float:
    """Shannon entropy in nats (0 for a certain answer, log(n) for a uniform one)."""
    return -sum(float(p) * math.log(float(p)) for p in distribution.values() if p > 0)


# -- agreement measures (gold vs predicted) -------------------------------------------------


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    _check(gold, predicted)
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def cohen_kappa(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Agreement beyond chance: 1 perfect, 0 chance level, negative worse than chance."""
    _check(gold, predicted)
    n = len(gold)
    labels = sorted(set(gold) | set(predicted))
    observed = accuracy(gold, predicted)
    expected = sum((gold.count(k) / n) * (list(predicted).count(k) / n) for k in labels)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> float:
    """Unweighted mean of the per-label F1 (a label never seen nor predicted scores 0)."""
    _check(gold, predicted)
    scores = []
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        fp = sum(g != label and p == label for g, p in zip(gold, predicted, strict=True))
        fn = sum(g == label and p != label for g, p in zip(gold, predicted, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return sum(scores) / len(scores)


def _check(gold: Sequence[str], predicted: Sequence[str]) -> None:
    if len(gold) != len(predicted) or not gold:
        raise ValueError("gold and predicted must be non-empty and of equal length")

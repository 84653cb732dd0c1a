"""Agreement between the model (or the gate) and the human: the statistics of Insights.

Every figure the Insights pane and ``curator insights`` show is computed here, from plain
sequences, so it can be checked by hand and against scikit-learn in the tests.

Conventions (the pane and the JSON output rely on them):

* A confusion matrix has the **human** decision on the rows and the **model's** proposal on
  the columns, because the question a reviewer asks is "when the truth was X, what did the
  model say?": row percentages answer it.
* A figure that is undefined (no pairs, a zero denominator, kappa when both raters use one
  category only) is ``None``, never NaN: NaN is not JSON and cannot be drawn.
* The bootstrap resamples the *pairs* with replacement. Drawing ``n`` pairs with
  replacement from the observed pairs is exactly a multinomial draw of the nine (or
  sixteen) cell counts with the observed cell proportions, so the resampling is done on the
  counts: ``O(replicates * cells)`` whatever the number of episodes, and seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOOTSTRAP_REPLICATES",
    "CalibrationBin",
    "Confusion",
    "KappaInterval",
    "bootstrap_kappa",
    "calibration_bins",
    "cohen_kappa",
    "confusion",
    "expected_calibration_error",
    "kappa_from_counts",
]

BOOTSTRAP_REPLICATES: Final = 2000
"""Enough for stable 2.5 % / 97.5 % percentiles (the interval moves by < 0.01 between seeds)."""

IntMatrix = npt.NDArray[np.int64]


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


@dataclass(frozen=True)
class Confusion:
    """Counts of (human, model) pairs over ``labels``; rows human, columns model."""

    labels: tuple[str, ...]
    counts: IntMatrix

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def row_percent(self) -> list[list[float | None]]:
        """Each row as percentages of that row's total (None for an empty row)."""
        out: list[list[float | None]] = []
        for row in self.counts:
            total = int(row.sum())
            out.append([None if total == 0 else 100.0 * int(v) / total for v in row])
        return out

    def accuracy(self) -> float | None:
        return _ratio(float(np.trace(self.counts)), float(self.total))

    def precision(self) -> dict[str, float | None]:
        """Of the items the model put in a column, the share the human put there too."""
        cols = self.counts.sum(axis=0)
        return {
            label: _ratio(float(self.counts[i, i]), float(cols[i]))
            for i, label in enumerate(self.labels)
        }

    def recall(self) -> dict[str, float | None]:
        """Of the items the human put in a row, the share the model found."""
        rows = self.counts.sum(axis=1)
        return {
            label: _ratio(float(self.counts[i, i]), float(rows[i]))
            for i, label in enumerate(self.labels)
        }

    def kappa(self) -> float | None:
        return kappa_from_counts(self.counts)

    def to_json(self) -> dict[str, object]:
        return {
            "labels": list(self.labels),
            "rows": "human",
            "columns": "model",
            "counts": [[int(v) for v in row] for row in self.counts],
            "row_percent": self.row_percent(),
            "total": self.total,
            "accuracy": self.accuracy(),
            "precision": self.precision(),
            "recall": self.recall(),
            "kappa": self.kappa(),
        }


def confusion(human: Sequence[str], model: Sequence[str], labels: Sequence[str]) -> Confusion:
    """The confusion matrix of paired decisions; a value outside ``labels`` is an error."""
    if len(human) != len(model):
        raise ValueError("human and model decisions must pair up (same length)")
    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for h, m in zip(human, model, strict=True):
        if h not in index or m not in index:
            raise ValueError(f"decision outside {list(labels)}: {h!r} / {m!r}")
        counts[index[h], index[m]] += 1
    return Confusion(tuple(labels), counts)


def kappa_from_counts(counts: npt.ArrayLike) -> float | None:
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` of a square count matrix.

    ``p_o`` is the observed agreement (the diagonal's share), ``p_e`` the agreement two
    independent raters with the same marginals would reach by chance. None when there are
    no pairs or ``p_e == 1`` (both raters used one and the same category only).
    """
    m = np.asarray(counts, dtype=np.float64)
    n = m.sum()
    if n == 0:
        return None
    p_o = np.trace(m) / n
    p_e = float((m.sum(axis=1) * m.sum(axis=0)).sum()) / (n * n)
    if math.isclose(p_e, 1.0):
        return None
    return float((p_o - p_e) / (1.0 - p_e))


def cohen_kappa(human: Sequence[str], model: Sequence[str]) -> float | None:
    """Kappa of two label sequences over the union of their labels."""
    labels = sorted(set(human) | set(model))
    return confusion(human, model, labels).kappa()


@dataclass(frozen=True)
class KappaInterval:
    """A percentile bootstrap interval; ``low``/``high`` None when it cannot be formed."""

    kappa: float | None
    low: float | None
    high: float | None
    replicates: int
    seed: int

    def to_json(self) -> dict[str, object]:
        return {
            "kappa": self.kappa,
            "low": self.low,
            "high": self.high,
            "level": 0.95,
            "replicates": self.replicates,
            "seed": self.seed,
        }


def _kappas(samples: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Kappa of each resampled flattened matrix (rows of ``samples``); NaN where undefined."""
    mats = samples.reshape(-1, k, k)
    n = mats.sum(axis=(1, 2))
    p_o = np.trace(mats, axis1=1, axis2=2) / n
    p_e = (mats.sum(axis=2) * mats.sum(axis=1)).sum(axis=1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = (p_o - p_e) / (1.0 - p_e)
    kappas[np.isclose(p_e, 1.0)] = np.nan
    return kappas


def bootstrap_kappa(
    counts: npt.ArrayLike,
    *,
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    level: float = 0.95,
) -> KappaInterval:
    """Kappa with a seeded percentile bootstrap interval over the pairs.

    Replicates whose kappa is undefined are left out of the percentiles; if fewer than
    half are defined (tiny or degenerate samples) no interval is given.
    """
    m = np.asarray(counts, dtype=np.int64)
    k = m.shape[0]
    point = kappa_from_counts(m)
    n = int(m.sum())
    if n == 0 or point is None:
        return KappaInterval(point, None, None, replicates, seed)
    rng = np.random.default_rng(seed)
    probabilities = (m.reshape(-1) / n).astype(np.float64)
    samples = rng.multinomial(n, probabilities, size=replicates).astype(np.float64)
    kappas = _kappas(samples, k)
    defined = kappas[~np.isnan(kappas)]
    if len(defined) < replicates / 2:
        return KappaInterval(point, None, None, replicates, seed)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return KappaInterval(point, float(low), float(high), replicates, seed)


@dataclass(frozen=True)
class CalibrationBin:
    """Pairs whose model confidence fell in ``[low, high)`` (the last bin includes 1.0)."""

    low: float
    high: float
    count: int
    mean_confidence: float | None
    agreement: float | None  # share of pairs where the model's label was the human's

    def to_json(self) -> dict[str, object]:
        return {
            "low": self.low,
            "high": self.high,
            "count": self.count,
            "mean_confidence": self.mean_confidence,
            "agreement": self.agreement,
        }


def calibration_bins(
    confidence: Sequence[float], agreed: Sequence[bool], n_bins: int = 10
) -> list[CalibrationBin]:
    """Reliability diagram data: equal-width confidence bins and the observed agreement.

    A well-calibrated model's points lie on the diagonal: of the labels given with
    confidence 0.8, four in five match the human's.
    """
    if len(confidence) != len(agreed):
        raise ValueError("confidence and agreed must pair up (same length)")
    if n_bins < 1:
        raise ValueError("n_bins must be at least 1")
    conf = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, 1.0)
    hit = np.asarray(agreed, dtype=bool)
    which = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    bins: list[CalibrationBin] = []
    for b in range(n_bins):
        mask = which == b
        count = int(mask.sum())
        bins.append(
            CalibrationBin(
                low=b / n_bins,
                high=(b + 1) / n_bins,
                count=count,
                mean_confidence=float(conf[mask].mean()) if count else None,
                agreement=float(hit[mask].mean()) if count else None,
            )
        )
    return bins


def expected_calibration_error(bins: Sequence[CalibrationBin]) -> float | None:
    """Count-weighted mean gap between confidence and agreement (ECE); None if no pairs."""
    total = sum(b.count for b in bins)
    if total == 0:
        return None
    gap = 0.0
    for b in bins:
        if b.count and b.mean_confidence is not None and b.agreement is not None:
            gap += b.count * abs(b.mean_confidence - b.agreement)
    return gap / total

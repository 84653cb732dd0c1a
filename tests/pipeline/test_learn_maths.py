"""The learned classifier's use of the unlabelled episodes, on hand-made examples:
centring the embeddings, and the EM estimate of the label frequencies (Saerens et al.)."""

from __future__ import annotations

import numpy as np
import pytest

from curator.pipeline.learn import (
    PRIOR_MIN_PER_CLASS,
    center_embeddings,
    prior_weights,
    train,
)
from curator.store.models import LABELS


def test_centring_touches_the_embedding_and_not_the_label_scores() -> None:
    scores = [-0.5, -1.5, -2.5]
    rows = np.array([[1.0, 0.0, *scores], [0.0, 1.0, *scores]])
    out = center_embeddings(rows)
    half = 1 / np.sqrt(2)
    assert out[:, :2] == pytest.approx(np.array([[half, -half], [-half, half]]))
    assert out[:, 2:] == pytest.approx(rows[:, 2:])
    assert center_embeddings(np.zeros((0, 5))).shape == (0, 5)


def test_em_finds_the_label_frequencies_by_hand() -> None:
    # A classifier trained on balanced labels says (0.8, 0.2) for 75 episodes and
    # (0.2, 0.8) for 25. The likelihood 75 log(0.2 + 0.6 p) + 25 log(0.8 - 0.6 p) peaks
    # where 75 * 0.6 / (0.2 + 0.6 p) = 25 * 0.6 / (0.8 - 0.6 p), i.e. p = 2.2 / 2.4.
    probs = np.array([[0.8, 0.2]] * 75 + [[0.2, 0.8]] * 25)
    p = 2.2 / 2.4
    assert prior_weights(probs) == pytest.approx([p / 0.5, (1 - p) / 0.5], abs=1e-6)
    # balanced evidence: the uniform prior of training stands
    balanced = np.array([[0.8, 0.2]] * 50 + [[0.2, 0.8]] * 50)
    assert prior_weights(balanced) == pytest.approx([1.0, 1.0], abs=1e-6)


def _blobs(counts: dict[str, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping Gaussian clouds (one per label) in 8 dimensions."""
    rng = np.random.default_rng(seed)
    centres = {k: np.eye(8)[i] * 1.2 for i, k in enumerate(LABELS)}
    x = np.vstack([rng.normal(centres[k], 1.0, size=(n, 8)) for k, n in counts.items()])
    y = np.array([k for k, n in counts.items() for _ in range(n)])
    return x, y


def test_frequencies_from_the_pool_help_when_one_label_dominates() -> None:
    per_class = PRIOR_MIN_PER_CLASS * 2
    x_train, y_train = _blobs(dict.fromkeys(LABELS, per_class), seed=1)
    # the episodes to predict are mostly "uncategorized", as in a real store
    pool, truth = _blobs({"constitutional": 20, "noise": 60, "uncategorized": 320}, seed=2)
    plain = train(x_train, y_train)
    shifted = train(x_train, y_train, pool)
    assert plain.weights == pytest.approx(np.ones(3))
    weights = dict(zip(shifted.classes_, shifted.weights, strict=True))
    assert weights["uncategorized"] > 1 > weights["constitutional"]
    plain_accuracy = float(np.mean(plain.predict(pool) == truth))
    shifted_accuracy = float(np.mean(shifted.predict(pool) == truth))
    assert shifted_accuracy > plain_accuracy + 0.05
    # below the minimum per label the frequencies are not estimated
    few = np.concatenate([np.flatnonzero(y_train == k)[: PRIOR_MIN_PER_CLASS - 1] for k in LABELS])
    assert train(x_train[few], y_train[few], pool).weights == pytest.approx(np.ones(3))

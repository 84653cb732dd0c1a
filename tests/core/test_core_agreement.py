"""Agreement statistics: a hand-computed example, scikit-learn, the bootstrap, calibration."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from curator.core.agreement import (
    bootstrap_kappa,
    calibration_bins,
    cohen_kappa,
    confusion,
    expected_calibration_error,
    kappa_from_counts,
)

LABELS = ("constitutional", "noise", "uncategorized")


def _pairs(counts: list[list[int]]) -> tuple[list[str], list[str]]:
    human: list[str] = []
    model: list[str] = []
    for i, row in enumerate(counts):
        for j, n in enumerate(row):
            human += [LABELS[i]] * n
            model += [LABELS[j]] * n
    return human, model


def test_hand_computed_example() -> None:
    # rows human, columns model; n = 50
    counts = [[10, 2, 3], [1, 20, 4], [2, 3, 5]]
    human, model = _pairs(counts)
    c = confusion(human, model, LABELS)
    assert c.counts.tolist() == counts
    # p_o = 35/50 = 0.7; row sums 15, 25, 10; column sums 13, 25, 12
    # p_e = (15*13 + 25*25 + 10*12) / 2500 = (195 + 625 + 120) / 2500 = 0.376
    # kappa = (0.7 - 0.376) / (1 - 0.376) = 0.324 / 0.624
    assert c.accuracy() == pytest.approx(0.7)
    assert c.kappa() == pytest.approx(0.324 / 0.624)
    assert c.precision()["noise"] == pytest.approx(20 / 25)
    assert c.recall()["constitutional"] == pytest.approx(10 / 15)
    assert c.recall()["uncategorized"] == pytest.approx(5 / 10)
    row = c.row_percent()[1]
    assert row == pytest.approx([4.0, 80.0, 16.0])


def test_kappa_matches_scikit_learn_on_random_labellings() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 60)
        human = [rng.choice(LABELS) for _ in range(n)]
        bias = rng.random()
        model = [h if rng.random() < bias else rng.choice(LABELS) for h in human]
        ours = cohen_kappa(human, model)
        with warnings.catch_warnings():  # scikit-learn warns on a single label; we return None
            warnings.simplefilter("ignore")
            theirs = float(cohen_kappa_score(human, model))
        if math.isnan(theirs):
            assert ours is None
        else:
            assert ours == pytest.approx(theirs, abs=1e-12)
        assert confusion(human, model, LABELS).counts.tolist() == (
            confusion_matrix(human, model, labels=list(LABELS)).tolist()
        )


def test_undefined_figures_are_none_not_nan() -> None:
    c = confusion([], [], LABELS)
    assert c.accuracy() is None and c.kappa() is None
    assert all(v is None for v in c.precision().values())
    assert c.row_percent()[0] == [None, None, None]
    # both raters used one category only: chance agreement is 1, kappa undefined
    assert kappa_from_counts([[5, 0], [0, 0]]) is None


def test_unknown_label_is_an_error() -> None:
    with pytest.raises(ValueError, match="outside"):
        confusion(["noise"], ["spam"], LABELS)


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    counts = [[40, 5, 5], [4, 60, 6], [6, 4, 30]]
    a = bootstrap_kappa(counts, seed=3)
    b = bootstrap_kappa(counts, seed=3)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.low is not None and a.high is not None and a.kappa is not None
    assert a.low < a.kappa < a.high
    # a larger sample with the same proportions gives a narrower interval
    big = bootstrap_kappa(np.asarray(counts) * 10, seed=3)
    assert big.low is not None and big.high is not None
    assert (big.high - big.low) < (a.high - a.low)
    # the interval is roughly the normal-approximation width (SE of kappa here ~0.05)
    assert 0.1 < a.high - a.low < 0.35


def test_bootstrap_of_nothing_has_no_interval() -> None:
    empty = bootstrap_kappa(np.zeros((3, 3), dtype=int))
    assert empty.kappa is None and empty.low is None and empty.high is None


def test_calibration_bins_by_hand() -> None:
    conf = [0.05, 0.15, 0.85, 0.9, 0.95, 1.0]
    hit = [False, True, True, False, True, True]
    bins = calibration_bins(conf, hit, n_bins=10)
    assert [b.count for b in bins] == [1, 1, 0, 0, 0, 0, 0, 0, 1, 3]
    assert bins[9].agreement == pytest.approx(2 / 3)  # 0.9, 0.95 and 1.0 (last bin closed)
    assert bins[9].mean_confidence == pytest.approx((0.9 + 0.95 + 1.0) / 3)
    assert bins[2].agreement is None
    ece = expected_calibration_error(bins)
    expected = (0.05 + 0.85 + abs(0.85 - 1) + 3 * abs((2.85 / 3) - 2 / 3)) / 6
    assert ece == pytest.approx(expected)

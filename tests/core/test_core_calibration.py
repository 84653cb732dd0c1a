"""Contextual calibration and the agreement measures, on hand-made examples."""

from __future__ import annotations

import math

import pytest

from curator.core.calibration import (
    accuracy,
    calibrate,
    cohen_kappa,
    content_free_bias,
    entropy,
    macro_f1,
    margin,
    top_label,
)


def test_bias_is_the_mean_of_the_content_free_distributions() -> None:
    bias = content_free_bias([{"a": 0.6, "b": 0.2, "c": 0.2}, {"a": 0.4, "b": 0.4, "c": 0.2}])
    assert bias == pytest.approx({"a": 0.5, "b": 0.3, "c": 0.2})


def test_calibration_divides_by_the_bias_and_renormalises() -> None:
    # p / p_cf = (0.5/0.6, 0.4/0.2, 0.1/0.2) = (5/6, 2, 1/2); sum 10/3
    fixed = calibrate({"a": 0.5, "b": 0.4, "c": 0.1}, {"a": 0.6, "b": 0.2, "c": 0.2})
    assert fixed == pytest.approx({"a": 0.25, "b": 0.6, "c": 0.15})
    assert top_label({"a": 0.5, "b": 0.4, "c": 0.1}) == "a"
    assert top_label(fixed) == "b"  # the label the model favours on nothing loses its lead


def test_uniform_bias_changes_nothing_and_bias_itself_becomes_uniform() -> None:
    p = {"a": 0.7, "b": 0.2, "c": 0.1}
    assert calibrate(p, {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}) == pytest.approx(p)
    bias = {"a": 0.5, "b": 0.3, "c": 0.2}
    assert calibrate(bias, bias) == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_margin_and_entropy() -> None:
    assert margin({"a": 0.5, "b": 0.3, "c": 0.2}) == pytest.approx(0.2)
    assert entropy({"a": 1.0, "b": 0.0}) == 0.0
    assert entropy({"a": 0.5, "b": 0.5}) == pytest.approx(math.log(2))


def test_agreement_measures_by_hand() -> None:
    gold = ["n", "n", "u", "u", "c", "c"]
    pred = ["n", "u", "u", "u", "c", "n"]
    assert accuracy(gold, pred) == pytest.approx(4 / 6)
    # expected agreement: n (2/6)(2/6) + u (2/6)(3/6) + c (2/6)(1/6) = 12/36 = 1/3
    assert cohen_kappa(gold, pred) == pytest.approx((4 / 6 - 1 / 3) / (1 - 1 / 3))
    # F1: n 2*1/(2+1+1)=0.5, u 2*2/(4+1+0)=0.8, c 2*1/(2+0+1)=2/3
    assert macro_f1(gold, pred, ["n", "u", "c"]) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert cohen_kappa(["n", "u"], ["u", "n"]) < 0

"""Estimates from damaged stats and odd progress: finite, never negative, never blank early.

A classify run's features phase is measured from the ``features_ms`` of earlier runs'
stats. Stats are JSON a person or an older version may have written: an infinite or
absurd figure made the question read "about inf days", and ``True`` counted as a
millisecond. A features phase with nothing to do (every episode already scored and
embedded) reports a total of 0, and the time left went blank instead of "finishing".
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.pipeline.eta import (
    DEFAULT_FEATURES_S,
    MAX_FEATURES_S,
    RemainingTime,
    _features_pace,
    remaining_text,
)
from curator.pipeline.progress import Progress
from curator.pipeline.run_history import FEATURES_MS
from curator.store.models import Run

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
)


def run(ms: object, classified: object) -> Run:
    return Run(stats={FEATURES_MS: ms, "classified": classified})


@pytest.mark.parametrize(
    "ms, classified",
    [
        (math.inf, 3),
        (math.nan, 3),
        (1e308, 3),
        (10**400, 3),
        (True, 1),
        (500, True),
        ("500", 3),
        (-500, 3),
        (500, 2.5),
    ],
)
def test_a_damaged_features_stat_is_not_measured(ms: object, classified: object) -> None:
    assert _features_pace([run(ms, classified)]) == DEFAULT_FEATURES_S


def test_a_damaged_run_leaves_the_sound_runs_pace() -> None:
    assert _features_pace([run(math.inf, 3), run(900, 3)]) == pytest.approx(0.3 * 1.0)


@settings(deadline=None)
@given(st.lists(st.tuples(ODD, ODD), max_size=6))
@example([(1e308, 3), (1e308, 3)])
@example([(math.inf, 1)])
@example([(True, True)])
def test_the_features_pace_is_finite_and_bounded_whatever_the_stats(
    stats: list[tuple[object, object]],
) -> None:
    pace = _features_pace([run(ms, n) for ms, n in stats])
    assert math.isfinite(pace) and 0.0 <= pace <= MAX_FEATURES_S


def test_a_features_phase_with_nothing_to_do_reads_finishing() -> None:
    tracker = RemainingTime(10.0, later_seconds=4.0)
    tracker.update(Progress("classify", 2, 2), 6.0)
    left = tracker.update(Progress("features", 0, 0), 6.5)
    assert left == 0.0 and remaining_text(left) == "finishing"


def test_a_run_with_nothing_to_classify_reads_its_later_share() -> None:
    tracker = RemainingTime(4.0, later_seconds=4.0)
    assert tracker.update(Progress("classify", 0, 0), 0.0) == pytest.approx(4.0)


REPORT = st.tuples(
    st.sampled_from(["classify", "features", "extract", "refine", "stage"]),
    st.integers(min_value=-3, max_value=12),
    st.integers(min_value=0, max_value=10),
    st.floats(min_value=0.0, max_value=100.0),
)


@settings(deadline=None)
@given(
    prior=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1e6)),
    later=st.floats(min_value=0.0, max_value=1e6),
    reports=st.lists(REPORT, max_size=25),
)
@example(prior=10.0, later=4.0, reports=[("classify", 2, 2, 6.0), ("features", 0, 0, 0.5)])
def test_the_time_left_is_never_negative_nan_or_blank_once_something_was_said(
    prior: float | None, later: float, reports: list[tuple[str, int, int, float]]
) -> None:
    tracker = RemainingTime(prior, later)
    now = 0.0
    said = prior is not None
    for step, done, total, dt in reports:
        now += dt
        left = tracker.update(Progress(step, done, total), now)
        if left is None:
            # Nothing to go on only while no estimate and no finished item exist.
            assert not said or total > 0
            continue
        assert math.isfinite(left) and left >= 0.0


@settings(deadline=None)
@given(
    n=st.integers(min_value=0, max_value=20),
    m=st.integers(min_value=0, max_value=20),
    per_item=st.floats(min_value=0.01, max_value=100.0),
    later=st.floats(min_value=0.01, max_value=1000.0),
    looks=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=4),
)
@example(n=2, m=0, per_item=3.0, later=4.0, looks=[0.5])
def test_with_a_right_estimate_the_time_left_never_grows(
    n: int, m: int, per_item: float, later: float, looks: list[float]
) -> None:
    """Classify's episodes then its features at the estimated pace, each report repeated
    and the label read at moments between items: the figure only goes down. (A later
    share of 0 reads as "no estimate" for that phase: nothing is said until it measures.)"""
    later = later if m else 0.0
    tracker = RemainingTime(n * per_item + later, later_seconds=later)
    shown: list[float] = []
    phases = [
        ("classify", n, per_item, 0.0),
        ("features", m, later / m if m else 0.0, n * per_item),
    ]
    for step, total, each, start in phases:
        for k in range(total + 1):
            at = start + k * each
            for _ in range(2):  # a repeated report changes nothing
                left = tracker.update(Progress(step, k, total), at)
                assert left is not None
                shown.append(left)
            if k < total:
                for f in sorted(looks):
                    left = tracker.remaining(at + f * each)
                    assert left is not None
                    shown.append(left)
    assert all(b <= a + 1e-6 * max(1.0, a) for a, b in itertools.pairwise(shown))
    assert shown[-1] == pytest.approx(0.0, abs=1e-6)

"""Decay, countdown and the time-invariant ranking key of ``curator.core.scoring``."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from curator.core.scoring import (
    DEFAULT_RATE,
    EPOCH,
    ZERO_KEY,
    as_utc,
    clamp01,
    days_until_below,
    decay_matrix,
    decay_series,
    effective_importance,
    rank_key,
    top_k,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class P:
    id: int
    importance: float
    distilled_at: datetime | None


# --- basics -------------------------------------------------------------------------


def test_as_utc_naive_is_utc_and_aware_is_converted() -> None:
    naive = datetime(2024, 1, 1, 10, 0)
    assert as_utc(naive) == datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    plus2 = datetime(2024, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert as_utc(plus2) == datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    assert as_utc(plus2).tzinfo is UTC


def test_clamp01() -> None:
    assert clamp01(-0.5) == 0.0
    assert clamp01(1.5) == 1.0
    assert clamp01(0.25) == 0.25
    with pytest.raises(ValueError):
        clamp01(math.nan)


def test_effective_importance_decays_per_fractional_day() -> None:
    assert effective_importance(0.8, NOW, NOW) == 0.8
    assert effective_importance(0.8, NOW - timedelta(days=1), NOW) == pytest.approx(0.8 * 0.95)
    half_day = effective_importance(1.0, NOW - timedelta(hours=12), NOW)
    assert half_day == pytest.approx(0.95**0.5)
    assert effective_importance(1.0, NOW - timedelta(days=10), NOW, rate=0.5) == pytest.approx(
        0.5**10
    )


def test_effective_importance_naive_datetimes_are_utc() -> None:
    aware = effective_importance(0.9, NOW - timedelta(days=3), NOW)
    naive = effective_importance(
        0.9, (NOW - timedelta(days=3)).replace(tzinfo=None), NOW.replace(tzinfo=None)
    )
    assert aware == naive


def test_effective_importance_none_means_no_decay() -> None:
    assert effective_importance(0.7, None, NOW) == 0.7
    assert effective_importance(1.7, None, NOW) == 1.0


def test_future_distilled_at_counts_as_age_zero() -> None:
    assert effective_importance(0.6, NOW + timedelta(days=30), NOW) == 0.6


def test_effective_importance_clamps_and_underflows_to_zero() -> None:
    assert effective_importance(3.0, NOW, NOW) == 1.0
    assert effective_importance(-1.0, NOW - timedelta(days=1), NOW) == 0.0
    assert effective_importance(1e-300, NOW - timedelta(days=100_000), NOW) == 0.0


@pytest.mark.parametrize("rate", [0.0, -0.5, 1.01, math.nan])
def test_invalid_rate_is_rejected(rate: float) -> None:
    with pytest.raises(ValueError):
        effective_importance(0.5, NOW, NOW, rate=rate)
    with pytest.raises(ValueError):
        rank_key(0.5, NOW, rate=rate)


def test_rate_one_means_no_decay() -> None:
    assert effective_importance(0.5, NOW - timedelta(days=1000), NOW, rate=1.0) == 0.5
    assert days_until_below(0.5, NOW - timedelta(days=1000), 0.4, NOW, rate=1.0) is None


def test_effective_importance_uses_current_time_by_default() -> None:
    now = datetime.now(UTC)
    value = effective_importance(1.0, now - timedelta(days=2))
    assert value == pytest.approx(0.95**2, rel=1e-6)


# --- days_until_below ---------------------------------------------------------------


def test_days_until_below_solves_the_decay() -> None:
    days = days_until_below(0.8, NOW, 0.4, NOW)
    assert days == pytest.approx(math.log(0.5) / math.log(0.95))
    assert days is not None
    at = NOW + timedelta(days=days)
    assert effective_importance(0.8, NOW, at) == pytest.approx(0.4)
    assert effective_importance(0.8, NOW, at + timedelta(seconds=1)) < 0.4


def test_days_until_below_accounts_for_elapsed_time() -> None:
    fresh = days_until_below(0.8, NOW, 0.4, NOW)
    older = days_until_below(0.8, NOW - timedelta(days=3), 0.4, NOW)
    assert fresh is not None and older is not None
    assert older == pytest.approx(fresh - 3)


def test_days_until_below_edges() -> None:
    assert days_until_below(0.3, NOW, 0.4, NOW) == 0.0  # already below
    assert days_until_below(0.0, NOW, 0.1, NOW) == 0.0
    assert days_until_below(0.0, NOW, 0.0, NOW) is None  # never below zero
    assert days_until_below(0.5, None, 0.4, NOW) is None  # no decay
    assert days_until_below(0.5, None, 0.6, NOW) == 0.0
    assert days_until_below(0.5, NOW, 1.5, NOW) == 0.0
    assert days_until_below(0.4, NOW, 0.4, NOW) == 0.0  # equal is not below, reached now


def test_days_until_below_future_distilled_includes_the_wait() -> None:
    plain = days_until_below(0.8, NOW, 0.4, NOW)
    future = days_until_below(0.8, NOW + timedelta(days=5), 0.4, NOW)
    assert plain is not None and future is not None
    assert future == pytest.approx(plain + 5)


# --- series for the chart -----------------------------------------------------------


def test_decay_series_matches_effective_importance() -> None:
    distilled = NOW - timedelta(days=4)
    offsets = [-10.0, -4.0, -1.5, 0.0, 2.0, 30.0]
    series = decay_series(0.9, distilled, offsets, now=NOW)
    expected = [effective_importance(0.9, distilled, NOW + timedelta(days=d)) for d in offsets]
    assert series.dtype == np.float64
    np.testing.assert_allclose(series, expected, rtol=1e-12)
    assert series[0] == 0.9  # before it was distilled: age clamped to zero


def test_decay_series_accepts_numpy_and_none() -> None:
    offsets = np.linspace(-5, 5, 11)
    flat = decay_series(0.4, None, offsets, now=NOW)
    assert np.all(flat == 0.4)


def test_decay_matrix_shape_and_rows() -> None:
    dates = [NOW - timedelta(days=1), None, NOW - timedelta(days=100)]
    matrix = decay_matrix([0.5, 0.7, 1.0], dates, [0.0, 1.0], now=NOW)
    assert matrix.shape == (3, 2)
    for row, (imp, when) in enumerate(zip([0.5, 0.7, 1.0], dates, strict=True)):
        np.testing.assert_allclose(matrix[row], decay_series(imp, when, [0.0, 1.0], now=NOW))
    assert decay_matrix([], [], [0.0], now=NOW).shape == (0, 1)
    with pytest.raises(ValueError):
        decay_matrix([0.5], [], [0.0], now=NOW)


def test_decay_matrix_takes_a_row_of_days_per_pattern() -> None:
    """Each curve over its own span (the decay chart's grey curves, a matrix at once)."""
    dates = [NOW - timedelta(days=1), None, NOW - timedelta(days=100)]
    days = np.array([[-1.0, 0.0, 3.0], [0.0, 1.0, 2.0], [-100.0, -50.0, 7.5]])
    matrix = decay_matrix([0.5, 0.7, 1.0], dates, days, now=NOW)
    for row, (imp, when) in enumerate(zip([0.5, 0.7, 1.0], dates, strict=True)):
        np.testing.assert_array_equal(matrix[row], decay_series(imp, when, days[row], now=NOW))
    with pytest.raises(ValueError, match="a row of days per pattern"):
        decay_matrix([0.5, 0.7], dates[:2], days, now=NOW)


# --- rank_key -------------------------------------------------------------------------


def test_rank_key_formula() -> None:
    when = EPOCH + timedelta(days=10)
    assert rank_key(0.5, when) == pytest.approx(math.log(0.5) + 10 * math.log(1 / 0.95))
    assert rank_key(1.0, EPOCH) == 0.0


def test_rank_key_zero_importance_sorts_below_everything_positive() -> None:
    assert rank_key(0.0, NOW) == ZERO_KEY
    assert rank_key(-0.2, NOW) == ZERO_KEY  # clamped like the store does
    tiny = 5e-324
    assert rank_key(tiny, datetime(1, 1, 1, tzinfo=UTC), rate=1e-300) > ZERO_KEY
    assert rank_key(tiny, datetime(1, 1, 1, tzinfo=UTC)) > ZERO_KEY


def test_rank_key_requires_distilled_at() -> None:
    with pytest.raises(ValueError, match="distilled_at"):
        rank_key(0.5, None)


def test_rank_key_orders_correctly_where_effective_importance_underflows() -> None:
    # Both effective importances underflow to 0.0 at NOW, but the older, larger one is
    # still truly ahead: 1e-200 * 0.95**(d + 1) > 1e-250 * 0.95**d.
    old = P(1, 1e-200, NOW - timedelta(days=20_001))
    new = P(2, 1e-250, NOW - timedelta(days=20_000))
    assert effective_importance(old.importance, old.distilled_at, NOW) == 0.0
    assert effective_importance(new.importance, new.distilled_at, NOW) == 0.0
    assert rank_key(old.importance, old.distilled_at) > rank_key(new.importance, new.distilled_at)


def _key_order(items: list[P], rate: float) -> list[P]:
    """What the store's ``ORDER BY rank_key DESC, distilled_at DESC, id ASC`` returns."""
    return sorted(
        items,
        key=lambda p: (
            -rank_key(p.importance, p.distilled_at, rate),
            -as_utc(p.distilled_at).timestamp() if p.distilled_at else math.inf,
            p.id,
        ),
    )


def _close(x: float, y: float) -> bool:
    """Equal up to rounding: relative 1e-9, with an absolute floor at the bottom of
    the float range where products lose precision or underflow to 0 altogether."""
    return abs(x - y) <= 1e-9 * max(abs(x), abs(y)) + 1e-300


def test_zero_importance_ties_break_newer_first_then_id() -> None:
    items = [
        P(3, 0.0, NOW - timedelta(days=2)),
        P(1, 0.0, NOW - timedelta(days=1)),
        P(2, 0.0, NOW - timedelta(days=1)),
        P(4, 0.2, NOW - timedelta(days=400)),  # positive but underflow-free
    ]
    order = [p.id for p in _key_order(items, DEFAULT_RATE)]
    assert order == [4, 1, 2, 3]
    assert [p.id for p in top_k(items, 10, now=NOW)] == [4, 1, 2, 3]


def test_top_k_reference_semantics() -> None:
    items = [
        P(1, 0.9, NOW - timedelta(days=30)),
        P(2, 0.5, NOW),
        P(3, 0.5, NOW),
        P(4, 0.5, NOW - timedelta(days=1)),
        P(5, 0.4, None),
    ]
    assert [p.id for p in top_k(items, 3, now=NOW)] == [2, 3, 4]
    assert [p.id for p in top_k(items, 10, now=NOW)] == [2, 3, 4, 5, 1]
    assert top_k(items, 0, now=NOW) == []
    assert top_k(items, -1, now=NOW) == []


# --- the property the store relies on -------------------------------------------------

_importances = st.one_of(
    st.sampled_from([0.0, 1.0, 5e-324, 1e-300, 1e-12, 0.5]),
    st.floats(min_value=0.0, max_value=1.0),
)
_rates = st.sampled_from([DEFAULT_RATE, 0.5, 0.99, 0.999999, 1.0])
_seconds_in_window = st.integers(min_value=0, max_value=3 * 365 * 86_400)


@st.composite
def _patterns(draw: st.DrawFn) -> tuple[list[P], datetime, list[datetime]]:
    """Patterns distilled within ~3 years of a base date anywhere in +-10 years of 2025.

    ``distilled_at`` is never None here: ``rank_key`` rejects it by design (a pattern
    that never decays has no time-invariant rank).  Every ``now`` is at or after the
    latest ``distilled_at`` (up to +10 years): a future ``distilled_at`` counts as
    age 0 in ``effective_importance``, which is deliberately not something a stored
    key can express (see ``test_future_distilled_at_is_the_documented_exception``).
    """
    base = NOW + timedelta(days=draw(st.integers(min_value=-3650, max_value=3650)))
    count = draw(st.integers(min_value=1, max_value=25))
    items: list[P] = []
    for index in range(count):
        when = base + timedelta(
            seconds=draw(_seconds_in_window), microseconds=draw(st.integers(0, 999_999))
        )
        if items and draw(st.booleans()):
            when = draw(st.sampled_from(items)).distilled_at or when  # exact time ties
        importance = draw(_importances)
        if items and draw(st.integers(0, 4)) == 0:
            importance = draw(st.sampled_from(items)).importance  # exact value ties
        items.append(P(draw(st.integers(0, 10_000)) * 100 + index, importance, when))
    latest = max(p.distilled_at for p in items if p.distilled_at is not None)
    nows = [latest + timedelta(seconds=draw(st.integers(0, 10 * 365 * 86_400))) for _ in range(3)]
    return items, base, nows


@settings(max_examples=150, deadline=None)
@given(data=_patterns(), rate=_rates)
def test_rank_key_order_equals_effective_importance_order(
    data: tuple[list[P], datetime, list[datetime]], rate: float
) -> None:
    """Ordering by the stored key equals sorting by effective importance at any ``now``.

    Values that are equal in exact arithmetic (e.g. 0.5 a day older vs 0.5 * 0.95
    fresh) can differ in their last bits in either representation, so the reference
    order is only defined up to such ties: the check compares the two orders'
    effective-importance sequences with a tolerance, and verifies pairwise that the
    key order never puts a clearly smaller value first.
    """
    items, _base, nows = data
    by_key = _key_order(items, rate)
    for now in nows:
        effective = {
            p.id: effective_importance(p.importance, p.distilled_at, now, rate) for p in items
        }
        reference = top_k(items, len(items), now=now, rate=rate)
        key_values = [effective[p.id] for p in by_key]
        ref_values = [effective[p.id] for p in reference]
        assert all(_close(x, y) for x, y in zip(key_values, ref_values, strict=True))
        for earlier, later in itertools.pairwise(key_values):
            assert earlier >= later or _close(earlier, later)
        # Exact ties (same importance and timestamp) follow the tie-break columns.
        for p, q in itertools.pairwise(by_key):
            if (p.importance, p.distilled_at) == (q.importance, q.distilled_at):
                assert p.id < q.id


def test_future_distilled_at_is_the_documented_exception() -> None:
    """Before a pattern's timestamp its effective importance is frozen at the stored
    value, while its key already ranks it as if it had been distilled: the key order
    is exact from the moment the newest pattern was distilled onwards."""
    a = P(1, 0.5, NOW + timedelta(days=365))
    b = P(2, 0.9, NOW)
    assert [p.id for p in top_k([a, b], 2, now=NOW)] == [2, 1]
    assert [p.id for p in _key_order([a, b], DEFAULT_RATE)] == [1, 2]
    later = NOW + timedelta(days=400)
    assert [p.id for p in top_k([a, b], 2, now=later)] == [1, 2]


@settings(max_examples=200, deadline=None)
@given(
    importance=_importances,
    age=st.floats(min_value=0, max_value=5000),
    rate=_rates,
)
def test_key_difference_is_log_ratio_of_effective_importance(
    importance: float, age: float, rate: float
) -> None:
    """The key of a pattern, minus the key it would have if distilled at ``now`` with
    its current effective importance, is zero: the key is the log of the effective
    importance projected to a common reference time."""
    assume(importance > 1e-250)
    when = NOW - timedelta(days=age)
    current = effective_importance(importance, when, NOW, rate)
    assume(current > 1e-290)  # no underflow into subnormals
    assert rank_key(importance, when, rate) == pytest.approx(
        rank_key(current, NOW, rate), rel=1e-9, abs=1e-6
    )

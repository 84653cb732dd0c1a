"""The character-multiset bound: never below the LCS, exact for small counts."""

from __future__ import annotations

import difflib
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from curator.core import dedup_seed
from curator.core.charbound import BUCKETS, Levels, histograms, intersections, ratio_bounds
from curator.core.dedup import gate, reference_gate

_texts = st.one_of(
    st.text(alphabet="ab ", max_size=80),
    st.text(alphabet="aA.b, c\u00e9\u4e00\U0001f600", max_size=40),
    st.text(max_size=30),  # any code point, lone surrogates included
    st.integers(0, 120).map(lambda n: "e " * n),  # counts far above the exact range
)


def _bounds(queries: list[str], pool: list[str], fold=np.maximum) -> np.ndarray:
    counts_q, counts_p = histograms(queries), histograms(pool)
    levels = Levels(fold(counts_q.max(axis=0), counts_p.max(axis=0)))
    return intersections(levels.weighted(counts_q), levels.indicators(counts_p))


def _multiset(a: str, b: str) -> int:
    return sum((Counter(a) & Counter(b)).values())


@settings(max_examples=300, deadline=None)
@given(
    queries=st.lists(_texts, min_size=1, max_size=4), pool=st.lists(_texts, min_size=1, max_size=4)
)
def test_bound_is_at_least_the_multiset_intersection_and_the_lcs(
    queries: list[str], pool: list[str]
) -> None:
    for fold in (np.maximum, np.minimum):  # either side's largest counts will do
        bounds = _bounds(queries, pool, fold)
        for i, a in enumerate(queries):
            for j, b in enumerate(pool):
                assert bounds[i, j] >= _multiset(a, b) >= Indel.similarity(a, b) // 2


@settings(max_examples=150, deadline=None)
@given(
    queries=st.lists(_texts, min_size=1, max_size=4), pool=st.lists(_texts, min_size=1, max_size=4)
)
def test_ratio_bounds_equal_the_integer_formula_bit_for_bit(
    queries: list[str], pool: list[str]
) -> None:
    """The in-place float matrix is the doubled integer bound over the integer total."""
    counts_q, counts_p = histograms(queries), histograms(pool)
    # The smaller side's largest count per bucket is enough (what the gate uses).
    levels = Levels(np.minimum(counts_q.max(axis=0), counts_p.max(axis=0)))
    len_q = np.array([len(t) for t in queries], dtype=np.int64)
    len_p = np.array([len(t) for t in pool], dtype=np.int64)
    got = ratio_bounds(levels.weighted(counts_q), levels.indicators(counts_p), len_q, len_p)
    common = intersections(levels.weighted(counts_q), levels.indicators(counts_p))
    for i, a in enumerate(queries):
        for j, b in enumerate(pool):
            doubled = 2 * min(int(common[i, j]), len(a), len(b))
            expected = doubled / (len(a) + len(b)) if a or b else 1.0
            assert got[i, j] == expected
            assert got[i, j] >= difflib.SequenceMatcher(None, a, b).ratio()


def test_bound_is_exact_for_small_counts_of_distinct_buckets() -> None:
    a, b = "the cat sat on the mat", "a hat that the rat ate"
    assert _bounds([a], [b])[0, 0] == _multiset(a, b)


def test_large_counts_are_rounded_up_not_down() -> None:
    a, b = "x" * 37 + "y", "x" * 29 + "y" * 3
    bound = _bounds([a, b], [b, a])
    assert bound[0, 0] >= 30 and bound[1, 1] >= 30
    assert bound[0, 1] == 38 and bound[1, 0] == 32  # a text against itself: exact


def test_histograms_fold_code_points_into_buckets() -> None:
    counts = histograms(["a\u0161a", ""])  # U+0161 shares a bucket with "a" (0x61)
    assert counts.shape == (2, BUCKETS)
    assert counts[0, ord("a")] == 3 and counts[1].sum() == 0


def test_gate_equals_reference_when_few_candidates_fit_the_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The seed picks among a few candidates; a poor seed only costs time."""
    monkeypatch.setattr(dedup_seed, "SEED_CANDIDATES", 1)
    long_text = "users retry after a rate limit error and then open a ticket " * 5
    existing = [long_text, "users retry after a rate limit", "", "zz", long_text[:-3]]
    new = ["users retry after a rate-limit", long_text + "!", "", "z", "qq"]
    for skip, update in [(0.95, 0.70), (1.0, 1.0), (0.0, 0.0)]:
        expected = reference_gate(new, existing, skip=skip, update=update)
        assert gate(new, existing, skip=skip, update=update) == expected

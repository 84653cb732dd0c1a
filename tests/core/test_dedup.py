"""The dedup gate: semantics of the contract, and ``gate`` == ``reference_gate`` exactly."""

from __future__ import annotations

import difflib
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from curator.core import dedup, dedup_match, dedup_search, dedup_seed
from curator.core.dedup import Decision, gate, merge_importance, reference_gate
from curator.core.dedup_hint import WordIndex
from curator.core.dedup_match import PLAIN_MAX_LEN, longest_match
from curator.core.gramcover import GramIndex

# --- semantics (checked on both implementations) -------------------------------------

IMPLEMENTATIONS = [reference_gate, gate]


@pytest.fixture(params=IMPLEMENTATIONS, ids=["reference", "gate"])
def impl(request: pytest.FixtureRequest) -> object:
    return request.param


def test_empty_pool_adds_with_ratio_zero(impl) -> None:
    assert impl(["anything"], []) == [Decision("ADD", None, 0.0)]
    assert impl([], ["x"]) == []


def test_added_patterns_join_the_pool(impl) -> None:
    existing = ["completely unrelated words here"]
    decisions = impl(["alpha beta gamma", "alpha beta gamma", "zzz"], existing)
    assert decisions[0].action == "ADD"
    assert decisions[1] == Decision("SKIP", 1, 1.0)  # pool index len(existing) + 0
    assert decisions[2].action == "ADD"


def test_skipped_and_updated_patterns_do_not_join_the_pool(impl) -> None:
    decisions = impl(["abcdefghij", "abcdefghiX", "abcdefghiX"], ["abcdefghij"])
    assert decisions[0] == Decision("SKIP", 0, 1.0)
    assert decisions[1] == Decision("UPDATE", 0, 0.9)
    assert decisions[2] == Decision("UPDATE", 0, 0.9)  # not matched against new[1]


def test_ties_go_to_the_earliest_pool_index(impl) -> None:
    decisions = impl(["abcd"], ["abcx", "abcy", "abcd", "abcd"])
    assert decisions == [Decision("SKIP", 2, 1.0)]
    decisions = impl(["abcd"], ["abxx", "abcx", "abcy"])
    assert decisions == [Decision("UPDATE", 1, 0.75)]


def test_thresholds_are_inclusive(impl) -> None:
    # 2 * 19 / 40 == 0.95 and 2 * 7 / 20 == 0.70 exactly in floating point.
    assert impl(["a" * 19 + "b"], ["a" * 20]) == [Decision("SKIP", 0, 0.95)]
    assert impl(["a" * 7 + "bbb"], ["a" * 7 + "ccc"]) == [Decision("UPDATE", 0, 0.7)]
    below = impl(["a" * 6 + "bbbb"], ["a" * 6 + "cccc"])
    assert below == [Decision("ADD", None, 0.6)]  # ADD still reports the best ratio


def test_ratio_uses_new_text_as_first_sequence(impl) -> None:
    # difflib is not symmetric (it indexes the second sequence); this pair shows it.
    new, old = "tide", "diet"
    forward = difflib.SequenceMatcher(None, new, old).ratio()
    backward = difflib.SequenceMatcher(None, old, new).ratio()
    assert forward != backward
    assert impl([new], [old], skip=1.1, update=1.1) == [Decision("ADD", None, forward)]


def test_empty_strings(impl) -> None:
    assert impl([""], [""]) == [Decision("SKIP", 0, 1.0)]
    assert impl([""], ["x"]) == [Decision("ADD", None, 0.0)]
    assert impl(["x", ""], [])[1] == Decision("ADD", None, 0.0)


def test_custom_thresholds(impl) -> None:
    assert impl(["abcd"], ["abcx"], skip=0.75, update=0.5) == [Decision("SKIP", 0, 0.75)]
    assert impl(["abcd"], ["abcx"], skip=1.0, update=0.8) == [Decision("ADD", None, 0.75)]


def test_merge_importance_is_max_and_idempotent() -> None:
    assert merge_importance(0.3, 0.8) == 0.8
    assert merge_importance(0.8, 0.3) == 0.8
    once = merge_importance(0.4, 0.6)
    assert merge_importance(once, 0.6) == once


# --- the bounds the fast gate relies on ----------------------------------------------

_alphabets = st.sampled_from(["ab", "ab ", "abc ", "aab", "abcdefghij  ", "aA.b, c"])


@st.composite
def _text(draw: st.DrawFn, alphabet: str | None = None) -> str:
    alphabet = alphabet or draw(_alphabets)
    size = draw(st.one_of(st.integers(0, 30), st.integers(195, 400)))
    return draw(st.text(alphabet=alphabet, min_size=size, max_size=size))


@st.composite
def _variant(draw: st.DrawFn, text: str) -> str:
    """A near-duplicate: a few substitutions, insertions, deletions or a rotation."""
    chars = list(text)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["sub", "ins", "del", "rot", "append"]))
        position = draw(st.integers(0, max(0, len(chars) - 1)))
        if op == "sub" and chars:
            chars[position] = draw(st.sampled_from("abz "))
        elif op == "ins":
            chars.insert(position, draw(st.sampled_from("abz ")))
        elif op == "del" and chars:
            del chars[position]
        elif op == "rot":
            chars = chars[position:] + chars[:position]
        elif op == "append":
            chars.extend(draw(st.text(alphabet="ab .", max_size=30)))
    return "".join(chars)


def _matched(a: str, b: str) -> int:
    return sum(block.size for block in difflib.SequenceMatcher(None, a, b).get_matching_blocks())


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_bounds_are_upper_bounds(data: st.DataObject) -> None:
    b = data.draw(_text())
    a = data.draw(st.one_of(_text(), _variant(b)))
    matched = _matched(a, b)
    ratio = difflib.SequenceMatcher(None, a, b).ratio()
    assert matched <= Indel.similarity(a, b) // 2
    bound = dedup_seed.lcs_bounds([a], [b], workers=1)[0, 0]
    assert bound >= ratio
    if not a and not b:
        assert bound == 1.0 == ratio
    if len(b) >= 200:
        cover = GramIndex([b]).cover_bounds(a, np.zeros(1, dtype=np.int64))
        assert cover.tolist()[0] >= matched


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    best=st.one_of(st.just(-1.0), st.floats(0, 1)),
    best_index=st.integers(-1, 2),
    cheap_cap=st.sampled_from([0, 1, 4, 10**6]),
)
def test_exact_ratio_stops_only_when_the_pair_cannot_win(
    data: st.DataObject, best: float, best_index: int, cheap_cap: int
) -> None:
    """The early stop of ``offer_exact``: never hides a winner, never changes a ratio."""
    b = data.draw(_text())
    a = data.draw(st.one_of(_text(), _variant(b)))
    ratio = difflib.SequenceMatcher(None, a, b).ratio()
    pool = dedup_search.Pool(["unused", b, "unused"])
    query = dedup_search.Query(a)
    query.best, query.best_index = best, best_index
    wins = query.could_improve(ratio, 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_search, "CHEAP_CAP", cheap_cap)
        value = pool.offer_exact(query, 1)
    if wins:
        assert value == ratio  # bit for bit, as difflib computes it
        assert (query.best, query.best_index) == (ratio, 1)
    else:
        assert value >= ratio  # an upper bound, or the ratio itself
        assert not dedup_search.Query.could_improve(query, value, 1)
        assert (query.best, query.best_index) == (best, best_index)


def _texts(small: int, large: int, alphabet: str) -> st.SearchStrategy[str]:
    """Texts of few letters (many repeats) or of a wider alphabet, up to ``large``."""
    return st.text(alphabet=st.sampled_from("ab c"), max_size=small) | st.text(
        alphabet=st.sampled_from(alphabet), max_size=large
    )


_CUTS = st.tuples(*(st.floats(0, 1) for _ in range(4)))
"""Where a region starts and ends in each text, as fractions of its length."""


@settings(max_examples=400, deadline=None)
@given(
    a=_texts(60, 250, "abcdefghij .,A\u00e9\u4e2d"),
    b=_texts(60, 199, "abcdefghij .,A\u00e9\u4e2d"),
    cuts=_CUTS,
    piece=st.sampled_from([dedup_match.PIECE, 1, 2, 4, 7]),
)
@example(a="abab", b="baba", cuts=(0.0, 1.0, 0.0, 1.0), piece=dedup_match.PIECE)
@example(a="xabcyabcd", b="abcdabc", cuts=(0.0, 1.0, 0.0, 1.0), piece=dedup_match.PIECE)
@example(a="aaaa", b="aa", cuts=(0.25, 1.0, 0.5, 1.0), piece=dedup_match.PIECE)
@example(a="", b="abc", cuts=(0.0, 1.0, 0.0, 1.0), piece=dedup_match.PIECE)
@example(
    a="the cat sat. " * 19,
    b="the mat sat on the cat. " * 8,
    cuts=(0.1, 0.9, 0.2, 0.7),
    piece=dedup_match.PIECE,
)
@example(a="abcdxabcdefxabcdefgh", b="zabcdefgzabcdefghq", cuts=(0.0, 1.0, 0.0, 1.0), piece=3)
@example(a="xyzabcxyzabcdxy", b="abcdxyzab", cuts=(0.0, 1.0, 0.0, 1.0), piece=2)
def test_longest_match_is_difflibs_block(
    a: str, b: str, cuts: tuple[float, float, float, float], piece: int
) -> None:
    """Same block as ``find_longest_match`` on any region, ties included (short ``b``).

    Also with other piece lengths than the module's: the starts it rules out together
    must never hold a longer block, whatever the piece; and with a ``limit`` that is
    the region's LCS or more, as the search passes its caps.
    """
    assert len(b) < PLAIN_MAX_LEN
    alo, ahi = sorted(round(c * len(a)) for c in cuts[:2])
    blo, bhi = sorted(round(c * len(b)) for c in cuts[2:])
    expected = difflib.SequenceMatcher(None, a, b).find_longest_match(alo, ahi, blo, bhi)
    lcs = Indel.similarity(a[alo:ahi], b[blo:bhi]) // 2
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_match, "PIECE", piece)
        assert longest_match(a, b, alo, ahi, blo, bhi) == tuple(expected)
        for limit in (lcs, lcs + 1, expected.size):
            assert longest_match(a, b, alo, ahi, blo, bhi, limit) == tuple(expected)


@settings(max_examples=400, deadline=None)
@given(
    a=_texts(40, 250, "abcdefghij .,A\u00e9"),
    b=_texts(40, 199, "abcdefghij .,A\u00e9"),
    cuts=_CUTS,
    cheap_cap=st.sampled_from([0, 1, 4]),
)
@example(a="xa", b="ay", cuts=(0.5, 1.0, 0.0, 0.5), cheap_cap=1)
@example(a="abc", b="xbz", cuts=(0.0, 1.0, 0.0, 1.0), cheap_cap=1)
def test_region_caps_bound_difflib_and_settled_ones_are_exact(
    a: str, b: str, cuts: tuple[float, float, float, float], cheap_cap: int
) -> None:
    """A region's cap is at least what difflib matches there; a settled one equals it.

    For a short ``b`` (no popular characters) difflib's blocks in a region are those of
    the two slices on their own.
    """
    alo, ahi = sorted(round(c * len(a)) for c in cuts[:2])
    blo, bhi = sorted(round(c * len(b)) for c in cuts[2:])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_search, "CHEAP_CAP", cheap_cap)
        cap = dedup_search.region_cap(a, b, alo, ahi, blo, bhi)
    matched = _matched(a[alo:ahi], b[blo:bhi])
    assert cap >= matched
    if dedup_search.settled(cap, short=True):
        assert matched == cap


def _count_finds(matcher: difflib.SequenceMatcher[str]) -> list[tuple[int, ...]]:
    """Record the ``find_longest_match`` calls made through ``matcher``."""
    calls: list[tuple[int, ...]] = []
    original = matcher.find_longest_match

    def counting(*args: int) -> object:
        calls.append(args)
        return original(*args)

    matcher.find_longest_match = counting  # type: ignore[method-assign]
    return calls


def test_exact_ratio_of_a_losing_pair_stops_after_its_first_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Why the early stop exists: difflib needs 26 blocks searches for this pair (counted
    on the search in Python, which the compiled matcher replaces where installed)."""
    monkeypatch.setattr(dedup_search, "COMPILED_FIND", False)
    a = "Users who mention rate limits tend to retry within an hour after a failed payment."
    b = "Customers asking about refunds usually retry within a day when the docs are unclear."
    full = difflib.SequenceMatcher(None, a, b)
    full_calls = _count_finds(full)
    ratio = full.ratio()
    calls: list[tuple[int, ...]] = []

    def counting(*args: str | int) -> tuple[int, int, int]:
        calls.append(tuple(x for x in args if isinstance(x, int)))
        return longest_match(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(dedup_search, "longest_match", counting)
    pool = dedup_search.Pool([b])
    query = dedup_search.Query(a)
    query.best, query.best_index = 0.9, -1
    value = pool.offer_exact(query, 0)
    assert ratio <= value < 0.9 and query.best == 0.9
    assert len(calls) == 1 < len(full_calls)


@settings(max_examples=150, deadline=None)
@given(
    a=_text(),
    pool_texts=st.lists(_text(), min_size=1, max_size=6),
    budget=st.sampled_from([None, 0, 1, 2]),
)
def test_search_with_a_budget_pays_at_most_that_many_exact_ratios(
    a: str, pool_texts: list[str], budget: int | None
) -> None:
    """The seeding search: at most ``budget`` exact ratios, the best bounds first.

    Without a budget the search finds the exact best and its earliest index; with one
    it pays at most that many exact ratios, and the query's best is the best of those
    (a seed, not yet the answer).
    """
    pool = dedup_search.Pool(pool_texts)
    query = dedup_search.Query(a)
    row = dedup_seed.lcs_bounds([a], pool_texts, workers=1)[0]
    lengths = np.asarray([len(t) for t in pool_texts], dtype=np.int64)
    offered: list[int] = []
    original = dedup_search.Pool.offer_exact

    def counting(self: dedup_search.Pool, q: dedup_search.Query, index: int) -> float:
        offered.append(index)
        return original(self, q, index)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_search.Pool, "offer_exact", counting)
        dedup_search.search_row(query, pool, row.copy(), 0, lengths, workers=1, budget=budget)
    exact = [difflib.SequenceMatcher(None, a, t).ratio() for t in pool_texts]
    if budget is None:
        assert (query.best, query.best_index) == (max(exact), exact.index(max(exact)))
        return
    assert len(offered) <= budget
    if offered:
        best = max(exact[k] for k in offered)
        assert (query.best, query.best_index) == (best, min(k for k in offered if exact[k] == best))
    else:
        assert query.best_index == -1


# --- gate == reference_gate ----------------------------------------------------------


@st.composite
def _batch(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Existing pool and new batch: copies, near-duplicates, merges, appended clauses, fresh."""
    alphabet = draw(st.one_of(st.none(), _alphabets))
    existing = draw(st.lists(_text(alphabet), max_size=6))
    new: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        sources = existing + new
        kind = draw(
            st.sampled_from(["fresh", "copy", "variant", "variant", "empty", "merge", "append"])
        )
        if kind == "merge" and sources:
            # Two or three pool texts in one: long against every part.
            parts = draw(st.lists(st.sampled_from(sources), min_size=2, max_size=3))
            new.append(draw(st.sampled_from([" ", "", ". "])).join(parts))
        elif kind == "append" and sources:
            clause = draw(st.one_of(st.sampled_from(sources), _text(alphabet)))
            new.append(draw(st.sampled_from(sources)) + ", " + clause[:40])
        elif kind in ("copy", "variant") and sources:
            source = draw(st.sampled_from(sources))
            new.append(source if kind == "copy" else draw(_variant(source)))
        elif kind == "empty":
            new.append("")
        else:
            new.append(draw(_text(alphabet)))
    return new, existing


_thresholds = st.one_of(
    st.just((0.95, 0.70)),
    st.tuples(st.floats(0, 1), st.floats(0, 1)).map(lambda t: (max(t), min(t))),
    st.tuples(st.floats(0, 1.01), st.floats(0, 1.01)),  # even skip < update
)


@settings(max_examples=250, deadline=None)
@given(batch=_batch(), thresholds=_thresholds)
@example(  # a merge of two pool texts, and a long text against a short look-alike
    batch=(
        ["the cat sat on the mat. the dog sat on the log", "abab " * 50, "abab"],
        ["the cat sat on the mat", "the dog sat on the log", "baba " * 30, "abba"],
    ),
    thresholds=(0.95, 0.70),
)
@example(  # blocks of equal size in several places: difflib's tie-breaking decides
    batch=(["ab ba ab ba", "ba ab"], ["ba ab ba ab", "ab ab ba ba", "aabb"]),
    thresholds=(0.6, 0.3),
)
def test_gate_equals_reference(
    batch: tuple[list[str], list[str]], thresholds: tuple[float, float]
) -> None:
    """With the compiled block search where installed, and with the search in Python."""
    new, existing = batch
    skip, update = thresholds
    expected = reference_gate(new, existing, skip=skip, update=update)
    actual = gate(new, existing, skip=skip, update=update)
    assert actual == expected  # action, target and the exact float ratio
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_search, "COMPILED_FIND", not dedup_search.COMPILED_FIND)
        assert gate(new, existing, skip=skip, update=update) == expected


_SAMPLE = (
    "Users who mention rate limits tend to retry within an hour. Customers on the "
    "EU plan ask about GDPR, invoices and refunds; agents escalate after 2 replies."
)
_WORDS = _SAMPLE.split()


@st.composite
def _sentence(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=3, max_size=60))
    return " ".join(words)


@settings(max_examples=60, deadline=None)
@given(
    existing=st.lists(_sentence(), min_size=1, max_size=12),
    picks=st.lists(st.tuples(st.integers(0, 11), st.booleans()), max_size=6),
    fresh=st.lists(_sentence(), max_size=3),
)
def test_gate_equals_reference_on_sentences(
    existing: list[str], picks: list[tuple[int, bool]], fresh: list[str]
) -> None:
    new = [
        existing[index % len(existing)] + (" again" if tweak else "") for index, tweak in picks
    ] + fresh
    assert gate(new, existing) == reference_gate(new, existing)


@pytest.mark.parametrize(("seed_pairs", "added_first"), [(1, 1), (0, 0), (3, 10**6)])
def test_gate_equals_reference_across_chunks_and_cache_evictions(
    monkeypatch: pytest.MonkeyPatch, seed_pairs: int, added_first: int
) -> None:
    """Any seeding budget, and the ADDed texts searched first or with the last chunk."""
    monkeypatch.setattr(dedup_seed, "SEED_PAIRS", seed_pairs)
    monkeypatch.setattr(dedup, "ADDED_FIRST", added_first)
    monkeypatch.setattr(dedup, "_CHUNK", 3)
    monkeypatch.setattr(dedup_search, "MATCHER_CACHE_SIZE", 2)
    monkeypatch.setattr(dedup_search, "MATCHER_CACHE_CHARS", 300)  # fewer for long texts
    monkeypatch.setattr(dedup_search, "COVER_BATCH", 1)
    base = [
        "users retry after a rate limit error",
        "customers ask for refunds after an outage",
        "agents escalate tickets that wait too long",
        "admins export invoices at the end of the month",
    ]
    long_text = " ".join(base) * 3
    existing = [*base, long_text, base[0] + " quickly", "zzz", ""]
    new = [
        "users retry after a rate-limit error",
        "something entirely different happens here",
        "something entirely different happens here!",
        long_text.replace("refunds", "refunds quickly"),
        "",
        "admins export invoices at the end of each month",
        "yet another new pattern about mobile users",
        "yet another new pattern about mobile users.",
    ]
    for skip, update in [(0.95, 0.70), (0.99, 0.5), (1.0, 1.0)]:
        expected = reference_gate(new, existing, skip=skip, update=update)
        assert gate(new, existing, skip=skip, update=update) == expected
        assert gate(new, existing, skip=skip, update=update, workers=1) == expected


@settings(max_examples=80, deadline=None)
@given(
    existing=st.lists(_sentence(), min_size=1, max_size=12),
    merges=st.lists(st.lists(st.integers(0, 11), min_size=2, max_size=3), max_size=4),
    appended=st.lists(st.tuples(st.integers(0, 11), _sentence()), max_size=3),
)
def test_gate_equals_reference_on_merges_and_appended_clauses(
    existing: list[str], merges: list[list[int]], appended: list[tuple[int, str]]
) -> None:
    """The shapes whose seeding was slow: long merges of pool texts, and appended clauses."""
    new = [" ".join(existing[k % len(existing)] for k in parts) for parts in merges]
    new += [existing[k % len(existing)] + ", " + clause for k, clause in appended]
    assert gate(new, existing) == reference_gate(new, existing)


# --- what the seeding pays for long merged texts ----------------------------------


def _real_observations() -> list[str]:
    """Real knowledge texts of the repository: the demo patterns and the benign memories."""
    root = Path(__file__).resolve().parents[2]
    patterns = json.loads((root / "resources" / "demo" / "patterns.json").read_text("utf-8"))
    lines = (root / "tests" / "data" / "benign.txt").read_text("utf-8").splitlines()
    texts = [p["text"] for p in patterns] + [t for t in lines if t and not t.startswith("#")]
    return list(dict.fromkeys(texts))


def _merge(rng: random.Random, pool: list[str]) -> str:
    return " ".join(rng.sample(pool, rng.choice((2, 3))))


def _appended(rng: random.Random, pool: list[str]) -> str:
    text, other = rng.sample(pool, 2)
    return text.rstrip(".") + ", " + " ".join(other.split()[:8]).lower() + "."


@pytest.mark.parametrize("shape", [_merge, _appended], ids=["merge", "appended clause"])
def test_texts_containing_an_observation_pay_few_exact_ratios(
    monkeypatch: pytest.MonkeyPatch, shape: Callable[[random.Random, list[str]], str]
) -> None:
    """A merge of observations, or one with a clause appended, needs few exact ratios.

    Against such a text nearly every shorter pool text reaches its length bound, so the
    character bounds rank the pool by length; the seeding used to pay a long exact
    ratio for each of its picks before it met the observation inside (about 12 per
    merge and 4.6 per appended clause here).  The word-overlap guesses give the
    observations inside their exact ratio first.
    """
    existing = _real_observations()
    rng = random.Random(5)
    new = [shape(rng, existing) for _ in range(12)]
    offered: list[int] = []
    original = dedup_search.Pool.offer_exact

    def counting(self: dedup_search.Pool, query: dedup_search.Query, index: int) -> float:
        offered.append(index)
        return original(self, query, index)

    monkeypatch.setattr(dedup_search.Pool, "offer_exact", counting)
    decisions = gate(new, existing)
    assert len(offered) <= 2 * len(new), len(offered)
    monkeypatch.undo()
    assert decisions == reference_gate(new, existing)


def test_word_index_ranks_the_parts_of_a_merge_first() -> None:
    pool = ["the cat sat on the mat", "dogs bark at night", "the cat", "zebra", ""]
    index = WordIndex(pool)
    best = index.best("dogs bark at night and the cat sat on the mat", 2).tolist()
    assert sorted(best) == [0, 1]
    assert index.best("zebra", 3).tolist() == [3]  # texts sharing no word never come back
    assert index.best("unknown words only", 3).size == 0
    assert index.best("zebra", 0).size == 0
    assert WordIndex([]).best("zebra", 3).size == 0


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 400), min_size=1, max_size=12),
    visits=st.lists(st.integers(0, 11), max_size=40),
    size=st.integers(1, 4),
    chars=st.integers(0, 600),
)
def test_the_matcher_cache_keeps_within_its_count_and_its_characters(
    lengths: list[int], visits: list[int], size: int, chars: int
) -> None:
    """A compiled matcher grows with its text (243 KB at 20,000 characters): the cache is
    bounded by the characters it holds as well as by its count (one text longer than the
    whole budget is still held alone, for the pair at hand)."""
    pool = dedup_search.Pool(["ab c" * (n // 4) + "x" * (n % 4) for n in lengths])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dedup_search, "MATCHER_CACHE_SIZE", size)
        patch.setattr(dedup_search, "MATCHER_CACHE_CHARS", chars)
        for visit in visits:
            index = visit % len(lengths)
            matcher = pool._matcher(index, "abc")
            assert matcher.b == pool.texts[index]
            held = [len(pool.texts[i]) for i in pool._matchers]
            assert pool._matcher_chars == sum(held)
            assert len(held) <= size
            assert sum(held) <= chars or len(held) == 1


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_gate_that_does_not_grow_decides_each_text_as_if_it_came_alone(
    data: st.DataObject,
) -> None:
    """``grow=False`` (a re-check of texts that are not patterns): no text is compared
    with another of the batch, so each decision is the one it gets alone."""
    pool = data.draw(st.lists(_text(), min_size=0, max_size=6))
    first = data.draw(_text())
    new = [first, *data.draw(st.lists(_variant(first), min_size=1, max_size=4))]
    together = gate(new, pool, workers=1, grow=False)
    assert together == [gate([text], pool, workers=1)[0] for text in new]
    assert all(d.target is None or d.target < len(pool) for d in together)

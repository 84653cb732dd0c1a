"""The q-gram cover bound never falls below difflib's matched count (autojunk included)."""

from __future__ import annotations

import difflib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Indel

from curator.core.dedup import gate, reference_gate
from curator.core.gramcover import GramIndex

_alphabets = st.sampled_from(
    ["ab", "ab ", "abc ", "aab", "abcdefghij  ", "aA.b, c", "xyz\u00e9\u4e00"]
)


@st.composite
def _text(draw: st.DrawFn, alphabet: str | None = None) -> str:
    alphabet = alphabet or draw(_alphabets)
    size = draw(st.one_of(st.integers(0, 30), st.integers(195, 420)))
    return draw(st.text(alphabet=alphabet, min_size=size, max_size=size))


@st.composite
def _variant(draw: st.DrawFn, text: str) -> str:
    """A near-duplicate: substitutions, insertions, deletions, a rotation, a tail."""
    chars = list(text)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["sub", "ins", "del", "rot", "append"]))
        position = draw(st.integers(0, max(0, len(chars) - 1)))
        if op == "sub" and chars:
            chars[position] = draw(st.sampled_from("abz .A"))
        elif op == "ins":
            chars.insert(position, draw(st.sampled_from("abz .A")))
        elif op == "del" and chars:
            del chars[position]
        elif op == "rot":
            chars = chars[position:] + chars[:position]
        elif op == "append":
            chars.extend(draw(st.text(alphabet="ab .", max_size=30)))
    return "".join(chars)


def _matched(a: str, b: str) -> int:
    return sum(block.size for block in difflib.SequenceMatcher(None, a, b).get_matching_blocks())


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_cover_bounds_hold_for_every_text_of_an_index(data: st.DataObject) -> None:
    a = data.draw(_text())
    pool = data.draw(st.lists(st.one_of(_text(), _variant(a)), min_size=1, max_size=6))
    index = GramIndex(pool)
    which = np.asarray(data.draw(st.permutations(range(len(pool)))), dtype=np.int64)
    tight = index.cover_bounds(a, which).tolist()
    counts = index.cover_bounds(a, which, np.full(len(pool), 10**9)).tolist()
    for k, bound, count in zip(which.tolist(), tight, counts, strict=True):
        matched = _matched(a, pool[k])
        assert matched <= bound <= count  # the LCS of the covered part, then the count
        assert bound <= Indel.similarity(a, pool[k]) // 2


def test_cover_bound_is_far_below_lcs_for_unrelated_long_texts() -> None:
    """Why the bound exists: autojunk makes difflib's ratio collapse, the LCS does not."""
    a = "The quick brown fox jumps over the lazy dog near the riverbank today. " * 4
    b = "A lazy dog sleeps under the old oak tree while the fox runs far away. " * 4
    bound = int(GramIndex([b]).cover_bounds(a, np.zeros(1, dtype=np.int64))[0])
    assert _matched(a, b) <= bound < Indel.similarity(a, b) // 4


def test_common_prefix_is_covered_without_a_rare_character() -> None:
    """difflib's one block with no non-popular character: the common prefix."""
    a = "ab" * 150
    b = "ab" * 120 + "ba" * 30
    bound = int(GramIndex([b]).cover_bounds(a, np.zeros(1, dtype=np.int64))[0])
    assert bound >= _matched(a, b) >= 240


def test_surrogates_and_non_latin_text() -> None:
    a = "\ud800 lone surrogate \U0010ffff \u4e00\u4e8c " * 10
    pool = [a[5:] + "\U0010fffe", "\u4e00" * 250, ""]
    bounds = GramIndex(pool).cover_bounds(a, np.arange(3)).tolist()
    assert all(_matched(a, b) <= bound for b, bound in zip(pool, bounds, strict=True))
    assert gate([a], pool) == reference_gate([a], pool)


def test_short_blocks_around_a_rare_character_are_covered() -> None:
    """Blocks of two and three characters whose rare character is last or first."""
    b = "abc" * 90 + "ycQy" + "xRcx"  # "c" is popular in b, "Q" and "R" are not
    a = "zcQz wRcw"
    bound = int(GramIndex([b]).cover_bounds(a, np.zeros(1, dtype=np.int64))[0])
    assert _matched(a, b) == 4 <= bound


def test_gate_bounds_long_texts_added_in_the_same_batch() -> None:
    """Long texts ADDed earlier in a call get their own index (the pool grows)."""
    long_text = "Users who mention Rate Limits retry within an hour, says QA (2 teams). " * 4
    other = "Customers in the EU region ask about GDPR before renewing, quarterly. " * 4
    new = [long_text, other, long_text[:-3] + "x. ", other[::-1], other + "!"]
    existing = ["short", long_text[:150]]
    assert gate(new, existing) == reference_gate(new, existing)
    assert gate(new, existing)[2].target == len(existing)  # matched the added text

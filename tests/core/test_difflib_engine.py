"""The compiled matcher is difflib: the same blocks, ties and ratios on any text."""

from __future__ import annotations

import difflib
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core import difflib_engine
from curator.core.dedup import pair_ratio

# Few letters (long repeats, many ties), prose-like text, and any code point: astral
# characters and a lone surrogate included. Up to 450 characters, so that many second
# sequences reach difflib's autojunk length (200) and have popular characters.
_ANY = st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF)
_TEXT = (
    st.text(st.sampled_from("ab "), max_size=450)
    | st.text(st.sampled_from("the cat sat on a mat.,\n"), max_size=450)
    | st.text(st.one_of(_ANY, st.sampled_from("\ud800\U0001f600é中 ")), max_size=120)
)
_CUTS = st.tuples(*(st.floats(0, 1) for _ in range(4)))


@pytest.mark.skipif(not difflib_engine.COMPILED, reason="cydifflib has no wheel here")
@settings(max_examples=300, deadline=None)
@given(a=_TEXT, b=_TEXT, cuts=_CUTS)
@example(a="abab " * 60, b="baba " * 50, cuts=(0.1, 0.9, 0.0, 1.0))
@example(a="", b="", cuts=(0.0, 1.0, 0.0, 1.0))
@example(a="\ud800x", b="x\ud800", cuts=(0.0, 1.0, 0.0, 1.0))
def test_the_compiled_matcher_finds_difflibs_blocks_and_ratio(
    a: str, b: str, cuts: tuple[float, float, float, float]
) -> None:
    expected = difflib.SequenceMatcher(None, a, b)
    compiled = difflib_engine.SequenceMatcher(None, a, b)
    alo, ahi = sorted(round(c * len(a)) for c in cuts[:2])
    blo, bhi = sorted(round(c * len(b)) for c in cuts[2:])
    want = expected.find_longest_match(alo, ahi, blo, bhi)
    assert tuple(compiled.find_longest_match(alo, ahi, blo, bhi)) == tuple(want)
    assert [tuple(m) for m in compiled.get_matching_blocks()] == [
        tuple(m) for m in expected.get_matching_blocks()
    ]
    assert compiled.ratio() == expected.ratio()  # bit for bit
    assert pair_ratio(a, b) == expected.ratio()
    compiled.set_seq1(b)  # a matcher reused for another first sequence, as the gate does
    assert compiled.ratio() == difflib.SequenceMatcher(None, b, b).ratio()


def test_the_compiled_matcher_is_installed_where_it_has_a_wheel() -> None:
    """A dependency on CPython before 3.14: a silent fallback would only be slower."""
    if sys.version_info < (3, 14) and sys.implementation.name == "cpython":
        assert difflib_engine.COMPILED
        assert difflib_engine.SequenceMatcher is not difflib.SequenceMatcher

"""The disguises of :mod:`curator.core.flag_disguises` read as their plain definitions."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.flag_disguises import _rejoined
from curator.core.flag_normalise import Variant, fold, vocabulary
from curator.core.regex_gate import gated

_PIECE = gated(r"[a-z]+")


def rejoined_by_definition(folded: Variant) -> Variant | None:
    """Split words joined, spelled out: at each piece, the three pieces from it, else the
    two, a blank or a hyphen apart, whose join is a known word and not all known alone;
    a join drops the separators between its pieces (and their places)."""
    vocab = vocabulary()
    pieces = list(_PIECE.finditer(folded.text))
    dropped: set[int] = set()
    i = 0
    while i < len(pieces):
        best = 0
        for n in (3, 2):
            group = pieces[i : i + n]
            if len(group) < n or any(
                folded.text[a.end() : b.start()] not in (" ", "-") for a, b in pairwise(group)
            ):
                continue
            word = "".join(p.group(0) for p in group)
            if word in vocab and any(p.group(0) not in vocab for p in group):
                best = n
                break
        for a, b in pairwise(pieces[i : i + best]):
            dropped.update(range(a.end(), b.start()))
        i += best or 1
    if not dropped:  # every join drops a separator
        return None
    kept = [k for k in range(len(folded.text)) if k not in dropped]
    text = "".join(folded.text[k] for k in kept)
    return Variant(text, tuple(folded.origin[k] for k in kept), " (split words joined)")


def _split(word: str, cuts: list[int], separators: list[str]) -> str:
    """``word`` cut at ``cuts`` (positions inside it), the pieces joined by ``separators``."""
    places = sorted({c % max(1, len(word) - 1) + 1 for c in cuts})[:2]
    pieces = [word[a:b] for a, b in pairwise([0, *places, len(word)])]
    return "".join(p + s for p, s in zip(pieces, [*separators, "", ""], strict=False))


_KNOWN = sorted(vocabulary())
# Known words whose pieces are known words too ("be come", "obey in g"): a join there
# turns on whether every piece is known.
_KNOWN_PIECES = sorted(
    {
        " ".join(pieces)
        for word in _KNOWN
        for i in range(1, len(word))
        for j in range(i + 1, len(word) + 1)
        for pieces in [tuple(p for p in (word[:i], word[i:j], word[j:]) if p)]
        if word[:i] in vocabulary() and word[i:j] in vocabulary()
    }
)
_WORDS = st.one_of(
    st.sampled_from(_KNOWN),
    st.sampled_from(_KNOWN_PIECES),
    st.builds(
        _split,
        st.sampled_from(_KNOWN),
        st.lists(st.integers(0, 20), min_size=1, max_size=2),
        st.lists(st.sampled_from([" ", "-", "  ", "_", ""]), min_size=2, max_size=2),
    ),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=6),
)


@settings(deadline=None, max_examples=300)
@given(
    st.lists(_WORDS, max_size=12), st.lists(st.sampled_from([" ", "-", ". ", " - "]), max_size=12)
)
@example(["ign ore", "prev ious", "instr uctions"], [" ", " "])
@example(["in-struc-tions"], [])
@example(["a", "b"], [" "])
@example(["be come"], [])
@example(["obey in g"], [])
def test_split_words_are_joined_as_the_definition_says(
    words: list[str], separators: list[str]
) -> None:
    text = "".join(w + s for w, s in zip(words, [*separators, *[" "] * len(words)], strict=False))
    folded = fold(text)
    assert _rejoined(folded) == rejoined_by_definition(folded)

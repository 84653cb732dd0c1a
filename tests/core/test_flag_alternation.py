"""The families regrouped by first character find exactly what the listed families find.

:func:`curator.core.flag_families._family_listed` (one alternation of the entries, longest
first) is the reference: the regrouped pattern :func:`curator.core.flag_families._family`
builds must give the same spans on every text, over every window the rules search in.
"""

from __future__ import annotations

import re
from functools import cache

from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core import flag_families
from curator.core.flag_alternation import first_characters, regrouped
from curator.core.flag_lexicon import LANGUAGES
from curator.core.flag_lexicon_intents import INTENTS
from tests.core.flag_cases import FAMILY_SPECS


@cache
def _pair(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    field, options = FAMILY_SPECS[name]
    return flag_families._family(field, **options), flag_families._family_listed(field, **options)


def _plain(entry: str) -> str:
    """An entry as text it could match: blanks for ``\\s+``, the rest of the syntax dropped."""
    return re.sub(r"[\\()\[\]?*+|{}.^$:]", "", entry.replace("\\s+", " ").replace("\\w*", "x"))


PIECES = sorted(
    {
        _plain(entry)
        for table in (LANGUAGES, INTENTS)
        for lang in table
        for field, _ in FAMILY_SPECS.values()
        for entry in getattr(lang, field, ())
    }
)


def test_every_family_is_regrouped() -> None:
    """No family falls back to its listed form (the fast one is what the rules run)."""
    for name in FAMILY_SPECS:
        fast, listed = _pair(name)
        assert fast.pattern != listed.pattern, name


@settings(deadline=None, max_examples=300)
@given(
    st.sampled_from(sorted(FAMILY_SPECS)),
    st.lists(
        st.sampled_from(PIECES)
        | st.sampled_from([" ", "  ", "s", "d", "é", "я", ".", "'", "1", "ing", "-", "\n", "x"])
        | st.text(max_size=4),
        max_size=10,
    ),
    st.integers(0, 12),
    st.integers(0, 12),
)
@example("ignore", ["ignore", "d", " ", "ignore"], 0, 0)
@example("directive", ["always", "s", " always"], 0, 0)
@example("standing", ["from now on"], 0, 0)
@example("standing", ["now on"], 0, 0)
@example("object", ["xinstructions"], 1, 0)
@example("whenever", ["cada vez que alguien"], 0, 0)
def test_the_regrouped_family_finds_what_the_listed_one_finds(
    name: str, pieces: list[str], lo: int, cut: int
) -> None:
    text = "".join(pieces)
    folded = text.casefold()
    fast, listed = _pair(name)
    for subject in (text, folded):
        hi = max(lo, len(subject) - cut)
        got = [m.span() for m in fast.finditer(subject, lo, hi)]
        assert got == [m.span() for m in listed.finditer(subject, lo, hi)]
        assert [m.span() for m in fast.finditer(subject)] == [
            m.span() for m in listed.finditer(subject)
        ]


def test_first_characters_keep_the_order_of_choices() -> None:
    assert first_characters("(?:each|every)\\s+time") == [
        ("e", "ach\\s+time"),
        ("e", "very\\s+time"),
    ]
    assert first_characters("(?:from\\s+)?now") == [("f", "rom\\s+now"), ("n", "ow")]
    assert first_characters("word") == [("w", "ord")]
    assert first_characters("a|b(?:c|d)") == [("a", ""), ("b", "(?:c|d)")]


def test_first_characters_refuse_what_they_cannot_rewrite() -> None:
    for entry in ("a?b", "\\w+", "(?:a|b)*c", "[ab]c", "(?=a)a", "(?:a)??b", "", "(?:|a)", "(a)b"):
        assert first_characters(entry) is None, entry
    assert regrouped(["a?b"], [], "(?<![a-z])", "") is None

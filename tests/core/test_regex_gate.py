"""A gated expression answers every text exactly as the expression itself does.

The gate skips a text that holds none of the words every match needs, compared after a
fold of case. It is exact only if (1) every character ``re`` matches with a literal under
any flags folds as that literal does, (2) the words read from an expression really are in
each of its matches. (1) is checked for all of Unicode against ``re`` itself; (2) against
the compiled expressions on texts made of their own words, disguised in case.
"""

from __future__ import annotations

import _sre
import gc
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.core import regex_gate
from curator.core.flags import detect
from curator.core.regex_gate import GatedPattern, case_folded, gated, needed_words

ALL_CHARACTERS = "".join(map(chr, range(sys.maxunicode + 1)))


def _detector_patterns() -> list[GatedPattern]:
    detect("A first text builds the word families: ignore the rules from now on.")
    found = [obj for obj in gc.get_objects() if isinstance(obj, GatedPattern)]
    return sorted(found, key=lambda p: (p.pattern, p.flags))


PATTERNS = _detector_patterns()


def test_the_detector_is_gated() -> None:
    """Most of the detector's expressions are gated: a Python whose ``re`` moved its case
    tables would gate none, silently slower; this is where that shows."""
    gated_ones = [p for p in PATTERNS if p.words]
    assert len(PATTERNS) > 150
    assert len(gated_ones) > 60


def test_str_lower_is_the_simple_lowercase_re_uses_but_for_one_code_point() -> None:
    differ = [
        point
        for point, lower in enumerate(map(_sre.unicode_tolower, range(sys.maxunicode + 1)))
        if ALL_CHARACTERS[point].lower() != chr(lower)
    ]
    assert differ == [0x130]  # İ, which str.lower writes as i + combining dot


def test_every_character_re_matches_with_a_word_letter_folds_alike() -> None:
    """For each letter the gate's words are made of, and each character folding to it:
    every character of Unicode that ``re`` matches with that character, with and without
    IGNORECASE, folds to the same letter."""
    folded_all = case_folded(ALL_CHARACTERS)
    assert len(folded_all) == len(ALL_CHARACTERS)
    letters = {ch for p in PATTERNS for word in p.words or () for ch in word}
    letters |= set("abcdefghijklmnopqrstuvwxyz")
    preimage: dict[str, list[str]] = {}
    for point, folded in enumerate(folded_all):
        if folded in letters:
            preimage.setdefault(folded, []).append(ALL_CHARACTERS[point])
    for letter, sources in preimage.items():
        for source in sources:
            for flags in (re.IGNORECASE, 0):
                for m in re.finditer(re.escape(source), ALL_CHARACTERS, flags):
                    assert folded_all[m.start()] == letter, (source, m.group(0))


@pytest.mark.parametrize(
    ("pattern", "flags", "words"),
    [
        (r"(?:the\s+assistant|the\s+agent)\b", re.I, ("assistant", "agent")),
        (r"\w+", 0, None),
        (r"(?:abcd)?wxyz", 0, ("wxyz",)),
        (r"(?:abcd|)wxyz", 0, ("wxyz",)),
        (r"(?:abcd|)", 0, None),
        (r"(?:hello){0,3}", 0, None),
        (r"(?:hello){1,3}", 0, ("hello",)),
        (r"(?=password)\w+", 0, None),  # lookarounds are not read
        # the parser takes the common "S" out of the branches; the rest is rarer
        (r"STRASSE|Straße", re.I, ("trasse", "traße")),
        (r"(?i:ERROR)", 0, ("error",)),
        (r"(?:пароль|密码号)", 0, ("пароль", "密码号")),
        (r"(?:ab|cd)", 0, None),  # too short to be rare
    ],
)
def test_the_words_read_from_an_expression(
    pattern: str, flags: int, words: tuple[str, ...] | None
) -> None:
    assert needed_words(pattern, flags) == words


_DISGUISES = {"s": "ſ", "k": "\u212a", "i": "\u0130", "σ": "ς", "e": "E", "a": "A"}


@st.composite
def _text_for(draw: st.DrawFn, pattern: GatedPattern) -> str:
    """Words the expression needs, in random case and with look-alike case forms, among
    filler; long enough to be gated."""
    pieces: list[str] = []
    words = list(pattern.words or ()) or ["the agent"]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["word", "filler", "near", "source"]))
        if kind == "word":
            word = draw(st.sampled_from(words))
            case = draw(st.sampled_from(["lower", "upper", "title", "disguise"]))
            if case == "disguise":
                word = "".join(_DISGUISES.get(ch, ch) for ch in word)
            else:
                word = getattr(word, case)()
            pieces.append(word)
        elif kind == "near":
            word = draw(st.sampled_from(words))
            cut = draw(st.integers(0, max(0, len(word) - 1)))
            pieces.append(word[:cut] + "-" + word[cut:])
        elif kind == "source":
            start = draw(st.integers(0, max(0, len(pattern.pattern) - 40)))
            pieces.append(pattern.pattern[start : start + 40])
        else:
            pieces.append(draw(st.text(min_size=0, max_size=30)))
    text = draw(st.sampled_from([" ", ". ", "\n", ", "])).join(pieces)
    return text + " and then the rest of an ordinary note about the day." * (len(text) < 60)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
@example(None)
def test_a_gated_expression_answers_as_the_expression(data: st.DataObject | None) -> None:
    if data is None:  # the sharp s and a dotted capital I, under their case forms
        pattern = gated(r"straße|ignore", re.I)
        text = "STRASSE is not Straße: İGNORE this line, it is long enough to be gated."
        pos, endpos = 0, len(text)
    else:
        pattern = data.draw(st.sampled_from([p for p in PATTERNS if p.words]))
        text = data.draw(_text_for(pattern))
        pos = data.draw(st.integers(-60, len(text)))  # re reads a negative one as 0
        endpos = data.draw(st.integers(-5, len(text) + 2))
    plain = pattern.compiled
    spans = [m.span() for m in pattern.finditer(text)]
    assert spans == [m.span() for m in plain.finditer(text)]
    assert [m.span() for m in pattern.finditer(text, pos, endpos)] == [
        m.span() for m in plain.finditer(text, pos, endpos)
    ]
    found, expected = pattern.search(text, pos, endpos), plain.search(text, pos, endpos)
    assert (found and found.span()) == (expected and expected.span())
    assert pattern.findall(text) == plain.findall(text)
    assert pattern.sub("#", text) == plain.sub("#", text)
    assert pattern.subn("#", text) == plain.subn("#", text)
    assert pattern.split(text) == plain.split(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_texts_read_in_parts_in_turn_answer_as_the_expression(data: st.DataObject) -> None:
    """The gate decides once a text whether the whole of it lacks the needed words, and
    keeps that for the text's parts: reading two texts' parts in turn (the detector reads
    one text sentence by sentence, and another thread may read another text meanwhile)
    answers for each text as the expression does."""
    pattern = data.draw(st.sampled_from([p for p in PATTERNS if p.words]))
    texts = [
        data.draw(_text_for(pattern)),
        "An ordinary note about the day, long enough to be gated. " * data.draw(st.integers(1, 3)),
    ]
    for _ in range(6):
        text = texts[data.draw(st.integers(0, 1))]
        pos = data.draw(st.integers(1, len(text)))
        endpos = data.draw(st.integers(pos, len(text)))
        found = [m.span() for m in pattern.finditer(text, pos, endpos)]
        assert found == [m.span() for m in pattern.compiled.finditer(text, pos, endpos)]


@pytest.fixture
def kept_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder and a fresh in-process table of kept words."""
    from curator.core import derived_cache

    monkeypatch.setenv(derived_cache.CACHE_ENV, str(tmp_path))
    table = regex_gate._KEPT
    saved = dict(table.entries), table.loaded, table.dirty
    table.entries.clear()
    table.loaded = table.dirty = False
    yield tmp_path
    table.entries.clear()
    table.entries.update(saved[0])
    table.loaded, table.dirty = saved[1], saved[2]


def test_kept_words_are_the_words_read(kept_words: Path) -> None:
    sample = PATTERNS[:40]
    read = [regex_gate._read_words(p.pattern, p.flags) for p in sample]
    assert [needed_words(p.pattern, p.flags) for p in sample] == read
    regex_gate._KEPT.save()
    assert (kept_words / "gate-words.bin").is_file()
    regex_gate._KEPT.entries.clear()
    regex_gate._KEPT.loaded = False
    assert [needed_words(p.pattern, p.flags) for p in sample] == read
    assert regex_gate._KEPT.entries  # read back from the file, not read again

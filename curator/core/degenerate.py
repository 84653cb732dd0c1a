"""Degenerate text: the loops and junk a small model writes, told apart from real text.

A small model decoding greedily falls into loops ("heartbeat seq=9 heartbeat seq=9 ...")
that run until the token budget is spent: minutes of generation for nothing, and the
loop then comes back as a candidate that the length-only quality gate lets through.
One detector serves both places, so "a loop" means the same thing while generating
(:class:`LoopWatch`, which stops the call) and at the gate (:func:`degenerate_reason`,
which drops the candidate):

* **repeated phrase** - the words repeat with a fixed period: a unit of ``p`` tokens
  followed by copies of itself. Tokens are words, numbers and punctuation, lower-cased,
  with every run of digits read as one "0" (and each character of a script written
  without spaces, such as Chinese, a token of its own), so a counter that goes up
  ("seq=9, seq=10, ...") or a list of timestamps repeats too. Generation also watches
  the compression ratio of its tail: a loop that varies a little is not periodic, but it
  still compresses to almost nothing, which real prose never does; and a unit of a few
  characters ("0000...", "hahaha...") repeated over the last 64 characters is one. At
  the gate a unit of marks alone ("!", "、") counts as well; one of digits and marks
  ("2024-05-01") is left to the next rule.
* **mostly digits or symbols** - timestamps, numbers, encodings: fewer than 40% of the
  words carry letters, and fewer than half the characters are letters; or fewer than a
  tenth of the characters are letters, whatever the words (a run glued to a word makes
  it one word with letters).
* **too little distinct text** - fewer than three distinct words with letters, or a
  long text whose words are mostly the same few.

Why these thresholds are safe for real text: a list of three things ("Python, Rust
and Go"; three "- Uses X" lines) never has a unit followed by a full copy of itself,
and an ordinary sentence repeats a word at a fixed distance only by chance. The unit
tests hold real sentences that must pass and real outputs of the demo model that must
not. Every rule looks at a bounded number of tokens, so a hostile megabyte costs no
more than a page.
"""

from __future__ import annotations

import itertools
import operator
import re
import unicodedata
import zlib
from dataclasses import dataclass

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.core.textmeasure import (
    MAX_MEASURED_CHARS,
    UNSPACED,
    readable,
    without_inner_spaces,
)

__all__ = [
    "COUNT_KEYS",
    "DIGITS",
    "LOW_VARIETY",
    "REPEATED",
    "Degenerate",
    "Loop",
    "LoopWatch",
    "degenerate_reason",
    "find_loop",
    "text_tokens",
]

REPEATED = "repeated phrase"
DIGITS = "mostly digits or symbols"
LOW_VARIETY = "too little distinct text"
KINDS = (REPEATED, DIGITS, LOW_VARIETY)
"""Every kind of degenerate text, in the order reasons are reported."""
COUNT_KEYS = {
    REPEATED: "dropped_repeated",
    DIGITS: "dropped_digits",
    LOW_VARIETY: "dropped_low_variety",
}
"""The run counter of each kind (a distill run's stats)."""

_SCRIPT_CHARS = UNSPACED
"""Scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar: the quality
gate's own list), where each character is a token (otherwise a whole Japanese sentence
would be one "word", and too little distinct text)."""
_TOKEN = regex(f"[{_SCRIPT_CHARS}]|[^\\W{_SCRIPT_CHARS}]+|[^\\w\\s]", kept_in=TEXT_PATTERNS_FILE)
_DIGITS = re.compile(r"\d+")

LOOP_MIN_TOKENS = 30
"""A generation loop is called once the repeated part is this many tokens long (and at
least two more copies of the unit): a few copies of a short unit, never a single echo.
Copies equal only up to their numbers need twice as many tokens and four more copies."""
LOOP_WINDOW_CHARS = 1500
"""How much of the output's tail the loop check looks at (bounds its cost per check)."""
LOOP_MAX_PERIOD = 120
"""The longest unit, in tokens, a generation loop may have (about two long sentences)."""
CHAR_RUN = 64
"""Characters at the end repeating a unit of at most :data:`CHAR_MAX_PERIOD` characters
("0000...", "hahaha...") are a loop too: they are one long "word" to the token rule."""
CHAR_MAX_PERIOD = 8
COMPRESSION_CHARS = 600
"""The tail whose compression ratio is watched during generation."""
COMPRESSION_FLOOR = 0.12
"""zlib ratio under which that tail is a loop: English prose stays above 0.45, a loop of
any unit shorter than the tail falls under 0.1."""
GATE_MAX_TOKENS = 400
"""The gate judges a candidate on its first tokens (candidates are a sentence or two)."""
GATE_COVER = 0.6
"""A candidate is a repeated phrase when a unit and its copies cover this share of it."""
LETTERS_FLOOR = 0.1
"""Under this share of letters among the visible characters a text is mostly digits or
symbols whatever its words: a sentence followed by a glued run of thousands of digits."""


@dataclass(frozen=True, slots=True)
class Loop:
    """A loop found at the end of a text: ``unit`` (as written) repeated ``repeats`` times.

    ``start`` is the character offset where the looping part begins in the text that was
    checked, so ``text[:start] + unit`` keeps one copy (of a unit of a few characters,
    the copies before the last 64 characters stay; of a loop found by its compression,
    the 600 characters before the tail stay). ``how`` is ``"period"`` or
    ``"compression"``.
    """

    unit: str
    repeats: float
    start: int
    how: str = "period"

    def describe(self) -> str:
        """One line for a trace: what repeated and how often."""
        shown = " ".join(self.unit.split())
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        if self.how == "compression":
            return f"the output collapsed into repetition ({shown!r}...)"
        return f"the output repeated {shown!r} {self.repeats:.0f} times"


@dataclass(frozen=True, slots=True)
class Degenerate:
    """Why the gate drops a text: ``kind`` (one of :data:`KINDS`) and a readable reason."""

    kind: str
    reason: str


def text_tokens(text: str, limit: int | None = None) -> list[tuple[str, int, int]]:
    """``(normalised token, start, end)`` for every word, number and punctuation mark (the
    first ``limit`` of them)."""
    return [
        (_DIGITS.sub("0", m.group().lower()), m.start(), m.end())
        for m in itertools.islice(_TOKEN.finditer(text), limit)
    ]


def _trailing_run(words: list[str], period: int) -> int:
    """How many tokens at the end equal the token ``period`` places before them."""
    run, i = 0, len(words) - 1
    while i >= period and words[i] == words[i - period]:
        run += 1
        i -= 1
    return run


def find_loop(text: str, *, min_tokens: int = LOOP_MIN_TOKENS) -> Loop | None:
    """The loop the text ends in, or None (see the module docstring for the rule).

    Only the last :data:`LOOP_WINDOW_CHARS` characters are read, so the cost of a check
    does not grow with the output.
    """
    offset = max(0, len(text) - LOOP_WINDOW_CHARS)
    tail = text[offset:]
    found = text_tokens(tail)
    exact = [tail[start:end].lower() for _, start, end in found]
    shaped = [w for w, _, _ in found]
    # A stream is checked wherever its pieces happen to end, often inside a word: the
    # last token may be a cut copy of its own, so the copies are also looked for without it.
    for count in (len(found), len(found) - 1):
        words, shapes = exact[:count], shaped[:count]
        for period in range(1, min(LOOP_MAX_PERIOD, count // 3) + 1):
            # Exact copies loop from three on; copies that differ in their numbers only (a
            # counter, a timestamp, a table's rows) from five on.
            run = _trailing_run(words, period)
            if run < max(2 * period, min_tokens):
                run = _trailing_run(shapes, period)
                if run < max(4 * period, 2 * min_tokens):
                    continue
            first = count - run - period  # the first token of the first copy
            start = found[first][1]
            unit = tail[start : found[first + period - 1][2]]
            return Loop(unit, (run + period) / period, offset + start)
    chars = tail[-CHAR_RUN - CHAR_MAX_PERIOD :]
    for period in range(1, CHAR_MAX_PERIOD + 1):
        if len(chars) == CHAR_RUN + CHAR_MAX_PERIOD and all(
            chars[i] == chars[i - period] for i in range(len(chars) - CHAR_RUN, len(chars))
        ):
            start = len(text) - CHAR_RUN - period
            return Loop(text[start : start + period], (CHAR_RUN + period) / period, start)
    if len(tail) >= COMPRESSION_CHARS:
        window = tail[-COMPRESSION_CHARS:].encode("utf-8")
        if len(zlib.compress(window, 9)) / len(window) < COMPRESSION_FLOOR:
            start = len(text) - COMPRESSION_CHARS
            return Loop(text[start : start + 40], 0.0, start, "compression")
    return None


class LoopWatch:
    """Fed each piece of a generation; says when the output has become a loop.

    Both backends use it in their token loops. The check runs every ``every`` pieces
    (a loop is caught a few tokens later, at a fraction of the cost of checking each
    one); ``loop`` holds what was found.
    """

    def __init__(self, every: int = 8) -> None:
        self.every = max(1, every)
        self._pieces: list[str] = []
        self._chars = 0
        self._count = 0
        self.loop: Loop | None = None

    def feed(self, piece: str) -> bool:
        """Add one piece of text; True once the output ends in a loop."""
        self._pieces.append(piece)
        self._chars += len(piece)
        self._count += 1
        if self._count % self.every:
            return False
        if self._chars > 4 * LOOP_WINDOW_CHARS:  # keep only what the check reads
            self._pieces = ["".join(self._pieces)[-LOOP_WINDOW_CHARS:]]
            self._chars = len(self._pieces[0])
        self.loop = find_loop("".join(self._pieces))
        return self.loop is not None


def _is_letter(ch: str) -> bool:
    """A letter, or a vowel sign of an abugida (Devanagari's are marks, not letters)."""
    return ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc")


def _may_loop(words: list[str], first: int, period: int) -> bool:
    """A unit of digits and marks alone ("2024-05-01") is left to the digits rule; a unit
    with a letter, or of marks alone ("!", "、", "-="), is a loop however it is attached
    to the words before it (a run glued to a word is one chunk to the digits rule)."""
    unit = "".join(words[first : first + period])
    return any(ch.isalpha() for ch in unit) or not any(ch.isdigit() for ch in unit)


def _periodic_cover(words: list[str]) -> tuple[float, int, int]:
    """The best ``(share of tokens covered, period, first token)`` of a unit with a letter
    in it followed by at least one full copy of itself, anywhere in ``words``; a period
    that cannot reach :data:`GATE_COVER` is skipped (counted in one pass in C first), so
    ordinary text costs a linear scan per period and the result is exact from that share."""
    n = len(words)
    best = (0.0, 0, 0)
    for period in range(1, n // 2 + 1):
        if sum(map(operator.eq, words[period:], words)) + period < GATE_COVER * n:
            continue
        run = 0
        for i in range(period, n + 1):
            if i < n and words[i] == words[i - period]:
                run += 1
                continue
            first = i - run - period
            if run >= period and (run + period) / n > best[0] and _may_loop(words, first, period):
                best = ((run + period) / n, period, first)
            run = 0
    return best


def degenerate_reason(text: str) -> Degenerate | None:
    """Why ``text`` is not knowledge but the debris of a generation, or None.

    A zero-width space is read as the space it stands for (a segmenter's word break in
    Thai or Chinese), not as a symbol: it must not make a sentence "mostly symbols"; and a
    space inside an unspaced script (beside 、, between two ideographs) splits no chunk
    of the digits rule, as it adds no word to the quality gate's count. Invisible format
    characters (a word joiner, a byte-order mark) are not read at all, and the text is
    read composed (NFC), as it is measured: a letter and its combining accent are one
    word, not a letter and a mark that repeat."""
    composed = unicodedata.normalize("NFC", readable(text[:MAX_MEASURED_CHARS]))
    text = composed.replace("\u200b", " ")  # as measured
    found = text_tokens(text, GATE_MAX_TOKENS)
    words = [w for w, _, _ in found]
    if not words:
        return None
    cover, period, first = _periodic_cover(words)
    if cover >= GATE_COVER and cover * len(words) >= 4:
        unit = " ".join(text[found[first][1] : found[first + period - 1][2]].split())
        copies = round(cover * len(words) / period)
        shown = unit if len(unit) <= 50 else unit[:47] + "..."
        return Degenerate(REPEATED, f"{REPEATED}: {shown!r} {copies} times")
    # the digits rule reads what the tokens did (a hostile megabyte costs a page)
    window = text[: found[-1][2]] if len(found) == GATE_MAX_TOKENS else text
    chunks = without_inner_spaces(window).split()  # a space beside 、 splits nothing
    lettered = [c for c in chunks if sum(map(_is_letter, c)) >= 2]
    visible = "".join(chunks)
    letters = sum(map(_is_letter, visible))
    # Few words with letters and few letters; or so few letters that no count of words
    # matters (a run of digits glued to the last word is one "word" with letters).
    few_words = len(lettered) < 0.4 * len(chunks) and letters < 0.5 * len(visible)
    if few_words or letters < LETTERS_FLOOR * len(visible):
        share = round(100 * letters / len(visible))
        return Degenerate(DIGITS, f"{DIGITS} ({share}% letters)")
    distinct = {w for w, _, _ in found if any(ch.isalpha() for ch in w)}
    alpha = [w for w in words if any(ch.isalpha() for ch in w)]
    if len(distinct) < 3 or (len(alpha) >= 12 and len(distinct) < 0.3 * len(alpha)):
        return Degenerate(
            LOW_VARIETY, f"{LOW_VARIETY} ({len(distinct)} distinct words of {len(alpha)})"
        )
    return None

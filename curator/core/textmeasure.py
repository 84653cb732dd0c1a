"""How long a text is, in any script: the quality gate's characters and words.

The gate's limits (``min_chars`` 30, ``min_words`` 3) were set on English, where words
are separated by spaces and a letter carries little. Chinese, Japanese and Thai are
written without spaces, so a whole sentence was one "word" and every pattern in them was
dropped; and one Han character says about what three or four English letters say, so a
Chinese sentence as informative as an English one of 45 characters has 12.

So the length is measured in *English-equivalent characters*: each character weighs
what it carries compared with an English letter, about the ratio of an English sentence's
length to its translation's (measured on pattern-like sentences: Chinese 2.9–4.1, Japanese
2.0–2.6, Korean 1.9–2.3, Thai 1.7–2.4 per letter without its vowel and tone marks). Each
weight is rounded down from the smallest ratio, so a short text in those scripts is never
kept more easily than its English translation would be:

* a Han ideograph weighs 3;
* kana and a Hangul syllable weigh 2;
* a letter of Thai, Lao, Khmer or Myanmar weighs 2, and their combining marks (vowel
  signs, tone marks) nothing, as they belong to the letter before them;
* everything else, spaces included, weighs 1 (English, other alphabets, punctuation).

Words are whitespace-separated chunks, as before; a run of a script written without
spaces (Han, kana, Thai, Lao, Khmer, Myanmar) counts one word per started 6 weighed
characters, the length of an English word with its space (5.3–6.1 in the same sentences).
Whitespace or a zero-width space *between* two characters of such scripts, or beside
their punctuation (。、「」，), is not read at all (a tokenizer, a segmenter or a justified layout
may put it there; the text says the same): property tests hold that a Chinese or Japanese
text measures the same with spaces anywhere between its characters.
Punctuation of those scripts separates words and is none itself ("Alpha、Beta" is two
words, as "Alpha 、 Beta" is). Invisible format characters (a word joiner, a byte-order
mark, a zero-width joiner; Unicode's ``Cf``, except the zero-width space, which is a word
break) are not read either: they add no length and split nothing.
Korean is written with spaces, so its words are counted by them. A text is measured in
its composed form (NFC): Korean decomposed into jamo, or a letter and its combining
accent, weighs what the same text composed does. Only the first
:data:`MAX_MEASURED_CHARS` characters are measured.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex

__all__ = ["HANGUL", "UNSPACED", "TextSize", "measure", "readable", "without_inner_spaces"]

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_SOUTHEAST = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
HANGUL = "\uac00-\ud7a3"
UNSPACED = f"{_HAN}{_KANA}{_SOUTHEAST}"
"""Scripts written without spaces between words (a character class's contents)."""

_HAN_RE = regex(f"[{_HAN}]", kept_in=TEXT_PATTERNS_FILE)
_TWO_RE = regex(f"[{_KANA}{HANGUL}]", kept_in=TEXT_PATTERNS_FILE)
_SOUTHEAST_RE = regex(f"[{_SOUTHEAST}]", kept_in=TEXT_PATTERNS_FILE)
_SOUTHEAST_MARK_RE = regex(
    "["
    + "".join(
        re.escape(ch)
        for lo, hi in ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))
        for ch in map(chr, range(lo, hi + 1))
        if unicodedata.category(ch).startswith("M")
    )
    + "]",
    kept_in=TEXT_PATTERNS_FILE,
)
_CJK_PUNCTUATION = "\u30a0\u30fb\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
"""CJK punctuation (。、「」, the katakana middle dot ・) and the fullwidth signs (，！？): part
of the unspaced text."""
_INNER_SPACE = regex(
    f"(?<=[{UNSPACED}{_CJK_PUNCTUATION}])[\\s\u200b]+(?=[{UNSPACED}{_CJK_PUNCTUATION}])"
    f"|(?<=[{_CJK_PUNCTUATION}])[\\s\u200b]+|[\\s\u200b]+(?=[{_CJK_PUNCTUATION}])",
    kept_in=TEXT_PATTERNS_FILE,
)
"""Whitespace not read: between two characters of an unspaced script, and beside its
punctuation whatever is on the other side ("Alpha 、 Beta" reads as "Alpha、Beta")."""
_CJK_PUNCTUATION_RE = regex(f"[{_CJK_PUNCTUATION}]", kept_in=TEXT_PATTERNS_FILE)
#: Blocks holding Unicode's format characters (``Cf``); each character is checked
#: against this Python's Unicode tables, so a version that adds or drops one is followed.
_FORMAT_BLOCKS = (
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200C, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1345F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_INVISIBLE = regex(
    "["
    + "".join(
        re.escape(chr(code))
        for lo, hi in _FORMAT_BLOCKS
        for code in range(lo, hi + 1)
        if unicodedata.category(chr(code)) == "Cf"
    )
    + "]",
    kept_in=TEXT_PATTERNS_FILE,
)
_RUN = regex(f"[{UNSPACED}]+", kept_in=TEXT_PATTERNS_FILE)
_WORD_CHAR = regex(r"\w", kept_in=TEXT_PATTERNS_FILE)

WORD_CHARS = 6
"""Weighed characters per word in a run of an unspaced script (see the module doc)."""

MAX_MEASURED_CHARS = 50_000
"""A text is measured on its first this many characters, so a hostile megabyte costs
what a page does. The largest limits the settings allow are 10,000 characters and 1,000
words; a text this long that has fewer words in it is one enormous "word" (debris)."""


@dataclass(frozen=True, slots=True)
class TextSize:
    """``chars``: characters read (the stripped text, without the spaces inside an
    unspaced script); ``weighed``: English-equivalent characters; ``words``: words."""

    chars: int
    weighed: int
    words: int


def _count(pattern: re.Pattern[str], text: str) -> int:
    return pattern.subn("", text)[1]  # counted in C: a hostile megabyte costs milliseconds


def _weighed(text: str) -> int:
    """English-equivalent characters (see the module doc): every character 1, a Han
    ideograph 2 more, kana and Hangul 1 more, a south-east Asian letter 1 more and its
    marks 1 less."""
    southeast = _count(_SOUTHEAST_RE, text)
    marks = _count(_SOUTHEAST_MARK_RE, text) if southeast else 0
    extra = 2 * _count(_HAN_RE, text) + _count(_TWO_RE, text) + southeast - 2 * marks
    return len(text) + extra


def _chunk_words(chunk: str) -> int:
    """Words in one whitespace-separated chunk (see the module doc)."""
    runs = _RUN.findall(chunk)
    if not runs:
        return 1
    words = sum(math.ceil(_weighed(run) / WORD_CHARS) for run in runs)
    # what lies between the runs ("Python" in 用Python写) is a word when it has one
    words += sum(1 for rest in _RUN.split(chunk) if _WORD_CHAR.search(rest))
    return words


def readable(text: str) -> str:
    """``text`` without its invisible format characters (see the module doc): a word
    joiner or a zero-width joiner between two letters neither lengthens the text nor
    splits it; the zero-width space stays (a word break)."""
    return _INVISIBLE.sub("", text)


def without_inner_spaces(text: str) -> str:
    """``text`` without the spaces between two characters of an unspaced script or its
    punctuation (a zero-width space included): they mean nothing there, so no rule that
    splits a text at its spaces may count them (a space beside 、 is not a word break)."""
    return _INNER_SPACE.sub("", text)


def measure(text: str) -> TextSize:
    """The size of ``text`` as the quality gate judges it (see the module doc)."""
    # composed (NFC): Korean in jamo or an accent as a combining mark is the same text
    composed = unicodedata.normalize("NFC", readable(text.strip()[:MAX_MEASURED_CHARS]))
    read = without_inner_spaces(composed)
    chunks = _CJK_PUNCTUATION_RE.sub(" ", read).split()  # 、 separates words, is none
    if _RUN.search(read) is None:  # no unspaced script: words are the chunks
        return TextSize(len(read), _weighed(read), len(chunks))
    return TextSize(len(read), _weighed(read), sum(map(_chunk_words, chunks)))

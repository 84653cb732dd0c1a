"""Undoing the disguises of a text before the flag rules read it.

An attacker who knows a detector looks for "ignore previous instructions" writes
"1gn0r3 pr3v10u5", "i g n o r e", "Ｉｇｎｏｒｅ", "Ign\u200bore", a Cyrillic "о" in a Latin
word, ROT13 or base64. Each disguise is a class, so each gets one reversible-enough
transformation here, and the rules run on the result as well as on the text itself
(:func:`curator.core.flags.detect`). Every variant keeps a map from its characters back to
the original text, so a flag found in a variant still points at the original words.

The folding is deliberately narrow, so ordinary text stays as it is: leet digits are
folded only inside words that mix letters and digits, look-alike letters only inside
words that also have Latin letters, and spaced letters only in runs of three or more
single letters joined by one repeated separator ("i g n o r e", "F.o.r.g.e.t").
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Variant", "decoded_base64", "fold", "variants"]


@dataclass(frozen=True, slots=True)
class Variant:
    """A transformed text, where its characters came from, and what the transformation was."""

    text: str
    origin: tuple[int, ...]  # origin[i]: the index in the original text of text[i]
    note: str  # appended to a reason found in this variant ("" for the plain fold)
    blob: tuple[int, int] | None = None  # a decoded blob: every finding points at all of it

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span for ``self.text[start:end]`` (``end > start``)."""
        if self.blob is not None:
            return self.blob
        if not self.origin:
            return 0, 0
        first = self.origin[min(start, len(self.origin) - 1)]
        last = self.origin[min(max(end - 1, start), len(self.origin) - 1)]
        return first, last + 1


# Format characters (zero-width, bidi, tags, soft hyphen) change nothing a reader sees.
_INVISIBLE = frozenset("\u00ad\u034f\u061c\u180e\ufeff")
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"}
)
# Cyrillic and Greek letters drawn like Latin ones (after casefolding).
_LOOKALIKE = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d",
        "ɡ": "g", "ո": "n", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
        "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    }
)  # fmt: skip
_WORD = re.compile(r"[\w@$]+")
# "F.o.r.g.e.t", "I-G-N-O-R-E": letters joined by one repeated separator
_SEPARATED = re.compile(r"(?<!\w)\w(?P<sep>[.\-_*·])\w(?:(?P=sep)\w){1,}(?!\w)")
# "i g n o r e   a l l": single characters one blank apart, words further apart
_SPACED = re.compile(r"(?<!\S)\S(?: {1,3}\S){3,}(?!\S)")
_B64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")


def _is_invisible(ch: str) -> bool:
    return ch in _INVISIBLE or unicodedata.category(ch) == "Cf"


def _rewrite_words(
    text: str, origin: list[int], pattern: re.Pattern[str], change: object
) -> tuple[str, list[int]]:
    """Replace each match of ``pattern`` by ``change(match)``, keeping the origin map."""
    out: list[str] = []
    where: list[int] = []
    last = 0
    for m in pattern.finditer(text):
        out.append(text[last : m.start()])
        where.extend(origin[last : m.start()])
        new = change(m)  # type: ignore[operator]
        if len(new) == m.end() - m.start():
            where.extend(origin[m.start() : m.end()])
        else:  # spaced letters joined: the new characters are the match's word characters
            kept = [i for i, ch in enumerate(m.group(0)) if ch.isalnum()]
            for k in range(len(new)):
                pick = kept[k] if k < len(kept) else m.end() - m.start() - 1
                where.append(origin[m.start() + pick])
        out.append(new)
        last = m.end()
    out.append(text[last:])
    where.extend(origin[last:])
    return "".join(out), where


def _fold_word(m: re.Match[str]) -> str:
    word = m.group(0)
    has_alpha = any(ch.isalpha() for ch in word)
    if any(ch.isascii() and ch.isalpha() for ch in word) and not word.isascii():
        word = word.translate(_LOOKALIKE)
    if has_alpha and any(ch in "0134570@$" for ch in word) and word.isascii():
        word = word.translate(_LEET)
    return word


def fold(text: str) -> Variant:
    """The text as a reader sees it: NFKC, casefolded, invisible characters dropped,
    look-alike letters and leet digits folded inside Latin words, spaced letters joined."""
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if _is_invisible(ch):
            continue
        for out in unicodedata.normalize("NFKC", ch).casefold():
            chars.append(out)
            origin.append(i)
    folded, where = _rewrite_words("".join(chars), origin, _WORD, _fold_word)
    joined, where = _rewrite_words(
        folded, where, _SEPARATED, lambda m: m.group(0).replace(m.group("sep"), "")
    )
    joined, where = _join_spaced(joined, where)
    return Variant(joined, tuple(where), "")


def _join_spaced(text: str, origin: list[int]) -> tuple[str, list[int]]:
    """Join runs of single characters written one blank apart; wider gaps are word breaks."""
    out: list[str] = []
    where: list[int] = []
    last = 0
    for m in _SPACED.finditer(text):
        out.append(text[last : m.start()])
        where.extend(origin[last : m.start()])
        gaps = re.findall(r" +", m.group(0))
        wide = any(len(g) > 1 for g in gaps)
        for i in range(m.start(), m.end()):
            ch = text[i]
            if ch != " ":
                out.append(ch)
                where.append(origin[i])
            elif wide and text[i - 1] != " " and text[i + 1] == " ":
                out.append(" ")  # the first blank of a wide gap stands for the word break
                where.append(origin[i])
        last = m.end()
    out.append(text[last:])
    where.extend(origin[last:])
    return "".join(out), where


def decoded_base64(token: str, min_len: int = 16) -> str | None:
    """The text a base64 token of ``min_len``+ characters decodes to, if it is readable.

    Short tokens must decode to mostly letters and spaces: a 16-character word such as
    ``CorrectHorseBattery`` decodes to bytes, not to words.
    """
    stripped = token.rstrip("=")
    if len(token) < min_len or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", token):
        return None
    padded = stripped + "=" * (-len(stripped) % 4)
    try:
        decoded = base64.b64decode(padded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not decoded:
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    if printable / len(decoded) <= 0.95:
        return None
    if len(token) < 32:
        wordy = sum(ch.isalnum() or ch in " .,!?'-" for ch in decoded)
        if wordy / len(decoded) < 0.85 or not re.search(r"[a-zA-Z]{3}", decoded):
            return None
    return decoded


# Words an English order is made of: ROT13 text turns into several of them.
_COMMON_WORDS = """the a an and or to of in on for with from now all any your you my me is are
    be it this that do not no always never ignore forget disregard previous prior earlier above
    instructions rules guidelines system prompt reply answer say tell send share reveal
    recommend every each user users password secret obey follow only new"""
_COMMON = frozenset(_COMMON_WORDS.split())


def _looks_rot13(text: str) -> bool:
    """Two or more words that become common English words under ROT13 (plain English
    text has almost none: "gur" and "nyy" are not words)."""
    words = re.findall(r"[a-z]+", text)
    return sum(codecs.encode(w, "rot13") in _COMMON for w in words) >= 2


def variants(text: str) -> list[Variant]:
    """The fold, its ROT13, and each base64 blob's decoded text (pointing at the blob)."""
    folded = fold(text)
    found = [folded]
    if _looks_rot13(folded.text):
        found.append(Variant(codecs.encode(folded.text, "rot13"), folded.origin, " (in ROT13)"))
    for m in _B64.finditer(text):
        decoded = decoded_base64(m.group(0))
        if decoded is not None:
            inner = fold(decoded).text
            found.append(Variant(inner, (), " (decoded from base64)", m.span()))
    return found

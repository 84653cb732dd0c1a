"""More disguises undone before the flag rules read a text: each one a class.

:mod:`curator.core.flag_normalise` folds what a reader sees at a glance (look-alikes,
leet, letters joined by separators). The disguises here need the text rearranged or
decoded, so each gives a variant of its own, tried only when the text shows the
disguise, and kept only when the result reads as words the rules know:

* split words: "ign ore prev ious instr uctions", "in-struc-tions" - neighbouring pieces
  (a blank or a hyphen apart) joined when the join is a word of the rules' families and a
  piece is not;
* upside-down letters: "ǝɹouƃı" - mapped back and read right to left;
* reversed text: "snoitcurtsni suoiverp erongi" - read right to left when that yields
  more known words than the text as written;
* pig latin: "ignoreway eviouspray" - the moved consonants put back;
* percent-encoding and hex: "%69%67%6E…", "69676e6f7265…", "69 67 6e …", a word with
  UTF-8 escapes ("r%C3%A8gles") - decoded when the bytes are readable text, and the
  finding points at the whole encoded run;
* Caesar shifts: every shift of the lowercase letters is tried, and the one that makes the
  most known words (of any language of the families) is read, when it makes more than the
  text as written (ROT13 of a German order is a Caesar shift too);
* "Zalgo" text: combining marks piled on letters, stripped when there are three or more
  marks that do not compose with their letter;
* Morse code: dots and dashes, words apart by " / " or two blanks.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise
from urllib.parse import unquote

from curator.core.flag_normalise import Variant, fold, vocabulary
from curator.core.regex_gate import gated

__all__ = ["disguise_variants"]

_PIECE = gated(r"[a-z]+")


def disguise_variants(text: str, folded: Variant) -> list[Variant]:
    """The variants of the disguises found in ``text`` (``folded`` is its fold)."""
    found: list[Variant] = []
    for make in (_rejoined, _upside_down, _reversed, _pig_latin, _caesar):
        variant = make(folded)
        if variant is not None:
            found.append(variant)
    for raw in (_unmarked, _morse):
        variant = raw(text)
        if variant is not None:
            found.append(variant)
    found.extend(_decoded(text))
    return found


# three words in a row; tried only at a word's start and bounded, so a long run of letters
# is read in linear time
_LOWER_RUN = gated(r"(?<![a-z])[a-z]{2,20}\W{1,3}[a-z]{2,20}\W{1,3}[a-z]{2,20}")


def _caesar(folded: Variant) -> Variant | None:
    """The shift of the lowercase letters that reads as the most known words."""
    if not _LOWER_RUN.search(folded.text):
        return None
    words = _PIECE.findall(folded.text)
    plain = _known(words)
    if plain * 2 >= len(words):
        return None  # half the words read as they are: not a cipher (and fast)
    vocab = vocabulary()
    joined = " ".join(words)
    best, best_known = 0, plain + 1  # a shift must read better than the text
    for shift, table in enumerate(_SHIFTS, 1):
        known = sum(map(vocab.__contains__, joined.translate(table).split()))
        if known > best_known:
            best, best_known = shift, known
    if not best or best_known < 2:
        return None
    text = folded.text.translate(_SHIFTS[best - 1])
    return Variant(text, folded.origin, f" (Caesar shift {26 - best})")


_ABC = "abcdefghijklmnopqrstuvwxyz"
_SHIFTS = tuple(str.maketrans(_ABC, _ABC[n:] + _ABC[:n]) for n in range(1, 26))


def _unmarked(text: str) -> Variant | None:
    """The text without its combining marks, when marks are piled on as a disguise."""
    if sum(map("Mn".__eq__, map(unicodedata.category, text))) < 3:
        return None
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if unicodedata.category(ch) == "Mn":
            continue
        low = ch.lower()
        out.append(low if len(low) == 1 else ch)
        where.append(i)
    folded = fold("".join(out))
    origin = tuple(where[i] for i in folded.origin) if folded.origin else tuple(where)
    return Variant(folded.text, origin, " (combining marks stripped)")


_MORSE_RUN = gated(r"(?:[.\-]{1,7}(?: {1,3}| / )){4,}[.\-]{1,7}")
_MORSE = dict(
    zip(
        [
            ".-",
            "-...",
            "-.-.",
            "-..",
            ".",
            "..-.",
            "--.",
            "....",
            "..",
            ".---",
            "-.-",
            ".-..",
            "--",
            "-.",
            "---",
            ".--.",
            "--.-",
            ".-.",
            "...",
            "-",
            "..-",
            "...-",
            ".--",
            "-..-",
            "-.--",
            "--..",
            "-----",
            ".----",
            "..---",
            "...--",
            "....-",
            ".....",
            "-....",
            "--...",
            "---..",
            "----.",
        ],
        "abcdefghijklmnopqrstuvwxyz0123456789",
        strict=True,
    )
)


def _morse(text: str) -> Variant | None:
    m = _MORSE_RUN.search(text)
    if m is None:
        return None
    words = re.split(r" / | {2,}", m.group(0).strip())
    decoded = " ".join("".join(_MORSE.get(c, "") for c in w.split()) for w in words)
    if _known(_PIECE.findall(decoded)) < 1:
        return None
    return Variant(decoded, (), " (in Morse code)", m.span())


def _known(words: list[str]) -> int:
    return sum(map(vocabulary().__contains__, words))


def _rejoined(folded: Variant) -> Variant | None:
    """Neighbouring pieces joined when the join is a known word and a piece is not."""
    vocab = vocabulary()
    text = folded.text
    pieces = list(_PIECE.finditer(text))
    # each piece's word, whether it is known, and whether the next one is a blank or a
    # hyphen after it: read once per piece (the loop below tries every piece as a start)
    words = [p.group(0) for p in pieces]
    known = list(map(vocab.__contains__, words))
    joinable = [text[a.end() : b.start()] in (" ", "-") for a, b in pairwise(pieces)]
    joinable.append(False)  # the last piece has no neighbour
    out: list[str] = []
    where: list[int] = []
    last = 0
    i = 0
    joins = 0
    count = len(pieces)
    while i < count:
        best = 0
        if not joinable[i]:
            pass
        elif (
            i + 2 < count
            and joinable[i + 1]
            and not (known[i] and known[i + 1] and known[i + 2])
            and words[i] + words[i + 1] + words[i + 2] in vocab
        ):
            best = 3
        elif not (known[i] and known[i + 1]) and words[i] + words[i + 1] in vocab:
            best = 2
        if best:
            group = pieces[i : i + best]
            out.append(text[last : group[0].start()])
            where.extend(folded.origin[last : group[0].start()])
            for p in group:
                out.append(p.group(0))
                where.extend(folded.origin[p.start() : p.end()])
            last = group[-1].end()
            joins += 1
            i += best
        else:
            i += 1
    if joins < 1:
        return None
    out.append(folded.text[last:])
    where.extend(folded.origin[last:])
    return Variant("".join(out), tuple(where), " (split words joined)")


# Letters turned upside down (and read right to left): ɐ for a, ǝ for e, ɹ for r …
_UPSIDE = str.maketrans(
    {
        "ɐ": "a", "q": "b", "ɔ": "c", "p": "d", "ǝ": "e", "ɟ": "f", "ƃ": "g", "ɥ": "h",
        "ı": "i", "ɾ": "j", "ʞ": "k", "ן": "l", "ɯ": "m", "u": "n", "d": "p", "b": "q",
        "ɹ": "r", "ʇ": "t", "n": "u", "ʌ": "v", "ʍ": "w", "ʎ": "y", "ʃ": "l", "ɒ": "a",
        "˙": ".", "¿": "?", "¡": "!", "'": ",", ",": "'", "ᴉ": "i",
    }
)  # fmt: skip
_UPSIDE_ONLY = gated("[ɐɔǝɟƃɥıɾʞןɯɹʇʌʍʎᴉ]")


def _upside_down(folded: Variant) -> Variant | None:
    if len(_UPSIDE_ONLY.findall(folded.text)) < 3:
        return None
    flipped = folded.text.translate(_UPSIDE)[::-1]
    return Variant(flipped, folded.origin[::-1], " (upside down)")


def _reversed(folded: Variant) -> Variant | None:
    backwards = folded.text[::-1]
    ahead = _known(_PIECE.findall(folded.text))
    behind = _known(_PIECE.findall(backwards))
    if behind < 3 or behind <= ahead:
        return None
    return Variant(backwards, folded.origin[::-1], " (reversed)")


_PIG = gated(r"\b([a-z]+?)(w?ay)\b")
_CONSONANTS = "bcdfghjklmnpqrstvwxyz"


def _pig_latin(folded: Variant) -> Variant | None:
    words = _PIECE.findall(folded.text)
    if len(words) < 3 or sum(w.endswith("ay") for w in words) * 2 < len(words):
        return None
    vocab = vocabulary()

    def undo(m: re.Match[str]) -> str:
        stem, tail = m.group(1), m.group(2)
        if tail == "way" and (stem in vocab or stem[:1] in "aeiou"):
            return stem  # "ignoreway": a word starting with a vowel
        moved = len(stem) - len(stem.rstrip(_CONSONANTS))
        for k in range(1, moved + 1):  # the split that makes a known word, else all of them
            word = stem[-k:] + stem[:-k]
            if word in vocab:
                return word
        return stem[-moved:] + stem[:-moved] if moved else stem

    text = _PIG.sub(undo, folded.text)
    if _known(_PIECE.findall(text)) < 2:
        return None
    return Variant(text, (), " (in pig latin)", (0, len(folded.text)) if folded.origin else None)


_PERCENT = gated(r"[^\s%]{0,40}(?:%[0-9a-fA-F]{2}[^\s%]{0,40}){4,}")
_HEX = gated(
    r"(?<![0-9a-fA-F])(?:(?:[0-9a-fA-F]{2}){8,}|(?:[0-9a-fA-F]{2}[ :]){7,}[0-9a-fA-F]{2})"
    r"(?![0-9a-fA-F])"
)


def _decoded(text: str) -> list[Variant]:
    """Percent-encoded and hex runs that decode to readable words, pointing at the run."""
    found: list[Variant] = []
    for pattern, note in ((_PERCENT, " (percent-encoded)"), (_HEX, " (decoded from hex)")):
        for m in pattern.finditer(text):
            try:
                if pattern is _PERCENT:
                    decoded = unquote(m.group(0), errors="strict")
                else:
                    raw = bytes.fromhex(re.sub("[ :]", "", m.group(0)))
                    decoded = raw.decode("utf-8")
            except (UnicodeDecodeError, ValueError):
                continue
            letters = sum(ch.isalpha() or ch == " " for ch in decoded)
            if not decoded or letters / len(decoded) < 0.85:
                continue  # a hash or a key: bytes, not words
            found.append(Variant(fold(decoded).text, (), note, m.span()))
    return found

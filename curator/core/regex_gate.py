"""Regular expressions that skip a text holding none of the words every match needs.

The detector runs about two hundred expressions over each text and over its variants, most
of them alternations of phrases under ``IGNORECASE``. For those Python's engine has no
prefix scan: it tries the whole alternation at every character, which made the searches
most of the detector's time (about 5 ms of a 9 ms demo episode). Yet each such expression
needs, in any match, one word of a short list ("assistant", "agent", "axiom", ...), and
whether a text holds one is a few substring searches in C. A :class:`GatedPattern` makes
them first, and runs the expression only when one is there.

Exact by construction, never an approximation:

* :func:`needed_words` reads the parsed expression: a run of literal characters must
  appear in any match that passes through it; a group or a repeat of at least one passes
  through its body; an alternation needs one of the words its branches need (when every
  branch needs some). Of a sequence's candidates, the list whose shortest word is longest
  is kept. Anything else (classes, ``.``, assertions, back-references) needs nothing.
* The words and the text are compared after :func:`case_folded`, which maps each
  character to one representative of the characters ``re`` matches with it under
  ``IGNORECASE`` (its simple lowercase, then one of each group of ``re``'s extra case
  equivalences such as s/ſ and the two sigmas). Two characters that ``re`` matches under any flags
  fold alike, and the fold keeps the length, so a match's words are in the folded text.
  A case-sensitive expression is gated the same way: the fold only lets more texts pass.

Where this Python's ``re`` internals differ from those read here, nothing is gated (the
gate only ever skips work). A gate costs a fraction of a microsecond per word; expressions
that need no word, or too many, or only words too short to be rare, are not gated, nor
are short texts, where the expression is as quick as the gate.
"""

from __future__ import annotations

import hashlib
import marshal
import re
import sys
import threading
import unicodedata
from collections.abc import Iterator
from functools import cache
from typing import Any

from curator.core.derived_cache import KeptTable, regex

__all__ = ["GatedPattern", "case_folded", "gated", "needed_words"]

MIN_WEIGHT = 3.0
"""A word lighter than this (:func:`_weight`) is in nearly every text: a gate on it costs."""
MAX_WORDS = 64
"""A gate of more words than this costs about what the expression it would skip costs."""
MIN_TEXT = 48
"""Texts shorter than this are searched at once: the expression is about as quick."""

_FOLD_TABLE: dict[int, int] | None = None
_FOLDED: dict[str, str] = {}
_FOLDED_MAX = 16
"""Folded texts kept: the detector asks many expressions about one text in a row."""
_FOLDED_CHARS = 4_000_000
"""At most this many characters of them (a megabyte episode is still kept while read)."""
_FOLDED_LOCK = threading.Lock()
"""Taken to change :data:`_FOLDED` and its count: several threads read texts at once
(the MCP server's writer and its screening thread, the window's jobs)."""
_folded_chars = 0
"""Characters of the texts in :data:`_FOLDED`."""


def _fold_table() -> dict[int, int] | None:
    """The members of each group of ``re``'s extra case equivalences (all lowercase) ->
    the group's smallest; ``None`` where this Python keeps them elsewhere."""
    global _FOLD_TABLE
    if _FOLD_TABLE is None:
        try:
            from re import _casefix  # type: ignore[attr-defined]

            extra: dict[int, tuple[int, ...]] = _casefix._EXTRA_CASES
            _FOLD_TABLE = {lo: min((lo, *others)) for lo, others in extra.items()}
        except (ImportError, AttributeError):
            _FOLD_TABLE = {}
    return _FOLD_TABLE or None


def _fold(text: str, table: dict[int, int]) -> str:
    # ``re`` lowers one character at a time (its simple lowercase); ``str.lower`` is the
    # same for every code point but U+0130, which it lowers to two (a test holds it for
    # all of Unicode). Final sigma, which ``str.lower`` writes by context, is one group
    # of the table with the other sigma.
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    return text.lower().translate(table)


def case_folded(text: str) -> str:
    """``text`` with each character replaced by its case representative (same length)."""
    global _folded_chars
    found = _FOLDED.get(text)
    if found is not None:
        return found
    folded = _fold_word(text)
    with _FOLDED_LOCK:
        if len(_FOLDED) >= _FOLDED_MAX or _folded_chars + len(text) > _FOLDED_CHARS:
            _FOLDED.clear()
            _folded_chars = 0
        if _FOLDED.setdefault(text, folded) is folded:
            _folded_chars += len(text)
    return folded


def _fold_word(word: str) -> str:
    """:func:`case_folded`, not kept (a pattern's words, a text)."""
    table = _fold_table()
    return _fold(word, table) if table else word


def needed_words(pattern: str, flags: int = 0) -> tuple[str, ...] | None:
    """Words (case-folded) one of which every match of ``pattern`` holds; ``None`` when
    no such list is known, or it would not pay as a gate (see the module). Kept between
    runs (:data:`_KEPT`): reading an expression costs up to a few milliseconds."""
    if not _fold_table():
        return None
    key = (pattern, int(flags))
    kept = _KEPT.get(key)
    if kept is not None:
        return kept or None
    words = _read_words(pattern, flags)
    _KEPT.put(key, words or ())
    return words


def _read_words(pattern: str, flags: int) -> tuple[str, ...] | None:
    try:
        from re import _constants, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern, flags)
        words = _Needs(_constants).of(list(parsed))
    except Exception:  # internals of another Python: gate nothing
        return None
    if words is None or len(words) > MAX_WORDS or min(map(_weight, words)) < MIN_WEIGHT:
        return None
    return tuple(sorted(words, key=lambda w: (-len(w), w)))


class _Needs:
    """The analysis of :func:`needed_words` over ``re._parser``'s parsed items."""

    def __init__(self, constants: Any) -> None:
        self.c = constants

    def of(self, items: list[tuple[Any, Any]]) -> frozenset[str] | None:
        c = self.c
        best: frozenset[str] | None = None
        run: list[str] = []

        def consider(found: frozenset[str] | None) -> None:
            nonlocal best
            if found and (best is None or _rank(found) > _rank(best)):
                best = found

        for op, av in items:
            if op is c.LITERAL:
                run.append(chr(av))
                continue
            if run:
                consider(frozenset({_fold_word("".join(run))}))
                run = []
            if op is c.SUBPATTERN:
                consider(self.of(list(av[3])))
            elif op is c.ATOMIC_GROUP:
                consider(self.of(list(av)))
            elif op is c.BRANCH:
                branches = [self.of(list(branch)) for branch in av[1]]
                if all(branches):
                    consider(frozenset().union(*branches))  # type: ignore[arg-type]
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                low, _high, body = av
                if low >= 1:
                    consider(self.of(list(body)))
        if run:
            consider(frozenset({_fold_word("".join(run))}))
        return best


def _weight(word: str) -> float:
    """How rare a word is in ordinary text, roughly: a letter or digit of ASCII counts 1,
    other ASCII (punctuation) 1.5, a blank 0.5, and any other character 2 (two Cyrillic
    letters or two CJK characters are as rare in an English note as three Latin ones)."""
    return sum(
        0.5
        if ch.isspace()
        else 1.0
        if ch.isascii() and ch.isalnum()
        else 1.5
        if ch.isascii()
        else 2.0
        for ch in word
    )


def _rank(words: frozenset[str]) -> tuple[float, int]:
    """Rarer first: the heaviest lightest word, then the fewest words."""
    return min(map(_weight, words)), -len(words)


@cache
def _analysis_key() -> bytes:
    """What kept words are derived from: this module's reading and folding code, its
    limits, and the Unicode and Python versions (their case tables and parser)."""
    functions = (_read_words, _Needs.of, _weight, _rank, _fold, _fold_table)
    code = b"".join(marshal.dumps(f.__code__) for f in functions)
    limits = f"{MIN_WEIGHT}-{MAX_WORDS}-{unicodedata.unidata_version}".encode()
    digest = hashlib.sha256(code + b"\0" + limits).hexdigest()
    return f"{sys.implementation.cache_tag}-{digest}".encode()


def _is_words(key: Any, entry: Any) -> bool:
    return (
        isinstance(key, tuple)
        and isinstance(entry, tuple)
        and all(isinstance(word, str) and word for word in entry)
    )


_KEPT: KeptTable[tuple[str, int], tuple[str, ...]] = KeptTable(
    "gate-words.bin", _analysis_key, 5000, threading.Lock(), accept=_is_words
)
"""The needed words by pattern and flags (``()``: none worth a gate)."""


class GatedPattern:
    """A compiled expression that is not run on a text holding none of its needed words.

    Answers as the compiled pattern does (``search``, ``finditer``, ``findall``, ``sub``,
    ``subn``, ``split``; ``match`` and ``fullmatch`` try one place and are not gated)."""

    __slots__ = ("_compiled", "_flags", "_source", "_whole", "_words", "_words_known")

    def __init__(self, compiled: re.Pattern[str], source: str, flags: int) -> None:
        self._compiled = compiled
        self._source = source
        self._flags = flags
        self._words: tuple[str, ...] | None = None
        self._words_known = False
        # (text, whether the whole text lacks the needed words) for the last text read
        # in parts: the flag rules read a text sentence by sentence with the same text
        self._whole: tuple[str, bool] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        return self._compiled

    @property
    def pattern(self) -> str:
        return self._compiled.pattern

    @property
    def flags(self) -> int:
        return self._compiled.flags

    @property
    def words(self) -> tuple[str, ...] | None:
        """The needed words (:func:`needed_words`), read on first use."""
        if not self._words_known:
            self._words = needed_words(self._source, self._flags)
            self._words_known = True
        return self._words

    def cannot_match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> bool:
        """Whether ``text[pos:endpos]``, where a match would lie, holds none of the needed
        words: then no match is there."""
        pos = max(pos, 0)  # as re reads them: a negative position is the text's start
        end = max(min(endpos, len(text)), 0)
        if end - pos < MIN_TEXT:
            return False
        words = self._words if self._words_known else self.words
        if not words:
            return False
        folded = case_folded(text)
        if pos > 0 or end < len(folded):
            # no needed word in the whole text: none in any part of it (decided once a
            # text; one tuple written at once, so another thread reads a whole pair)
            whole = self._whole
            if whole is None or whole[0] is not text:
                whole = (text, not any(map(folded.__contains__, words)))
                self._whole = whole
            if whole[1]:
                return True
            folded = folded[pos:end]
        return not any(map(folded.__contains__, words))

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        if len(text) >= MIN_TEXT and self.cannot_match(text, pos, endpos):
            return None
        return self._compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._compiled.fullmatch(text, pos, endpos)

    def finditer(
        self, text: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        if len(text) >= MIN_TEXT and self.cannot_match(text, pos, endpos):
            return iter(())
        return self._compiled.finditer(text, pos, endpos)

    def findall(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        if len(text) >= MIN_TEXT and self.cannot_match(text, pos, endpos):
            return []
        return self._compiled.findall(text, pos, endpos)

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        if len(text) >= MIN_TEXT and self.cannot_match(text):
            return text
        return self._compiled.sub(repl, text, count)

    def subn(self, repl: Any, text: str, count: int = 0) -> tuple[str, int]:
        if len(text) >= MIN_TEXT and self.cannot_match(text):
            return text, 0
        return self._compiled.subn(repl, text, count)

    def split(self, text: str, maxsplit: int = 0) -> list[Any]:
        if len(text) >= MIN_TEXT and self.cannot_match(text):
            return [text]
        return self._compiled.split(text, maxsplit)

    def __repr__(self) -> str:
        return f"gated({self._compiled!r})"


def gated(pattern: str, flags: int = 0) -> GatedPattern:
    """:func:`curator.core.derived_cache.regex`, gated by its needed words."""
    return GatedPattern(regex(pattern, flags), pattern, int(flags))

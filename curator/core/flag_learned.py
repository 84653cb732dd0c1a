"""The learned reader: a second reader of the poisoning detector that learned from examples.

The rules of :mod:`curator.core.flags` name phrasings, and every new writer of attacks
brings phrasings they do not name: each writer's set measured 44-66% recall when it was
first run. This reader was trained instead (:mod:`curator.core.flag_learned_train`) on every
development set, to tell a text that addresses the agent (orders, relayed authority,
notes to a "future self", trigger phrases) from one that merely talks about security or
merely talks to the agent (ordinary conversation: questions, requests within the current
exchange, thanks; ``tests/data/chat_dev*``). It only adds flags where the rules found
none of its kind; it never removes one.

It reads features that survive rewording, other languages and disguises: hashed
character n-grams (1 to 5) of the text as :func:`curator.core.flag_normalise.fold` reads
it (case-folded, NFKC, leet and look-alikes undone), plus word unigrams and bigrams, each
hashed with ``zlib.crc32`` (stable across runs and platforms, unlike ``hash``) into
:data:`BUCKETS` buckets. A text's features are binary and scaled to unit length, and
each head is a linear model over them: an ``injection`` head (is this text trying to
steer the agent?) and one head per flag kind (which kind, when it is). Inference is pure
Python, so the intake paths (the command line, the MCP ``record_episode``, the window)
import no NumPy or scikit-learn; the weights (``resources/flag_reader.bin``, stored as
:mod:`curator.core.flag_reader_file` describes) are read on the first text, not on import.

Its reason names the words and n-grams that pushed the score up most, so a reviewer sees
why, e.g. ``reads like an instruction to the agent (learned reader, score 0.93): "from
now on", "every reply"``.
"""

from __future__ import annotations

import logging
import re
import struct
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise, repeat
from math import exp, sqrt
from operator import itemgetter
from pathlib import Path
from typing import Any

from curator.core.flag_normalise import fold
from curator.core.flag_reader_file import BUCKETS, HEADS, SparseTable, kept_weights, read_weights

__all__ = [
    "BUCKETS",
    "FLAGGED_KINDS",
    "HEADS",
    "LearnedScore",
    "Reader",
    "features",
    "learned_hits",
    "load_reader",
    "reader_path",
    "reader_unavailable",
]

CHAR_NGRAMS = (1, 5)
"""Character n-gram lengths, inclusive: short ones carry scripts and morphemes, long
ones carry words across inflections and other languages."""

FLAGGED_KINDS = frozenset({"instruction", "identity"})
"""The kinds the reader flags: those of meaning. Links, secrets, personal identifiers and
hidden text have a form the rules check exactly (a Luhn digit, a key prefix, a zero-width
character); read as n-grams they are mostly digits and symbols, which ordinary notes
about orders and dates share."""

log = logging.getLogger(__name__)

_WORD = re.compile(r"\w+")
_SPACES = re.compile(r"\s+")

_REASONS = {
    "instruction": "reads like an instruction to the agent",
    "link": "reads like a link or contact planted for the agent",
    "secret": "reads like a credential planted for the agent",
    "personal": "reads like a personal identifier planted for the agent",
    "hidden": "reads like text hidden from the reader",
    "identity": "reads like an attempt to amend the agent's identity or rules",
}


_DIGIT = re.compile(r"\d")


def normalised(text: str) -> str:
    """The text as the reader's features see it: the rules' fold, blanks collapsed, and
    every digit a ``0`` (an order's number or a date says nothing about whether it
    addresses the agent; its shape is kept)."""
    return _normalised_fold(fold(text).text)


def _normalised_fold(folded: str) -> str:
    """:func:`normalised` of a text whose fold is ``folded`` (the detector folds every text
    once already; folding it again was a tenth of its time on a short line)."""
    return _DIGIT.sub("0", _SPACES.sub(" ", folded).strip())


def _grams(text: str) -> list[tuple[str, str]]:
    """``(key, shown)`` per feature occurrence: the hashed key and the n-gram as written."""
    keys, shown = _grams_of(normalised(text))
    return list(zip(keys, shown, strict=True))


def _grams_of(norm: str) -> tuple[list[str], list[str]]:
    """The hashed keys of a normalised text's feature occurrences, and beside each the
    n-gram as written: character n-grams by length, then words, then word pairs."""
    padded = f" {norm} "
    low, high = CHAR_NGRAMS
    shown = [padded[i : i + n] for n in range(low, high + 1) for i in range(len(padded) - n + 1)]
    keys = ["c" + gram for gram in shown]
    words = _WORD.findall(norm)
    keys += ["w" + word for word in words]
    shown += words
    pairs = [f"{a} {b}" for a, b in pairwise(words)]
    keys += ["b" + pair for pair in pairs]
    shown += pairs
    return keys, shown


def _bucket(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) & _MASK


# A key is its kind's letter and its n-gram: the CRC of the letter, carried on into the
# n-gram's bytes, is the key's CRC without the key being built.
_CHAR_CRC, _WORD_CRC, _PAIR_CRC = (zlib.crc32(kind) for kind in (b"c", b"w", b"b"))


def _distinct_buckets(norm: str) -> list[int]:
    """``sorted(set(_buckets(_grams_of(norm)[0])))``: the distinct buckets a text is scored
    by, each distinct n-gram hashed once (a 400-character text has about 2,200 n-gram
    occurrences, of which most short ones repeat) and no key string built."""
    padded = f" {norm} "
    low, high = CHAR_NGRAMS
    chars = {padded[i : i + n] for n in range(low, high + 1) for i in range(len(padded) - n + 1)}
    words = _WORD.findall(norm)
    pairs = {f"{a} {b}" for a, b in pairwise(words)}
    found: set[int] = set()
    try:
        for grams, crc in ((chars, _CHAR_CRC), (set(words), _WORD_CRC), (pairs, _PAIR_CRC)):
            found.update(map(_MASK.__and__, map(zlib.crc32, map(str.encode, grams), repeat(crc))))
    except UnicodeEncodeError:  # a lone surrogate, which only "surrogatepass" encodes
        return sorted({_bucket(key) for key in _grams_of(norm)[0]})
    return sorted(found)


_MASK = BUCKETS - 1


def _buckets(keys: list[str]) -> list[int]:
    """Each key's bucket (:func:`_bucket`), in order: encoded, hashed and masked in C, a
    tenth of a microsecond a key (a loop in Python cost five times that). Only a flagged
    text's evidence needs them per occurrence; a score reads :func:`_distinct_buckets`."""
    try:
        return list(map(_MASK.__and__, map(zlib.crc32, map(str.encode, keys))))
    except UnicodeEncodeError:  # a lone surrogate, which only "surrogatepass" encodes
        return [_bucket(key) for key in keys]


def features(text: str) -> list[int]:
    """The sorted distinct buckets of ``text`` (each worth ``1/sqrt(len)``: unit length).

    The training module builds its matrix with this very function, so training and
    inference can never read a text differently."""
    return sorted({_bucket(key) for key, _ in _grams(text)})


@dataclass(frozen=True, slots=True)
class LearnedScore:
    """The reader's verdict on one text: the injection probability, the likeliest kind,
    and the words / n-grams that raised the score most (as they appear, folded); the
    kind is ``""`` and the evidence empty below the threshold."""

    probability: float
    kind: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Reading:
    """A text read: its probability and kind (``""`` below the threshold), and what its
    evidence is drawn from, (bucket, key, n-gram as written) per feature occurrence."""

    probability: float
    kind: str
    reader: Reader
    keyed: list[tuple[int, str, str]]

    def evidence(self) -> tuple[str, ...]:
        return self.reader._evidence(self.keyed)


def _picker(buckets: Sequence[int]) -> Callable[[Any], Any] | None:
    """A getter of the weights of ``buckets`` from a dense table, as one tuple in their
    order (``None`` for fewer than two: ``itemgetter`` of one index answers the item).

    Summing that tuple adds the very floats :meth:`Reader.margin` added one by one, in the
    same order, so every score is the same to the last bit; fetched in C, a text's seven
    heads cost half the time (a short line scores above the threshold and reads all)."""
    return itemgetter(*buckets) if len(buckets) > 1 else None


class Reader:
    """The heads' weights, each a dense table of :data:`BUCKETS` floats, and the threshold."""

    def __init__(
        self,
        weights: Mapping[str, Sequence[float]],
        bias: dict[str, float],
        threshold: float,
        c: float = 1.0,
    ) -> None:
        self.weights = weights
        self.bias = bias
        self.threshold = threshold
        self.c = c  # the regularisation it was trained with, so it can be retrained

    def margin(self, head: str, buckets: Sequence[int]) -> float:
        """The head's linear score of a text's buckets (unit-length binary features)."""
        return self._margin(head, buckets, _picker(buckets))

    def _margin(
        self, head: str, buckets: Sequence[int], pick: Callable[[Any], Any] | None
    ) -> float:
        """:meth:`margin`, the weights of a dense table fetched by ``pick`` (the text's
        :func:`_picker`, made once for all the heads a text is scored by)."""
        if not buckets:
            return self.bias[head]
        table = self.weights[head]
        if isinstance(table, SparseTable):
            total = table.total(buckets)
        elif pick is not None:  # the same additions in the same order, fetched in C
            total = sum(pick(table))
        else:  # the same additions in the same order as a generator's, without one
            total = sum(map(table.__getitem__, buckets))
        return self.bias[head] + total / sqrt(len(buckets))

    def probability(self, buckets: Sequence[int]) -> float:
        return self._probability(buckets, _picker(buckets))

    def _probability(self, buckets: Sequence[int], pick: Callable[[Any], Any] | None) -> float:
        z = self._margin("injection", buckets, pick)
        return 1.0 / (1.0 + exp(-z)) if z > -60 else 0.0

    def score(self, text: str) -> LearnedScore:
        """The verdict; the kind and the evidence only when it reaches the threshold
        (most texts do not, and they are what makes a slow reader slow)."""
        verdict = self._read(normalised(text))
        if not verdict.kind:
            return LearnedScore(verdict.probability, "", ())
        return LearnedScore(verdict.probability, verdict.kind, verdict.evidence())

    def _read(self, norm: str) -> _Reading:
        """The probability and kind of a normalised text; its evidence on request (the
        detector asks only when the kind is one it flags, and not flagged already)."""
        buckets = _distinct_buckets(norm)
        pick = _picker(buckets)
        p = self._probability(buckets, pick)
        if p < self.threshold:
            return _Reading(p, "", self, [])
        kinds = HEADS[1:]
        kind = max(kinds, key=lambda k: (self._margin(k, buckets, pick), -kinds.index(k)))
        keys, shown = _grams_of(norm)  # the evidence names n-grams as written
        return _Reading(p, kind, self, list(zip(_buckets(keys), keys, shown, strict=True)))

    def _evidence(self, keyed: list[tuple[int, str, str]], limit: int = 3) -> tuple[str, ...]:
        """The words and word pairs that pushed the injection score up most; character
        n-grams only where no word did (a script the word splitter cannot read)."""
        table = self.weights["injection"]
        words: dict[str, float] = {}
        chars: dict[str, float] = {}
        for bucket, key, shown in keyed:
            weight = table[bucket]
            if weight > 0 and (key[0] != "w" or len(shown) >= 3):  # not "my", "to"
                target = chars if key[0] == "c" else words
                target[shown.strip()] = weight
        chosen = words or {k: v for k, v in chars.items() if len(k) >= 3}
        ranked = sorted(chosen.items(), key=lambda kv: (-kv[1], kv[0]))
        picked: list[str] = []
        for shown, _ in ranked:
            if shown and not any(shown in other or other in shown for other in picked):
                picked.append(shown)
            if len(picked) == limit:
                break
        return tuple(picked)


def reader_path() -> Path:
    """The shipped weights (beside the other resources)."""
    from curator.resources_path import resource_path

    return resource_path("flag_reader.bin")


def read_reader(path: Path) -> Reader:
    """The reader of the weights written by :func:`~curator.core.flag_reader_file.dump_reader`
    (a damaged file: one-line ``ValueError``, see
    :func:`~curator.core.flag_reader_file.read_weights`)."""
    return Reader(*read_weights(path))


_LOCK = threading.Lock()
_READER: list[Reader | None] = []


def load_reader() -> Reader | None:
    """The shipped reader, read once (on the first text, never on import) and cached.

    ``None`` when the weight file is missing or damaged (a broken install): intake must
    not stop over it, so the rules read alone and one warning says why."""
    with _LOCK:
        if not _READER:
            path = reader_path()
            try:
                _READER.append(_load_shipped(path))
            except (OSError, ValueError, zlib.error, struct.error) as exc:
                log.warning(
                    "learned reader unavailable, the rules read alone: %s: %s", path.name, exc
                )
                _READER.append(None)
        return _READER[0]


def reader_unavailable() -> bool:
    """Whether this process tried to read the weights and could not (see
    :func:`load_reader`): its flags are then the rules' alone, which a later process
    reading the same, unchanged weight file would not give, so they are not kept
    (:mod:`curator.core.kept_flags`). False before any text needed the reader."""
    return bool(_READER) and _READER[0] is None


def _load_shipped(path: Path) -> Reader:
    """The shipped reader, its weights from the layout kept in the user cache
    (:func:`~curator.core.flag_reader_file.kept_weights`)."""
    return Reader(*kept_weights(path))


def _sentence(text: str, evidence: Sequence[str]) -> tuple[int, int]:
    """The span of the sentence holding the strongest evidence found in the text as
    written; the whole text when the evidence only exists folded (a disguise)."""
    lower = text.casefold()
    for shown in evidence:
        at = lower.find(shown) if len(lower) == len(text) else -1
        if at >= 0:
            start = max(text.rfind(ch, 0, at) for ch in ".!?\n") + 1
            ends = [i for i in (text.find(ch, at) for ch in ".!?\n") if i >= 0]
            end = min(ends) + 1 if ends else len(text)
            while start < end and text[start].isspace():
                start += 1
            return start, end
    return 0, len(text)


MIN_WORDS = 4
"""Texts shorter than this are not read: every training text is a sentence or more, so a
label or a fragment ("beta refinement 0") is out of what the reader has seen, and scores
at random. Short orders are the rules' ("Ignore all rules.")."""


def _words(text: str) -> int:
    """Words, counting a long unbroken run (Chinese, Japanese, Thai write without spaces)
    as one word per three characters."""
    return _word_count(normalised(text))


def _word_count(norm: str) -> int:
    """:func:`_words` of a normalised text."""
    runs = _WORD.findall(norm)
    return sum(len(run) // 3 if len(run) > 12 else 1 for run in runs)


def learned_hits(
    text: str, have: frozenset[str], folded: str | None = None
) -> list[tuple[str, int, int, str]]:
    """The learned reader's flag for ``text`` as ``(kind, start, end, reason)``, or nothing:
    nothing when it scores below its threshold or the rules already flagged that kind
    (``have``), since their reason names the exact words. ``folded`` is ``fold(text).text``
    where the caller has it already."""
    if have >= FLAGGED_KINDS:
        return []  # whichever kind the reader picks, the rules have flagged it already
    norm = _normalised_fold(fold(text).text if folded is None else folded)
    if _word_count(norm) < MIN_WORDS:
        return []
    reader = load_reader()
    if reader is None:
        return []
    verdict = reader._read(norm)
    if verdict.probability < reader.threshold or verdict.kind in have:
        return []
    if verdict.kind not in FLAGGED_KINDS:
        return []
    evidence = verdict.evidence()
    quoted = ", ".join(f"'{w}'" for w in evidence)
    reason = f"{_REASONS[verdict.kind]} (learned reader, score {verdict.probability:.2f})"
    if quoted:
        reason += f": {quoted}"
    start, end = _sentence(text, evidence)
    return [(verdict.kind, start, end, reason)]

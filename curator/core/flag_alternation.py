"""Alternations of many entries, regrouped by their first character so ``re`` skips fast.

The word families of :mod:`curator.core.flag_families` are alternations of hundreds of
entries in eighteen languages. Python's ``re`` tries every entry at every position where
the alternation may start: at each blank, digit and word start of a text, hundreds of
entries are entered and fail on their first character. That was about a quarter of the
detector's time on a short line.

Here each entry is rewritten, in order, as alternatives that each begin with one literal
character (``(?:each|every)\\s+time`` becomes ``each\\s+time`` then ``every\\s+time``;
``(?:from\\s+)?now`` becomes ``from\\s+now`` then ``now``), and the alternatives are
grouped under their first character behind a lookahead of all first characters:
``(?=[en…])(?:e(?:ach\\s+time|very\\s+time)|n(?:ow)|…)``. At a position whose character
starts no entry (a blank, a digit, most punctuation) the lookahead fails on one test; at
one that does, ``re`` rejects every other group on one comparison of its first character
(it checks a literal first character before entering an alternative) and enters one.
Measured on the families, this is three to five times faster than the listed
alternation on prose, and more on short lines of digits.

The regrouped pattern finds exactly the matches of the listed one, in the same places and
with the same ends, because at a position only the entries whose first character is the
text's character there can match, and those keep their order within their group (an
entry is a choice tried in order; ``(?:a|b)c`` tries what ``ac|bc`` tries, in the same
order; a greedy ``(?:a)?b`` what ``ab|b`` tries). An entry this module cannot rewrite
(another construct first: a class, a lookaround, a quantified first character) leaves
its family listed as written (:func:`regrouped` answers ``None``). The tests compare the
two forms on generated texts.

Rewriting the nineteen families takes about 30 ms of Python, paid by every process that
reads a text (each ``curator review``): :func:`kept_regrouped` keeps the rewritten
patterns between runs (a :class:`~curator.core.derived_cache.KeptTable` keyed by this
module's own code, so a changed rewriting is simply done again).
"""

from __future__ import annotations

import hashlib
import marshal
import re
import sys
import threading
from collections.abc import Iterator
from functools import cache
from types import CodeType, ModuleType

from curator.core.derived_cache import KeptTable

__all__ = ["first_characters", "kept_regrouped", "regrouped"]

_META = frozenset("\\[](){}.*+?^$|")
_QUANTIFIER = frozenset("*+?{")
_MAX_ALTERNATIVES = 64
"""An entry rewritten into more alternatives than this is left as written (none is)."""


def _class_end(entry: str, at: int) -> int:
    """The index of the ``]`` closing the class opened at ``at``, or -1."""
    j = at + 1
    if j < len(entry) and entry[j] == "^":
        j += 1
    if j < len(entry) and entry[j] == "]":
        j += 1
    while j < len(entry) and entry[j] != "]":
        j += 2 if entry[j] == "\\" else 1
    return j if j < len(entry) else -1


def _split(entry: str) -> tuple[list[str], int] | None:
    """The top-level alternatives of ``entry`` (split at ``|`` outside groups and classes)
    and, when ``entry`` opens with a group, the index of its closing parenthesis (else -1);
    ``None`` for an entry that does not parse."""
    parts: list[str] = []
    depth = start = 0
    first_close = -1
    j = 0
    while j < len(entry):
        ch = entry[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            j = _class_end(entry, j)
            if j < 0:
                return None
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0 and first_close < 0 and entry[0] == "(":
                first_close = j
        elif ch == "|" and depth == 0:
            parts.append(entry[start:j])
            start = j + 1
        j += 1
    if depth != 0:
        return None
    parts.append(entry[start:])
    return parts, first_close


def first_characters(entry: str) -> list[tuple[str, str]] | None:
    """``entry`` as alternatives ``(first character, rest)``, tried in this order exactly as
    ``entry``'s own choices are; ``None`` where it starts with another construct."""
    if "|" not in entry and entry and entry[0] not in _META and entry[1:2] not in _QUANTIFIER:
        # most entries: one choice, a plain first character (the scan below answers the
        # same, character by character, and the families' first use waits for it)
        return [(entry[0], entry[1:])]
    split = _split(entry)
    if split is None:
        return None
    parts, close = split
    if len(parts) > 1:
        return _all(parts)
    if not entry:
        return None  # an entry that matches the empty string has no first character
    first = entry[0]
    if first not in _META:
        if len(entry) > 1 and entry[1] in _QUANTIFIER:
            return None  # "a?b": the first character is optional
        return [(first, entry[1:])]
    if not entry.startswith("(?:") or close < 0:
        return None
    inner, after = entry[3:close], entry[close + 1 :]
    inner_split = _split(inner)
    if inner_split is None:
        return None
    choices = inner_split[0]
    if after.startswith("?") and not after.startswith("??"):
        # greedy optional group: each choice with the rest, then the rest alone
        return _all([*(choice + after[1:] for choice in choices), after[1:]])
    if after[:1] in _QUANTIFIER:
        return None
    return _all([choice + after for choice in choices])


def _all(entries: list[str]) -> list[tuple[str, str]] | None:
    found: list[tuple[str, str]] = []
    for entry in entries:
        alternatives = first_characters(entry)
        if alternatives is None:
            return None
        found += alternatives
    return found if len(found) <= _MAX_ALTERNATIVES else None


def regrouped(bounded: list[str], free: list[str], before: str, after: str) -> str | None:
    """``before(?:bounded…)after|(?:free…)`` regrouped by first character (see the module),
    or ``None`` when an entry cannot be rewritten.

    Each part becomes ``(?=[first characters])(?:c(?:rest…)|d(?:rest…)|…)``: where the
    text's character starts no entry the lookahead fails on one test, and where it does,
    only the group of that character gets past its first comparison. ``before`` (the
    word-start check) stays in front of the bounded part and ``after`` behind it, where a
    failing ``after`` backtracks into the group's next entry as it did into the next entry
    of the listed alternation; the bounded part is tried before the free one.
    """
    parts: list[str] = []
    for entries, head, end in ((bounded, before, after), (free, "", "")):
        groups: dict[str, list[str]] = {}
        for entry in entries:
            alternatives = first_characters(entry)
            if alternatives is None:
                return None
            for first, rest in alternatives:
                groups.setdefault(first, []).append(rest)
        if not groups:
            continue
        starts = "".join(re.escape(first) for first in groups)
        body = "|".join(
            re.escape(first) + "(?:" + "|".join(f"(?:{rest})" for rest in rests) + ")"
            for first, rests in groups.items()
        )
        parts.append(f"{head}(?=[{starts}])(?:{body}){end}")
    return "|".join(parts) if parts else None


_REWRITING = (_class_end, _split, first_characters, _all, regrouped)
"""The functions a rewriting is computed by."""


def _constants() -> bytes:
    """The module's constants the rewriting reads (``_META``, ``_MAX_ALTERNATIVES`` …),
    by name: the functions' code names them but does not hold their values, and a
    rewriting changed only in one must not be answered by the file of the old one. A set
    is written sorted (its order changes with the hash seed, the key must not)."""
    names = sorted({name for f in _REWRITING for name in _names(f.__code__)})
    values: list[str] = []
    for name in names:
        value = globals().get(name)
        if value is None or callable(value) or isinstance(value, ModuleType):
            continue
        if isinstance(value, frozenset | set):
            value = sorted(value)
        values.append(f"{name}={value!r}")
    return "\n".join(values).encode()


def _names(code: CodeType) -> Iterator[str]:
    """The global names ``code`` and the code nested in it (comprehensions) read."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)


@cache
def _rewriting_key() -> bytes:
    """What a kept rewriting is derived from: the code of this module's functions (and
    the bytecode version that code is for) and the constants they read."""
    code = b"".join(marshal.dumps(f.__code__) for f in _REWRITING)
    digest = hashlib.sha256(code + b"\0" + _constants()).hexdigest()
    return f"{sys.implementation.cache_tag}-{digest}".encode()


_Key = tuple[tuple[str, ...], tuple[str, ...], str, str]
_KEPT: KeptTable[_Key, str] = KeptTable("regrouped.bin", _rewriting_key, 200, threading.Lock())
"""The rewritten alternations by their entries and checks."""


def kept_regrouped(bounded: list[str], free: list[str], before: str, after: str) -> str | None:
    """:func:`regrouped`, its answer kept between runs (see the module); an alternation
    that cannot be regrouped is kept as ``""`` (no pattern is empty), so a later run
    neither tries again nor writes the table again."""
    key = (tuple(bounded), tuple(free), before, after)
    kept = _KEPT.get(key)
    if isinstance(kept, str):
        return kept or None
    source = regrouped(bounded, free, before, after)
    _KEPT.put(key, source or "")
    return source

"""Tolerant parsing of JSON arrays out of free-form LLM output.

Backends without constrained decoding (and small models in general) wrap the array
they were asked for in Markdown fences, prose ("Here are the patterns: [...] Hope
this helps!"), an object (``{"patterns": [...]}``), or write slightly invalid JSON
(trailing commas, Python-style single quotes, raw newlines inside strings).  This
module finds the intended array anyway, and when it cannot, raises a
:class:`ParseError` that says what was expected, what was found and where, so the
message is useful in a log or in the review screen.

How the array is located:

1. Candidates are the balanced ``[...]`` or ``{...}`` spans of the text, found by a
   scanner that respects JSON strings and escapes (a ``]`` inside a string does not
   close anything).  Spans inside Markdown code fences are tried before the rest of
   the text, so a bracket in the surrounding prose cannot win over the fenced
   payload.
2. A span is parsed as JSON (non-strict, so raw control characters in strings are
   accepted), then with trailing commas removed, then as a Python literal.  A span
   that does not parse is skipped and scanning continues inside it; a span that
   parses is never descended into, so brackets inside its strings are never
   mistaken for arrays.
3. An object counts when exactly one of its values is an array, or when one of its
   keys names the array (``patterns``, ``scores``, ...).  A one-element array whose
   element is itself an array is unwrapped.
4. The first non-empty candidate whose items all have the expected type wins;
   otherwise the first usable one (see each function for what "usable" means),
   then an empty array.

Decisions: a string array keeps strings exactly as written (no stripping: the
quality gate does that) and drops non-string items, reporting them in
:class:`StringArray.dropped`; it fails only if nothing usable is left.  A number
array must align with the texts it scores, so a non-numeric item is an error rather
than being dropped; numbers given as strings (``"0.8"``) are accepted, non-finite
values are errors, and values are clamped to [0, 1] because they are importances.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from curator.core.wording import plural

__all__ = [
    "DroppedItem",
    "ParseError",
    "StringArray",
    "find_json_candidates",
    "parse_number_array",
    "parse_string_array",
    "parse_string_array_detailed",
]

_SNIPPET: Final = 60
_STRING_KEYS: Final = ("patterns", "items", "results", "texts", "data", "output", "answer")
_NUMBER_KEYS: Final = ("scores", "importances", "importance", "values", "ratings", "data")
_FENCE: Final = re.compile(r"^[ \t]*```[^\n`]*$", re.MULTILINE)
_FENCE_END: Final = re.compile(r"```[ \t]*(?=\r?\n|\Z)")
_NUMBER_TEXT: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_TRAILING_COMMA: Final = re.compile(r",(\s*[\]}])")


class ParseError(ValueError):
    """The expected array could not be read from the model output.

    ``expected`` and ``found`` are short phrases, ``position`` is a character offset
    into the original text (``None`` when no location applies) and ``snippet`` the
    text around it.
    """

    def __init__(
        self, expected: str, found: str, position: int | None = None, snippet: str = ""
    ) -> None:
        self.expected = expected
        self.found = found
        self.position = position
        self.snippet = snippet
        where = "" if position is None else f" at position {position}"
        near = f": {snippet!r}" if snippet else ""
        super().__init__(f"expected {expected}, found {found}{where}{near}")


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """An item of a string array that was not a string."""

    index: int
    value: str  # repr of the JSON value, shortened
    reason: str


@dataclass(frozen=True, slots=True)
class StringArray:
    """Strings read from the output, plus the items that were dropped and why."""

    items: list[str]
    dropped: tuple[DroppedItem, ...] = ()
    position: int = 0


def _snippet(text: str, position: int) -> str:
    start = max(0, position - _SNIPPET // 3)
    return text[start : start + _SNIPPET]


def _shorten(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _kind(value: object) -> str:
    """A JSON-ish name for a Python value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _fenced_regions(text: str) -> list[tuple[int, int]]:
    """Content spans of Markdown code fences (an unclosed fence runs to the end).

    A fence opens at a line that starts with three backticks (optionally followed by
    a language tag).  It closes at the next three backticks that end a line: small
    models often close right after the payload (``["a"]```), and backticks inside a
    JSON string are followed by more of the string, not by the end of the line.
    """
    regions: list[tuple[int, int]] = []
    position = 0
    while True:
        opening = _FENCE.search(text, position)
        if opening is None:
            return regions
        start = opening.end()
        closing = _FENCE_END.search(text, start)
        if closing is None:
            regions.append((start, len(text)))
            return regions
        regions.append((start, closing.start()))
        position = closing.end()


def _balanced_end(text: str, start: int, stop: int) -> int | None:
    """Index just past the bracket closing ``text[start]``, or None if unbalanced.

    Tracks JSON strings (double quotes with backslash escapes) so that brackets
    inside strings are ignored.  Single-quoted strings are not tracked: they are only
    a fallback dialect, and a stray apostrophe in prose must not derail the scan.
    """
    closers: list[str] = []
    in_string = False
    escaped = False
    pairs = {"[": "]", "{": "}"}
    for index in range(start, stop):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in pairs:
            closers.append(pairs[char])
        elif char in "]}":
            if not closers or closers.pop() != char:
                return None
            if not closers:
                return index + 1
    return None


def _loads(span: str) -> object:
    """Parse one span: strict-ish JSON, then without trailing commas, then Python."""
    try:
        return json.loads(span, strict=False)
    except ValueError:
        pass
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", span), strict=False)
    except ValueError:
        pass
    try:
        value = ast.literal_eval(span)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError("not JSON") from None
    if isinstance(value, list | dict):
        return value
    raise ValueError("not an array or object")


def find_json_candidates(text: str) -> Iterator[tuple[int, object]]:
    """Yield ``(position, value)`` for each parseable top-level ``[...]``/``{...}`` span.

    Fenced regions come first, then the whole text; a span already yielded is not
    yielded again.  See the module docstring for the scanning rules.
    """
    seen: set[int] = set()
    regions = [*_fenced_regions(text), (0, len(text))]
    for region_start, region_stop in regions:
        position = region_start
        while position < region_stop:
            opening = _next_opening(text, position, region_stop)
            if opening < 0:
                break
            end = _balanced_end(text, opening, region_stop)
            if end is None:
                position = opening + 1
                continue
            try:
                value = _loads(text[opening:end])
            except ValueError:
                position = opening + 1
                continue
            if opening not in seen:
                seen.add(opening)
                yield opening, value
            position = end


def _next_opening(text: str, start: int, stop: int) -> int:
    square = text.find("[", start, stop)
    curly = text.find("{", start, stop)
    if square < 0:
        return curly
    if curly < 0:
        return square
    return min(square, curly)


def _as_array(value: object, keys: tuple[str, ...]) -> list[object] | None:
    """The array a candidate stands for, unwrapping objects and ``[[...]]``."""
    if isinstance(value, dict):
        arrays = {key: item for key, item in value.items() if isinstance(item, list)}
        if len(arrays) == 1:
            value = next(iter(arrays.values()))
        else:
            lowered = {str(key).lower(): item for key, item in arrays.items()}
            for key in keys:
                if key in lowered:
                    value = lowered[key]
                    break
            else:
                return None
    if not isinstance(value, list):
        return None
    if len(value) == 1 and isinstance(value[0], list):
        return value[0]
    return value


def _no_array_error(text: str, what: str) -> ParseError:
    opening = _next_opening(text, 0, len(text))
    if opening >= 0:
        return ParseError(
            what, "an unbalanced or invalid bracket", opening, _snippet(text, opening)
        )
    if not text.strip():
        return ParseError(what, "empty output")
    return ParseError(what, "no JSON array", None, text[:_SNIPPET])


def _pick(
    text: str,
    what: str,
    keys: tuple[str, ...],
    judge: Callable[[list[object]], tuple[bool, bool]],
) -> tuple[int, list[object]]:
    """The best candidate array; ``judge(array)`` says (fully valid, usable).

    Preference: the first fully valid non-empty array, then the first usable one,
    then the first fully valid empty one (an empty array is weak evidence: it may
    come from brackets inside a string of a truncated or mis-fenced payload), then
    the first array of any kind, so that the caller can explain what is wrong.
    """
    usable: tuple[int, list[object]] | None = None
    empty: tuple[int, list[object]] | None = None
    first_array: tuple[int, list[object]] | None = None
    first: tuple[int, object] | None = None
    for position, value in find_json_candidates(text):
        if first is None:
            first = (position, value)
        array = _as_array(value, keys)
        if array is None:
            continue
        valid, ok = judge(array)
        if valid and array:
            return position, array
        if valid and empty is None:
            empty = (position, array)
        if ok and usable is None:
            usable = (position, array)
        if first_array is None:
            first_array = (position, array)
    for choice in (usable, empty, first_array):
        if choice is not None:
            return choice
    if first is None:
        raise _no_array_error(text, what)
    position, value = first
    found = _kind(value)
    if isinstance(value, dict):
        found = f"an object without a single array value (keys: {list(value)[:5]})"
    raise ParseError(what, found, position, _snippet(text, position))


def parse_string_array_detailed(text: str) -> StringArray:
    """Like :func:`parse_string_array` but also reports dropped items."""
    what = "a JSON array of strings"

    def judge(array: list[object]) -> tuple[bool, bool]:
        strings = sum(isinstance(item, str) for item in array)
        return strings == len(array), strings > 0

    position, array = _pick(text, what, _STRING_KEYS, judge)
    items: list[str] = []
    dropped: list[DroppedItem] = []
    for index, item in enumerate(array):
        if isinstance(item, str):
            items.append(item)
        else:
            dropped.append(DroppedItem(index, _shorten(item), f"{_kind(item)}, not a string"))
    if array and not items:
        kinds = sorted({_kind(item) for item in array})
        raise ParseError(
            what,
            f"an array of {plural(len(array), 'item')} with no string ({', '.join(kinds)})",
            position,
            _snippet(text, position),
        )
    return StringArray(items, tuple(dropped), position)


def parse_string_array(text: str) -> list[str]:
    """The strings of the first JSON array in ``text`` (non-strings dropped).

    Raises :class:`ParseError` if there is no array, or if a non-empty array holds
    no string at all.
    """
    return parse_string_array_detailed(text).items


def _to_number(item: object) -> float | None:
    """A finite float from a JSON number or a numeric string, else None."""
    if isinstance(item, bool):
        return None
    try:
        if isinstance(item, int | float):
            number = float(item)
        elif isinstance(item, str) and _NUMBER_TEXT.fullmatch(item.strip()):
            number = float(item.strip())
        else:
            return None
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def parse_number_array(text: str, expected_len: int | None = None) -> list[float]:
    """The numbers of the first JSON array in ``text``, clamped to [0, 1].

    Numeric strings (``"0.8"``) are accepted.  Raises :class:`ParseError` when there
    is no array, when an item is not a finite number (items are positional, so none
    may be skipped), or when ``expected_len`` is given and the length differs.
    """
    what = (
        "a JSON array of numbers"
        if expected_len is None
        else f"a JSON array of {expected_len} numbers"
    )

    def judge(array: list[object]) -> tuple[bool, bool]:
        numeric = all(_to_number(item) is not None for item in array)
        fits = expected_len is None or len(array) == expected_len
        return numeric and fits, False

    position, array = _pick(text, what, _NUMBER_KEYS, judge)
    values: list[float] = []
    for index, item in enumerate(array):
        number = _to_number(item)
        if number is None:
            found = f"{_kind(item)} {_shorten(item)} as item {index}"
            if isinstance(item, int | float) and not isinstance(item, bool):
                found = f"a non-finite number {_shorten(item)} as item {index}"
            raise ParseError("a finite number", found, position, _snippet(text, position))
        values.append(min(1.0, max(0.0, number)))
    if expected_len is not None and len(values) != expected_len:
        raise ParseError(what, f"{len(values)} numbers", position, _snippet(text, position))
    return values

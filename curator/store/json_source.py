"""Reading JSON sources strictly: the format layer under every import of a file.

Episodes (:mod:`curator.store.importer`), gold labels and knowledge files are all JSON
Lines or one JSON array, from a file or standard input, and hostile input must turn into
one worded problem per line, never a crash or a silent skip. This module holds what they
share: opening a source without blocking on a pipe, strict UTF-8 decoding with byte
offsets, JSON decoding that rejects duplicate keys, NaN, huge integers and deep nesting,
and walking a top-level array element by element with the line each starts on. What a
line means (an episode, a label, a pattern) is the caller's; writing it is the
importer's.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from curator.core.regular_file import NotRegularFile, open_regular
from curator.core.textsafety import control_problem

MAX_NESTING = 64
MAX_INT_DIGITS = 30


@dataclass(frozen=True)
class LineError:
    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        """``FILE:LINE: reason``, or ``FILE: reason`` for the whole file (line 0)."""
        if self.line == 0:
            return f"{self.file}: {self.reason}"
        return f"{self.file}:{self.line}: {self.reason}"


class _BadLine(ValueError):
    """One line's problem, worded for the user."""


def _type_name(value: Any) -> str:
    """What ``value`` is, in JSON's words; a Python value JSON has no word for (a value
    given through the API: a date, a tuple) by its own type's name."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), (str, "a string"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    if isinstance(value, list):
        return "an array"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


# -- JSON decoding with the hostile cases turned into clear errors --------------------------


def _reject_constant(name: str) -> Any:
    raise _BadLine(f"{name} is not valid JSON")


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _BadLine(f"integer with {len(digits.lstrip('-'))} digits is too large")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadLine(f"number {text[:20]} is out of range")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _BadLine(f"duplicate key {key!r}")
        result[key] = value
    return result


def _loads(text: str) -> Any:
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_reject_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except RecursionError:
        raise _BadLine("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        # json's messages may end in "starting at" ("Unterminated string starting at").
        where = "column" if exc.msg.endswith(" at") else "at column"
        raise _BadLine(f"invalid JSON: {exc.msg} {where} {exc.colno}") from None
    except ValueError as exc:  # int digit limits and friends
        if isinstance(exc, _BadLine):
            raise
        raise _BadLine(f"invalid JSON: {exc}") from None


def _check_depth_and_text(value: Any, where: str, depth: int = 0) -> None:
    """Reject deep nesting, strings that cannot be stored as UTF-8 (lone surrogates) and
    strings with control characters (:mod:`curator.core.textsafety`: they would hide text
    from the reviewer), in values and keys alike."""
    if depth > MAX_NESTING:
        raise _BadLine(f"{where} is nested more than {MAX_NESTING} levels deep")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _BadLine(f"{where} contains a lone surrogate (not valid Unicode)") from None
        problem = control_problem(value, where)
        if problem is not None:
            raise _BadLine(problem)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_depth_and_text(key, where, depth + 1)
            # a field of the object itself is named: "the episode's 'source' contains …"
            inner = f"{where}'s {key!r}" if depth == 0 and isinstance(key, str) else where
            _check_depth_and_text(item, inner, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_depth_and_text(item, where, depth + 1)


# -- reading files ----------------------------------------------------------------------------


def _decode(raw: bytes, first: bool) -> str:
    if first and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadLine(f"invalid UTF-8 at byte {exc.start + 1} of the line") from None


BARE_CR = (
    "records on this line end in a bare carriage return (\\r), which ends no line of "
    "JSON Lines (only \\n or \\r\\n do): convert the line ends, e.g. "
    "tr '\\r' '\\n' < FILE > FIXED.jsonl, and import that file"
)
"""Why a line of records run together by old Mac line ends was not read. JSON Lines are
split on ``\\n`` only, so such a file is one line, whose JSON error ("extra data at
column 35") said nothing of the cause."""

_STRING_OR_CR = re.compile(r'"(?:[^"\\]+|\\.)*"?|\r', re.DOTALL)
"""A JSON string (or the rest of a line from an unclosed quote), or a carriage return
outside any string."""


def run_together(text: str) -> bool:
    """Whether ``text`` (one line, its line end stripped) is records run together by bare
    carriage returns: a CR outside its JSON strings parts it into two or more pieces that
    hold something, one of which at least is a JSON value on its own.

    A CR inside a string is not a line end (valid JSON escapes it, and a raw one there
    is invalid JSON that a new line end would not mend), and a CR between the tokens of
    one record is JSON whitespace: a line whose error lies elsewhere (a duplicate key, a
    NaN, a missing comma) keeps its own error, which converting the line ends would not
    mend either."""
    if "\r" not in text:
        return False
    cuts = [m.start() for m in _STRING_OR_CR.finditer(text) if m.group() == "\r"]
    pieces = [
        piece
        for piece in (text[i + 1 : j] for i, j in itertools.pairwise([-1, *cuts, len(text)]))
        if piece.strip()
    ]
    return len(pieces) > 1 and any(map(_is_json, pieces))


def _is_json(text: str) -> bool:
    try:
        _loads(text)
    except _BadLine:
        return False
    return True


def _loads_line(text: str) -> Any:
    """One line of JSON Lines decoded strictly (:func:`_loads`); a line that fails and is
    records run together by old Mac line ends (:func:`run_together`) says so
    (:data:`BARE_CR`) instead of its JSON error. A CR between the tokens of one record is
    JSON whitespace: such a line that decodes is read as any."""
    try:
        return _loads(text)
    except _BadLine:
        if run_together(text):
            raise _BadLine(BARE_CR) from None
        raise


def _iter_jsonl(lines: Iterable[bytes]) -> Iterator[tuple[int, Any | _BadLine]]:
    for number, raw in enumerate(lines, 1):
        raw = raw.rstrip(b"\n").rstrip(b"\r")
        try:
            text = _decode(raw, number == 1)
            if not text.strip():
                continue
            yield number, _loads_line(text)
        except _BadLine as exc:
            yield number, exc


_JSON_WS = " \t\r\n"
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as ``surrogateescape`` decoding represents it (strict UTF-8
decoding never yields these code points, so each one marks a bad byte)."""

_SPANNER = json.JSONDecoder(
    object_pairs_hook=list, parse_constant=str, parse_int=str, parse_float=str
)
"""A lenient decoder that only finds where a value ends; values are then decoded again
with the strict rules, so one bad element is reported and the next one is still read."""


def _skip_ws(text: str, i: int) -> int:
    length = len(text)
    while i < length and text[i] in _JSON_WS:
        i += 1
    return i


def _is_json_array(text: str) -> bool:
    """Whether ``text`` (starting with ``[`` after whitespace) is one JSON array of episodes.

    The shape is decided by what the file holds, not by its first byte alone: it is an
    array when the array's first element is an object, when the array spans several lines
    (JSON Lines cannot), or when it is all the file holds. Otherwise (``[1,2]`` on the
    first line of a JSON Lines file, followed by more lines) the file is JSON Lines, so
    only that line is rejected instead of every line after it being lost.
    """
    start = _skip_ws(text, 0)
    inner = _skip_ws(text, start + 1)
    if inner < len(text) and text[inner] == "{":
        return True
    line_end = text.find("\n", start)
    if line_end < 0:
        return True
    try:
        _, end = _SPANNER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return exc.pos > line_end
    except RecursionError:
        return False
    return end > line_end or _skip_ws(text, end) == len(text)


def _invalid_utf8(text: str, pos: int) -> _BadLine:
    line_start = text.rfind("\n", 0, pos) + 1
    byte = len(text[line_start:pos].encode("utf-8", "surrogateescape")) + 1
    return _BadLine(f"invalid UTF-8 at byte {byte} of the line")


def _iter_json_array(text: str) -> Iterator[tuple[int, Any | _BadLine]]:
    """The elements of a top-level JSON array, each with the line it starts on.

    ``text`` is the file decoded with ``surrogateescape``: an element holding a byte that
    is not UTF-8 is reported on its line, the other elements are still read. Anything but
    whitespace after the closing bracket is reported, never silently ignored.
    """
    has_bad_bytes = _ESCAPED_BYTE.search(text) is not None
    pos = _skip_ws(text, 0) + 1  # just after the "["
    length = len(text)

    # Line numbers are counted incrementally: recounting from the start for every element
    # made large arrays quadratic.
    counted_to, line = 0, 1

    def line_at(i: int) -> int:
        nonlocal counted_to, line
        line += text.count("\n", counted_to, i)
        counted_to = i
        return line

    pos = _skip_ws(text, pos)
    if pos < length and text[pos] == "]":
        pos = _skip_ws(text, pos + 1)
        if pos < length:
            yield line_at(pos), _BadLine(_AFTER_ARRAY)
        return
    while pos < length:
        number = line_at(pos)
        try:
            _, end = _SPANNER.raw_decode(text, pos)
        except RecursionError:
            yield number, _BadLine("JSON nested too deeply; the rest of the file was not read")
            return
        except json.JSONDecodeError as exc:
            if has_bad_bytes and (bad := _ESCAPED_BYTE.search(text, pos, exc.pos + 1)):
                yield line_at(bad.start()), _invalid_utf8(text, bad.start())
            else:
                yield (
                    number,
                    _BadLine(f"invalid JSON: {exc.msg}; the rest of the file was not read"),
                )
            return
        value: Any
        bad = _ESCAPED_BYTE.search(text, pos, end) if has_bad_bytes else None
        if bad is not None:
            value = _invalid_utf8(text, bad.start())
        else:
            try:
                value = _loads(text[pos:end])
            except _BadLine as exc:
                value = exc
        yield number, value
        pos = _skip_ws(text, end)
        if pos < length and text[pos] == ",":
            pos = _skip_ws(text, pos + 1)
            continue
        if pos < length and text[pos] == "]":
            pos = _skip_ws(text, pos + 1)
            if pos < length:
                yield line_at(pos), _BadLine(_AFTER_ARRAY)
            return
        yield line_at(pos), _BadLine("expected ',' or ']' after an array element")
        return
    yield text.count("\n") + 1, _BadLine("the array is not closed (file cut off?)")


_AFTER_ARRAY = "unexpected data after the array; the rest of the file was not read"


STDIN = "-"
"""The file name that means standard input (``curator import -``; ``./-`` is a file)."""

STDIN_NAME = "<stdin>"


class _Unreadable(Exception):
    """The file as a whole cannot be read; the message says why, in a few words."""

    def __init__(self, reason: str, *, pipe: bool = False) -> None:
        super().__init__(reason)
        self.pipe = pipe  # a named pipe: a reader of standard input can say what to do


#: What a reader of standard input adds to a named pipe's refusal.
PIPE_HINT = " (pipe it into 'curator import -' instead)"


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a named pipe, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _open_regular(path: str | Path) -> BinaryIO:
    """Open a regular file for reading, refusing anything else without blocking
    (:func:`curator.core.regular_file.open_regular`), each refusal in a few words."""
    try:
        return open_regular(path)
    except NotRegularFile as exc:
        raise _Unreadable(_file_kind(exc.mode), pipe=stat.S_ISFIFO(exc.mode)) from None
    except FileNotFoundError:
        raise _Unreadable("no such file") from None
    except IsADirectoryError:
        raise _Unreadable("is a directory") from None
    except PermissionError:
        raise _Unreadable("permission denied") from None
    except OSError as exc:
        raise _Unreadable(f"cannot open it ({exc.strerror or exc})") from None


def _count_lines(handle: BinaryIO) -> int:
    """Lines in a regular file, read in blocks and rewound (a 24 MB file: a few ms)."""
    start = handle.tell()
    lines = 0
    last = b""
    while block := handle.read(1 << 20):
        lines += block.count(b"\n")
        last = block
    handle.seek(start)
    return lines + (1 if last and not last.endswith(b"\n") else 0)

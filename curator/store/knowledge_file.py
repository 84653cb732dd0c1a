"""Reading existing knowledge files: the seed's JSON list, plain text, Markdown bullets.

An agent that already has memory keeps it in one of three shapes:

* JSON: an array of ``{"pattern": str, "importance": number, "distilled": ISO 8601}``
  (the seed agent's format; ``importance`` and ``distilled`` may be missing);
* plain text: one pattern per line;
* Markdown: a bullet list (``-``, ``*``, ``+`` or ``1.``); indented lines continue the
  bullet above; headings, blank lines and HTML comments are structure, not patterns.

The rules are those of the episode importer (:mod:`curator.store.importer`): the file is
read as bytes and decoded strictly, every bad line or element is reported as
``FILE:LINE: reason`` and skipped, and nothing is dropped without a reason. Missing
importances and dates are not errors (the seed guards a pattern without a date), but
they are counted so the report says how many were filled in.

A ``distilled`` date later than the moment of reading is refused as a line error, not
clamped: decay counts from that date, and a date in the future (``9999-12-31``) would
have no age to decay by, which put a pattern of importance 0.01 at the top of the
prompt. Refusing keeps the file's meaning honest: the person corrects the date (or
drops it, and the commit's time is used) and imports again. Text with control
characters is refused too (:mod:`curator.core.textsafety`).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from curator.core.zip_errors import is_zip
from curator.store.json_source import (
    LineError,
    _BadLine,
    _check_depth_and_text,
    _decode,
    _open_regular,
    _Unreadable,
)
from curator.store.knowledge_items import (
    DEFAULT_IMPORTANCE,
    KnowledgeFile,
    KnowledgeItem,
    _text,
)
from curator.store.models import to_utc, utcnow

MAX_ITEMS = 100_000
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+(.*)$")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")


def _json_array_text(path: Path) -> str | None:
    """The file decoded as the episode importer decodes an array, if it starts with ``[``."""
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.lstrip().startswith(b"["):
        return None
    return data.decode("utf-8", "surrogateescape")


def _lines(path: Path, result: KnowledgeFile) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = _decode(raw.rstrip(b"\n").rstrip(b"\r"), number == 1)
                _check_depth_and_text(text, "the line")
            except _BadLine as exc:
                result.errors.append(LineError(result.path, number, str(exc)))
                continue
            lines.append((number, text))
    return lines


def _is_markdown(path: Path, lines: list[tuple[int, str]]) -> bool:
    if path.suffix.lower() in (".md", ".markdown"):
        return True
    meaningful = [t for _, t in lines if t.strip()]
    bullets = sum(bool(_BULLET.match(t)) for t in meaningful)
    return bool(meaningful) and bullets * 2 >= len(meaningful)


def _structure(stripped: str) -> bool:
    """A blank line, a heading or a rule: ends a bullet, is not a pattern."""
    return not stripped or stripped.startswith("#") or bool(re.fullmatch(r"[-=*_\s]{3,}", stripped))


def _add(result: KnowledgeFile, number: int, text: str) -> None:
    try:
        result.items.append(
            KnowledgeItem(number, _text(text, "the pattern"), DEFAULT_IMPORTANCE, None, False)
        )
    except _BadLine as exc:
        result.errors.append(LineError(result.path, number, str(exc)))


def _read_markdown(lines: list[tuple[int, str]], result: KnowledgeFile) -> None:
    current: tuple[int, list[str]] | None = None
    in_comment = False

    def flush() -> None:
        nonlocal current
        if current is not None:
            _add(result, current[0], " ".join(current[1]))
        current = None

    for number, text in lines:
        stripped = text.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        bullet = _BULLET.match(text)
        if bullet:
            flush()
            current = (number, [_CHECKBOX.sub("", bullet.group(1).strip())])
        elif _structure(stripped):
            flush()
        elif current is not None and text[:1] in (" ", "\t"):
            current[1].append(stripped)  # a continuation line of the bullet
        else:
            flush()
            result.errors.append(
                LineError(result.path, number, "not a list item (a Markdown file holds bullets)")
            )
    flush()


def read_knowledge(
    path: str | Path, now: datetime | None = None, fmt: str = "auto"
) -> KnowledgeFile:
    """Parse a knowledge file into items and line errors (see the module doc).

    ``now`` (default: the current time) is the latest ``distilled`` date accepted.
    ``fmt`` is one of :data:`curator.store.memtool_formats.FORMATS`: ``auto`` recognises
    the shape by content; another forces it (a file of another shape is one error).
    """
    from curator.store import memtool_formats as tools

    now = utcnow() if now is None else to_utc(now)
    try:
        # the episode importer's checks: a directory, a FIFO (opened without blocking), a
        # device or a name the system refuses is one error with its real reason
        with _open_regular(path) as handle:
            head = handle.read(64).lstrip(b"\xef\xbb\xbf").lstrip()
            zipped = is_zip(head, handle)
    except _Unreadable as exc:
        result = KnowledgeFile(str(path), "none")
        result.errors.append(LineError(str(path), 0, str(exc)))
        return result
    path = Path(path)
    result = KnowledgeFile(str(path), "json" if fmt in ("auto", "seed") else fmt)
    text: str | None = None
    if zipped:
        if fmt not in ("auto", "openmemory"):
            result.errors.append(LineError(str(path), 0, f"a zip file; {fmt} is read from JSON"))
            return result
        result.shape = "openmemory"
        text = tools.zip_json_text(path.read_bytes(), result)
        if text is None:
            return result
        fmt = "openmemory"
        head = text.lstrip()[:1].encode()
    if head.startswith(b"{"):
        if text is None:
            try:  # an object is parsed whole: a bad byte is the file's error, with its place
                text = path.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
            except UnicodeDecodeError as exc:
                result.errors.append(
                    LineError(str(path), 0, f"invalid UTF-8 at byte {exc.start + 1} of the file")
                )
                return result
        tools.read_object(text, result, now, fmt)
    elif head.startswith(b"["):
        if text is None:
            text = _json_array_text(path) or ""
        tools.read_array(text, result, now, fmt)
    elif fmt != "auto":
        result.errors.append(LineError(str(path), 1, f"not JSON; {fmt} is read from JSON"))
        return result
    else:
        probe = KnowledgeFile(str(path), "text")
        lines = _lines(path, probe)
        result = probe
        if _is_markdown(path, lines):
            result.shape = "markdown"
            _read_markdown(lines, result)
        else:
            for number, line_text in lines:
                if line_text.strip():
                    _add(result, number, line_text)
    if len(result.items) > MAX_ITEMS:
        extra = result.items[MAX_ITEMS:]
        del result.items[MAX_ITEMS:]
        result.errors.append(
            LineError(
                result.path,
                extra[0].line,
                f"more than {MAX_ITEMS:,} patterns; the {len(extra):,} from here on were not read",
            )
        )
    result.errors.sort(key=lambda e: e.line)
    return result

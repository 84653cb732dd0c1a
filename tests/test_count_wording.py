"""Every count the program writes for a person is grouped by thousands, as
:func:`curator.core.wording.plural` writes it.

A relabel of 120,203 episodes was announced as "120,203" and counted as "120203 given"
in the same status line: each message formatted its numbers its own way. This test
reads every f-string of the package and fails on a placeholder written bare before a
counted noun ("{n} episodes", "{a} of {b} patterns", "{n} rejected"). Constants
(upper-case names, small by design) and texts that are not counts (names, ids, words
made by ``plural``, ``agree`` or ``ordinal``) are left alone.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "curator"

_NOUN = (
    r"(?:episodes?|patterns?|labels|human labels|candidates?|runs|lines|messages|memories"
    r"|texts|items|rows|decisions|scores|entries|characters|tokens|imported|rejected"
    r"|added|dropped|accepted|duplicates|staged|words|overrides|conflicts)\b"
)
_COUNTED = re.compile(r"^ " + _NOUN)
_OF = " of "
#: Placeholders before such a noun that hold words, not numbers (``generated`` is a
#: rate already written as text).
_NOT_COUNTS = {
    "kind",
    "said",
    "target",
    "ctx.db_display",
    "dest.location",
    "p.id",
    "run",
    "generated",
}
_WORD_MAKERS = ("agree(", "ordinal(", "_listed(", "plural(")


def _bare_counts(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for i, part in enumerate(parts):
            if not isinstance(part, ast.FormattedValue) or part.format_spec is not None:
                continue
            if part.conversion != -1:
                continue
            if isinstance(part.value, ast.Name) and part.value.id.isupper():
                continue
            after = [p.value if isinstance(p, ast.Constant) else None for p in parts[i + 1 :]]
            nxt = after[0] if after else None
            if not isinstance(nxt, str):
                continue
            counted = _COUNTED.match(nxt) is not None
            if nxt == _OF and len(after) > 2 and isinstance(after[2], str):
                counted = _COUNTED.match(after[2]) is not None
            if not counted:
                continue
            # the placeholder's own text last: get_source_segment reads the whole source
            text = ast.get_source_segment(source, part.value) or ""
            if text not in _NOT_COUNTS and not text.startswith(_WORD_MAKERS):
                found.append((part.value.lineno, text))
    return found


def test_the_scan_finds_each_kind_of_bare_count() -> None:
    source = (
        'a = f"{n} episodes"\n'
        'b = f"{len(xs)} of {total} patterns"\n'
        'c = f"{r.imported:,} imported, {r.duplicates} duplicates"\n'
        "d = f\"{n:,} episodes, {LIMIT} characters, {kind} messages, {plural(n, 'x')} added\"\n"
    )
    assert _bare_counts(source) == [(1, "n"), (2, "len(xs)"), (2, "total"), (3, "r.duplicates")]


def test_every_count_in_a_message_is_grouped_by_thousands() -> None:
    bare = [
        f"{path.relative_to(ROOT.parent)}:{line}: {{{text}}}"
        for path in sorted(ROOT.rglob("*.py"))
        for line, text in _bare_counts(path.read_text(encoding="utf-8"))
    ]
    assert not bare, "write these counts as {n:,} (or with plural()):\n" + "\n".join(bare)

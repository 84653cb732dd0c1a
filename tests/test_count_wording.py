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
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "curator"

_NOUN = (
    r"(?:(?:new|unreviewed|other|pending|human)\s+)?"
    r"(?:episodes?|patterns?|labels?|candidates?|runs?|lines?|messages?|memories|texts?"
    r"|items?|rows?|decisions?|scores?|entries|entry|characters?|tokens?|imported|rejected"
    r"|added|dropped|accepted|duplicates?|staged|words?|overrides?|conflicts?|generations?"
    r"|updates?|models?|calls?|files?|bytes|pairs?|batch(?:es)?)\b"
)
#: A counted noun after a placeholder, HTML tags between them left aside ("{n}</b> new").
_COUNTED = re.compile(r"^(?:</?\w+>)* " + _NOUN)
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
    "list_name",
    "kind.capitalize()",
    "worker.kind",
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


def _everywhere(scan: Callable[[str], list[tuple[int, str]]]) -> list[str]:
    """``FILE:LINE: {placeholder}`` for what ``scan`` finds in each module of the package."""
    return [
        f"{path.relative_to(ROOT.parent)}:{line}: {{{text}}}"
        for path in sorted(ROOT.rglob("*.py"))
        for line, text in scan(path.read_text(encoding="utf-8"))
    ]


def test_the_scan_finds_each_kind_of_bare_count() -> None:
    source = (
        'a = f"{n} episodes"\n'
        'b = f"{len(xs)} of {total} patterns"\n'
        'c = f"{r.imported:,} imported, {r.duplicates} duplicates"\n'
        "d = f\"{n:,} episodes, {LIMIT} characters, {kind} messages, {plural(n, 'x')} added\"\n"
    )
    assert _bare_counts(source) == [(1, "n"), (2, "len(xs)"), (2, "total"), (3, "r.duplicates")]


def test_every_count_in_a_message_is_grouped_by_thousands() -> None:
    bare = _everywhere(_bare_counts)
    assert not bare, "write these counts as {n:,} (or with plural()):\n" + "\n".join(bare)


def _is_one_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq | ast.NotEq)
        and any(
            isinstance(side, ast.Constant) and side.value == 1
            for side in (test.left, *test.comparators)
        )
    )


def _is_words(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def _hand_made_plurals(source: str) -> list[int]:
    """Lines choosing between two words by ``n == 1`` (``'s' if n != 1 else ''``)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.IfExp)
        and _is_one_test(node.test)
        and _is_words(node.body)
        and _is_words(node.orelse)
    )


def test_the_scan_finds_hand_made_plurals() -> None:
    source = (
        "a = f\"{n} message{'s' if n != 1 else ''}\"\n"
        'b = "episode" if count == 1 else "episodes"\n'
        "c = first if len(xs) == 1 else rest\n"
        'd = None if attempt == 1 else "x"\n'
        'e = plural(n, "episode")\n'
    )
    assert _hand_made_plurals(source) == [1, 2]


def test_every_plural_is_made_by_plural_or_agree() -> None:
    """A word chosen by hand next to a count drifts from the rule plural() keeps (its
    count went out bare as "1200 messages" while plural() writes "1,200 messages")."""
    made = _everywhere(lambda source: [(line, "") for line in _hand_made_plurals(source)])
    assert not made, "write these with plural() or agree():\n" + "\n".join(made)


_PLURAL_NOUN = re.compile(
    r"^(?:</?\w+>)* (?:episodes|patterns|candidates|labels|lines|messages|texts|overrides"
    r"|conflicts|duplicates|rows|runs|decisions|pairs|batches|files|scores|proposals"
    r"|entries|items|memories|changesets|versions|flags|axioms)\b"
)
#: Placeholders before a plural noun that are never 1: limits exceeded, columns of a
#: table (aligned, the header names the unit), rates, words, a sample text's width.
_ALWAYS_MANY = {
    "len(messages)",  # over a limit of many
    "kind",
    "999_999_999",
    "options.records_per_minute",
    "len(names)",  # only when it is not 1
    "said",
}
#: Words that make the count many: a limit passed, or "all" (its one case said apart).
_BOUND_BEFORE = re.compile(r"(?:than the|over the|at most|more than|limit|all)\s*$")


def _counts_without_plural(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for i, part in enumerate(parts[:-1]):
            after = parts[i + 1]
            if not isinstance(part, ast.FormattedValue) or not isinstance(after, ast.Constant):
                continue
            if not isinstance(after.value, str) or not _PLURAL_NOUN.match(after.value):
                continue
            spec = part.format_spec
            if spec is not None and not (
                len(spec.values) == 1 and getattr(spec.values[0], "value", None) == ","
            ):
                continue  # aligned: a column of a table
            if isinstance(part.value, ast.Name) and part.value.id.isupper():
                continue
            before = parts[i - 1] if i else None
            if isinstance(before, ast.Constant) and _BOUND_BEFORE.search(str(before.value)):
                continue
            text = ast.get_source_segment(source, part.value) or ""
            if text not in _ALWAYS_MANY and not text.startswith(_WORD_MAKERS):
                found.append((part.value.lineno, text))
    return found


def test_the_scan_finds_a_count_before_a_plural_noun() -> None:
    source = (
        'a = f"{n:,} episodes added"\n'
        "b = f\"{plural(n, 'episode')} added, {m:>5} rows\"\n"
        'c = f"over the {n:,} messages, {LIMIT} lines, at most {k:,} lines"\n'
        'd = f"<b>{n}</b> candidates"\n'
    )
    assert _counts_without_plural(source) == [(1, "n"), (4, "n")]


def test_every_count_before_a_noun_agrees_with_it() -> None:
    """ "1 candidates added", "exported 0 episodes and 1 candidates": a count that may be
    1 goes through plural(), which writes the noun as the count needs it."""
    bare = _everywhere(_counts_without_plural)
    assert not bare, "write these with plural():\n" + "\n".join(bare)

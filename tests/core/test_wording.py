"""Counts read as a person writes them: "1 episode", "2 episodes", never "episode(s)".

Before, about twenty messages of the window and the CLI said "1 episode(s)", "4
candidate(s) are not reviewed" or "Accepted 1 proposal(s)". They use
:func:`curator.core.wording.plural` and :func:`~curator.core.wording.agree` now, and a
scan of the sources keeps "(s)" from coming back.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

import curator
from curator.core.wording import agree, plural

SOURCES = Path(curator.__file__).parent
HEDGED = re.compile(r"[A-Za-z]\((s|es)\)")
"""A noun hedged with "(s)"/"(es)"; "http(s)" names the schemes, not a count."""


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (they may quote the old wording, as this one does)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_no_message_hedges_a_count_with_s_in_brackets() -> None:
    """Every string literal of the package (f-strings' text included), docstrings aside."""
    found = []
    for path in sorted(SOURCES.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            hedged = isinstance(text, str) and HEDGED.search(text.replace("http(s)", ""))
            if hedged and id(node) not in docs:
                found.append(f"{path.relative_to(SOURCES)}:{node.lineno}: {text!r}")
    assert not found, "\n".join(found)


@settings(deadline=None)
@given(
    count=st.integers(min_value=0, max_value=10**9),
    noun=st.from_regex(r"[a-z]{1,12}", fullmatch=True),
)
@example(count=1, noun="episode")
@example(count=0, noun="episode")
@example(count=1_200, noun="pattern")
def test_plural_is_singular_for_one_only(count: int, noun: str) -> None:
    text = plural(count, noun)
    number, word = text.split(" ")
    assert int(number.replace(",", "")) == count
    assert word == (noun if count == 1 else noun + "s")
    assert agree(count, "is", "are") == ("is" if count == 1 else "are")
    assert plural(count, "index", "indices").endswith("index" if count == 1 else "indices")

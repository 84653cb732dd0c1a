"""GBNF grammars that make the structured steps parse every time.

llama.cpp masks every token that would leave the grammar, so the output is a valid JSON
array by construction. Two more guarantees are built in:

* termination: every repetition is bounded, and the bounds are derived from the token
  budget so that even at one character per token the whole array (closing bracket
  included) fits in ``max_tokens``; a small model can therefore not ramble past the end
  and leave an unclosed array;
* exact length: the importance grammar is generated for the given N and accepts exactly
  N numbers, so scores can never be misaligned with the patterns.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_ITEMS = 12
MAX_ITEM_CHARS = 300
MIN_ITEM_CHARS = 120
_WS_MAX = 4  # whitespace characters allowed around one separator
_ITEM_OVERHEAD = 3 + _WS_MAX  # two quotes, a comma, whitespace
MIN_ARRAY_BUDGET = 2 + 2 * _WS_MAX + _ITEM_OVERHEAD + 1
"""The smallest budget that still fits one one-character string (smaller ones are raised)."""


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def label_grammar(labels: Sequence[str]) -> str:
    """Exactly one of the labels (used only by the naive baseline of the benchmark)."""
    return "root ::= " + " | ".join(literal(label) for label in labels) + "\n"


def string_array_bounds(max_tokens: int) -> tuple[int, int]:
    """(most items, most characters per item) whose worst case fits ``max_tokens``.

    Worst case counts one token per character: brackets, and per item its characters,
    two quotes, a comma and the allowed whitespace.
    """
    budget = max(MIN_ARRAY_BUDGET, max_tokens) - 2 - 2 * _WS_MAX
    for items in range(MAX_ITEMS, 0, -1):
        chars = min(MAX_ITEM_CHARS, budget // items - _ITEM_OVERHEAD)
        if chars >= MIN_ITEM_CHARS:
            return items, chars
    return 1, min(MAX_ITEM_CHARS, budget - _ITEM_OVERHEAD)


def string_array_grammar(max_tokens: int) -> str:
    """A JSON array of 1..K non-empty strings that always closes within ``max_tokens``."""
    items, chars = string_array_bounds(max_tokens)
    more = f'("," ws item){{0,{items - 1}}}' if items > 1 else ""
    return (
        f'root ::= "[" ws item {more} ws "]"\n'
        f'item ::= "\\"" char{{1,{chars}}} "\\""\n'
        'char ::= [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ["\\\\/nt]\n'
        f"ws ::= [ \\n]{{0,{_WS_MAX}}}\n"
    )


def number_array_max_tokens(n: int) -> int:
    """Tokens that always suffice for :func:`number_array_grammar` (one per character)."""
    return 2 + 2 * _WS_MAX + 5 * n + (n - 1) * (1 + _WS_MAX)


def number_array_grammar(n: int) -> str:
    """A JSON array of exactly ``n`` numbers in [0, 1] with at most three decimals."""
    if n < 1:
        raise ValueError("n must be at least 1")
    more = f' ("," ws num){{{n - 1}}}' if n > 1 else ""
    return (
        f'root ::= "[" ws num{more} ws "]"\n'
        'num ::= "0" ("." [0-9]{1,3})? | "1" ("." "0"{1,3})?\n'
        f"ws ::= [ \\n]{{0,{_WS_MAX}}}\n"
    )


EXTRACT_LINE_CHARS = MAX_ITEM_CHARS
"""Characters per observation line (the refine step keeps at most this many per item)."""


def bullet_list_grammar(max_lines: int, max_chars: int = EXTRACT_LINE_CHARS) -> str:
    """1..``max_lines`` lines ``"- text"`` of 1..``max_chars`` characters each.

    The extract step's notes: the model may end after any complete line, and must end
    after ``max_lines`` of them, so a batch stops when its list ends instead of
    rambling on to ``max_tokens``.  The last line's newline is optional (a model that
    ends its list without one is not pushed into another line).
    """
    if max_lines < 1 or max_chars < 1:
        raise ValueError("max_lines and max_chars must be at least 1")
    more = f"line{{0,{max_lines - 1}}} " if max_lines > 1 else ""
    return (
        f'root ::= {more}"- " text "\\n"?\n'
        f'line ::= "- " text "\\n"\n'
        f"text ::= [^\\n]{{1,{max_chars}}}\n"
    )

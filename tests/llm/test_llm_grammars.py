"""Grammars: accepted by llama.cpp, bounded so output always closes, exact-N scores."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curator.llm.grammars import (
    _WS_MAX,
    MIN_ARRAY_BUDGET,
    label_grammar,
    literal,
    number_array_grammar,
    number_array_max_tokens,
    string_array_bounds,
    string_array_grammar,
)


@given(st.integers(min_value=1, max_value=20000))
def test_string_array_worst_case_fits_the_budget(max_tokens: int) -> None:
    """One token per character: brackets, items, quotes, commas and whitespace all fit."""
    items, chars = string_array_bounds(max_tokens)
    worst = 2 + 2 * _WS_MAX + items * (chars + 3 + _WS_MAX)
    assert items >= 1 and chars >= 1
    assert worst <= max(MIN_ARRAY_BUDGET, max_tokens)


def test_bigger_budgets_allow_more_and_longer_items() -> None:
    assert string_array_bounds(4000) == (12, 300)
    small_items, small_chars = string_array_bounds(384)
    assert small_items >= 2 and small_chars >= 120


@pytest.mark.parametrize("n", [1, 2, 12])
def test_number_array_budget_covers_the_longest_match(n: int) -> None:
    longest = "[" + " " * _WS_MAX + ("," + " " * _WS_MAX).join(["0.125"] * n) + " " * _WS_MAX + "]"
    assert len(longest) == number_array_max_tokens(n)


def test_literal_escapes() -> None:
    assert literal('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_number_grammar_needs_at_least_one() -> None:
    with pytest.raises(ValueError):
        number_array_grammar(0)


@pytest.mark.llm
@pytest.mark.parametrize(
    "grammar",
    [
        string_array_grammar(4000),
        string_array_grammar(100),
        number_array_grammar(1),
        number_array_grammar(7),
        label_grammar(["constitutional", "noise", "uncategorized"]),
    ],
)
def test_llama_cpp_accepts_the_grammars(demo_backend, grammar: str) -> None:
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(
        demo_backend.llm._model.vocab, grammar.encode(), b"root"
    )
    assert sampler, "llama.cpp could not parse the grammar"
    llama_cpp.llama_sampler_free(sampler)


@pytest.mark.llm
@pytest.mark.parametrize("n", [1, 3, 5])
def test_generated_scores_have_exactly_n_numbers(demo_backend, n: int) -> None:
    prefix = demo_backend.chat_prefix("You answer with JSON.", "Give one score per line:\n")
    item = "\n".join(f"{i}. a pattern" for i in range(1, n + 1))
    c = demo_backend.complete(prefix, item, max_tokens=64, grammar=number_array_grammar(n))
    assert c.stop_reason == "stop"
    values = json.loads(c.text)
    assert len(values) == n and all(0.0 <= v <= 1.0 for v in values)


@pytest.mark.llm
def test_string_array_closes_even_with_a_tiny_budget(demo_backend) -> None:
    prefix = demo_backend.chat_prefix("You answer with JSON.", "List facts about cats:\n")
    for budget in (24, 60):
        grammar = string_array_grammar(budget)
        c = demo_backend.complete(prefix, "", max_tokens=budget, grammar=grammar)
        assert c.tokens_out <= budget
        value = json.loads(c.text)
        assert isinstance(value, list) and value and all(isinstance(s, str) for s in value)


def test_bullet_list_grammar_bounds_lines_and_characters() -> None:
    from curator.llm.grammars import bullet_list_grammar
    from curator.store.settings import Settings, SettingsError

    grammar = bullet_list_grammar(3, 20)
    assert 'root ::= line{0,2} "- " text "\\n"?' in grammar
    assert "text ::= [^\\n]{1,20}" in grammar
    assert bullet_list_grammar(1, 5).startswith('root ::= "- " text')
    with pytest.raises(ValueError):
        bullet_list_grammar(0)
    assert Settings().extract_max_lines == 12
    assert Settings.from_mapping({"extract_max_lines": 4}).extract_max_lines == 4
    with pytest.raises(SettingsError):
        Settings.from_mapping({"extract_max_lines": 0})

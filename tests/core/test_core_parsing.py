"""Tolerant parsing of model output into string and number arrays."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.core.parsing import (
    DroppedItem,
    ParseError,
    find_json_candidates,
    parse_number_array,
    parse_string_array,
    parse_string_array_detailed,
)

# --- string arrays -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '["a", "b"]',
        '```json\n["a", "b"]\n```',
        '```\n["a", "b"]\n```',
        'Here are the patterns:\n```json\n["a", "b"]\n```\nHope this helps!',
        'Here are the patterns: ["a", "b"] Hope this helps',
        'Sure! ```json ["a", "b"]```',  # fence closed on the same line
        '```json\n["a", "b"]',  # output cut off before the closing fence
        '{"patterns": ["a", "b"]}',
        '{"note": "two found", "patterns": ["a", "b"]}',
        '{"items": ["a", "b"], "scores": [1, 2]}',  # the key names the array
        '[["a", "b"]]',
        '["a", "b",]',  # trailing comma
        "['a', 'b']",  # Python-style quotes
        'See [1] and [2]:\n```json\n["a", "b"]\n```',  # brackets in prose lose
        '  \n["a",\n "b"\n]\n',
    ],
)
def test_string_array_is_found(text: str) -> None:
    assert parse_string_array(text) == ["a", "b"]


def test_brackets_and_quotes_inside_strings_do_not_confuse_the_scanner() -> None:
    items = ["use [brackets] and {braces}", 'a "quoted" ] word', "back\\slash", "```"]
    text = "Patterns:\n" + json.dumps(items) + "\nDone."
    assert parse_string_array(text) == items


def test_backticks_inside_a_fenced_payload_do_not_close_the_fence() -> None:
    # Found by hypothesis: the fence used to end at the backticks inside the string,
    # and the "[]" inside the first string then won as an empty array.
    assert parse_string_array('```json\n["[]", "```"]\n```') == ["[]", "```"]


def test_raw_newlines_inside_strings_are_accepted() -> None:
    assert parse_string_array('["line one\nline two"]') == ["line one\nline two"]


def test_strings_are_kept_exactly() -> None:
    assert parse_string_array('["  padded  ", ""]') == ["  padded  ", ""]


def test_non_string_items_are_dropped_and_reported() -> None:
    result = parse_string_array_detailed('["a", 3, null, {"x": 1}, "b", true]')
    assert result.items == ["a", "b"]
    assert result.dropped == (
        DroppedItem(1, "3", "a number, not a string"),
        DroppedItem(2, "None", "null, not a string"),
        DroppedItem(3, "{'x': 1}", "an object, not a string"),
        DroppedItem(5, "True", "a boolean, not a string"),
    )
    assert result.position == 0


def test_a_fully_valid_array_wins_over_a_mixed_one() -> None:
    assert parse_string_array('[1, "x"] then ["a", "b"]') == ["a", "b"]
    assert parse_string_array('[1, "x"] then [2]') == ["x"]


def test_parsed_spans_are_not_descended_into() -> None:
    # The mixed outer array is the answer; the array text inside a string is not.
    assert parse_string_array('[1, "[\\"decoy\\"]"]') == ['["decoy"]']


def test_empty_array_is_fine() -> None:
    assert parse_string_array("Nothing new: []") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected a JSON array of strings, found empty output"),
        ("I could not find any patterns.", "found no JSON array"),
        ('["a", "b"', "found an unbalanced or invalid bracket at position 0"),
        ("[1, 2, 3]", "found an array of 3 items with no string (a number) at position 0"),
        ('{"a": ["x"], "b": ["y"]}', "an object without a single array value"),
        ('Result: {"count": 2}', "an object without a single array value (keys: ['count'])"),
    ],
)
def test_string_array_errors_are_precise(text: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_string_array(text)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_parse_error_carries_fields() -> None:
    with pytest.raises(ParseError) as caught:
        parse_string_array('prefix text ["a", "b"')
    error = caught.value
    assert error.expected == "a JSON array of strings"
    assert error.position == 12
    assert '["a", "b"' in error.snippet


# --- number arrays -----------------------------------------------------------------


def test_numbers_are_read_clamped_and_accept_numeric_strings() -> None:
    assert parse_number_array('[0.8, "0.5", 1.2, -1, 1, " .25 "]') == [
        0.8,
        0.5,
        1.0,
        0.0,
        1.0,
        0.25,
    ]


def test_number_array_in_wrappers() -> None:
    assert parse_number_array('```json\n{"scores": [0.1, 0.9]}\n```') == [0.1, 0.9]
    assert parse_number_array("Scores (1 = high): [0.3, 0.4]", expected_len=2) == [0.3, 0.4]


def test_expected_length_picks_the_matching_array() -> None:
    assert parse_number_array("Rated [1] items: [0.5, 0.6, 0.7]", expected_len=3) == [
        0.5,
        0.6,
        0.7,
    ]


@pytest.mark.parametrize(
    ("text", "expected_len", "message"),
    [
        ("[0.5, 0.6]", 3, "expected a JSON array of 3 numbers, found 2 numbers at position 0"),
        ('[0.5, "high"]', None, "expected a finite number, found a string 'high' as item 1"),
        ("[0.5, NaN]", None, "found a non-finite number nan as item 1"),
        ("[1e999]", None, "found a non-finite number inf as item 0"),
        ("[true]", None, "found a boolean True as item 0"),
        ('["inf"]', None, "found a string 'inf' as item 0"),
        ("[" + "9" * 400 + "]", None, "as item 0"),
        ("no numbers here", None, "expected a JSON array of numbers, found no JSON array"),
    ],
)
def test_number_array_errors_are_precise(text: str, expected_len: int | None, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_number_array(text, expected_len)
    assert message in str(caught.value)


def test_candidates_report_positions() -> None:
    found = list(find_json_candidates('x [1] y {"a": 2} [oops'))
    assert found == [(2, [1]), (8, {"a": 2})]


# --- round trips ---------------------------------------------------------------------

_wrappers = st.sampled_from(
    [
        "{}",
        "```json\n{}\n```",
        "```\n{}\n```",
        "Here are the patterns:\n\n{}\n\nHope this helps!",
        "Sure thing! ```json\n{}\n``` Let me know if you need more.",
        '{{"patterns": {}}}',
        '```json\n{{"patterns": {}}}\n```',
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(st.text(max_size=40), max_size=8),
    wrapper=_wrappers,
    ascii_only=st.booleans(),
    indent=st.sampled_from([None, 2]),
)
def test_string_round_trip(
    items: list[str], wrapper: str, ascii_only: bool, indent: int | None
) -> None:
    payload = json.dumps(items, ensure_ascii=ascii_only, indent=indent)
    assert parse_string_array(wrapper.format(payload)) == items


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(st.text(alphabet=st.sampled_from('ab[]{}"\\`,: \n'), max_size=12), max_size=6),
    wrapper=_wrappers,
)
def test_string_round_trip_with_adversarial_characters(items: list[str], wrapper: str) -> None:
    payload = json.dumps(items, ensure_ascii=False)
    assert parse_string_array(wrapper.format(payload)) == items


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=8),
    wrapper=_wrappers,
    as_strings=st.booleans(),
)
def test_number_round_trip(values: list[float], wrapper: str, as_strings: bool) -> None:
    shown: list[object] = [repr(v) for v in values] if as_strings else list(values)
    text = wrapper.format(json.dumps(shown)).replace('"patterns"', '"scores"')
    parsed = parse_number_array(text, expected_len=len(values))
    assert parsed == [min(1.0, max(0.0, v)) for v in values]
    assert all(math.isfinite(v) for v in parsed)

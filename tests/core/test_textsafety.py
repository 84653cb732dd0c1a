"""The control-character policy itself (:mod:`curator.core.textsafety`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.core.flags import detect
from curator.core.quality import QualityGate
from curator.core.textsafety import (
    CONTROLS,
    LAYOUT,
    MAX_MESSAGE_CHARS,
    UnsafeText,
    as_one_line,
    control_problem,
    escape_controls,
    escape_json_controls,
    require_clean,
)
from curator.errors import CuratorError

REFUSED = [chr(c) for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))]


def test_every_c0_and_c1_control_but_newline_and_tab_is_refused() -> None:
    for char in REFUSED:
        assert control_problem(f"ok{char}ok") is not None, hex(ord(char))
    assert control_problem("line one\nline\ttwo") is None
    assert control_problem("bidi \u202e and zero-width \u200b are flags, not controls") is None


def test_the_reason_names_the_character_and_its_position() -> None:
    assert control_problem("ab\x1b[8mhidden", "'pattern'") == (
        "'pattern' contains the control character U+001B (ESC) at character 3 "
        "(only newline, tab and CRLF line ends are allowed)"
    )
    with pytest.raises(UnsafeText, match=r"U\+0000 \(NUL\) at character 1"):
        require_clean("\x00")


def test_escaping_shows_what_a_terminal_would_obey() -> None:
    assert escape_controls("a\x1b[2Kb\x00c\r\x9b\n\t") == "a\\x1b[2Kb\\x00c\\x0d\\x9b\n\t"
    doc = json.dumps({"t": "x\x85\x7fy"}, ensure_ascii=False)
    escaped = escape_json_controls(doc)
    assert "\x85" not in escaped and json.loads(escaped) == {"t": "x\x85\x7fy"}


def test_model_output_with_controls_fails_the_quality_gate() -> None:
    verdict = QualityGate().check("The operator wants short updates\x1b[8m and more here.")
    assert not verdict.ok and "U+001B (ESC)" in verdict.reasons[0]


def test_stored_controls_are_flagged_hidden() -> None:
    flags = detect("Plain looking pattern text\x1b[8m that hides the rest of it.")
    assert [f.kind for f in flags] == ["hidden"]
    assert "U+001B (ESC)" in flags[0].reason


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_escaped_text_never_holds_a_control(text: str) -> None:
    """Arbitrary code points: the escaped form holds no refused control, the clean check
    agrees with the regex, and JSON escaping keeps the document."""
    assert CONTROLS.search(escape_controls(text)) is None
    assert (control_problem(text) is None) == (CONTROLS.search(text) is None)
    dumped = escape_json_controls(json.dumps(text, ensure_ascii=False))
    assert CONTROLS.search(dumped) is None and json.loads(dumped) == text


def test_a_crlf_line_end_is_text_and_a_lone_cr_is_refused() -> None:
    """Logs written on Windows carry CRLF inside their messages: those episodes come in
    (and hash as before); a lone CR, which rewinds the terminal line, does not."""
    assert control_problem("first line\r\nsecond line") is None
    assert escape_controls("a\r\nb") == "a\r\nb"
    assert control_problem("shown\rhidden") is not None
    assert escape_controls("a\r\r\nb") == "a\\x0d\r\nb"


@given(st.text(max_size=3000))
def test_every_error_message_is_one_printable_line(text: str) -> None:
    """Whatever a message quotes (a path, a key, a text): one line, no control, line
    break, direction mark, invisible character or lone surrogate left as it is, at most
    1,000 characters, and printable as UTF-8."""
    said = str(CuratorError(f"refused {text} here"))
    assert len(said) <= MAX_MESSAGE_CHARS
    assert LAYOUT.search(said) is None and CONTROLS.search(said) is None
    said.encode("utf-8")  # a lone surrogate made print() fail
    if len(text) < 500 and not LAYOUT.search(text) and not CONTROLS.search(text):
        assert said == f"refused {text} here"  # nothing else is touched


def test_a_name_on_one_line() -> None:
    assert as_one_line(" Proj\nect\t\u202e#1 \u2028x ") == "Proj ect #1  x"
    family = "Family \U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert as_one_line(family) == family  # joiners make one emoji of three

"""The quality gate's thresholds and messages."""

from __future__ import annotations

import pytest

from curator.core.degenerate import DIGITS, REPEATED
from curator.core.quality import QualityGate, QualityVerdict, Rejected, count_kinds


def test_defaults_accept_a_real_pattern() -> None:
    verdict = QualityGate().check("Users who mention rate limits tend to retry.")
    assert verdict == QualityVerdict(ok=True, reasons=())


def test_reasons_name_the_measured_value_and_the_limit() -> None:
    verdict = QualityGate().check("  Retry later,ok  ")
    assert not verdict.ok
    assert verdict.reasons == ("14 characters, fewer than 30", "2 words, fewer than 3")


def test_each_limit_is_reported_on_its_own() -> None:
    gate = QualityGate(min_chars=10, min_words=3)
    assert gate.check("Extraordinarily-long-hyphenated-word").reasons == ("1 word, fewer than 3",)
    assert gate.check("a b c").reasons == ("5 characters, fewer than 10",)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("x" * 29 + " a b", True),  # 33 chars, 3 words
        ("aaaaaaaaa bbbbbbbbb ccccccccc", False),  # 29 characters
        ("aaaaaaaaa bbbbbbbbb cccccccccc", True),  # exactly 30 characters and 3 words
        ("\n\t aaaaaaaaa bbbbbbbbb cccccccccc \n", True),  # stripped first
        ("", False),
        ("   ", False),
    ],
)
def test_boundaries(text: str, ok: bool) -> None:
    assert QualityGate().check(text).ok is ok


def test_empty_text_reasons_use_plural_zero() -> None:
    assert QualityGate().check("").reasons == (
        "0 characters, fewer than 30",
        "0 words, fewer than 3",
    )


def test_filter_keeps_order_and_explains_drops() -> None:
    texts = ["short", "A perfectly reasonable pattern about users.", "two words"]
    kept, dropped = QualityGate().filter(texts)
    assert kept == ["A perfectly reasonable pattern about users."]
    assert dropped == [
        Rejected("short", ("5 characters, fewer than 30", "1 word, fewer than 3")),
        Rejected("two words", ("9 characters, fewer than 30", "2 words, fewer than 3")),
    ]


def test_zero_limits_accept_everything() -> None:
    assert QualityGate(min_chars=0, min_words=0).check("").ok


# -- degenerate text (curator.core.degenerate) ---------------------------------------------

LOOP = "The user prefers short answers. " * 3
STAMPS = "2026-08-06 11:59:38, 2026-08-06 11:59:39, 2026-08-06 11:59:40"


def test_a_repeated_sentence_and_a_list_of_timestamps_are_dropped_with_their_kind() -> None:
    """The two candidates of the report: long enough, both passed the old gate."""
    kept, dropped = QualityGate().filter([LOOP, "Users who mention rate limits retry.", STAMPS])
    assert kept == ["Users who mention rate limits retry."]
    assert [r.kind for r in dropped] == [REPEATED, DIGITS]
    assert dropped[0].reasons == ("repeated phrase: 'The user prefers short answers.' 3 times",)
    assert count_kinds(dropped) == {REPEATED: 1, DIGITS: 1}


def test_turned_off_the_gate_keeps_degenerate_text_and_its_length_limits() -> None:
    gate = QualityGate(degenerate=False)
    assert gate.check(LOOP).ok and gate.check(STAMPS).ok
    assert gate.check("ok ok ok").reasons == ("8 characters, fewer than 30",)


def test_a_fragment_keeps_its_length_reasons_only() -> None:
    verdict = QualityGate().check("ok ok ok ok ok")
    assert verdict.kind is None
    assert verdict.reasons == ("14 characters, fewer than 30",)

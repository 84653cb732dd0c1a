"""The quality gate's thresholds and messages."""

from __future__ import annotations

import pytest

from curator.core.quality import QualityGate, QualityVerdict, Rejected


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

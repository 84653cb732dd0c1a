"""The quality gate: reject distilled patterns too short to carry knowledge.

Small models sometimes emit fragments ("ok", "User likes", a lone bullet).  Such
texts would pass the dedup gate as novel and pollute memory, so they are dropped
before it, with a reason a human can read in the review screen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from curator.core.textsafety import control_problem

__all__ = ["QualityGate", "QualityVerdict", "Rejected"]


@dataclass(frozen=True, slots=True)
class QualityVerdict:
    """``ok`` is True when no reason was found; ``reasons`` explain a rejection."""

    ok: bool
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rejected:
    """A text dropped by :meth:`QualityGate.filter` and why."""

    text: str
    reasons: tuple[str, ...]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


@dataclass(frozen=True, slots=True)
class QualityGate:
    """Minimum length in characters and in words, measured on the stripped text.

    Words are whitespace-separated tokens, so punctuation attached to a word does not
    count separately.  Both limits are checked and every failing one is reported.
    """

    min_chars: int = 30
    min_words: int = 3

    def check(self, text: str) -> QualityVerdict:
        """Judge one text; reasons read like ``"27 characters, fewer than 30"``."""
        stripped = text.strip()
        reasons: list[str] = []
        chars = len(stripped)
        if chars < self.min_chars:
            reasons.append(f"{_plural(chars, 'character')}, fewer than {self.min_chars}")
        words = len(stripped.split())
        if words < self.min_words:
            reasons.append(f"{_plural(words, 'word')}, fewer than {self.min_words}")
        problem = control_problem(stripped)
        if problem is not None:
            # a model's output with ESC sequences or NUL would hide text from the reviewer
            reasons.append(problem)
        return QualityVerdict(ok=not reasons, reasons=tuple(reasons))

    def filter(self, texts: Iterable[str]) -> tuple[list[str], list[Rejected]]:
        """Split ``texts`` into kept texts (unchanged, in order) and rejections."""
        kept: list[str] = []
        dropped: list[Rejected] = []
        for text in texts:
            verdict = self.check(text)
            if verdict.ok:
                kept.append(text)
            else:
                dropped.append(Rejected(text, verdict.reasons))
        return kept, dropped

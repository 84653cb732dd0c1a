"""The quality gate: reject distilled patterns too short or too degenerate to be knowledge.

Small models sometimes emit fragments ("ok", "User likes", a lone bullet).  Such
texts would pass the dedup gate as novel and pollute memory, so they are dropped
before it, with a reason a human can read in the review screen.

They also emit debris that is long enough: a sentence repeated, a list of timestamps,
the same two words over and over (:mod:`curator.core.degenerate`). The model then scores
such a text like any other (the demo model gave both of its loops importance 1.00, the
top of the prompt), so the gate drops it too, and says which kind it was so a run can
count its drops by kind. ``degenerate=False`` (the setting ``drop_degenerate``) turns
this check off and leaves the length limits alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from curator.core.degenerate import KINDS, degenerate_reason
from curator.core.textmeasure import measure
from curator.core.textsafety import SHOWS_NOTHING, control_problem, strip_blanks, visible
from curator.core.wording import plural

__all__ = ["Measured", "QualityGate", "QualityVerdict", "Rejected", "count_kinds", "measured"]


@dataclass(frozen=True, slots=True)
class QualityVerdict:
    """``ok`` is True when no reason was found; ``reasons`` explain a rejection.

    ``kind`` names the degenerate-text rule that failed (one of
    :data:`curator.core.degenerate.KINDS`), None when only other reasons did."""

    ok: bool
    reasons: tuple[str, ...] = ()
    kind: str | None = None


@dataclass(frozen=True, slots=True)
class Rejected:
    """A text dropped by :meth:`QualityGate.filter` and why."""

    text: str
    reasons: tuple[str, ...]
    kind: str | None = None


def count_kinds(dropped: Iterable[Rejected]) -> dict[str, int]:
    """How many drops were degenerate text of each kind (kinds with none left out)."""
    counts = dict.fromkeys(KINDS, 0)
    for rejected in dropped:
        if rejected.kind is not None:
            counts[rejected.kind] += 1
    return {kind: n for kind, n in counts.items() if n}


@dataclass(frozen=True, slots=True)
class Measured:
    """What the gate reads of a text whatever its limits: the text without blanks at its
    ends, its size (:func:`curator.core.textmeasure.measure`), and the reasons it fails
    under any limits (it shows nothing, it holds a control character). Read once, a text
    is judged at other limits with two comparisons (the quality what-if in Insights)."""

    text: str
    chars: int
    weighed: int
    words: int
    refusals: tuple[str, ...]


def measured(text: str) -> Measured:
    stripped = strip_blanks(text)  # a control at an end stays, to be refused by name
    size = measure(stripped)
    refusals: list[str] = []
    if stripped and not visible(stripped):
        refusals.append(SHOWS_NOTHING)  # zero-width characters: a blank row to review
    problem = control_problem(stripped)
    if problem is not None:
        # a model's output with ESC sequences or NUL would hide text from the reviewer
        refusals.append(problem)
    return Measured(stripped, size.chars, size.weighed, size.words, tuple(refusals))


@dataclass(frozen=True, slots=True)
class QualityGate:
    """Minimum length in characters and in words, measured on the stripped text.

    Words are whitespace-separated tokens, so punctuation attached to a word does not
    count separately. Scripts written without spaces (Chinese, Japanese, Thai) and those
    whose characters carry more than a letter are measured in English-equivalent
    characters and words (:mod:`curator.core.textmeasure`), so a pattern in them passes
    or fails as its English translation would. Both limits are checked and every failing
    one is reported; with ``degenerate`` the text is also checked for loops and debris.
    """

    min_chars: int = 30
    min_words: int = 3
    degenerate: bool = True

    def check(self, text: str) -> QualityVerdict:
        """Judge one text; reasons read like ``"27 characters, fewer than 30"``."""
        size = measured(text)
        reasons: list[str] = []
        if size.weighed < self.min_chars:
            counted = plural(size.chars, "character")
            if size.weighed != size.chars:  # say why six ideographs are not "6"
                counted += f" (worth {size.weighed} in this script)"
            reasons.append(f"{counted}, fewer than {self.min_chars}")
        if size.words < self.min_words:
            reasons.append(f"{plural(size.words, 'word')}, fewer than {self.min_words}")
        reasons += size.refusals
        # Only a text long enough is judged as debris: a fragment already has its reason.
        found = degenerate_reason(size.text) if self.degenerate and not reasons else None
        if found is not None:
            reasons.append(found.reason)
        kind = found.kind if found is not None else None
        return QualityVerdict(ok=not reasons, reasons=tuple(reasons), kind=kind)

    def filter(self, texts: Iterable[str]) -> tuple[list[str], list[Rejected]]:
        """Split ``texts`` into kept texts (unchanged, in order) and rejections."""
        kept: list[str] = []
        dropped: list[Rejected] = []
        for text in texts:
            verdict = self.check(text)
            if verdict.ok:
                kept.append(text)
            else:
                dropped.append(Rejected(text, verdict.reasons, verdict.kind))
        return kept, dropped

"""What the window works out before it starts a run: how many episodes, and how long.

The toolbar and the Runs pane start runs the same way (the pane's limit, then this
estimate, then a question when the run would be long), so a click never starts a
13-hour run without a word. :func:`estimate_run` runs on a background connection
(``ops.query``): counting 60,000 pending episodes is a bulk read. The speed is the loaded
model's measured one (:func:`curator.pipeline.run_history.seconds_per_item`).

No Qt in here, so the arithmetic is tested without a window.
"""

from __future__ import annotations

from dataclasses import dataclass

from curator.llm.model_file import ModelFileError, resolve_model_path
from curator.pipeline.run_history import (
    Speed,
    format_duration,
    pending_classify_count,
    pending_distill_count,
    seconds_per_item,
)
from curator.store.db import Store

CONFIRM_ABOVE_S = 300.0
"""Runs estimated longer than five minutes ask first (shorter ones just start)."""


@dataclass(frozen=True)
class RunEstimate:
    """How many episodes a run will process and about how long it will take."""

    kind: str
    limit: int | None
    pending: int
    speed: Speed

    @property
    def count(self) -> int:
        return self.pending if self.limit is None else min(self.pending, self.limit)

    @property
    def seconds(self) -> float:
        return self.count * self.speed.seconds_per_item

    def describe(self) -> str:
        return f"{self.count:,} episodes, about {format_duration(self.seconds)}"


def estimate_run(store: Store, kind: str, limit: int | None, model_path: str | None) -> RunEstimate:
    """Count the episodes ``kind`` would process and look up the model's measured speed.

    ``model_path`` is the saved setting; it resolves the way the worker resolves it, so
    the speed is the one of the model the run will load. An unusable model file gives the
    default speed (the run itself then fails with the file's problem).
    """
    pending = pending_classify_count(store) if kind == "classify" else pending_distill_count(store)
    try:
        path = str(resolve_model_path(None, model_path))
    except ModelFileError:
        path = str(model_path or "")
    return RunEstimate(kind, limit, pending, seconds_per_item(store, kind, path))


def question_for(estimate: RunEstimate) -> str | None:
    """The question to ask before a long run, or None when it may just start."""
    if estimate.seconds <= CONFIRM_ABOVE_S:
        return None
    verb = "Classify" if estimate.kind == "classify" else "Distill"
    return (
        f"{verb} {estimate.count:,} episodes — about {format_duration(estimate.seconds)} "
        f"at {estimate.speed.describe()}?\n\n{estimate.speed.source()} A smaller limit in "
        "the Runs pane processes fewer episodes per run; a run can be cancelled at any time "
        "and keeps what it finished."
    )


def classify_button_text(pending: int, limit: int | None) -> str:
    """The Episodes pane's Classify button: the number a click classifies, and of how many
    when the Runs pane's limit cuts the run short ("Classify 5 of 194 pending episodes")."""
    noun = "episode" if pending == 1 else "episodes"
    if limit is not None and limit < pending:
        return f"Classify {limit:,} of {pending:,} pending {noun}"
    return f"Classify {pending:,} pending {noun}"


def limit_from(value: object) -> int | None:
    """A limit read back from QSettings (an int, or a string in an ini file); None if unusable."""
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None

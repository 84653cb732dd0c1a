"""What the window works out before it starts a run: how many episodes, and how long.

The toolbar and the Runs pane start runs the same way (the pane's limit, then this
estimate, then a question when the run would be long), so a click never starts a
13-hour run without a word. :func:`estimate_run` runs on a background connection
(``ops.query``): counting 60,000 pending episodes is a bulk read. The time comes from
:mod:`curator.pipeline.eta`: the calls the run will make, the output budgets they may use,
and the speeds this model measured on this machine (or, said so, a default).

No Qt in here, so the arithmetic is tested without a window.
"""

from __future__ import annotations

from dataclasses import dataclass

from curator.core.wording import agree, plural
from curator.llm.model_file import ModelFileError, resolve_model_path
from curator.pipeline.eta import UNMEASURED, RunPlan, measured_rates, plan_run
from curator.pipeline.run_history import (
    format_duration,
    pending_classify_count,
    pending_distill_count,
)
from curator.store.db import Store
from curator.store.settings import load_settings

CONFIRM_ABOVE_S = 300.0
"""Runs estimated longer than five minutes ask first (shorter ones just start)."""


@dataclass(frozen=True)
class RunEstimate:
    """How many episodes a run will process and about how long it will take."""

    kind: str
    limit: int | None
    pending: int
    plan: RunPlan

    @property
    def count(self) -> int:
        return self.pending if self.limit is None else min(self.pending, self.limit)

    @property
    def seconds(self) -> float:
        return self.plan.seconds

    @property
    def measured(self) -> bool:
        return self.plan.rates.calls > 0

    def summary(self) -> str:
        """ "5 episodes, about 2 min" ("0 episodes": nothing to time)."""
        text = plural(self.count, "episode")
        return f"{text}, about {format_duration(self.seconds)}" if self.count else text

    def describe(self) -> str:
        """The summary, with the default named when nothing was measured."""
        return self.summary() if self.measured else f"{self.summary()}; {UNMEASURED}"


def estimate_run(store: Store, kind: str, limit: int | None) -> RunEstimate:
    """Count the episodes ``kind`` would process and plan the run's model time.

    Off the GUI thread: the settings are read here too (on a server, a round trip). The
    saved model path resolves the way the worker resolves it, so the speeds are the ones
    of the model the run will load. An unusable model file gives the default speeds (the
    run itself then fails with the file's problem).
    """
    settings = load_settings(store)
    model_path = settings.model_path
    pending = pending_classify_count(store) if kind == "classify" else pending_distill_count(store)
    try:
        path = str(resolve_model_path(None, model_path))
    except ModelFileError:
        path = str(model_path or "")
    count = pending if limit is None else min(pending, limit)
    plan = plan_run(kind, count, measured_rates(store, path), settings)
    return RunEstimate(kind, limit, pending, plan)


def question_for(estimate: RunEstimate) -> str | None:
    """The question to ask before a long run, or None when it may just start."""
    if estimate.seconds <= CONFIRM_ABOVE_S:
        return None
    verb = "Classify" if estimate.kind == "classify" else "Distill"
    noun = agree(estimate.count, "episode", "episodes")
    plan = estimate.plan
    calls = agree(plan.calls, "model call", "model calls")
    bound = ""
    if plan.worst_seconds > plan.seconds * 1.05:
        bound = (
            f" If every call wrote its whole output budget it would take up to "
            f"{format_duration(plan.worst_seconds)}."
        )
    later = ""
    if plan.later_seconds > 0:  # classify's features phase: measured, and said apart
        later = f", then about {format_duration(plan.later_seconds)} embedding them"
    return (
        f"{verb} {estimate.count:,} {noun} — about {format_duration(estimate.seconds)} "
        f"({plan.calls:,} {calls} at {plan.speeds()}{later})?\n\n{plan.rates.source()}"
        f"{bound} A smaller limit in the Runs pane processes fewer episodes per run; a run "
        "can be cancelled at any time and keeps what it finished."
    )


def classify_button_text(pending: int, limit: int | None) -> str:
    """The Episodes pane's Classify button: the number a click classifies, and of how many
    when the Runs pane's limit cuts the run short ("Classify 5 of 194 pending episodes")."""
    noun = agree(pending, "episode", "episodes")
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

"""Reading the run log: the run list, one run's trace, what is pending.

The CLI (``curator runs``, ``curator run ID``) and the window's Runs pane show the same
history; both read it through these functions instead of each writing its own peewee
queries. How fast a model is comes from the same log, in :mod:`curator.pipeline.eta`.

Qt-free; each function takes the :class:`Store` and reads in one short read transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from curator.store.db import Store
from curator.store.models import Episode, Run, TraceStep

FINISHED_STATUSES = ("done", "staged", "committed")
"""Runs that ran to their end: the only ones whose duration says how fast a model is."""

FEATURES_MS = "features_ms"
"""A classify run's stats key: the milliseconds its features phase took (embedding the
classified episodes), from which the next run's estimate counts that phase."""


def recent_runs(store: Store, limit: int) -> list[Run]:
    """The newest ``limit`` runs, newest first."""
    with store.read():
        return list(Run.select().order_by(Run.id.desc()).limit(max(0, int(limit))))


def running_runs(store: Store) -> list[Run]:
    """Runs still marked ``running`` (the one in progress; a dead one until it is swept)."""
    with store.read():
        return list(Run.select().where(Run.status == "running").order_by(Run.id.desc()))


def get_run(store: Store, run_id: int) -> Run | None:
    with store.read():
        return Run.get_or_none(Run.id == run_id)


def run_trace(store: Store, run_id: int) -> list[TraceStep]:
    """Every LLM call of one run, in the order they were made."""
    with store.read():
        return list(TraceStep.select().where(TraceStep.run == run_id).order_by(TraceStep.id))


@dataclass(frozen=True)
class RunDetail:
    """One run with its trace (what the Runs pane shows when a run is selected)."""

    run: Run | None
    trace: list[TraceStep]


def run_detail(store: Store, run_id: int) -> RunDetail:
    with store.read():
        return RunDetail(get_run(store, run_id), run_trace(store, run_id))


def run_seconds(run: Run) -> float | None:
    """Wall-clock duration of a finished run (None while it runs)."""
    if run.finished_at is None or run.started_at is None:
        return None
    return max(0.0, float((run.finished_at - run.started_at).total_seconds()))


def scoring_methods(run: Run) -> dict[str, int]:
    """How a classify run's labels were scored: method -> episodes (``scored_*`` counters)."""
    stats = run.stats if isinstance(run.stats, dict) else {}
    return {
        key.removeprefix("scored_"): int(value)
        for key, value in stats.items()
        if key.startswith("scored_") and isinstance(value, int) and not isinstance(value, bool)
    }


def scoring_method_text(run: Run) -> str:
    """The scoring method in a few words ("" for a run that does not score labels).

    From the per-label counters when the run recorded them (several methods: each with its
    count), else the backend's description in the run's params (a run still going).
    """
    methods = scoring_methods(run)
    if len(methods) == 1:
        return next(iter(methods))
    if methods:
        return ", ".join(f"{name} {count}" for name, count in methods.items())
    params = run.params if isinstance(run.params, dict) else {}
    return str(params.get("method") or "")


def pending_classify_count(store: Store) -> int:
    """Episodes a classify run without a limit would label (no model or human label)."""
    with store.read():
        return int(
            Episode.select()
            .where(Episode.human_label.is_null() & Episode.model_label.is_null())
            .count()
        )


def pending_distill_count(store: Store) -> int:
    """Episodes a distill run without a limit would use (both distillable categories)."""
    from curator.pipeline.distill_plan import distillable_episode_ids
    from curator.store.models import DISTILLABLE_LABELS

    return sum(len(distillable_episode_ids(store, label)) for label in DISTILLABLE_LABELS)


def format_duration(seconds: float) -> str:
    """A rough duration for a question to the user: "40 s", "12 min", "13 h", "2.5 days"."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    hours = seconds / 3600
    if hours < 48:
        return f"{hours:.0f} h" if hours >= 10 else f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def counts_text(stats: Any, *, skip_zero: bool = True) -> str:
    """A run's counters on one line ("classified 15 · noise 10 · ..."), methods and the
    features phase's duration (:data:`FEATURES_MS`, a time, not a count) left out."""
    if not isinstance(stats, dict):
        return ""
    parts = []
    for key, value in stats.items():
        if key.startswith("scored_") or key == FEATURES_MS or isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            if skip_zero and not value:
                continue
            parts.append(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}")
        elif isinstance(value, str):
            parts.append(f"{key} {value}")
    return " · ".join(parts)

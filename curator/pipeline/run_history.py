"""Reading the run log: the run list, one run's trace, and how fast past runs went.

The CLI (``curator runs``, ``curator run ID``) and the window's Runs pane show the same
history; both read it through these functions instead of each writing its own peewee
queries. The measured speed (:func:`seconds_per_item`) is what the window quotes before
a long run ("Classify 60,185 episodes — about 13 h at 0.8 s each?").

Qt-free; each function takes the :class:`Store` and reads in one short read transaction.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from peewee import fn

from curator.store.db import Store
from curator.store.models import Episode, Run, TraceStep
from curator.store.snapshot import tuples

FINISHED_STATUSES = ("done", "staged", "committed")
"""Runs that ran to their end: the only ones whose duration says how fast a model is."""

SPEED_SAMPLE_RUNS = 5
"""The newest finished runs of the same kind and model that make up the measured speed."""

DEFAULT_SECONDS_PER_ITEM: dict[str, float] = {"classify": 1.0, "distill": 10.0}
"""The estimate before any run of this model finished: about what a 7-9B model on a
laptop CPU takes per episode (classify scores one episode per call; distill spends three
generating calls per batch of up to 12 episodes). The first finished run replaces it."""

ITEMS_KEY = {"classify": "classified", "distill": "episodes"}
"""Which stats counter is the number of episodes a run of this kind processed."""


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


@dataclass(frozen=True)
class Speed:
    """Seconds per episode for one kind of run with one model, and where it came from."""

    seconds_per_item: float
    measured_runs: int
    """How many finished runs it was measured on (0: the documented default)."""

    def describe(self) -> str:
        """ "0.8 s each": the figure the question quotes."""
        return f"{_short_seconds(self.seconds_per_item)} each"

    def source(self) -> str:
        """Where the figure comes from, in one sentence."""
        if self.measured_runs == 1:
            return "Measured on this model's last finished run."
        if self.measured_runs:
            return f"Measured on this model's last {self.measured_runs} finished runs."
        return "No run of this model has finished yet, so this is a rough guess."


def _short_seconds(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def seconds_per_item(store: Store, kind: str, model_path: str | os.PathLike[str]) -> Speed:
    """The measured speed of ``kind`` runs with the model at ``model_path``.

    The model's own time per episode: the seconds of every LLM call in the traces of the
    newest finished runs of the same kind and model, over the episodes they processed.
    A run's fixed start (label calibration, relearning) is left out, or a first run of
    eight episodes would make every later estimate five times too long; a run whose
    trace has no timings counts with its wall-clock duration. Without any such run:
    :data:`DEFAULT_SECONDS_PER_ITEM`.
    """
    key = ITEMS_KEY.get(kind, "episodes")
    path = str(model_path)
    sample: list[tuple[int, float, int]] = []  # run id, wall seconds, episodes
    with store.read():
        query = (
            Run.select(Run.id, Run.started_at, Run.finished_at, Run.stats)
            .where(
                (Run.kind == kind)
                & (Run.model_path == path)
                & Run.status.in_(FINISHED_STATUSES)
                & Run.finished_at.is_null(False)
            )
            .order_by(Run.id.desc())
            .limit(SPEED_SAMPLE_RUNS * 4)
        )
        for run in query:
            count = (run.stats or {}).get(key)
            took = run_seconds(run)
            if not isinstance(count, int) or isinstance(count, bool) or count <= 0 or took is None:
                continue  # nothing done (or stats from an older version): says nothing
            sample.append((int(run.id), took, count))
            if len(sample) >= SPEED_SAMPLE_RUNS:
                break
        if not sample:
            return Speed(DEFAULT_SECONDS_PER_ITEM.get(kind, 1.0), 0)
        sums = (
            TraceStep.select(TraceStep.run, fn.SUM(TraceStep.seconds))
            .where(TraceStep.run.in_([run_id for run_id, _, _ in sample]))
            .group_by(TraceStep.run)
        )
        traced: dict[int, float] = {int(r[0]): float(r[1] or 0.0) for r in tuples(sums)}
    seconds = 0.0
    for run_id, wall, _ in sample:
        seconds += traced.get(run_id) or wall
    items = sum(count for _, _, count in sample)
    return Speed(seconds / items, len(sample))


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
    """A run's counters on one line ("classified 15 · noise 10 · ..."), methods left out."""
    if not isinstance(stats, dict):
        return ""
    parts = []
    for key, value in stats.items():
        if key.startswith("scored_") or isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            if skip_zero and not value:
                continue
            parts.append(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}")
        elif isinstance(value, str):
            parts.append(f"{key} {value}")
    return " · ".join(parts)

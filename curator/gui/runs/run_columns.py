"""The Runs pane's two tables: the run list's and the trace's columns.

Split from :mod:`curator.gui.runs.runs_pane`: what each column shows of a
:class:`~curator.store.models.Run` or :class:`~curator.store.models.TraceStep` (and its
tooltip), apart from the pane that starts runs and follows them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem

from curator.gui.widgets.qt_models import Column
from curator.pipeline.run_history import counts_text, run_seconds, scoring_method_text
from curator.store.models import Run, TraceStep, format_local, utcnow


def _date(moment: datetime | None) -> str:
    return "" if moment is None else format_local(moment, seconds=True)


def _duration(run: Run) -> float | None:
    took = run_seconds(run)
    if took is None and run.status == "running" and run.started_at is not None:
        return max(0.0, float((utcnow() - run.started_at).total_seconds()))
    return took


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _model(run: Run) -> str:
    return str(run.model_name or run.model_path or "")


def _model_tooltip(run: Run) -> str:
    parts = [p for p in (run.model_name, run.model_path) if p]
    if run.model_sha256:
        parts.append(f"sha256 {run.model_sha256[:16]}…")
    return "\n".join(parts)


def _counts_tooltip(run: Run) -> str:
    return counts_text(run.stats, skip_zero=False).replace(" · ", "\n")


def run_columns(live: Callable[[Run], str]) -> list[Column[Run]]:
    """The run table's columns; ``live`` gives the progress text of a running run."""

    def counts(run: Run) -> str:
        now = live(run)
        done = counts_text(run.stats)
        return f"{now} · {done}" if now and done else now or done

    def method_tooltip(run: Run) -> str:
        params = run.params if isinstance(run.params, dict) else {}
        return str(params.get("method") or "")

    return [
        Column("Run", lambda r: r.id, display=lambda r: f"#{r.id}", align_right=True),
        Column("Kind", lambda r: r.kind),
        Column("Status", lambda r: r.status, tooltip=lambda r: r.status_reason or r.status),
        Column(
            "Started", lambda r: r.started_at.timestamp(), display=lambda r: _date(r.started_at)
        ),
        Column(
            "Duration", _duration, display=lambda r: _fmt_duration(_duration(r)), align_right=True
        ),
        Column("Model", _model, tooltip=_model_tooltip),
        Column("Method", scoring_method_text, tooltip=method_tooltip),
        Column("Counts", counts, tooltip=_counts_tooltip),
    ]


TRACE_COLUMNS: list[Column[TraceStep]] = [
    Column("#", lambda t: t.id, align_right=True),
    Column("Step", lambda t: t.step),
    Column("Batch", lambda t: t.batch, align_right=True),
    Column("Episode", lambda t: t.episode_id, align_right=True),
    Column("Tokens in", lambda t: t.tokens_in, align_right=True),
    Column("Tokens out", lambda t: t.tokens_out, align_right=True),
    Column("Seconds", lambda t: t.seconds, display=lambda t: f"{t.seconds:.2f}", align_right=True),
    Column("Error", lambda t: t.error, tooltip=lambda t: t.error),
]


class MiddleElide(QStyledItemDelegate):
    """Elides in the middle: a model path keeps its folder's start and its file name."""

    def initStyleOption(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle

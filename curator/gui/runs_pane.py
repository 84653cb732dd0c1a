"""The Runs pane: start classification/distillation, watch them stream, read their traces.

One click starts a run on the shared :class:`~curator.gui.worker.LlmWorker`; this pane
only shows what the worker's queued signals report (progress, tokens per second, the
streamed output) and never waits for it. The run history and each run's trace (every
LLM call with its raw output) come straight from the ``run`` and ``trace_step`` tables.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from curator.gui.pane import Pane
from curator.gui.qt_models import Column, RowTableModel
from curator.gui.services import AppServices
from curator.store.models import Run, TraceStep, format_local

RUN_HISTORY_LIMIT = 500
"""The newest runs listed (older ones stay in the database and the CLI)."""

OUTPUT_MAX_BLOCKS = 5000
"""Lines kept in the live output view; older lines scroll away."""


def _date(moment: datetime | None) -> str:
    return "" if moment is None else format_local(moment, seconds=True)


def _duration(run: Run) -> float | None:
    if run.finished_at is None or run.started_at is None:
        return None
    return max(0.0, float((run.finished_at - run.started_at).total_seconds()))


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _counts(stats: Any) -> str:
    if not isinstance(stats, dict):
        return ""
    parts = []
    for key, value in stats.items():
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            parts.append(f"{key}={value}")
    return ", ".join(parts)


RUN_COLUMNS: list[Column[Run]] = [
    Column("Run", lambda r: r.id, display=lambda r: f"#{r.id}", align_right=True),
    Column("Kind", lambda r: r.kind),
    Column("Status", lambda r: r.status, tooltip=lambda r: r.status_reason or r.status),
    Column("Started", lambda r: r.started_at.timestamp(), display=lambda r: _date(r.started_at)),
    Column("Duration", _duration, display=lambda r: _fmt_duration(_duration(r)), align_right=True),
    Column("Model", lambda r: r.model_name or r.model_path, tooltip=lambda r: r.model_path),
    Column("Counts", lambda r: _counts(r.stats), tooltip=lambda r: _counts(r.stats)),
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


class RunsPane(Pane):
    """Start runs, follow the current one live, and inspect past runs and their traces."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("runsPane")
        self.worker = services.worker
        self.show_message: Callable[[str, str], None] = self._default_show_message
        """(title, text) -> None: how errors reach the user; tests replace it to capture."""

        self.classify_button = QPushButton("Classify pending")
        self.classify_button.setObjectName("classifyButton")
        self.classify_button.setToolTip("Label every episode that has no label yet")
        self.classify_button.clicked.connect(self.start_classify)
        self.distill_button = QPushButton("Distill")
        self.distill_button.setObjectName("distillButton")
        self.distill_button.setToolTip(
            "Distil patterns from labelled, not yet distilled episodes into a staged run"
        )
        self.distill_button.clicked.connect(self.start_distill)
        self.limit_spin = QSpinBox()
        self.limit_spin.setObjectName("limitSpin")
        self.limit_spin.setRange(0, 1_000_000)
        self.limit_spin.setSpecialValueText("no limit")
        self.limit_spin.setPrefix("limit ")
        self.limit_spin.setToolTip("Process at most this many episodes (0: all)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.clicked.connect(self.cancel)
        self.model_label = QLabel("Model: not loaded yet (loads on the first run)")
        self.model_label.setObjectName("modelLabel")

        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("runProgress")
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.progress_label = QLabel("Idle")
        self.progress_label.setObjectName("progressLabel")
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("speedLabel")
        self.output = QPlainTextEdit()
        self.output.setObjectName("runOutput")
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(OUTPUT_MAX_BLOCKS)
        self.output.setPlaceholderText("The model's output of the current step streams here.")

        self.runs = RowTableModel(RUN_COLUMNS, self)
        self.runs_view = self._table(self.runs, "runsTable")
        self.runs_view.setSortingEnabled(True)
        self.runs_view.sortByColumn(0, Qt.SortOrder.DescendingOrder)
        self.runs_view.selectionModel().currentRowChanged.connect(self._on_run_selected)
        self.trace = RowTableModel(TRACE_COLUMNS, self)
        self.trace_view = self._table(self.trace, "traceTable")
        self.trace_view.selectionModel().currentRowChanged.connect(self._on_step_selected)
        self.raw_output = QPlainTextEdit()
        self.raw_output.setObjectName("rawOutput")
        self.raw_output.setReadOnly(True)
        self.raw_output.setPlaceholderText("Select a trace step to read the model's raw output.")
        self.run_title = QLabel("Select a run to see its trace.")
        self.run_title.setWordWrap(True)

        buttons = QHBoxLayout()
        for w in (self.classify_button, self.distill_button, self.limit_spin, self.cancel_button):
            buttons.addWidget(w)
        buttons.addStretch(1)
        buttons.addWidget(self.model_label)
        status_row = QHBoxLayout()
        status_row.addWidget(self.progress_bar, 2)
        status_row.addWidget(self.progress_label, 2)
        status_row.addWidget(self.speed_label)

        live = QWidget()
        lv = QVBoxLayout(live)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(buttons)
        lv.addLayout(status_row)
        lv.addWidget(self.output)
        history = QWidget()
        hv = QVBoxLayout(history)
        hv.setContentsMargins(0, 0, 0, 0)
        hv.addWidget(QLabel("<b>Runs</b>"))
        hv.addWidget(self.runs_view)
        trace_box = QWidget()
        tv = QVBoxLayout(trace_box)
        tv.setContentsMargins(0, 0, 0, 0)
        tv.addWidget(self.run_title)
        trace_split = QSplitter(Qt.Orientation.Vertical)
        trace_split.addWidget(self.trace_view)
        trace_split.addWidget(self.raw_output)
        tv.addWidget(trace_split)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(history)
        lower.addWidget(trace_box)
        lower.setStretchFactor(0, 1)
        lower.setStretchFactor(1, 1)
        outer = QSplitter(Qt.Orientation.Vertical)
        outer.addWidget(live)
        outer.addWidget(lower)
        outer.setStretchFactor(0, 1)
        outer.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(outer)

        if self.worker is not None:
            self.worker.progress.connect(self._on_progress)
            self.worker.token.connect(self._on_token)
            self.worker.finished.connect(self._on_finished)
            self.worker.failed.connect(self._on_failed)
            self.worker.model_loaded.connect(self._on_model_loaded)
            self.worker.busy_changed.connect(self._update_buttons)
        self._update_buttons()

    @staticmethod
    def _table(model: RowTableModel[Any], name: str) -> QTableView:
        view = QTableView()
        view.setObjectName(name)
        view.setModel(model)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.verticalHeader().setVisible(False)
        view.setWordWrap(False)
        view.horizontalHeader().setStretchLastSection(True)
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        return view

    def _default_show_message(self, title: str, text: str) -> None:
        self.services.dialogs.warning(self, title, text)

    # -- commands ---------------------------------------------------------------------------

    def _limit(self) -> int | None:
        return self.limit_spin.value() or None

    def start_classify(self) -> bool:
        return self._start("classify")

    def start_distill(self) -> bool:
        return self._start("distill")

    def _start(self, kind: str) -> bool:
        if self.worker is None:
            self.show_message("Runs", "No model worker is available in this window.")
            return False
        starter = self.worker.start_classify if kind == "classify" else self.worker.start_distill
        if not starter(self._limit()):
            self.status_message.emit("A run is already in progress.")
            return False
        self.output.clear()
        self.progress_bar.setRange(0, 0)  # busy indicator until the first progress report
        self.progress_label.setText(f"Starting {kind} (loading the model if needed)…")
        self.speed_label.setText("")
        self.status_message.emit(f"{kind.capitalize()} run started.")
        return True

    def cancel(self) -> None:
        if self.worker is not None and self.worker.busy:
            self.worker.cancel()
            self.progress_label.setText("Cancelling…")

    def _update_buttons(self, *_: object) -> None:
        busy = self.worker is not None and self.worker.busy
        available = self.worker is not None
        self.classify_button.setEnabled(available and not busy)
        self.distill_button.setEnabled(available and not busy)
        self.limit_spin.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)

    # -- worker signals (queued, on the GUI thread) -----------------------------------------

    def _on_progress(self, progress: Any) -> None:
        total = max(int(progress.total), 0)
        self.progress_bar.setRange(0, max(total, 1))
        self.progress_bar.setValue(min(int(progress.done), max(total, 1)))
        text = f"{progress.step}: {progress.done}/{progress.total}"
        if progress.message:
            text += f" — {progress.message}"
        self.progress_label.setText(text)
        if progress.tokens_per_s:
            self.speed_label.setText(f"{progress.tokens_per_s:.1f} tokens/s")

    def _on_token(self, text: str) -> None:
        cursor = self.output.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def _on_finished(self, result: Any) -> None:
        status = getattr(result, "status", "done")
        message = getattr(result, "message", "") or ""
        run_id = getattr(result, "run_id", None)
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(1 if status != "cancelled" else 0)
        label = f"Run #{run_id} {status}" if run_id is not None else f"Run {status}"
        self.progress_label.setText(label + (f": {message}" if message else ""))
        self.status_message.emit(label + ".")
        self.refresh()
        if run_id is not None:
            self.select_run(run_id)
        self.data_changed.emit()

    def _on_failed(self, message: str) -> None:
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self.progress_label.setText(f"Failed: {message}")
        self.refresh()
        self.data_changed.emit()
        self.show_message("Run failed", message)

    def _on_model_loaded(self, description: str) -> None:
        self.model_label.setText(f"Model loaded: {description}" if description else "Model loaded")

    # -- history ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the run list (keeping the selected run) and its trace."""
        selected = self.selected_run_id()
        runs = list(Run.select().order_by(Run.id.desc()).limit(RUN_HISTORY_LIMIT))
        self.runs.set_rows(runs)
        if selected is not None:
            self.select_run(selected)
        self._update_buttons()

    def selected_run_id(self) -> int | None:
        run = self.runs.row_at(self.runs_view.selectionModel().currentIndex().row())
        return run.id if run is not None else None

    def select_run(self, run_id: int) -> None:
        row = self.runs.find_row(lambda r: r.id == run_id)
        if row < 0:
            return
        index = self.runs.index(row, 0)
        selection = self.runs_view.selectionModel()
        if selection.currentIndex().row() == row:
            self._load_trace(run_id)  # same row (reloaded rows): currentRowChanged won't fire
            return
        selection.setCurrentIndex(
            index, selection.SelectionFlag.ClearAndSelect | selection.SelectionFlag.Rows
        )  # currentRowChanged loads the trace

    def _on_run_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        run = self.runs.row_at(current.row())
        self._load_trace(run.id if run is not None else None)

    def _load_trace(self, run_id: int | None) -> None:
        step_id = None
        step = self.trace.row_at(self.trace_view.selectionModel().currentIndex().row())
        if step is not None and step.run_id == run_id:
            step_id = step.id
        if run_id is None:
            self.trace.set_rows([])
            self.run_title.setText("Select a run to see its trace.")
            self.raw_output.clear()
            return
        steps = list(TraceStep.select().where(TraceStep.run == run_id).order_by(TraceStep.id))
        self.trace.set_rows(steps)
        run = Run.get_or_none(Run.id == run_id)
        if run is not None:
            reason = f" ({run.status_reason})" if run.status_reason else ""
            self.run_title.setText(
                f"<b>Run #{run.id}</b> {run.kind}, {run.status}{reason}; {len(steps)} LLM call(s). "
                f"{_counts(run.stats)}"
            )
        if step_id is not None:
            row = self.trace.find_row(lambda t: t.id == step_id)
            if row >= 0:
                self.trace_view.selectRow(row)
                return
        self.raw_output.clear()

    def _on_step_selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        step = self.trace.row_at(current.row())
        if step is None:
            self.raw_output.clear()
            return
        parts = [step.raw_output or "(no output)"]
        if step.parsed is not None:
            parts.append(f"\n--- parsed ---\n{step.parsed}")
        if step.error:
            parts.append(f"\n--- error ---\n{step.error}")
        self.raw_output.setPlainText("".join(parts))

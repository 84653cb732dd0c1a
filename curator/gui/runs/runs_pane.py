"""The Runs pane: start classification/distillation, watch them stream, read their traces.

One click starts a run on the shared :class:`~curator.gui.runtime.worker.LlmWorker`; this pane
only shows what the worker's queued signals report (progress, speed and time left in
:mod:`curator.gui.runs.run_progress`, the streamed output) and never waits for it. The
toolbar's Classify/Distill start their runs here too (:meth:`RunsPane.start_classify`),
so both entry points use the same limit and the same question before a long run (see
:mod:`curator.gui.runs.run_start`); the tables' columns are in :mod:`curator.gui.runs.run_columns`.

The run history and each run's trace are read through :mod:`curator.pipeline.run_history`
(the functions ``curator runs`` and ``curator run`` use) on a background connection
(``ops.query``): a distill run's stats list every episode it used, so 500 runs can be
megabytes. While a run goes, its row is re-read about once a second so the table shows it
running, with its progress in the Counts column.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, QSettings, Qt, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from curator.gui.runs.run_columns import TRACE_COLUMNS, MiddleElide, run_columns
from curator.gui.runs.run_progress import RunProgress, elastic
from curator.gui.runs.run_start import RunEstimate, estimate_run, limit_from, question_for
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.forecast_note import plural
from curator.gui.widgets.pane import Pane
from curator.gui.widgets.qt_models import FIT_ROWS, RowTableModel
from curator.gui.widgets.row_table import RowTableView
from curator.pipeline.run_history import (
    RunDetail,
    counts_text,
    recent_runs,
    run_detail,
    running_runs,
)
from curator.store.models import GATE_STEPS, Run

RUN_HISTORY_LIMIT = 500
"""The newest runs listed (older ones stay in the database and the CLI)."""

OUTPUT_MAX_BLOCKS = 5000
"""Lines kept in the live output view; older lines scroll away."""

LIVE_REFRESH_S = 1.0
"""The running run's row is re-read at most this often while progress arrives."""

LIMIT_KEY = "runs/limit"
"""QSettings key of the run limit (see :meth:`RunsPane.use_settings` for why QSettings)."""

STREAMED_STEPS = ("extract", "refine", "importance")
"""Steps whose model text streams into the output box, each under its own heading."""


class RunsPane(Pane):
    """Start runs, follow the current one live, and inspect past runs and their traces."""

    limit_changed = Signal(object)
    """The run limit (int, or None for no limit) whenever it changes or is restored."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("runsPane")
        self.worker = services.worker
        self.show_message: Callable[[str, str], None] = self._default_show_message
        """(title, text) -> None: how errors reach the user; tests replace it to capture."""
        self._qsettings: QSettings | None = None
        self._starting = ""  # the kind whose estimate is being read (buttons off meanwhile)
        self._live_text: dict[int, str] = {}
        self._last_progress: Any = None
        self._output_header = ""  # written before the next token: which step's text follows
        self._last_live_query = 0.0
        self._select_after: int | None = None
        self._trace_run: int | None = None

        self.classify_button = QPushButton("Classify pending")
        self.classify_button.setObjectName("classifyButton")
        self.classify_button.setToolTip("Label the episodes that have no label yet")
        self.classify_button.clicked.connect(self.start_classify)
        self.distill_button = QPushButton("Distill")
        self.distill_button.setObjectName("distillButton")
        self.distill_button.setToolTip(
            "Distil patterns from labelled, not yet distilled episodes into a staged run"
        )
        self.distill_button.clicked.connect(self.start_distill)
        self.limit_spin = QSpinBox()
        self.limit_spin.setObjectName("limitSpin")
        self.limit_spin.setRange(0, 10_000_000)
        self.limit_spin.setSpecialValueText("no limit")
        self.limit_spin.setPrefix("limit ")
        self.limit_spin.setToolTip(
            "Process at most this many episodes per run (0: all). The toolbar's Classify "
            "and Distill use it too; it is remembered."
        )
        self.limit_spin.valueChanged.connect(self._save_limit)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.clicked.connect(self.cancel)
        self.model_label = elastic(QLabel("Model: not loaded yet (loads on the first run)"))
        self.model_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.model_label.setObjectName("modelLabel")

        self.run_progress = RunProgress()
        self.progress_bar = self.run_progress.bar
        self.progress_label = self.run_progress.label
        self.speed_label = self.run_progress.speed_label
        self.remaining_label = self.run_progress.remaining_label
        self.output = QPlainTextEdit()
        self.output.setObjectName("runOutput")
        self.output.setReadOnly(True)
        self.output.setMaximumBlockCount(OUTPUT_MAX_BLOCKS)
        self.output.setPlaceholderText(
            "The run's output streams here: each labelled episode during classify, the "
            "model's text during distill."
        )

        self.runs = RowTableModel(run_columns(self._live_for), self)
        self.runs_view = self._table(self.runs, "runsTable")
        self.runs_view.setSortingEnabled(True)
        self.runs_view.sortByColumn(0, Qt.SortOrder.DescendingOrder)
        self._size_run_columns()
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
        self.run_title.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)

        self._layout()
        if self.worker is not None:
            self.worker.progress.connect(self._on_progress)
            self.worker.token.connect(self._on_token)
            self.worker.finished.connect(self._on_finished)
            self.worker.failed.connect(self._on_failed)
            self.worker.model_loaded.connect(self._on_model_loaded)
            self.worker.busy_changed.connect(self._busy_changed)
        self._update_buttons()

    def _layout(self) -> None:
        """Controls and live output on top, the run list across the full width (its Model
        and Counts columns need it), the selected run's trace and raw output below."""
        buttons = QHBoxLayout()
        for w in (self.classify_button, self.distill_button, self.limit_spin, self.cancel_button):
            buttons.addWidget(w)
        buttons.addWidget(self.model_label, 1)
        live = QWidget()
        lv = QVBoxLayout(live)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.addLayout(buttons)
        lv.addWidget(self.run_progress)
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
        trace_split = QSplitter(Qt.Orientation.Horizontal)
        trace_split.setObjectName("runsTraceSplitter")
        trace_split.addWidget(self.trace_view)
        trace_split.addWidget(self.raw_output)
        trace_split.setStretchFactor(0, 3)
        trace_split.setStretchFactor(1, 2)
        tv.addWidget(trace_split)
        outer = QSplitter(Qt.Orientation.Vertical)
        outer.setObjectName("runsSplitter")
        for widget, stretch in ((live, 2), (history, 2), (trace_box, 3)):
            outer.addWidget(widget)
            outer.setStretchFactor(outer.count() - 1, stretch)
        layout = QVBoxLayout(self)
        layout.addWidget(outer)

    @staticmethod
    def _table(model: RowTableModel[Any], name: str) -> QTableView:
        view = RowTableView()
        view.setObjectName(name)
        view.setModel(model)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.verticalHeader().setVisible(False)
        view.setWordWrap(False)
        view.horizontalHeader().setStretchLastSection(True)
        view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # ResizeToContents measures at every layout: a classify run's trace of 564 steps,
        # every row read, held the GUI thread 413-765 ms, and 200-266 ms at each return
        view.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
        return view

    def _size_run_columns(self) -> None:
        """Short columns fit their content; Model and Counts share the rest of the width
        (elided in the middle, the full text in their tooltips) instead of pushing the
        table wider than the pane."""
        header = self.runs_view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(40)
        for title in ("Model", "Counts"):
            header.setSectionResizeMode(
                self.runs.column_index(title), QHeaderView.ResizeMode.Stretch
            )
        method = self.runs.column_index("Method")
        header.setSectionResizeMode(method, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(method, 110)
        self._model_delegate = MiddleElide(self.runs_view)
        self.runs_view.setItemDelegateForColumn(
            self.runs.column_index("Model"), self._model_delegate
        )

    def _default_show_message(self, title: str, text: str) -> None:
        self.services.dialogs.warning(self, title, text)

    # -- the run limit ----------------------------------------------------------------------

    def use_settings(self, qsettings: QSettings) -> None:
        """Remember the limit in the user's window settings, and restore the saved one.

        QSettings rather than the database's settings table: the limit is how much work
        this user wants one click to start, a window preference like the splitter sizes,
        not a property of the memory the CLI and the pipeline share (the CLI takes
        ``--limit`` on each command). It is saved on every change, so it survives a crash.
        """
        self._qsettings = qsettings
        saved = limit_from(qsettings.value(LIMIT_KEY))
        if saved is not None:
            self.limit_spin.blockSignals(True)
            self.limit_spin.setValue(min(saved, self.limit_spin.maximum()))
            self.limit_spin.blockSignals(False)
        self._limit_shown()

    def _limit_shown(self) -> None:
        """Name the limit on the Classify button, and tell the window (whose Episodes pane
        names the number its own Classify button starts)."""
        limit = self.limit()
        self.classify_button.setText(
            "Classify pending" if limit is None else f"Classify up to {limit:,} pending"
        )
        self.limit_changed.emit(limit)

    def _save_limit(self, value: int) -> None:
        self._limit_shown()
        if self._qsettings is not None:
            self._qsettings.setValue(LIMIT_KEY, int(value))

    def limit(self) -> int | None:
        """The limit both entry points use (None: every pending episode)."""
        return self.limit_spin.value() or None

    # -- commands ---------------------------------------------------------------------------

    def start_classify(self) -> bool:
        return self._start("classify")

    def start_distill(self) -> bool:
        return self._start("distill")

    def _start(self, kind: str) -> bool:
        """Read how much there is to do (off the GUI thread), ask when it is long, start.

        True when the request was taken; the run itself starts when the estimate arrives
        (and the user agreed, if asked). False when a run is going or no worker exists.
        """
        if self.worker is None:
            self.show_message("Runs", "No model worker is available in this window.")
            return False
        if self.worker.busy or self._starting:
            self.status_message.emit("A run is already in progress.")
            return False
        limit = self.limit()
        self._starting = kind
        self._update_buttons()
        self.progress_label.setText(f"Counting the episodes to {kind}…")
        self.ops.query(
            "runs-estimate",
            lambda ctx: estimate_run(ctx.store, kind, limit),
            self._estimated,
            self._estimate_failed,
        )
        return True

    def _estimate_failed(self, message: str) -> None:
        self._starting = ""
        self._update_buttons()
        self.progress_label.setText("Idle")
        self.show_message("Runs", f"Could not count the episodes to process: {message}")

    def _estimated(self, estimate: RunEstimate) -> None:
        kind = self._starting
        self._starting = ""
        self._update_buttons()
        self.progress_label.setText("Idle")
        if self.worker is None or kind != estimate.kind:
            return
        question = question_for(estimate)
        if question is None:
            self._launch(estimate)
            return
        name = kind.capitalize()
        self.services.dialogs.confirm(
            self, f"{name}?", question, lambda: self._launch(estimate), yes_text=name
        )  # no: nothing starts

    def _launch(self, estimate: RunEstimate) -> None:
        kind = estimate.kind
        if self.worker is None:
            return
        starter = self.worker.start_classify if kind == "classify" else self.worker.start_distill
        if not starter(estimate.limit):
            self.status_message.emit("A run is already in progress.")
            return
        self.output.clear()
        self._live_text.clear()
        self._last_progress = None
        self._output_header = ""
        self._last_live_query = 0.0
        self.run_progress.starting(kind, estimate)
        self.status_message.emit(f"{kind.capitalize()} run started ({estimate.describe()}).")

    def cancel(self) -> None:
        if self.worker is not None and self.worker.busy:
            self.worker.cancel()
            self.progress_label.setText("Cancelling…")

    def _busy_changed(self, busy: bool) -> None:
        self._update_buttons()
        if busy:
            self._refresh_live(force=True)  # the new run's row, as soon as it exists

    def _update_buttons(self, *_: object) -> None:
        busy = self.worker is not None and (self.worker.busy or bool(self._starting))
        available = self.worker is not None
        self.classify_button.setEnabled(available and not busy)
        self.distill_button.setEnabled(available and not busy)
        self.limit_spin.setEnabled(not busy)
        self.cancel_button.setEnabled(self.worker is not None and self.worker.busy)

    # -- worker signals (queued, on the GUI thread) -----------------------------------------

    def _on_progress(self, progress: Any) -> None:
        last = self._last_progress
        if progress.step in STREAMED_STEPS and (
            last is None or (last.step, last.done) != (progress.step, progress.done)
        ):
            # One model call's text under its own heading (the worker sends the tokens of
            # the call before first), instead of the three steps run together.
            batch = f"batch {progress.done + 1}/{progress.total}"
            self._output_header = f"── {progress.step}, {batch} ──\n"
        self._last_progress = progress
        self.run_progress.show_progress(progress)
        self._refresh_live()

    def _on_token(self, text: str) -> None:
        cursor = self.output.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if self._output_header:
            if not self.output.document().isEmpty():
                cursor.insertText("\n" if self.output.toPlainText().endswith("\n") else "\n\n")
            cursor.insertText(self._output_header)
            self._output_header = ""
        cursor.insertText(text)
        self.output.setTextCursor(cursor)
        self.output.ensureCursorVisible()

    def _on_finished(self, result: Any) -> None:
        status = getattr(result, "status", "done")
        message = getattr(result, "message", "") or ""
        run_id = getattr(result, "run_id", None)
        self._live_text.clear()
        label = f"Run #{run_id} {status}" if run_id is not None else f"Run {status}"
        if message.startswith(f"{status} "):  # "staged 3 candidates…" after "Run #2 staged"
            message = message[len(status) + 1 :]
        # a cancelled run's bar stays where its text says it stopped
        self.run_progress.finished(status, label + (f": {message}" if message else ""))
        self.status_message.emit(label + ".")
        self._select_after = run_id
        self.refresh()
        self.data_changed.emit()

    def _on_failed(self, message: str) -> None:
        """The bar says it; the one dialog is the window's (a run started from Insights
        or the toolbar fails too), not a second one on top of it."""
        self._live_text.clear()
        self.run_progress.failed(message)
        self.refresh()
        self.data_changed.emit()

    def _on_model_loaded(self, description: str) -> None:
        text = f"Model loaded: {description}" if description else "Model loaded"
        self.model_label.setText(text)
        self.model_label.setToolTip(text)

    # -- the running run's row ---------------------------------------------------------------

    def _live_for(self, run: Run) -> str:
        return self._live_text.get(int(run.id), "") if run.status == "running" else ""

    def _refresh_live(self, force: bool = False) -> None:
        """Re-read the running run's row (one indexed query), at most once a second."""
        now = time.monotonic()
        if not force and now - self._last_live_query < LIVE_REFRESH_S:
            return
        self._last_live_query = now
        self.ops.query(
            "runs-live", lambda ctx: running_runs(ctx.store), self._show_live, self._live_failed
        )

    def _live_failed(self, message: str) -> None:
        """Polled every second during a run: a line in the status bar, never a dialog each."""
        self.status_message.emit(f"Runs: the running run could not be read: {message}")

    def _show_live(self, runs: list[Run]) -> None:
        worker_busy = self.worker is not None and self.worker.busy
        progress = self._last_progress
        if worker_busy and progress is not None and runs:
            newest = int(runs[0].id)  # ours: one worker, and a dead run is swept at start
            self._live_text[newest] = f"{progress.step} {progress.done}/{progress.total}"
        shown = {int(r.id): i for i, r in enumerate(self.runs.rows())}
        for run in runs:
            row = shown.get(int(run.id), -1)
            if row < 0:
                self.refresh()  # a new run: the whole list once (it is sorted there)
                return
            self.runs.replace_row(row, run)

    # -- history ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the run list (keeping the selected run) and its trace, off the GUI thread."""
        self.ops.query(
            "runs-list",
            lambda ctx: recent_runs(ctx.store, RUN_HISTORY_LIMIT),
            self._show_runs,
            self._list_failed,
        )
        self._update_buttons()

    def _list_failed(self, message: str) -> None:
        self._select_after = None
        self.show_message("Runs", f"The run history could not be read: {message}")

    def _show_runs(self, runs: list[Run]) -> None:
        selected = self._select_after or self.selected_run_id()
        self._select_after = None
        self.runs.set_rows(runs)
        if selected is not None:
            self.select_run(selected)

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
        if run_id is None:
            self._trace_run = None
            self.trace.set_rows([])
            self.run_title.setText("Select a run to see its trace.")
            self.raw_output.clear()
            return
        self.ops.query(
            "runs-trace",
            lambda ctx: run_detail(ctx.store, run_id),
            self._show_trace,
            lambda message: self.run_title.setText(f"Run #{run_id} could not be read: {message}"),
        )

    def _show_trace(self, detail: RunDetail) -> None:
        run = detail.run
        if run is None or run.id != self.selected_run_id():
            return  # the selection moved on (or the run was deleted) meanwhile
        step_id = None
        step = self.trace.row_at(self.trace_view.selectionModel().currentIndex().row())
        if step is not None and self._trace_run == run.id:
            step_id = step.id
        self._trace_run = run.id
        self.trace.set_rows(detail.trace)
        reason = f" ({run.status_reason})" if run.status_reason else ""
        model_calls = sum(1 for step in detail.trace if step.step not in GATE_STEPS)
        self.run_title.setText(
            f"<b>Run #{run.id}</b> {run.kind}, {run.status}{reason}; "
            f"{plural(model_calls, 'LLM call')}. {counts_text(run.stats)}"
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

"""Insights pane: how far to trust the model and the gate, and who leaves the prompt.

The pane draws :class:`curator.pipeline.insights.Insights` and computes nothing itself.
Loading reads every labelled episode and reviewed candidate, which can take longer than
a frame on a large database, so it runs as a background query of the window's
:class:`~curator.gui.runtime.operations.StoreOps` (its own SQLite connection; only the newest
request is drawn). Dragging a threshold line only recomputes the what-if from the ratios
already loaded (a core function over a list, no database access). "Apply thresholds"
writes the two settings as a background write (with the window's busy state) and can be
undone with the button next to it.

Sections are tabs; a later feature adds its own with :meth:`InsightsPane.add_section`.
The learned classifier's tab (:mod:`curator.gui.insights.learning_section`) is one: its curve is
computed with the rest on the pool thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from curator.core.whatif import GATE_DECISIONS, WhatIf
from curator.core.wording import agree, plural
from curator.gui.insights.confusion_model import ConfusionModel
from curator.gui.insights.insights_charts import (
    ForecastChart,
    RatioHistogram,
    ReliabilityChart,
    SeriesChart,
)
from curator.gui.insights.insights_parts import (
    FORECAST_COLUMNS,
    OVERRIDE_COLUMNS,
    by_id,
    matrix_view,
    num,
    pct,
    table_view,
)
from curator.gui.insights.learning_section import LearningSection
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.pane import Pane
from curator.gui.widgets.qt_models import RowTableModel
from curator.pipeline.insights import Insights, compute_insights, run_choices
from curator.pipeline.replay import ReplayResult
from curator.store.db import Store
from curator.store.decay_clock import KEY
from curator.store.models import LABELS
from curator.store.settings import update_settings


class InsightsPane(Pane):
    show_episodes = Signal(object, str)  # episode ids, a title for the filter
    loaded = Signal(object)  # the Insights now drawn
    thresholds_saved = Signal(float, float)

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("insightsPane")
        self.insights: Insights | None = None
        self._previous_thresholds: tuple[float, float] | None = None

        self.run_combo = QComboBox()
        self.run_combo.setObjectName("insightsRunCombo")
        self.run_combo.addItem("All runs", None)
        self.run_combo.activated.connect(lambda _i: self.refresh())
        self.reload_button = QPushButton("Reload")
        self.reload_button.clicked.connect(self.refresh)
        self.state_label = QLabel()
        self.state_label.setObjectName("insightsState")
        self.replay_button = QPushButton("Replay the gold set")
        self.replay_button.setObjectName("replayButton")
        self.replay_button.setToolTip(
            "Classify every human-labelled episode again with the current model and prompt, "
            "without changing any label, and add the run to the chart"
        )
        self.replay_button.clicked.connect(self.start_replay)
        worker = services.worker
        self.replay_button.setEnabled(worker is not None)
        if worker is not None:
            # a method of this pane, not a lambda: the connection goes with the pane, and
            # the shared worker never reaches a destroyed pane's button
            worker.busy_changed.connect(self._worker_busy)
            worker.finished.connect(self._run_finished)
        top = QHBoxLayout()
        top.addWidget(QLabel("Show"))
        top.addWidget(self.run_combo)
        top.addWidget(self.reload_button)
        top.addWidget(self.state_label, 1)
        top.addWidget(self.replay_button)

        self.sections = QTabWidget()
        self.sections.setObjectName("insightsSections")
        self._built = False  # the sections' charts and tables: made when first loaded

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.sections, 1)

    def _build_sections(self) -> None:
        """The sections, made on the first load rather than with the window: their six
        charts took half of the window's construction, for a pane most sessions never
        open (the window loads a pane when it is first shown)."""
        if self._built:
            return
        self._built = True
        self.sections.addTab(self._build_agreement(), "Model vs human")
        self.sections.addTab(self._build_gate(), "Gate and thresholds")
        self.sections.addTab(self._build_forecast(), "Decay forecast")
        self.learning = LearningSection()
        self.add_section(self.learning, "Learning")

    def add_section(self, widget: QWidget, title: str) -> int:
        """Add a tab (a later feature's figures); returns its index."""
        return self.sections.addTab(widget, title)

    # -- sections ---------------------------------------------------------------------------

    def _build_agreement(self) -> QWidget:
        self.label_model = ConfusionModel(LABELS, self)
        self.label_table = matrix_view(self.label_model, "labelMatrix")
        self.label_table.clicked.connect(self._label_cell_clicked)
        self.label_table.setToolTip("Click a cell to see its episodes in the Episodes pane")
        self.label_summary = QLabel()
        self.label_summary.setObjectName("labelSummary")
        self.label_summary.setWordWrap(True)
        self.reliability = ReliabilityChart()
        self.reliability.setObjectName("reliabilityChart")
        self.series_chart = SeriesChart()
        self.series_chart.setObjectName("seriesChart")

        matrix_box = QGroupBox("Labels: model vs human (rows human, columns model)")
        mv = QVBoxLayout(matrix_box)
        mv.addWidget(self.label_table)
        mv.addWidget(self.label_summary)
        rel_box = QGroupBox("Calibration of the label confidence")
        QVBoxLayout(rel_box).addWidget(self.reliability)
        series_box = QGroupBox("Agreement per run")
        QVBoxLayout(series_box).addWidget(self.series_chart)
        page = QWidget()
        grid = QGridLayout(page)
        grid.addWidget(matrix_box, 0, 0)
        grid.addWidget(rel_box, 0, 1)
        grid.addWidget(series_box, 1, 0, 1, 2)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        return page

    def _build_gate(self) -> QWidget:
        self.gate_model = ConfusionModel(GATE_DECISIONS, self, columns="gate")
        self.gate_table = matrix_view(self.gate_model, "gateMatrix")
        self.gate_summary = QLabel()
        self.gate_summary.setObjectName("gateSummary")
        self.gate_summary.setWordWrap(True)
        self.overrides = RowTableModel(OVERRIDE_COLUMNS, self)
        self.overrides_view = table_view(self.overrides, "overridesTable")
        self.overrides_view.setSortingEnabled(True)
        self.overrides_view.horizontalHeader().setStretchLastSection(True)
        self.histogram = RatioHistogram()
        self.histogram.setObjectName("ratioHistogram")
        self.histogram.thresholds_changed.connect(self._thresholds_moved)
        self.what_if_label = QLabel()
        self.what_if_label.setObjectName("whatIfLabel")
        self.what_if_label.setWordWrap(True)
        self.quality_label = QLabel()
        self.quality_label.setObjectName("qualityWhatIfLabel")
        self.quality_label.setWordWrap(True)
        self.min_chars = QSpinBox()
        self.min_chars.setRange(0, 10000)
        self.min_chars.setPrefix("≥ ")
        self.min_chars.setSuffix(" characters")
        self.min_words = QSpinBox()
        self.min_words.setRange(0, 1000)
        self.min_words.setPrefix("≥ ")
        self.min_words.setSuffix(" words")
        for box in (self.min_chars, self.min_words):
            box.valueChanged.connect(self._quality_moved)
        self.apply_button = QPushButton("Apply thresholds")
        self.apply_button.setObjectName("applyThresholdsButton")
        self.apply_button.clicked.connect(self.apply_thresholds)
        self.undo_button = QPushButton("Undo apply")
        self.undo_button.setObjectName("undoThresholdsButton")
        self.undo_button.setEnabled(False)
        self.undo_button.clicked.connect(self.undo_thresholds)

        left = QGroupBox("Gate proposals vs review decisions")
        lv = QVBoxLayout(left)
        lv.addWidget(self.gate_table)
        lv.addWidget(self.gate_summary)
        lv.addWidget(QLabel("Overrides"))
        lv.addWidget(self.overrides_view, 1)
        right = QGroupBox("Threshold what-if: drag the lines")
        rv = QVBoxLayout(right)
        rv.addWidget(self.histogram, 1)
        rv.addWidget(self.what_if_label)
        buttons = QHBoxLayout()
        buttons.addWidget(self.apply_button)
        buttons.addWidget(self.undo_button)
        buttons.addStretch(1)
        rv.addLayout(buttons)
        quality_row = QHBoxLayout()
        quality_row.addWidget(QLabel("Quality gate what-if:"))
        quality_row.addWidget(self.min_chars)
        quality_row.addWidget(self.min_words)
        quality_row.addStretch(1)
        rv.addLayout(quality_row)
        rv.addWidget(self.quality_label)
        page = QWidget()
        row = QHBoxLayout(page)
        row.addWidget(left, 1)
        row.addWidget(right, 1)
        return page

    def _build_forecast(self) -> QWidget:
        self.floor_spin = QDoubleSpinBox()
        self.floor_spin.setObjectName("forecastFloor")
        self.floor_spin.setRange(0.0, 1.0)
        self.floor_spin.setSingleStep(0.01)
        self.floor_spin.setValue(0.05)
        self.new_spin = QDoubleSpinBox()
        self.new_spin.setObjectName("forecastNewImportance")
        self.new_spin.setRange(0.0, 1.0)
        self.new_spin.setSingleStep(0.05)
        self.new_spin.setValue(0.5)
        self.days_spin = QSpinBox()
        self.days_spin.setObjectName("forecastDays")
        self.days_spin.setRange(1, 3650)
        self.days_spin.setValue(90)
        for box in (self.floor_spin, self.new_spin, self.days_spin):
            box.editingFinished.connect(self.refresh)
        self.refresh_check = QCheckBox("UPDATE refreshes the decay clock")
        self.refresh_check.setObjectName("refreshClockCheck")
        self.refresh_check.setToolTip(
            "Off: an UPDATE keeps the pattern's distillation date (the original behaviour). "
            "On: an UPDATE restarts its decay at the commit. The chart shows both."
        )
        self.refresh_check.toggled.connect(self._save_refresh_clock)
        self.forecast_message = QLabel()
        self.forecast_message.setObjectName("forecastMessage")
        self.forecast_message.setWordWrap(True)
        self.forecast_chart = ForecastChart()
        self.forecast_chart.setObjectName("forecastChart")
        self.forecast_rows = RowTableModel(FORECAST_COLUMNS, self)
        self.forecast_view = table_view(self.forecast_rows, "forecastTable")
        self.forecast_view.setSortingEnabled(True)
        self.forecast_view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.forecast_view.horizontalHeader().setStretchLastSection(True)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("Floor"))
        controls.addWidget(self.floor_spin)
        controls.addWidget(QLabel("New pattern importance"))
        controls.addWidget(self.new_spin)
        controls.addWidget(QLabel("Days ahead"))
        controls.addWidget(self.days_spin)
        controls.addStretch(1)
        controls.addWidget(self.refresh_check)
        page = QWidget()
        v = QVBoxLayout(page)
        v.addLayout(controls)
        v.addWidget(self.forecast_message)
        v.addWidget(self.forecast_chart, 1)
        v.addWidget(self.forecast_view, 1)
        return page

    # -- background work --------------------------------------------------------------------

    def _write(
        self, label: str, work: Callable[[Store], Any], on_done: Callable[[Any], None]
    ) -> bool:
        """A settings write in the background (one write at a time, window-wide)."""
        return self.ops.write(label, lambda ctx: work(ctx.store), on_done, self._task_failed)

    def _task_failed(self, message: str) -> None:
        self.state_label.setText(f"Could not load the insights: {message}")
        self.status_message.emit(f"Insights: {message}")
        self.apply_button.setEnabled(self.insights is not None)

    # -- loading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Recompute every figure on the pool thread; the newest request wins."""
        self._build_sections()
        run_id = self.run_combo.currentData()
        floor, new, days = self.floor_spin.value(), self.new_spin.value(), self.days_spin.value()

        def work(ctx: OpContext) -> tuple[Insights, list[tuple[int, str]]]:
            found = compute_insights(
                ctx.store, run_id=run_id, horizon_days=days, floor=floor, new_importance=new
            )
            return found, run_choices(ctx.store)

        self.state_label.setText("Loading…")
        self.ops.query("insights", work, self._show, self._task_failed)

    def _show(self, result: object) -> None:
        """Draw a load (StoreOps delivers only the newest request's)."""
        assert isinstance(result, tuple)
        insights: Insights = result[0]
        runs: list[tuple[int, str]] = result[1]
        self._fill_runs(runs)
        self.insights = insights
        self._draw(insights)
        self.state_label.setText(self._state_text(insights))
        self.loaded.emit(insights)

    def _fill_runs(self, runs: list[tuple[int, str]]) -> None:
        current = self.run_combo.currentData()
        self.run_combo.blockSignals(True)
        self.run_combo.clear()
        self.run_combo.addItem("All runs", None)
        for run_id, text in runs:
            self.run_combo.addItem(text, run_id)
        self.run_combo.setCurrentIndex(max(0, self.run_combo.findData(current)))
        self.run_combo.blockSignals(False)

    @staticmethod
    def _state_text(ins: Insights) -> str:
        return (
            f"{plural(ins.labels.total, 'labelled pair')}, "
            f"{plural(ins.gate.total, 'reviewed candidate')} "
            f"({plural(ins.bulk_decisions, 'bulk decision')} left out)"
        )

    # -- drawing ----------------------------------------------------------------------------

    def _draw(self, ins: Insights) -> None:
        self.label_model.set_confusion(ins.labels)
        k = ins.label_kappa
        prec, rec = ins.labels.precision(), ins.labels.recall()
        self.label_summary.setText(
            f"Accuracy {pct(ins.labels.accuracy())} · Cohen's κ {num(k.kappa)} "
            f"(95% bootstrap interval {num(k.low)} – {num(k.high)})<br>"
            + " · ".join(
                f"{lab}: precision {pct(prec[lab])}, recall {pct(rec[lab])}" for lab in LABELS
            )
        )
        self.reliability.set_bins(ins.calibration)
        self.series_chart.set_series(ins.series)

        self.gate_model.set_confusion(ins.gate)
        g = ins.gate_kappa
        self.gate_summary.setText(
            f"Agreement {pct(ins.gate.accuracy())} · Cohen's κ {num(g.kappa)} "
            f"(95% {num(g.low)} – {num(g.high)}) · {plural(len(ins.overrides), 'override')} · "
            f"{plural(ins.quality_drops, 'text')} dropped by the quality gate"
        )
        self.overrides.set_rows(ins.overrides)
        self.histogram.set_histogram(ins.histogram_edges, ins.histogram)
        self.histogram.set_thresholds(ins.skip, ins.update)
        for box, value in (
            (self.min_chars, ins.quality.min_chars),
            (self.min_words, ins.quality.min_words),
        ):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        self._quality_moved()

        self.forecast_message.setText(
            ins.forecast_keep.message
            + f"  UPDATE refreshes the decay clock: {'on' if ins.refresh_enabled else 'off'}."
        )
        self.forecast_chart.set_forecasts(ins.forecast_keep, ins.forecast_refresh)
        self.refresh_check.blockSignals(True)
        self.refresh_check.setChecked(ins.refresh_enabled)
        self.refresh_check.blockSignals(False)
        self.forecast_rows.set_rows(
            list(
                zip(
                    ins.forecast_keep.patterns,
                    by_id(ins.forecast_refresh.patterns, ins.forecast_keep.patterns),
                    strict=True,
                )
            )
        )
        for column in range(len(FORECAST_COLUMNS) - 1):  # the text column takes the rest
            self.forecast_view.resizeColumnToContents(column)
        self.learning.set_insights(ins)

    def what_if(self) -> WhatIf | None:
        if self.insights is None:
            return None
        return self.insights.what_if_at(self.histogram.skip, self.histogram.update)

    def _thresholds_moved(self, skip: float, update: float) -> None:
        if self.insights is None:
            return
        what = self.insights.what_if_at(skip, update)
        doc = what.to_json()
        valid = skip > update
        self.apply_button.setEnabled(
            valid and (skip, update) != (self.insights.skip, self.insights.update)
        )
        text = (
            f"SKIP ≥ {skip:.2f}, UPDATE ≥ {update:.2f}: {what.changed:,} of "
            f"{plural(what.total, 'proposal')} change; agreement with the reviewers "
            f"{pct(doc['agreement_before'])} → "  # type: ignore[arg-type]
            f"{pct(doc['agreement_after'])}, κ {num(what.matrix.kappa())}"  # type: ignore[arg-type]
        )
        if what.pool_dependent:
            text += (
                f" ({what.pool_dependent:,} {agree(what.pool_dependent, 'depends', 'depend')} "
                "on earlier candidates of their run)"
            )
        if not valid:
            text += ". The SKIP threshold must be above the UPDATE threshold."
        self.what_if_label.setText(text)

    def _quality_moved(self) -> None:
        if self.insights is None:
            return
        q = self.insights.quality_at(self.min_chars.value(), self.min_words.value())
        lost = q.dropped_by_decision.get("ADD", 0) + q.dropped_by_decision.get("UPDATE", 0)
        self.quality_label.setText(
            f"Would drop {sum(q.dropped_by_decision.values())} of {q.reviewed} reviewed "
            f"candidates ({lost} the reviewers added or merged); would let through "
            f"{q.admitted:,} of {plural(q.traced_drops, 'text')} dropped at distillation."
        )

    # -- actions ----------------------------------------------------------------------------

    def _label_cell_clicked(self, index: QModelIndex) -> None:
        if self.insights is None or not index.isValid():
            return
        human, model = self.label_model.cell(index.row(), index.column())
        ids = self.insights.label_cells.get((human, model), [])
        self.show_episodes.emit(list(ids), f"human {human}, model {model}")

    def apply_thresholds(self) -> None:
        """Save the dragged thresholds as the gate's settings (undoable with Undo apply)."""
        if self.insights is None:
            return
        skip, update = self.histogram.skip, self.histogram.update
        if skip <= update:
            self.status_message.emit("The SKIP threshold must be above the UPDATE threshold.")
            return
        self._save_thresholds(skip, update, (self.insights.skip, self.insights.update))

    def undo_thresholds(self) -> None:
        if self._previous_thresholds is not None:
            skip, update = self._previous_thresholds
            self._save_thresholds(skip, update, None)

    def _save_thresholds(
        self, skip: float, update: float, previous: tuple[float, float] | None
    ) -> None:

        def work(store: Store) -> tuple[float, float]:
            update_settings(store, {"skip_threshold": skip, "update_threshold": update})
            return skip, update

        def saved(_result: object) -> None:
            self._previous_thresholds = previous
            self.undo_button.setEnabled(previous is not None)
            self.status_message.emit(
                f"Gate thresholds saved: SKIP ≥ {skip:.2f}, UPDATE ≥ {update:.2f}."
            )
            self.thresholds_saved.emit(skip, update)
            self.data_changed.emit()
            self.refresh()

        self.apply_button.setEnabled(False)
        if not self._write("Saving the gate thresholds", work, saved):
            self.apply_button.setEnabled(True)

    def _save_refresh_clock(self, on: bool) -> None:

        def work(store: Store) -> bool:
            update_settings(store, {KEY: on})
            return on

        def saved(_result: object) -> None:
            state = "restarts" if on else "keeps"
            self.status_message.emit(f"Saved: an UPDATE now {state} the pattern's decay clock.")
            self.data_changed.emit()
            self.refresh()

        self._write("Saving the decay clock setting", work, saved)

    def _worker_busy(self, busy: bool) -> None:
        self.replay_button.setEnabled(not busy)

    def start_replay(self) -> None:
        worker = self.services.worker
        if worker is not None and worker.start_replay(None):
            self.status_message.emit("Replaying the gold set…")

    def _run_finished(self, result: object) -> None:
        if isinstance(result, ReplayResult):
            self.status_message.emit(f"Replay run {result.run_id}: {result.message}")
            self.refresh()

    def shutdown(self) -> None:
        """Nothing of its own to wait for: the window's StoreOps waits for the loads."""

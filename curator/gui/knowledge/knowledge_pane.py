"""The Knowledge pane: active patterns, their provenance, and how they decay.

The table is what the agent's prompt is built from, in prompt order (rank), with the top
K marked. Selecting patterns plots their effective importance over time against the
top-K cut-off, so the curator sees which knowledge is about to fall out of the prompt;
the "in N days" slider lists those patterns explicitly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from PySide6.QtCore import QItemSelection, QModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from curator.core.flag_type import Flag
from curator.gui.knowledge.decay_chart import CURVE_COLOURS, GREY_POINTS, DecayChart
from curator.gui.knowledge.decay_samples import decay_curve, decay_curves
from curator.gui.knowledge.knowledge_sources import ProvenancePanel
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.eliding import ElidingLabel
from curator.gui.widgets.flag_view import FLAG_MARK
from curator.gui.widgets.forecast_note import leaving_note, plural, room_note
from curator.gui.widgets.pane import Pane
from curator.gui.widgets.qt_models import (
    FIT_ROWS,
    Column,
    RowTableModel,
    headers_ignore_selection,
    selected_spans,
)
from curator.gui.widgets.row_table import RowTableView
from curator.pipeline.audit import audit, retire_patterns
from curator.pipeline.commit import undo_changeset
from curator.store.db import Store
from curator.store.knowledge import (
    PatternRow,
    active_patterns,
    last_retirement,
    leaving_among,
)
from curator.store.models import format_local, utcnow
from curator.store.settings import load_settings

MAX_DAYS = 730
"""How far ahead the chart and the forecast can look (two years)."""


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _date(moment: datetime | None) -> str:
    return "" if moment is None else format_local(moment)


def _day(moment: datetime | None) -> str:
    return _date(moment)[:10]


@dataclass(frozen=True)
class KnowledgeView:
    """What one refresh of the pane reads (off the GUI thread: 10k patterns take a while)."""

    rows: list[PatternRow]
    flags: dict[int, tuple[Flag, ...]]
    last_retire: int | None
    top_k: int
    rate: float


def load_view(store: Store, now: datetime, flagged: bool) -> KnowledgeView:
    """The active patterns in prompt order, their audit flags if asked, and what can be undone."""
    settings = load_settings(store)
    rows = active_patterns(store, now=now, k=settings.top_k, rate=settings.decay_rate)
    flags = audit(store).pattern_flags() if flagged else {}
    return KnowledgeView(rows, flags, last_retirement(store), settings.top_k, settings.decay_rate)


PATTERN_COLUMNS: list[Column[PatternRow]] = [
    Column("Rank", lambda r: r.rank, align_right=True),
    Column("★", lambda r: r.in_top_k, display=lambda r: "★" if r.in_top_k else ""),
    Column("Pattern", lambda r: r.text, display=lambda r: _short(r.text), tooltip=lambda r: r.text),
    Column(
        "Importance",
        lambda r: r.importance,
        display=lambda r: f"{r.importance:.3f}",
        align_right=True,
    ),
    Column(
        "Effective", lambda r: r.effective, display=lambda r: f"{r.effective:.3f}", align_right=True
    ),
    Column(
        "Distilled",
        lambda r: r.distilled_at.timestamp(),
        display=lambda r: _day(r.distilled_at),
        tooltip=lambda r: _date(r.distilled_at),
    ),
    Column("Category", lambda r: r.category),
    Column("Sources", lambda r: r.sources, align_right=True),
]


class KnowledgePane(Pane):
    """Active patterns table + provenance + decay chart + "leaving the top K" forecast."""

    show_episode = Signal(int)
    """Double-click on a source episode: the main window opens it in the Episodes pane."""
    loaded = Signal()
    """A refresh has been shown (its read ran in the background)."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("knowledgePane")
        self.now: Callable[[], datetime] = utcnow
        self._rows: list[PatternRow] = []
        self._flags: dict[int, tuple[Flag, ...]] = {}
        self._last_retire: int | None = None
        self._top_k = 50
        self._rate = 0.95
        self._loading = False
        self._pending_select: list[int] | None = None

        bold = QFont(self.font())
        bold.setBold(True)
        band = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        band.setAlpha(40)
        band_brush = QBrush(band)
        self.patterns = RowTableModel(
            PATTERN_COLUMNS,
            self,
            row_font=lambda r: bold if r.in_top_k else None,
            row_background=lambda r: band_brush if r.in_top_k else None,
        )
        self.table = RowTableView()
        self.table.setObjectName("patternsTable")
        self.table.setModel(self.patterns)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)  # a row a pattern
        headers_ignore_selection(self.table)  # Ctrl+A: no header repaint reads every cell
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(28)
        # Narrow number columns, so the pattern's text gets the width (it stretches; the
        # full text is in its tooltip and in the Provenance title).
        metrics = header.fontMetrics()
        for col, width in enumerate((40, 26, 0, 70, 66, 84, 84, 56)):
            if width:
                title = PATTERN_COLUMNS[col].title
                self.table.setColumnWidth(col, max(width, metrics.horizontalAdvance(title) + 18))
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)

        self.provenance = ProvenancePanel(self.ops)
        self.provenance.episode_activated.connect(self.show_episode)
        self.sources, self.sources_view = self.provenance.model, self.provenance.view
        self.source_title = self.provenance.title

        self.chart = DecayChart()
        self.chart.setObjectName("decayChart")
        self.chart.curve_hovered.connect(self._on_curve_hovered)
        # One look-ahead, two controls: the box (exact) and the slider (quick) stay in step.
        self.days_spin = QSpinBox()
        self.days_spin.setObjectName("chartDaysSpin")
        self.days_spin.setRange(0, MAX_DAYS)
        self.days_spin.setValue(30)
        self.days_spin.setSuffix(" days ahead")
        self.days_spin.setToolTip("How far ahead the chart and the forecast look")
        self.horizon_slider = QSlider(Qt.Orientation.Horizontal)
        self.horizon_slider.setObjectName("horizonSlider")
        self.horizon_slider.setRange(0, MAX_DAYS)
        self.horizon_slider.setValue(30)
        self.horizon_slider.setToolTip(self.days_spin.toolTip())
        self.days_spin.valueChanged.connect(self._days_changed)
        self.horizon_slider.valueChanged.connect(self._days_changed)
        self.log_check = QCheckBox("Log scale")
        self.log_check.setObjectName("decayLogCheck")
        self.log_check.setToolTip(
            "Logarithmic importance axis: shows how weak old patterns are instead of a flat "
            "line at zero"
        )
        self.log_check.toggled.connect(self.chart.set_log_scale)
        self.horizon_label = QLabel()
        self.horizon_label.setMinimumWidth(70)
        self.leaving_list = QListWidget()
        self.leaving_list.setObjectName("leavingList")
        self.leaving_list.setWordWrap(True)
        self.forecast_note = QLabel()
        self.forecast_note.setObjectName("forecastNote")
        self.forecast_note.setWordWrap(True)
        self.forecast_note.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # one line, elided: a wrapped one grew a line for a long pattern, and the chart
        # above it jumped (and drew its 5,000 grey curves again) as the mouse moved
        self.hover_label = ElidingLabel(" ")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.flagged_only = QCheckBox(f"{FLAG_MARK} flagged")
        self.flagged_only.setObjectName("knowledgeFlaggedCheck")
        self.flagged_only.setToolTip(
            "Audit: show only patterns with memory-poisoning flags (as `curator audit`)"
        )
        self.flagged_only.toggled.connect(lambda _on: self.refresh())
        self.retire_button = QPushButton("Retire selected")
        self.retire_button.setObjectName("retireButton")
        self.retire_button.setToolTip("Take the selected patterns out of the prompt (undoable)")
        self.retire_button.clicked.connect(self.retire_selected)
        self.undo_retire_button = QPushButton("Undo retire")
        self.undo_retire_button.setObjectName("undoRetireButton")
        self.undo_retire_button.setEnabled(False)
        self.undo_retire_button.clicked.connect(self.undo_last_retire)
        self.ops.busy_changed.connect(self._update_buttons)

        self._build_layout()
        self._update_horizon_label()

    def _build_layout(self) -> None:
        left = QWidget()
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.flagged_only)
        bar.addWidget(self.retire_button)
        bar.addWidget(self.undo_retire_button)
        lv.addLayout(bar)
        lv.addWidget(self.table)
        right = self.provenance
        self.top_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.top_splitter.setObjectName("knowledgeTopSplitter")
        self.top_splitter.addWidget(left)
        self.top_splitter.addWidget(right)
        self.top_splitter.setStretchFactor(0, 2)
        self.top_splitter.setStretchFactor(1, 1)

        chart_box = QWidget()
        cv = QVBoxLayout(chart_box)
        cv.setContentsMargins(0, 0, 0, 0)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("<b>Decay</b> of the selected patterns,"))
        controls.addWidget(self.days_spin)
        controls.addWidget(self.log_check)
        controls.addStretch(1)
        cv.addLayout(controls)
        cv.addWidget(self.chart, 1)
        cv.addWidget(self.hover_label)
        forecast = QWidget()
        fv = QVBoxLayout(forecast)
        fv.setContentsMargins(0, 0, 0, 0)
        slider_row = QHBoxLayout()
        slider_row.addWidget(QLabel("Leaving the top K in"))
        slider_row.addWidget(self.horizon_slider, 1)
        slider_row.addWidget(self.horizon_label)
        fv.addLayout(slider_row)
        fv.addWidget(self.forecast_note)
        fv.addWidget(self.leaving_list, 1)
        # takes the list's room while the list is hidden, so the note stays at the top
        self._forecast_filler = QWidget()
        self._forecast_filler.setSizePolicy(
            QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding
        )
        fv.addWidget(self._forecast_filler, 1)
        self.bottom_splitter = QSplitter(Qt.Orientation.Horizontal)
        self.bottom_splitter.setObjectName("knowledgeBottomSplitter")
        self.bottom_splitter.addWidget(chart_box)
        self.bottom_splitter.addWidget(forecast)
        self.bottom_splitter.setStretchFactor(0, 3)
        self.bottom_splitter.setStretchFactor(1, 2)

        self.outer_splitter = QSplitter(Qt.Orientation.Vertical)
        self.outer_splitter.setObjectName("knowledgeSplitter")
        self.outer_splitter.addWidget(self.top_splitter)
        self.outer_splitter.addWidget(self.bottom_splitter)
        self.outer_splitter.setStretchFactor(0, 1)
        self.outer_splitter.setStretchFactor(1, 1)
        self.outer_splitter.setSizes([460, 440])
        self.top_splitter.setSizes([980, 420])
        self.bottom_splitter.setSizes([840, 560])
        layout = QVBoxLayout(self)
        layout.addWidget(self.outer_splitter)

    # -- loading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the patterns in the background, keeping the selection by pattern id."""
        selected = self.selected_ids()
        current = self.current_id()
        if self._pending_select is None and selected:
            # the current row first: _select makes the first id found current again
            first = [current] if current in selected else []
            self._pending_select = first + [i for i in selected if i != current]
        self._loading = True
        flagged = self.flagged_only.isChecked()
        now = self.now()
        self.ops.query(
            "knowledge.patterns",
            lambda ctx: load_view(ctx.store, now, flagged),
            self._loaded,
            self._load_failed,
        )

    def _load_failed(self, message: str) -> None:
        self._loading = False
        self._pending_select = None
        self.services.dialogs.error(self, "Knowledge", f"The patterns could not be read: {message}")

    def _loaded(self, view: KnowledgeView) -> None:
        self._loading = False
        self._rows = view.rows
        self._top_k = view.top_k
        self._rate = view.rate
        self._flags = view.flags
        self._last_retire = view.last_retire
        shown = self._rows
        if self.flagged_only.isChecked():
            shown = [r for r in self._rows if r.id in self._flags]
        wanted = self._pending_select or []
        self._pending_select = None
        self.patterns.set_rows(shown)
        in_top = sum(1 for r in self._rows if r.in_top_k)
        text = (
            f"{len(self._rows)} active patterns; the top {self._top_k} go into the prompt "
            f"({in_top} marked ★)."
        )
        if self.flagged_only.isChecked():
            text += f" {FLAG_MARK} {len(shown)} flagged."
        self.summary.setText(text)
        self._update_buttons()
        self._restore_selection(wanted)
        self._update_chart()
        self._update_horizon()
        self._load_sources(self.current_id())
        self.loaded.emit()

    def _restore_selection(self, ids: list[int]) -> None:
        model = self.table.selectionModel()
        model.blockSignals(True)
        try:
            self._select(ids)
        finally:
            model.blockSignals(False)

    def _select(self, ids: list[int]) -> None:
        """Select ``ids``; the first one found in ``ids`` order becomes current."""
        model = self.table.selectionModel()
        selection = QItemSelection()
        last_col = self.patterns.columnCount() - 1
        rows: dict[int, int] = {}
        wanted = set(ids)
        for row, item in enumerate(self.patterns.rows()):
            if item.id in wanted:
                rows[item.id] = row
                selection.select(self.patterns.index(row, 0), self.patterns.index(row, last_col))
        model.select(selection, model.SelectionFlag.ClearAndSelect)
        first = next((rows[i] for i in ids if i in rows), None)
        if first is not None:
            index = self.patterns.index(first, 0)
            model.setCurrentIndex(index, model.SelectionFlag.NoUpdate)
            self.table.scrollTo(index)

    def select_patterns(self, ids: list[int]) -> None:
        """Select these patterns (the first current), as a user's click would; while a
        refresh is on its way the selection is applied again when it lands."""
        if self._loading:
            self._pending_select = list(ids)
        self._select(list(ids))

    @property
    def loading(self) -> bool:
        return self._loading

    # -- selection --------------------------------------------------------------------------

    def selected_ids(self) -> list[int]:
        return [r.id for r in self._selected_rows()]

    def _selected_rows(self) -> list[PatternRow]:
        spans = selected_spans(self.table)
        return [r for first, last in spans for r in self.patterns.rows_between(first, last)]

    def current_id(self) -> int | None:
        item = self.patterns.row_at(self.table.selectionModel().currentIndex().row())
        return item.id if item is not None else None

    def pattern_rows(self) -> list[PatternRow]:
        return list(self._rows)

    def _on_selection_changed(self, *_: object) -> None:
        self._update_chart()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        item = self.patterns.row_at(current.row())
        self._load_sources(item.id if item is not None else None)
        self.chart.set_highlight(item.id if item is not None else -1)

    def _load_sources(self, pattern_id: int | None) -> None:
        """One pattern's source episodes, read in the background (:mod:`knowledge_sources`)."""
        item = next((r for r in self._rows if r.id == pattern_id), None)
        text = item.text if item is not None else ""
        self.provenance.show_pattern(pattern_id, text, self._flags.get(pattern_id or -1, ()))

    def flags_of(self, pattern_id: int) -> tuple[Flag, ...]:
        """The audit flags of a shown pattern (filled while "flagged" is ticked)."""
        return self._flags.get(pattern_id, ())

    # -- retiring (background writes) -------------------------------------------------------

    def _update_buttons(self, *_: object) -> None:
        busy = self.ops.busy
        self.retire_button.setEnabled(not busy)
        self.undo_retire_button.setEnabled(not busy and self._last_retire is not None)

    def _start_write(self, label: str, fn: Callable[[OpContext], object], done: Callable) -> bool:
        if self.ops.write(label, fn, done, lambda msg: self._write_failed(label, msg)):
            self._update_buttons()
            return True
        return False

    def _write_failed(self, title: str, message: str) -> None:
        self.services.dialogs.warning(self, title, message)
        self.refresh()

    def retire_selected(self) -> bool:
        """Retire the selected patterns as one undoable changeset, in the background."""
        ids = self.selected_ids()
        if not ids:
            self.status_message.emit("Select the patterns to retire first.")
            return False
        # what the person saw: refused if an id names another text by the time it runs
        chosen = set(ids)
        shown = {row.id: row.text for row in self._rows if row.id in chosen}

        def done(changeset_id: int) -> None:
            self.status_message.emit(
                f"Retired {plural(len(ids), 'pattern')} (changeset #{changeset_id}); "
                "Undo retire restores them."
            )
            self.refresh()
            self.data_changed.emit()

        return self._start_write(
            f"Retiring {plural(len(ids), 'pattern')}",
            lambda ctx: retire_patterns(ctx.store, ids, shown=shown).id,
            done,
        )

    def last_retire(self) -> int | None:
        """The retirement that "Undo retire" reverts (as of the last refresh)."""
        return self._last_retire

    def undo_last_retire(self) -> bool:
        last = self._last_retire
        if last is None:
            return False

        def done(_result: object) -> None:
            self.status_message.emit(f"Retirement #{last} undone.")
            self.refresh()
            self.data_changed.emit()

        return self._start_write("Undo retire", lambda ctx: undo_changeset(ctx.store, last), done)

    def _on_curve_hovered(self, pattern_id: int) -> None:
        item = next((r for r in self._rows if r.id == pattern_id), None)
        self.hover_label.setText(
            " " if item is None else f"#{item.id} (rank {item.rank}): {_short(item.text, 200)}"
        )

    # -- chart ------------------------------------------------------------------------------

    def cutoff(self) -> float | None:
        """The K-th pattern's effective importance now (None with fewer than K patterns)."""
        if len(self._rows) < self._top_k or self._top_k <= 0:
            return None
        return self._rows[self._top_k - 1].effective

    def days_ahead(self) -> int:
        return self.days_spin.value()

    def _days_changed(self, value: int) -> None:
        for widget in (self.days_spin, self.horizon_slider):
            if widget.value() != value:
                widget.blockSignals(True)
                widget.setValue(value)
                widget.blockSignals(False)
        self._update_chart()
        self._update_horizon()

    def _update_chart(self) -> None:
        now = self.now()
        days = self.days_ahead()
        horizon = now + timedelta(days=days)
        # a margin right of the horizon, so its line and label are never on the edge
        until = now + timedelta(days=days * 1.12 + 2)
        chosen = self._selected_rows()  # the shown rows are some of self._rows
        coloured, grey = chosen[: len(CURVE_COLOURS)], chosen[len(CURVE_COLOURS) :]
        curves = [
            decay_curve(r.importance, r.distilled_at, now, until, self._rate) for r in coloured
        ]
        rest = None
        if grey:  # a Ctrl+A of a thousand patterns: one matrix, not a call each
            rest = decay_curves(
                [r.importance for r in grey],
                [r.distilled_at for r in grey],
                now,
                until,
                self._rate,
                GREY_POINTS,
            )
        self.chart.set_curves(
            [r.id for r in chosen],
            [c[0] for c in curves],
            [c[1] for c in curves],
            [r.text for r in chosen],
            grey=rest,
        )
        starts = [r.distilled_at for r in chosen] or [now - timedelta(days=max(7, days // 4))]
        start = min(min(starts), now)
        self.chart.set_x_range(start.timestamp(), until.timestamp())
        self.chart.set_today(now)
        self.chart.set_horizon(horizon, f"in {plural(days, 'day')}")
        if self.cutoff() is None:
            self.chart.set_cutoff(None, None)
        else:
            kth = self._rows[self._top_k - 1]
            xs, ys = decay_curve(
                kth.importance,
                kth.distilled_at,
                now,
                until,
                self._rate,
                start=max(start, kth.distilled_at),
            )
            self.chart.set_cutoff(xs, ys, self._top_k)
        current = self.current_id()
        self.chart.set_highlight(current if current is not None else -1)

    def _update_horizon_label(self) -> None:
        self.horizon_label.setText(plural(self.horizon_slider.value(), "day"))

    def _update_horizon(self) -> None:
        days = self.days_ahead()
        self._update_horizon_label()
        leaving = self._leaving(days)
        self.leaving_list.clear()
        cutoff = self.cutoff()
        if cutoff is None:
            # The prompt has room: the forecast has nothing to say at any horizon, and
            # says why once instead of repeating one sentence at every slider position.
            self.forecast_note.setText(room_note(len(self._rows), self._top_k))
            self.leaving_list.hide()
            self._forecast_filler.show()
            return
        self._forecast_filler.hide()
        self.leaving_list.show()
        self.forecast_note.setText(leaving_note(len(leaving), days, self._top_k, cutoff))
        for row in leaving:
            self.leaving_list.addItem(
                f"#{row.id} (rank {row.rank}, now {row.effective:.3f}): {_short(row.text, 120)}"
            )

    def _leaving(self, days: int) -> list[PatternRow]:
        return leaving_among(self._rows, days, self._top_k, self.now(), self._rate)

    def leaving_ids(self) -> list[int]:
        """The ids currently listed as leaving the top K (for tests and the status bar)."""
        return [r.id for r in self._leaving(self.days_ahead())]

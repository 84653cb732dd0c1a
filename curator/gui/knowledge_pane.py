"""The Knowledge pane: active patterns, their provenance, and how they decay.

The table is what the agent's prompt is built from, in prompt order (rank), with the top
K marked. Selecting patterns plots their effective importance over time against the
top-K cut-off, so the curator sees which knowledge is about to fall out of the prompt;
the "in N days" slider lists those patterns explicitly.
"""

from __future__ import annotations

from collections.abc import Callable
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
    QSlider,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from curator.core.flags import Flag
from curator.errors import CuratorError
from curator.gui.decay_chart import DecayChart, decay_curve
from curator.gui.flag_view import FLAG_MARK
from curator.gui.pane import Pane
from curator.gui.qt_models import Column, RowTableModel
from curator.gui.services import AppServices
from curator.pipeline.audit import audit, retire_patterns
from curator.pipeline.commit import undo_changeset
from curator.store.knowledge import (
    PatternRow,
    SourceRow,
    active_patterns,
    leaving_top_k,
    pattern_sources,
)
from curator.store.models import Changeset, format_local, utcnow


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _date(moment: datetime | None) -> str:
    return "" if moment is None else format_local(moment)


PATTERN_COLUMNS: list[Column[PatternRow]] = [
    Column("Rank", lambda r: r.rank, align_right=True),
    Column("Top-K", lambda r: r.in_top_k, display=lambda r: "★" if r.in_top_k else ""),
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
        "Distilled", lambda r: r.distilled_at.timestamp(), display=lambda r: _date(r.distilled_at)
    ),
    Column("Category", lambda r: r.category),
    Column("Sources", lambda r: r.sources, align_right=True),
]

SOURCE_COLUMNS: list[Column[SourceRow]] = [
    Column("Episode", lambda s: s.episode_id, align_right=True),
    Column("When", lambda s: s.timestamp.timestamp(), display=lambda s: _date(s.timestamp)),
    Column("Source", lambda s: s.source),
    Column(
        "Run",
        lambda s: s.run_id,
        display=lambda s: f"#{s.run_id} {s.run_kind}" if s.run_id is not None else "—",
    ),
    Column("Preview", lambda s: s.preview, tooltip=lambda s: s.preview),
]


class KnowledgePane(Pane):
    """Active patterns table + provenance + decay chart + "leaving the top K" forecast."""

    show_episode = Signal(int)
    """Double-click on a source episode: the main window may switch to the Episodes pane."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("knowledgePane")
        self.now: Callable[[], datetime] = utcnow
        self._rows: list[PatternRow] = []
        self._flags: dict[int, tuple[Flag, ...]] = {}
        self._top_k = 50
        self._rate = 0.95

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
        self.table = QTableView()
        self.table.setObjectName("patternsTable")
        self.table.setModel(self.patterns)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        for col, width in enumerate((50, 50, 520, 80, 80, 130, 110, 60)):
            self.table.setColumnWidth(col, width)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_changed)

        self.sources = RowTableModel(SOURCE_COLUMNS, self)
        self.sources_view = QTableView()
        self.sources_view.setObjectName("sourcesTable")
        self.sources_view.setModel(self.sources)
        self.sources_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.sources_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.sources_view.verticalHeader().setVisible(False)
        self.sources_view.horizontalHeader().setStretchLastSection(True)
        self.sources_view.doubleClicked.connect(self._on_source_activated)
        self.source_title = QLabel("Select a pattern to see where it came from.")
        self.source_title.setWordWrap(True)

        self.chart = DecayChart()
        self.chart.setObjectName("decayChart")
        self.chart.curve_hovered.connect(self._on_curve_hovered)
        self.days_spin = QSpinBox()
        self.days_spin.setObjectName("chartDaysSpin")
        self.days_spin.setRange(1, 3650)
        self.days_spin.setValue(60)
        self.days_spin.setSuffix(" days ahead")
        self.days_spin.valueChanged.connect(self._update_chart)
        self.horizon_slider = QSlider(Qt.Orientation.Horizontal)
        self.horizon_slider.setObjectName("horizonSlider")
        self.horizon_slider.setRange(0, 365)
        self.horizon_slider.setValue(30)
        self.horizon_slider.valueChanged.connect(self._update_horizon)
        self.horizon_label = QLabel()
        self.horizon_label.setMinimumWidth(90)
        self.leaving_list = QListWidget()
        self.leaving_list.setObjectName("leavingList")
        self.leaving_list.setWordWrap(True)
        self.hover_label = QLabel(" ")
        self.hover_label.setWordWrap(True)
        self.summary = QLabel()
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
        self.undo_retire_button.clicked.connect(self.undo_last_retire)

        # -- layout -------------------------------------------------------------------------
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
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(QLabel("<b>Provenance</b>"))
        rv.addWidget(self.source_title)
        rv.addWidget(self.sources_view)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(left)
        top.addWidget(right)
        top.setStretchFactor(0, 3)
        top.setStretchFactor(1, 2)

        chart_box = QWidget()
        cv = QVBoxLayout(chart_box)
        cv.setContentsMargins(0, 0, 0, 0)
        controls = QHBoxLayout()
        controls.addWidget(QLabel("<b>Decay</b> of the selected patterns, plotted"))
        controls.addWidget(self.days_spin)
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
        fv.addWidget(self.leaving_list)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(chart_box)
        bottom.addWidget(forecast)
        bottom.setStretchFactor(0, 3)
        bottom.setStretchFactor(1, 2)

        outer = QSplitter(Qt.Orientation.Vertical)
        outer.addWidget(top)
        outer.addWidget(bottom)
        outer.setStretchFactor(0, 1)
        outer.setStretchFactor(1, 1)
        outer.setSizes([460, 440])
        top.setSizes([980, 420])
        layout = QVBoxLayout(self)
        layout.addWidget(outer)
        self._update_horizon_label()

    # -- loading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the patterns, keeping the selection and current row by pattern id."""
        settings = self.services.settings()
        self._top_k = settings.top_k
        self._rate = settings.decay_rate
        selected = set(self.selected_ids())
        current = self.current_id()
        self._rows = active_patterns(self.services.store, now=self.now())
        shown = self._rows
        if self.flagged_only.isChecked():
            self._flags = audit(self.services.store).pattern_flags()
            shown = [r for r in self._rows if r.id in self._flags]
        else:
            self._flags = {}
        self.patterns.set_rows(shown)
        in_top = sum(1 for r in self._rows if r.in_top_k)
        text = (
            f"{len(self._rows)} active patterns; the top {self._top_k} go into the prompt "
            f"({in_top} marked ★)."
        )
        if self.flagged_only.isChecked():
            text += f" {FLAG_MARK} {len(shown)} flagged."
        self.summary.setText(text)
        self.undo_retire_button.setEnabled(self.last_retire() is not None)
        self._restore_selection(selected, current)
        self._update_chart()
        self._update_horizon()
        self._load_sources(self.current_id())

    def _restore_selection(self, selected: set[int], current: int | None) -> None:
        model = self.table.selectionModel()
        model.blockSignals(True)
        try:
            model.clearSelection()
            selection = QItemSelection()
            last_col = self.patterns.columnCount() - 1
            for row, item in enumerate(self.patterns.rows()):
                if item.id in selected:
                    selection.select(
                        self.patterns.index(row, 0), self.patterns.index(row, last_col)
                    )
            model.select(selection, model.SelectionFlag.Select)
            if current is not None:
                row = self.patterns.find_row(lambda r: r.id == current)
                if row >= 0:
                    model.setCurrentIndex(self.patterns.index(row, 0), model.SelectionFlag.NoUpdate)
        finally:
            model.blockSignals(False)

    def select_patterns(self, ids: list[int]) -> None:
        """Select these patterns (first one current), as a user's click would."""
        model = self.table.selectionModel()
        selection = QItemSelection()
        last_col = self.patterns.columnCount() - 1
        first: QModelIndex | None = None
        for row, item in enumerate(self.patterns.rows()):
            if item.id in ids:
                index = self.patterns.index(row, 0)
                first = first or index
                selection.select(index, self.patterns.index(row, last_col))
        model.select(selection, model.SelectionFlag.ClearAndSelect)
        if first is not None:
            model.setCurrentIndex(first, model.SelectionFlag.NoUpdate)

    # -- selection --------------------------------------------------------------------------

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [r.id for r in (self.patterns.row_at(n) for n in rows) if r is not None]

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
        if pattern_id is None:
            self.sources.set_rows([])
            self.source_title.setText("Select a pattern to see where it came from.")
            return
        rows = pattern_sources(self.services.store, pattern_id)
        self.sources.set_rows(rows)
        item = next((r for r in self._rows if r.id == pattern_id), None)
        runs = sorted({s.run_id for s in rows if s.run_id is not None})
        text = _short(item.text, 300) if item is not None else f"#{pattern_id}"
        flags = "".join(f"\n{FLAG_MARK} {f.describe()}" for f in self._flags.get(pattern_id, ()))
        self.source_title.setText(
            f"#{pattern_id}: {text}{flags}\n{len(rows)} source episode(s)"
            + (f" from run(s) {', '.join(f'#{r}' for r in runs)}" if runs else "")
            + ". Double-click an episode to open it."
        )

    def flags_of(self, pattern_id: int) -> tuple[Flag, ...]:
        """The audit flags of a shown pattern (filled while "flagged" is ticked)."""
        return self._flags.get(pattern_id, ())

    # -- retiring ---------------------------------------------------------------------------

    def retire_selected(self) -> int | None:
        """Retire the selected patterns as one undoable changeset; returns its id."""
        ids = self.selected_ids()
        if not ids:
            self.status_message.emit("Select the patterns to retire first.")
            return None
        try:
            summary = retire_patterns(self.services.store, ids)
        except CuratorError as exc:
            self.services.dialogs.warning(self, "Retire", str(exc))
            return None
        self.status_message.emit(
            f"Retired {len(ids)} pattern(s) (changeset #{summary.id}); Undo retire restores them."
        )
        self.refresh()
        self.data_changed.emit()
        return summary.id

    def last_retire(self) -> Changeset | None:
        found: Changeset | None = (
            Changeset.select()
            .where((Changeset.kind == "retire") & Changeset.undone_by.is_null())
            .order_by(Changeset.id.desc())
            .first()
        )
        return found

    def undo_last_retire(self) -> bool:
        last = self.last_retire()
        if last is None:
            return False
        try:
            undo_changeset(self.services.store, last.id)
        except CuratorError as exc:
            self.services.dialogs.warning(self, "Undo retire", str(exc))
            return False
        self.status_message.emit(f"Retirement #{last.id} undone.")
        self.refresh()
        self.data_changed.emit()
        return True

    def _on_source_activated(self, index: QModelIndex) -> None:
        source = self.sources.row_at(index.row())
        if source is not None:
            self.show_episode.emit(source.episode_id)

    def _on_curve_hovered(self, pattern_id: int) -> None:
        item = next((r for r in self._rows if r.id == pattern_id), None)
        self.hover_label.setText(
            " " if item is None else f"#{item.id} (rank {item.rank}): {_short(item.text, 200)}"
        )

    # -- chart ------------------------------------------------------------------------------

    def cutoff(self) -> float | None:
        """The K-th pattern's effective importance now (None with K or fewer patterns)."""
        if len(self._rows) <= self._top_k or self._top_k <= 0:
            return None
        return self._rows[self._top_k - 1].effective

    def _update_chart(self) -> None:
        now = self.now()
        days = max(self.days_spin.value(), self.horizon_slider.value())
        until = now + timedelta(days=days)
        by_id = {r.id: r for r in self._rows}
        chosen = [by_id[i] for i in self.selected_ids() if i in by_id]
        curves = [decay_curve(r.importance, r.distilled_at, now, until, self._rate) for r in chosen]
        self.chart.set_curves(
            [r.id for r in chosen], [c[0] for c in curves], [c[1] for c in curves]
        )
        self.chart.set_today(now)
        self.chart.set_cutoff(self.cutoff())
        current = self.current_id()
        self.chart.set_highlight(current if current is not None else -1)

    def _update_horizon_label(self) -> None:
        self.horizon_label.setText(f"{self.horizon_slider.value()} days")

    def _update_horizon(self) -> None:
        days = self.horizon_slider.value()
        self._update_horizon_label()
        now = self.now()
        self.chart.set_horizon(now + timedelta(days=days), f"in {days} days")
        if days > self.days_spin.value():
            self._update_chart()
        leaving = leaving_top_k(self.services.store, days, k=self._top_k, now=now, rate=self._rate)
        self.leaving_list.clear()
        if not leaving:
            if len(self._rows) < self._top_k:
                self.leaving_list.addItem(
                    f"The prompt holds all {len(self._rows)} patterns and has room for "
                    f"{self._top_k}: a new pattern pushes none out."
                )
            else:
                self.leaving_list.addItem("No prompt pattern falls below today's cut-off by then.")
            return
        for row in leaving:
            self.leaving_list.addItem(
                f"#{row.id} (rank {row.rank}, now {row.effective:.3f}): {_short(row.text, 120)}"
            )

    def leaving_ids(self) -> list[int]:
        """The ids currently listed as leaving the top K (for tests and the status bar)."""
        now = self.now()
        return [
            r.id
            for r in leaving_top_k(
                self.services.store,
                self.horizon_slider.value(),
                k=self._top_k,
                now=now,
                rate=self._rate,
            )
        ]

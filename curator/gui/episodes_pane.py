"""The Episodes pane: the raw logs, their labels, and relabelling from the keyboard.

Filters and sort run in SQL through :class:`EpisodeTableModel`, so the pane stays
responsive on 100,000 episodes. ``C``/``N``/``U`` relabel the selected rows (a human label
overrides the model's), ``Backspace`` undoes the last relabel; only the affected rows are
repainted so the selection and the scroll position stay where the user left them.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import date

from PySide6.QtCore import QDate, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDateEdit,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.episode_model import (
    COLUMNS,
    EpisodeTableModel,
    format_time,
    label_in_force,
    model_label_text,
)
from curator.gui.label_source import label_decision_rows
from curator.gui.pane import Pane
from curator.gui.relearn import Relearner
from curator.gui.services import AppServices
from curator.store.episode_queries import (
    LABEL_FILTERS,
    RELEVANCE,
    EpisodeDetail,
    EpisodeFilter,
    EpisodeSort,
    count_episodes,
    date_range,
    distinct_sources,
    fetch_detail,
    highlight_spans,
)

RELABEL_KEYS: dict[int, str] = {
    Qt.Key.Key_C: "constitutional",
    Qt.Key.Key_N: "noise",
    Qt.Key.Key_U: "uncategorized",
}

LABEL_FILTER_TEXT = {
    "all": "All labels",
    "constitutional": "Constitutional",
    "noise": "Noise",
    "uncategorized": "Uncategorized",
    "model": "Labelled by the model",
    "human": "Labelled by a human",
    "unlabelled": "Unlabelled",
    "uncertain": "Uncertain first",
}

COLUMN_WIDTHS = {"time": 125, "source": 85, "label": 165, "model_label": 140, "human_label": 105}


class EpisodeTableView(QTableView):
    """The table; turns the relabel keys into signals before type-ahead search sees them."""

    relabel_requested = Signal(str)
    undo_requested = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if modifiers in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier):
            label = RELABEL_KEYS.get(event.key())
            if label is not None:
                self.relabel_requested.emit(label)
                event.accept()
                return
            if event.key() == Qt.Key.Key_Backspace:
                self.undo_requested.emit()
                event.accept()
                return
        super().keyPressEvent(event)


def role_colors(palette: QPalette) -> dict[str, QColor]:
    """Speaker colors derived from the palette, so they stay readable in dark mode."""
    dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
    return {
        "user": QColor("#6cb4ff" if dark else "#0b5cad"),
        "assistant": QColor("#7fd48a" if dark else "#1d7a30"),
        "system": palette.color(QPalette.ColorRole.PlaceholderText),
        "tool": QColor("#e0b35c" if dark else "#8a5a00"),
    }


MATCH_STYLE = "background-color:#ffe066;color:#000000"
"""How a search match is marked in the detail panel."""


def marked(text: str, query: str) -> str:
    """``text`` as HTML with the search's matches of ``query`` highlighted."""
    parts: list[str] = []
    done = 0
    for start, end in highlight_spans(text, query):
        parts.append(html.escape(text[done:start]))
        parts.append(f"<span style='{MATCH_STYLE}'>{html.escape(text[start:end])}</span>")
        done = end
    parts.append(html.escape(text[done:]))
    return "".join(parts)


def render_detail(
    detail: EpisodeDetail,
    palette: QPalette,
    query: str = "",
    extra: Sequence[tuple[str, str]] = (),
) -> str:
    """HTML for the side panel: metadata, then the messages by speaker (or the plain text).

    Matches of the search ``query`` are highlighted (the same matching as the search);
    ``extra`` rows go under the labels (the source that decided the label).
    """
    row = detail.row
    colors = role_colors(palette)
    meta = [
        ("Time", format_time(row.timestamp)),
        ("Source", row.source or "—"),
        ("Label in force", label_in_force(row)),
        ("Model label", model_label_text(row)),
        ("Human label", row.human_label or "—"),
        *extra,
        ("Distilled", "yes" if row.distilled else "no"),
    ]
    if detail.classify_truncated:
        meta.append(("Note", "text was truncated for classification"))
    parts = ["<table cellspacing='0' cellpadding='2'>"]
    for name, value in meta:
        parts.append(f"<tr><td><b>{name}</b></td><td>{html.escape(value)}</td></tr>")
    parts.append("</table><hr/>")
    if detail.messages:
        for message in detail.messages:
            role = str(message.get("role", ""))
            who = message.get("name")
            speaker = f"{role} ({who})" if who else role
            color: str = colors.get(role, palette.color(QPalette.ColorRole.Text)).name()
            content = marked(str(message.get("content", "")), query).replace("\n", "<br/>")
            parts.append(
                f"<p><b style='color:{color}'>{html.escape(speaker)}</b><br/>{content}</p>"
            )
    else:
        parts.append("<p style='white-space:pre-wrap'>" + marked(detail.text, query) + "</p>")
    return "".join(parts)


class EpisodesPane(Pane):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("episodesPane")
        self.model = EpisodeTableModel(services.store, parent=self)
        # relabels retrain the learned classifier in the background (debounced)
        self.relearner = Relearner(services.store, self)
        self.relearner.finished.connect(self._relearned)
        self.relearner.failed.connect(lambda msg: self.status_message.emit(f"Learning: {msg}"))

        # filters
        self.label_combo = QComboBox()
        self.label_combo.setObjectName("labelFilter")
        for key in LABEL_FILTERS:
            self.label_combo.addItem(LABEL_FILTER_TEXT[key], key)
        self.source_combo = QComboBox()
        self.source_combo.setObjectName("sourceFilter")
        self.source_combo.setMinimumContentsLength(12)
        self.date_check = QCheckBox("From")
        self.date_check.setObjectName("dateFilterEnabled")
        self.date_from = QDateEdit()
        self.date_from.setObjectName("dateFrom")
        self.date_to = QDateEdit()
        self.date_to.setObjectName("dateTo")
        for edit in (self.date_from, self.date_to):
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setEnabled(False)
        self.search_edit = QLineEdit()
        self.search_edit.setObjectName("searchEdit")
        self.search_edit.setPlaceholderText("Search text…")
        self.search_edit.setClearButtonEnabled(True)
        self.count_label = QLabel()
        self.count_label.setObjectName("countLabel")
        # Set by another pane (Insights: one confusion-matrix cell): only these episodes.
        self._ids: tuple[int, ...] | None = None
        self.ids_button = QPushButton()
        self.ids_button.setObjectName("clearIdsFilterButton")
        self.ids_button.setToolTip("Show all episodes again")
        self.ids_button.clicked.connect(lambda: self.show_ids(None))
        self.ids_button.hide()

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(250)
        self._search_timer.timeout.connect(self.apply_filter)

        filters = QHBoxLayout()
        filters.addWidget(self.label_combo)
        filters.addWidget(self.source_combo)
        filters.addWidget(self.date_check)
        filters.addWidget(self.date_from)
        filters.addWidget(QLabel("to"))
        filters.addWidget(self.date_to)
        filters.addWidget(self.search_edit, 1)
        filters.addWidget(self.ids_button)
        self.relevance_check = QCheckBox("Best match first")
        self.relevance_check.setObjectName("relevanceSort")
        self.relevance_check.setToolTip(
            "Order the results by relevance (bm25) while the search has 3 or more characters"
        )
        filters.addWidget(self.relevance_check)
        filters.addWidget(self.count_label)

        # table
        self.table = EpisodeTableView()
        self.table.setObjectName("episodeTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        # fixed row height: the view never measures rows (that would fetch every page)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for column, (key, _title) in enumerate(COLUMNS):
            if key in COLUMN_WIDTHS:
                header.resizeSection(column, COLUMN_WIDTHS[key])
        header.setSortIndicator(0, Qt.SortOrder.DescendingOrder)
        self.table.setSortingEnabled(True)
        self.table.relabel_requested.connect(self.relabel_selected)
        self.table.undo_requested.connect(self.undo_relabel)

        # detail
        self.detail = QTextBrowser()
        self.detail.setObjectName("episodeDetail")
        self.detail.setOpenExternalLinks(False)
        self.detail.setPlaceholderText("Select an episode to read it.")

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("episodesSplitter")
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([840, 460])

        hint = QLabel(
            "Keys: <b>C</b> constitutional · <b>N</b> noise · <b>U</b> uncategorized · "
            "<b>Backspace</b> undo last relabel"
        )
        hint.setObjectName("keyHint")

        layout = QVBoxLayout(self)
        layout.addLayout(filters)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(hint)

        self.label_combo.currentIndexChanged.connect(self.apply_filter)
        self.source_combo.currentIndexChanged.connect(self.apply_filter)
        self.date_check.toggled.connect(self._date_toggled)
        self.date_from.dateChanged.connect(self.apply_filter)
        self.date_to.dateChanged.connect(self.apply_filter)
        self.search_edit.textChanged.connect(self._search_timer.start)
        self.relevance_check.toggled.connect(self._relevance_toggled)
        header.sortIndicatorChanged.connect(self._column_sort_chosen)
        self.table.selectionModel().selectionChanged.connect(self._show_selected)
        self.model.modelReset.connect(self._update_count)

        self._reload_sources()
        self._preset_dates()
        self.model.set_query(self.current_filter())

    # -- filters --------------------------------------------------------------------------

    def _date_toggled(self, enabled: bool) -> None:
        self.date_from.setEnabled(enabled)
        self.date_to.setEnabled(enabled)
        self.apply_filter()

    def _preset_dates(self) -> None:
        """While the date filter is off, its range follows the data (first to last day)."""
        if self.date_check.isChecked():
            return
        found = date_range(self.services.store)
        first, last = found if found is not None else (date.today(), date.today())
        for edit, day in ((self.date_from, first), (self.date_to, last)):
            edit.blockSignals(True)
            edit.setDate(QDate(day.year, day.month, day.day))
            edit.blockSignals(False)

    def _reload_sources(self) -> None:
        current = self.source_combo.currentData()
        self.source_combo.blockSignals(True)
        self.source_combo.clear()
        self.source_combo.addItem("All sources", None)
        for source in distinct_sources(self.services.store):
            self.source_combo.addItem(source or "(none)", source)
        found = self.source_combo.findData(current)
        self.source_combo.setCurrentIndex(max(found, 0))
        self.source_combo.blockSignals(False)

    def current_filter(self) -> EpisodeFilter:
        dates: tuple[date | None, date | None] = (None, None)
        if self.date_check.isChecked():
            start = self.date_from.date().toPython()
            end = self.date_to.date().toPython()
            assert isinstance(start, date) and isinstance(end, date)
            dates = (start, end)
        return EpisodeFilter(
            label=str(self.label_combo.currentData()),
            source=self.source_combo.currentData(),
            date_from=dates[0],
            date_to=dates[1],
            text=self.search_edit.text(),
            ids=self._ids,
        )

    def show_ids(self, ids: list[int] | None, title: str = "") -> None:
        """Show only ``ids`` (None: all again), on top of the other filters."""
        self._ids = None if ids is None else tuple(ids)
        self.ids_button.setText(f"{title or 'Selected episodes'} ✕")
        self.ids_button.setVisible(ids is not None)
        self.apply_filter()

    def apply_filter(self) -> None:
        self._search_timer.stop()
        self.model.set_query(self.current_filter())

    def _relevance_toggled(self, on: bool) -> None:
        """Best match first, or back to the column the header shows."""
        if on:
            self.model.set_query(self.current_filter(), EpisodeSort(RELEVANCE, True))
            return
        header = self.table.horizontalHeader()
        key = COLUMNS[header.sortIndicatorSection()][0]
        descending = header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
        self.model.set_query(self.current_filter(), EpisodeSort(key, descending))

    def _column_sort_chosen(self, _column: int, _order: Qt.SortOrder) -> None:
        """A click on a column header sorts by that column: relevance is off."""
        self.relevance_check.blockSignals(True)
        self.relevance_check.setChecked(False)
        self.relevance_check.blockSignals(False)

    def _update_count(self) -> None:
        total = count_episodes(self.services.store)
        self.count_label.setText(f"{total} episodes ({self.model.rowCount()} shown)")

    # -- selection and detail -------------------------------------------------------------

    def selected_ids(self) -> list[int]:
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.model.episode_id(row) for row in rows]

    def select_ids(self, ids: list[int]) -> None:
        selection = self.table.selectionModel()
        selection.clearSelection()
        flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
        for episode_id in ids:
            row = self.model.row_of(episode_id)
            if row is not None:
                selection.select(self.model.index(row, 0), flags)

    def _show_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 1:
            self.detail.setHtml("" if not ids else f"<p><i>{len(ids)} episodes selected.</i></p>")
            return
        detail = fetch_detail(self.services.store, ids[0])
        if detail is None:
            self.detail.setHtml("<p><i>This episode was deleted.</i></p>")
            return
        query = self.search_edit.text()
        decided = label_decision_rows(self.services.store, ids[0])
        self.detail.setHtml(render_detail(detail, self.detail.palette(), query, decided))

    # -- relabel --------------------------------------------------------------------------

    def relabel_selected(self, label: str) -> None:
        ids = self.selected_ids()
        if not ids:
            self.status_message.emit("Select episodes first, then press C, N or U.")
            return
        from curator.pipeline.labels import relabel

        try:
            relabel(self.services.store, ids, label)
        except CuratorError as exc:
            self.services.dialogs.warning(self, "Relabel", str(exc))
            return
        self._after_relabel(ids)
        self.status_message.emit(f"Labelled {len(ids)} episode(s) {label}.")

    def undo_relabel(self) -> None:
        from curator.pipeline.labels import undo_last_relabel

        try:
            ids = undo_last_relabel(self.services.store)
        except CuratorError as exc:
            self.services.dialogs.warning(self, "Undo relabel", str(exc))
            return
        if not ids:
            self.status_message.emit("Nothing to undo.")
            return
        self._after_relabel(list(ids))
        self.status_message.emit(f"Undid the relabel of {len(ids)} episode(s).")

    def _after_relabel(self, ids: list[int]) -> None:
        self.relearner.schedule()
        if self.model.filter.label == "uncertain":
            self._advance_queue()
            return
        if self.model.filter.label == "all":
            self.model.refresh_ids(ids)  # rows stay, only their text changes
        else:
            self.refresh()  # a label filter may now exclude or include them
        self._show_selected()
        self.data_changed.emit()

    def _advance_queue(self) -> None:
        """Uncertain first: the relabelled episodes left the queue; select the next one."""
        self.model.reload()
        self._update_count()
        if self.model.rowCount():
            self.select_ids([self.model.episode_id(0)])
            self.table.scrollToTop()
        self._show_selected()
        self.data_changed.emit()

    def _relearned(self, report: object) -> None:
        summary = getattr(report, "summary", None)
        if callable(summary):
            self.status_message.emit(str(summary()))
        self.refresh()

    def shutdown(self) -> None:
        """Window close: wait for a running retrain (never leave its thread behind)."""
        self.relearner.shutdown()

    # -- pane API -------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload after a change elsewhere, keeping selection and scroll position."""
        selected = self.selected_ids()
        scroll = self.table.verticalScrollBar().value()
        self._reload_sources()
        self._preset_dates()
        if self.model.reload():
            self.select_ids(selected)
            self.table.verticalScrollBar().setValue(scroll)
        self._update_count()
        self._show_selected()

"""The Episodes pane's filters: label, source, date range, search text, and a list of
episodes asked for from elsewhere (an Insights cell, a provenance jump).

They only say what to show; the pane runs the query (:class:`EpisodeTableModel` in SQL).
Every change but typing is a query at once; typed text waits for a pause of
:data:`TYPING_PAUSE_MS`, so a word is one query rather than one a letter. The source list
and the date range come from the data, read in the background.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from PySide6.QtCore import QDate, QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDateEdit,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from curator.store.db import Store
from curator.store.episode_queries import (
    LABEL_FILTERS,
    EpisodeFilter,
    date_range,
    distinct_sources,
)

if TYPE_CHECKING:
    from curator.gui.runtime.operations import StoreOps

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

TYPING_PAUSE_MS = 250
"""A typed search runs once the typing has paused this long."""

Facts = tuple[list[str], tuple[date, date] | None]
"""The sources the episodes name and their first and last day (None: no episode)."""


def _facts(store: Store) -> Facts:
    return distinct_sources(store), date_range(store)


class EpisodeFilters(QObject):
    """The filter widgets, what they say (:meth:`current`) and the data they offer."""

    changed = Signal()
    """The filter changed: the query to run now (a typed search after its pause)."""
    status_message = Signal(str)

    def __init__(self, ops: StoreOps, parent: QWidget) -> None:
        super().__init__(parent)
        self._ops = ops
        self._facts_token = 0  # the source list and date range read now (0: none)
        self._ids: tuple[int, ...] | None = None  # only these episodes (see show_ids)

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
        self.ids_button = QPushButton()
        self.ids_button.setObjectName("clearIdsFilterButton")
        self.ids_button.setToolTip("Show all episodes again")
        self.ids_button.clicked.connect(lambda: self.show_ids(None))
        self.ids_button.hide()

        self._typing = QTimer(self)
        self._typing.setSingleShot(True)
        self._typing.setInterval(TYPING_PAUSE_MS)
        self._typing.timeout.connect(self.changed)

        self.label_combo.currentIndexChanged.connect(self.changed)
        self.source_combo.currentIndexChanged.connect(self.changed)
        self.date_check.toggled.connect(self._date_toggled)
        self.date_from.dateChanged.connect(self.changed)
        self.date_to.dateChanged.connect(self.changed)
        self.search_edit.textChanged.connect(self._typing.start)

    def filter_row(self) -> QHBoxLayout:
        """Label, source, dates and the asked-for episodes' button, in one row."""
        row = QHBoxLayout()
        row.addWidget(self.label_combo)
        row.addWidget(self.source_combo)
        row.addWidget(self.date_check)
        row.addWidget(self.date_from)
        row.addWidget(QLabel("to"))
        row.addWidget(self.date_to)
        row.addWidget(self.ids_button)
        row.addStretch(1)
        return row

    @property
    def typing(self) -> bool:
        """Typed text waits for its pause (no query for it yet)."""
        return self._typing.isActive()

    def stop_typing(self) -> None:
        """The query for the typed text runs now: no second one after the pause."""
        self._typing.stop()

    def current(self) -> EpisodeFilter:
        """What the widgets say."""
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

    def _date_toggled(self, enabled: bool) -> None:
        self.date_from.setEnabled(enabled)
        self.date_to.setEnabled(enabled)
        self.changed.emit()

    # -- the episodes asked for -------------------------------------------------------------

    def show_ids(self, ids: list[int] | None, title: str = "") -> None:
        """Show only ``ids`` (None: all again).

        Asked for from elsewhere (a provenance jump, an Insights cell), so the search,
        label, source and date filters are cleared first: on top of them the episodes
        asked for could be filtered out and the list would open empty.
        """
        if ids is not None:
            self._clear()
        self._ids = None if ids is None else tuple(ids)
        self.ids_button.setText(f"{title or 'Selected episodes'} ✕")
        self.ids_button.setVisible(ids is not None)
        self.changed.emit()

    def _clear(self) -> None:
        """Search, label, source and date back to "everything", without a query each."""
        cleared = bool(self.search_edit.text()) or self.date_check.isChecked()
        cleared = cleared or self.label_combo.currentIndex() > 0
        cleared = cleared or self.source_combo.currentIndex() > 0
        widgets = (self.search_edit, self.label_combo, self.source_combo, self.date_check)
        for widget in widgets:
            widget.blockSignals(True)
        self.search_edit.clear()
        self.label_combo.setCurrentIndex(0)
        self.source_combo.setCurrentIndex(0)
        self.date_check.setChecked(False)
        for widget in widgets:
            widget.blockSignals(False)
        self.date_from.setEnabled(False)
        self.date_to.setEnabled(False)
        if cleared:
            self.status_message.emit("Episodes: filters cleared to show the episodes asked for.")

    # -- what the data offers ---------------------------------------------------------------

    def load_facts(self) -> None:
        """The source list and the date range, in the background even on a small
        database: ``DISTINCT source`` walks an index of every episode, and any read on the
        GUI thread waits on a writer (the command line, a backup) with the window frozen."""

        def failed(message: str) -> None:
            self._facts_token = 0
            self.status_message.emit(
                f"Episodes: the sources and dates could not be read: {message}"
            )

        self._facts_token = self._ops.query(
            "episodeFacts", lambda ctx: _facts(ctx.store), self._apply_facts, failed
        )

    @property
    def facts_loading(self) -> bool:
        """The source list and date range were asked for and have not arrived yet."""
        return self._facts_token != 0

    def _apply_facts(self, facts: Facts) -> None:
        self._facts_token = 0
        sources, found = facts
        self._reload_sources(sources)
        self._preset_dates(found)

    def _preset_dates(self, found: tuple[date, date] | None) -> None:
        """While the date filter is off, its range follows the data (first to last day)."""
        if self.date_check.isChecked():
            return
        first, last = found if found is not None else (date.today(), date.today())
        for edit, day in ((self.date_from, first), (self.date_to, last)):
            edit.blockSignals(True)
            edit.setDate(QDate(day.year, day.month, day.day))
            edit.blockSignals(False)

    def _reload_sources(self, sources: list[str]) -> None:
        """The sources offered now, the one chosen kept (All where it is gone)."""
        current = self.source_combo.currentData()
        self.source_combo.blockSignals(True)
        self.source_combo.clear()
        self.source_combo.addItem("All sources", None)
        for source in sources:
            self.source_combo.addItem(source or "(none)", source)
        found = self.source_combo.findData(current)
        self.source_combo.setCurrentIndex(max(found, 0))
        self.source_combo.blockSignals(False)

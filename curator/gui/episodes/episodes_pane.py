"""The Episodes pane: the raw logs, their labels, and relabelling from the keyboard.

Filters and sort run in SQL through :class:`EpisodeTableModel`, so the pane stays
responsive on 100,000 episodes (on a large database the queries run in the background).
``C``/``N``/``U`` relabel the selected rows (a human label overrides the model's),
``Backspace`` undoes the last relabel; both are database writes and run through
``ops.write`` off the GUI thread, and a relabel of more than :data:`CONFIRM_ABOVE` rows
asks first with the exact count. Only the affected rows are repainted so the selection
and the scroll position stay where the user left them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from curator.core.wording import agree, plural
from curator.gui.episodes.episode_detail import DetailReader
from curator.gui.episodes.episode_filters import EpisodeFilters
from curator.gui.episodes.episode_model import (
    COLUMNS,
    EpisodeTableModel,
)
from curator.gui.episodes.episode_table import EpisodeTableView
from curator.gui.episodes.relearn import Relearner
from curator.gui.episodes.view_anchor import ViewAnchor, scroll_to_anchor, view_anchor
from curator.gui.runs.run_start import classify_button_text
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.pane import Pane
from curator.gui.widgets.qt_models import selected_spans
from curator.gui.widgets.search_keys import DownIntoResults
from curator.store.episode_queries import (
    RELEVANCE,
    EpisodeFilter,
    EpisodeSort,
)

COUNT_SAMPLES = ("Searching…", f"{999_999_999:,} episodes ({999_999_999:,}+ shown)")
"""The widest texts of the match count (it has a fixed width, see the constructor)."""

CONFIRM_ABOVE = 200
"""A relabel of more rows than this asks first (a stray Ctrl+A then a key is easy)."""


class EpisodesPane(Pane):
    classify_requested = Signal()
    """The empty state's "Classify N pending episodes" button (the window runs it)."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("episodesPane")
        self.model = EpisodeTableModel(services.store, ops=services.ops, parent=self)
        self.model.load_failed.connect(self._load_failed)
        self._run_limit: int | None = None  # the Runs pane's (see set_run_limit)
        self._last_action = ""  # the last relabel or undo said (see _relearned)
        self._kept: list[int] | None = None  # selection across a model reset
        self._kept_chosen: list[int] | None = None  # what was selected of it, first rows
        self._kept_current: int | None = None  # the keyboard's current episode, the same
        self._shown_query: tuple[object, object] | None = None  # the filter and order shown
        self._new_query = False  # the rows just shown answer another filter or order
        self._kept_anchor: ViewAnchor | None = None  # the reader's place when rows were replaced
        # relabels retrain the learned classifier in the background (debounced)
        self.relearner = Relearner(services.store, self)
        self.relearner.finished.connect(self._relearned)
        self.relearner.failed.connect(lambda msg: self.status_message.emit(f"Learning: {msg}"))

        # filters
        self.filters = EpisodeFilters(self.ops, self)
        self.filters.changed.connect(self.apply_filter)
        self.filters.status_message.connect(self.status_message)
        self.search_edit = self.filters.search_edit
        self.label_combo = self.filters.label_combo
        self.source_combo = self.filters.source_combo
        self.date_check = self.filters.date_check
        self.date_from = self.filters.date_from
        self.date_to = self.filters.date_to
        self.ids_button = self.filters.ids_button
        self.count_label = QLabel()
        self.count_label.setObjectName("countLabel")
        # Its text changes with every search: at its own width it moved the search box
        # and its clear button under the mouse. Wide enough for the widest count.
        self.count_label.setFixedWidth(
            max(self.count_label.fontMetrics().horizontalAdvance(t) for t in COUNT_SAMPLES) + 8
        )
        self.count_label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        # First start: episodes nobody classified yet; the next action, as a button.
        self.classify_button = QPushButton()
        self.classify_button.setObjectName("classifyPendingButton")
        self.classify_button.setToolTip("Label the pending episodes with the local model")
        self.classify_button.clicked.connect(self.classify_requested)
        self.classify_button.setDefault(True)
        self.pending_label = QLabel()
        self.pending_label.setObjectName("pendingLabel")
        # The first-start banner, left-aligned above the filters where it is seen first
        # (hidden once nothing waits for classification).
        self.empty_state = QWidget()
        self.empty_state.setObjectName("episodesEmptyState")
        banner = QHBoxLayout(self.empty_state)
        banner.setContentsMargins(0, 0, 0, 0)
        banner.addWidget(self.pending_label)
        banner.addWidget(self.classify_button)
        banner.addStretch(1)
        self.empty_state.hide()
        # Two rows, so the pane fits a 1024 px wide window: the search with its sort and
        # count, then the filters with the next action (classify) at the end.
        search_row = QHBoxLayout()
        search_row.addWidget(self.search_edit, 1)
        self.relevance_check = QCheckBox("Best match first")
        self.relevance_check.setObjectName("relevanceSort")
        self.relevance_check.setToolTip(
            "Order the results by relevance (bm25) while the search has 3 or more characters"
        )
        search_row.addWidget(self.relevance_check)
        search_row.addWidget(self.count_label)

        # table
        self.table = EpisodeTableView()
        self.table.setObjectName("episodeTable")
        self.setFocusProxy(self.table)  # the pane's keys (C/N/U, Backspace) act on the table
        self.table.show_model(self.model)
        header = self.table.horizontalHeader()
        self.table.relabel_requested.connect(self.relabel_selected)
        # Down in the search field: into the results (entered once they are in).
        self._enter_results = False
        self.search_keys = DownIntoResults(self.search_edit, self.table, self._settle_search)
        self.table.undo_requested.connect(self.undo_relabel)

        # detail
        self.detail = QTextBrowser()
        self.detail.setObjectName("episodeDetail")
        self.detail.setOpenExternalLinks(False)
        self.detail.setPlaceholderText("Select an episode to read it.")
        self.detail.setMinimumWidth(220)
        self.detail_reader = DetailReader(self.detail, self.ops, self.search_edit.text)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("episodesSplitter")
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)  # the detail cannot be dragged away
        self.splitter.setSizes([840, 460])

        find = QKeySequence(QKeySequence.StandardKey.Find)
        self.find_shortcut = QShortcut(find, self)
        self.find_shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.find_shortcut.activated.connect(self.focus_search)
        hint = QLabel(
            "Keys: <b>C</b> constitutional · <b>N</b> noise · <b>U</b> uncategorized · "
            "<b>Backspace</b> undo last relabel · "
            f"<b>{find.toString(QKeySequence.SequenceFormat.NativeText)}</b> search"
        )
        hint.setObjectName("keyHint")
        hint.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addWidget(self.empty_state)
        layout.addLayout(search_row)
        layout.addLayout(self.filters.filter_row())
        layout.addWidget(self.splitter, 1)
        layout.addWidget(hint)

        self.relevance_check.toggled.connect(self._relevance_toggled)
        header.sortIndicatorChanged.connect(self._column_sort_chosen)
        self.table.selectionModel().selectionChanged.connect(self._show_selected)
        self.model.modelAboutToBeReset.connect(self._remember_selection)
        self.model.loaded.connect(self._loaded)
        # Nothing is read until the first refresh (the window's, when the pane is first
        # shown): read here as well, the rows, the counts and the page in view were read
        # twice at every start, and on a server once before the window listened for changes.
        self._queried = False

    # -- filters --------------------------------------------------------------------------

    @property
    def facts_loading(self) -> bool:
        """The source list and date range were asked for and have not arrived yet."""
        return self.filters.facts_loading

    def current_filter(self) -> EpisodeFilter:
        return self.filters.current()

    def show_ids(self, ids: list[int] | None, title: str = "", *, facts: bool = False) -> None:
        """Show only ``ids`` (None: all again), the other filters cleared first;
        ``facts``: read the filters' source list and date range again too."""
        if facts:
            self.filters.load_facts()
        self.filters.show_ids(ids, title)

    def apply_filter(self) -> None:
        self.filters.stop_typing()
        self._query(self.current_filter())

    def _query(self, flt: EpisodeFilter, sort: EpisodeSort | None = None) -> None:
        """A new filter/sort; on a large database it runs in the background (newest wins)."""
        if self.model.in_background:
            self.count_label.setText("Searching…")
        self._queried = True
        self.model.set_query(flt, sort)

    def _relevance_toggled(self, on: bool) -> None:
        """Best match first, or back to the column the header shows."""
        if on:
            self._query(self.current_filter(), EpisodeSort(RELEVANCE, True))
            return
        header = self.table.horizontalHeader()
        key = COLUMNS[header.sortIndicatorSection()][0]
        descending = header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder
        self._query(self.current_filter(), EpisodeSort(key, descending))

    def _column_sort_chosen(self, _column: int, _order: Qt.SortOrder) -> None:
        """A click on a column header sorts by that column: relevance is off."""
        self.relevance_check.blockSignals(True)
        self.relevance_check.setChecked(False)
        self.relevance_check.blockSignals(False)

    def _update_count(self) -> None:
        total = self.model.total
        shown = f"{self.model.rowCount():,}" + ("" if self.model.complete else "+")
        self.count_label.setText(f"{plural(total, 'episode')} ({shown} shown)")
        pending = self.model.pending_classification
        self.classify_button.setText(classify_button_text(pending, self._run_limit))
        self.pending_label.setText(
            f"{plural(pending, 'episode')} {agree(pending, 'has', 'have')} no label yet:"
        )
        self.empty_state.setVisible(pending > 0)

    def set_run_limit(self, limit: int | None) -> None:
        """The Runs pane's limit, which the Classify button's run takes: the button names
        the number a click classifies, not only how many are pending."""
        self._run_limit = limit
        self._update_count()

    def _load_failed(self, message: str) -> None:
        self._update_count()  # not "Searching…" for ever
        self.status_message.emit(f"Episodes: {message}")

    def _remember_selection(self) -> None:
        """A reset drops the selection without a signal: keep what to select again."""
        self._kept = self.selected_ids()
        self._kept_chosen = None
        current = self.table.currentIndex()
        self._kept_current = self.model.episode_id(current.row()) if current.isValid() else None
        self._kept_anchor = view_anchor(self.table)  # now: the reader may have moved meanwhile

    def _loaded(self) -> None:
        """A load arrived: select again what is still shown, so the detail panel follows
        the filter (an episode the filter removed is no longer shown there)."""
        kept, self._kept = self._kept, None
        chosen, self._kept_chosen = self._kept_chosen, None
        current, self._kept_current = self._kept_current, None
        if kept is not None and (chosen is None or chosen == self.selected_ids()):
            self.select_ids(kept)
            self._make_current(current)
            if not self.model.complete:
                # the rest of the rows may hold more of them: select them again when it
                # comes, unless the user chose something else meanwhile
                self._kept = kept
                self._kept_chosen = self.selected_ids()
                self._kept_current = current
        self._start_where_the_query_starts()
        self._update_count()
        self._show_selected()
        if not self.table.user_sized:
            self.table.fit_columns()  # to the rows now shown
        if self._enter_results:
            self._enter_results = False
            if self.table.hasFocus() and not self.table.selectionModel().hasSelection():
                self.search_keys.enter()

    def _start_where_the_query_starts(self) -> None:
        """Rows of a new filter or search start at their top (the scroll bar kept its
        value, and a search typed while scrolled down showed its 40th result first); a
        new order keeps the current episode in view, as file managers do, else its top.
        A reload of the same query keeps the reader's place (see ``refresh``)."""
        query = (self.model.filter, self.model.sort_spec)
        before, self._shown_query = self._shown_query, query
        self._new_query = before is not None and before != query
        if before is None or not self._new_query:
            return
        current = self.table.currentIndex()
        reordered = before[0] == query[0] and self.model.sort_spec.key != RELEVANCE
        selected = current.isValid() and self.table.selectionModel().isRowSelected(
            current.row(), QModelIndex()
        )
        if reordered and selected:
            self.table.scrollTo(current, QAbstractItemView.ScrollHint.PositionAtCenter)
        else:
            self.table.scrollToTop()

    def _make_current(self, episode_id: int | None) -> None:
        """The keyboard's current row back on ``episode_id`` where it is still shown (a
        reset forgets it, and Down then went on from the first row), selection unchanged."""
        row = None if episode_id is None else self.model.row_of(episode_id)
        if row is None:
            return
        # without scrolling to it: a new filter or search shows its first rows
        auto_scroll = self.table.hasAutoScroll()
        self.table.setAutoScroll(False)
        try:
            self.table.selectionModel().setCurrentIndex(
                self.model.index(row, 0), QItemSelectionModel.SelectionFlag.NoUpdate
            )
        finally:
            self.table.setAutoScroll(auto_scroll)

    def _settle_search(self) -> bool:
        """Down in the search field: a search still waiting for the typing pause runs now;
        True while its rows (or any reload's) are still to come, to be entered then."""
        if self.filters.typing:
            self.apply_filter()
        self._enter_results = self.model.loading
        return self._enter_results

    # -- selection and detail -------------------------------------------------------------

    def _selected_spans(self) -> list[tuple[int, int]]:
        """The selected rows as (first, last) pairs: Ctrl+A on 100,000 rows is one."""
        return selected_spans(self.table)

    def focus_search(self) -> None:
        """Ctrl+F: into the search field, its text selected to be typed over."""
        self.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_edit.selectAll()

    def selected_count(self) -> int:
        return sum(last - first + 1 for first, last in self._selected_spans())

    def selected_ids(self) -> list[int]:
        """The selected episodes in row order."""
        return self.model.ids_in_rows(self._selected_spans())

    def select_ids(self, ids: list[int]) -> None:
        """Select the shown ones of ``ids``: one range per run of adjacent rows."""
        rows = sorted(r for r in (self.model.row_of(i) for i in ids) if r is not None)
        chosen = QItemSelection()
        last = self.model.columnCount() - 1
        start = prev = -2
        for row in [*rows, -2]:
            if row == prev + 1:
                prev = row
                continue
            if start >= 0:
                chosen.select(self.model.index(start, 0), self.model.index(prev, last))
            start = prev = row
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
        self.table.selectionModel().select(chosen, flags)

    def _show_selected(self) -> None:
        """The detail panel follows the selection (read in the background)."""
        self.detail_reader.show(self.selected_ids(), self.selected_count())

    @property
    def detail_loading(self) -> bool:
        """The selected episode's detail was asked for and has not arrived yet."""
        return self.detail_reader.loading

    # -- relabel --------------------------------------------------------------------------

    def relabel_selected(self, label: str) -> None:
        """Relabel the selection in the background; more than :data:`CONFIRM_ABOVE` rows
        ask first with the exact count."""
        ids = self.selected_ids()
        if not ids:
            self.status_message.emit("Select episodes first, then press C, N or U.")
            return
        after = self._row_after_selection()
        if len(ids) > CONFIRM_ABOVE:
            self.services.dialogs.confirm(
                self,
                "Relabel",
                f"Relabel {plural(len(ids), 'episode')} as {label}?\n\n"
                "One step: Backspace or Ctrl+Z undoes it.",
                lambda: self.start_relabel(ids, label, after),
                yes_text="Relabel",
            )
            return
        self.start_relabel(ids, label, after)

    def _row_after_selection(self) -> int | None:
        """The episode shown below the selection's last row (None: it is the last)."""
        spans = self._selected_spans()
        row = spans[-1][1] + 1 if spans else self.model.rowCount()
        return self.model.episode_id(row) if row < self.model.rowCount() else None

    def start_relabel(self, ids: list[int], label: str, move_to: int | None = None) -> bool:
        """Write the relabel as one transaction off the GUI thread; False while busy.
        Once written the selection moves on to ``move_to`` (the next episode), as the
        Review list moves on after a decision, unless the user chose other rows meanwhile."""
        from curator.pipeline.labels import relabel

        def done(_batch: object) -> None:
            self._after_relabel(ids, move_to if self.selected_ids() == ids else None)
            self._said(f"Labelled {plural(len(ids), 'episode')} {label}.")

        return self._write(
            "Relabelling",
            lambda ctx: relabel(ctx.store, ids, label, progress=ctx.progress, phase=ctx.phase),
            done,
        )

    def undo_relabel(self) -> bool:
        """Undo the last relabel (one batch, however many rows) off the GUI thread."""
        from curator.pipeline.labels import undo_last_relabel

        def done(ids: list[int]) -> None:
            if not ids:
                self.status_message.emit("Nothing to undo.")
                return
            self._after_relabel(list(ids), select=list(ids))  # back to the undone rows
            self._said(f"Undid the relabel of {plural(len(ids), 'episode')}.")

        return self._write(
            "Undoing relabel",
            lambda ctx: undo_last_relabel(ctx.store, progress=ctx.progress, phase=ctx.phase),
            done,
        )

    def _write(self, label: str, fn: Any, done: Any) -> bool:
        title = "Undo relabel" if label.startswith("Undo") else "Relabel"

        def failed(message: str) -> None:
            self.services.dialogs.warning(self, title, message)

        return self.ops.write(label, fn, done, failed)

    def _after_relabel(
        self, ids: list[int], move_to: int | None = None, select: list[int] | None = None
    ) -> None:
        """Show the new labels and select ``select`` (an undo) or ``move_to`` (the
        episode after a relabel); with neither the selection stays."""
        self.relearner.schedule()
        if self.model.filter.label == "uncertain":
            self._advance_queue()
            return
        wanted = select if select is not None else ([move_to] if move_to is not None else None)
        if self.model.filter.label == "all":
            self.model.refresh_ids(ids)  # rows stay, only their text changes
            self._select_and_show(wanted)
        else:
            self.refresh(lambda: self._select_and_show(wanted))  # rows may come or go
        self.data_changed.emit()

    def _select_and_show(self, ids: list[int] | None) -> None:
        """Select the shown ones of ``ids`` (the first current, scrolled to); None: keep."""
        if ids is not None and any(self.model.row_of(i) is not None for i in ids):
            self.select_ids(ids)
            row = self.model.row_of(next(i for i in ids if self.model.row_of(i) is not None))
            index = self.model.index(row or 0, 0)
            self.table.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.NoUpdate
            )
            self.table.scrollTo(index)
        self._show_selected()

    def _advance_queue(self) -> None:
        """Uncertain first: the relabelled episodes left the queue; select the next one."""

        def select_first(_reset: bool) -> None:
            if self.model.rowCount():
                self.select_ids([self.model.episode_id(0)])
                self.table.scrollToTop()
            self._show_selected()

        self.model.reload(select_first)
        self.data_changed.emit()

    def _said(self, text: str) -> None:
        """Say what the person just did; the retrain's line that follows keeps it first."""
        self._last_action = text
        self.status_message.emit(text)

    def _relearned(self, report: object) -> None:
        """The retrain's summary, after the relabel or undo it follows (a second later):
        replacing "Undid the relabel…" by the learner's counts alone hid what was done."""
        summary = getattr(report, "summary", None)
        if callable(summary):
            prefix = f"{self._last_action} " if self._last_action else ""
            self.status_message.emit(f"{prefix}Learning: {summary()}")
        self.refresh()

    def shutdown(self) -> None:
        """Window close: wait for a running retrain (never leave its thread behind)."""
        self.relearner.shutdown()

    # -- pane API -------------------------------------------------------------------------

    def refresh(self, then: Callable[[], None] | None = None) -> None:
        """Reload after a change elsewhere, keeping the selection and the reader's place
        (:mod:`curator.gui.episodes.view_anchor`); ``then()`` runs once the rows are in."""
        self.filters.load_facts()

        def restore(reset: bool) -> None:
            # a new filter or order that came meanwhile starts at its own place instead
            if reset and not self._new_query:
                scroll_to_anchor(self.table, self._kept_anchor)
            if then is not None:
                then()

        if not self._queried:  # the first load: the first rows first, on a large database
            self._queried = True
            self.model.set_query(self.current_filter(), then=restore)
            return
        self.model.reload(restore)

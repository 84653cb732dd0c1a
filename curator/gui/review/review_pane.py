"""The Review pane: one decision at a time over a staged distillation run.

Nothing the model proposes reaches the agent's knowledge without a human decision, so
this pane is built for speed and certainty (the Prodigy/Argilla pattern): the candidate,
the existing pattern it matched (as a character diff) and its source episodes are shown
side by side, a single key decides (A accept the proposal, 1 duplicate — skip, 2 update
existing, 3 add new, X reject, E edit, T choose the pattern to update) and the selection
moves on to the next undecided candidate. Backspace undoes the selected row's decision,
Ctrl+Z the newest decision of the run, wherever it is.

No dead ends: UPDATE on a candidate with no proposed pattern opens the target picker
(:mod:`curator.gui.review.review_target`) instead of a refusal; with no staged run the pane says
what Review is for and offers Distill. Engine refusals reach the user through
:attr:`ReviewPane.show_message` (tests replace it to capture them). The parts live in
their own modules: the list (:mod:`~curator.gui.review.review_list`), the detail
panel (:mod:`~curator.gui.review.review_detail`) and the commit bar
(:mod:`~curator.gui.review.review_commit`, whose writes run in the background).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from curator.gui.review.review_commit import CommitBar
from curator.gui.review.review_decisions import ReviewDecisions
from curator.gui.review.review_detail import CandidateDetail
from curator.gui.review.review_dialogs import CommitDialog, EditDialog
from curator.gui.review.review_list import KEY_HELP, CandidateList, action_name
from curator.gui.review.review_queue import DecisionQueue
from curator.gui.review.review_target import TargetPicker
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.flag_view import FLAG_MARK, FlaggedConfirmDialog
from curator.gui.widgets.pane import Pane
from curator.pipeline import review as review_api
from curator.pipeline.commit import ChangesetSummary, CommitPreview
from curator.store.models import format_local

EMPTY_HTML = (
    "<h3>Nothing to review</h3>"
    "<p>Review is the gate between the model and the agent's memory: each pattern the "
    "model distils from labelled episodes waits here beside the existing pattern it "
    "resembles, and you decide — add it, update the existing one, mark it a duplicate "
    "or reject it. Nothing reaches the agent's knowledge until you commit.</p>"
    "<p>Distil the labelled episodes to stage candidates for review.</p>"
)

Loaded = tuple[list[review_api.StagedRun] | None, int | None, list[review_api.CandidateView]]
"""A candidates read: the staged runs (None: not re-read), the run shown, its candidates."""


class ReviewPane(ReviewDecisions, Pane):
    """Review a staged run's candidates with single keys, then commit or undo."""

    distill_requested = Signal()
    """The empty state's Distill button (the main window starts its distill action)."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("reviewPane")
        self.show_message: Callable[[str, str], None] = self._default_show_message
        """(title, text) -> None: how refusals reach the user; tests replace it to capture."""
        self.edit_dialog: EditDialog | None = None
        self.flagged_dialog: FlaggedConfirmDialog | None = None
        self.target_dialog: TargetPicker | None = None
        self._candidates: list[Any] = []
        self.loading = False
        """A read of the candidates is running (the progress label says so)."""
        self.decisions = DecisionQueue(services.ops, self)
        self.decisions.idle.connect(self._reload_when_idle)
        self._generation = 0  # counts decisions shown before the database has them
        self._reload_wanted = False
        self._select_after_load: int | None = None
        self._wanted_run: int | None = None  # select_run of a run not listed yet
        self._sources_wanted: int | None = None  # the candidate whose sources are asked for
        self._sources_shown: int | None = None  # the candidate whose sources are shown
        self.closing = False
        """The window is closing: the queued writes are finished, no dialog is opened."""

        # -- top bar ------------------------------------------------------------------------
        self.run_combo = QComboBox()
        self.run_combo.setObjectName("runCombo")
        self.run_combo.setMinimumWidth(200)
        self.run_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.run_combo.currentIndexChanged.connect(self._on_run_changed)
        self.progress_label = QLabel("No staged run.")
        self.progress_label.setObjectName("reviewProgress")
        self.flagged_only = QCheckBox(f"{FLAG_MARK} flagged only")
        self.flagged_only.setObjectName("flaggedOnlyCheck")
        self.flagged_only.setToolTip(
            "Show only candidates with memory-poisoning flags (instructions, links, secrets, "
            "personal data, hidden text, identity amendments, untrusted sources)"
        )
        self.flagged_only.toggled.connect(lambda _on: self._show_rows())
        self.accept_all_button = QPushButton("Accept all…")
        self.accept_all_button.setObjectName("acceptAllButton")
        self.accept_all_button.setToolTip(
            "Accept every undecided proposal; flagged candidates are listed for confirmation"
        )
        self.accept_all_button.clicked.connect(self.accept_all)
        self.commits = CommitBar(
            services,
            self,
            lambda t, m: self.show_message(t, m),
            self.current_run_id,
            self.decisions,
        )
        self.commits.message.connect(self.status_message)
        self.commits.committed.connect(self._after_commit)
        self.commits.undone.connect(self._after_commit)
        self.reviewed_only = self.commits.reviewed_only
        self.commit_button = self.commits.commit_button
        self.undo_commit_button = self.commits.undo_button

        # -- list and detail ----------------------------------------------------------------
        self.list_view = CandidateList()
        self.model = self.list_view.candidates
        self.list_view.selectionModel().currentRowChanged.connect(self._on_current_changed)
        self.list_view.installEventFilter(self)
        self.panel = CandidateDetail()
        self.panel.wording_chosen.connect(self.choose_wording)
        self.detail, self.diff = self.panel.detail, self.panel.diff
        self.match_label, self.sources = self.panel.match_label, self.panel.sources
        keys = QLabel(KEY_HELP)
        keys.setObjectName("keyHelp")
        keys.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(QLabel("Staged run:"))
        top.addWidget(self.run_combo)
        top.addWidget(self.progress_label, 1)
        top.addWidget(self.flagged_only)
        top.addWidget(self.accept_all_button)
        bottom = QHBoxLayout()  # below the stack: "Undo last commit" stays in the empty state
        bottom.addStretch(1)
        bottom.addWidget(self.commits.widget)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("reviewSplitter")
        self.splitter.addWidget(self.list_view)
        self.splitter.addWidget(self.panel)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([560, 840])  # scaled to the pane's width when laid out
        self.splitter.setChildrenCollapsible(False)
        review_page = QWidget()
        rl = QVBoxLayout(review_page)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.splitter, 1)
        rl.addWidget(keys)

        self.empty_label = QLabel(EMPTY_HTML)
        self.empty_label.setObjectName("reviewEmpty")
        self.empty_label.setWordWrap(True)
        self.empty_label.setFixedWidth(600)  # a fixed width: the wrapped height is exact
        self.distill_button = QPushButton("Distill")
        self.distill_button.setObjectName("distillButton")
        self.distill_button.setToolTip("Distil patterns from the labelled episodes (Ctrl+D)")
        self.distill_button.clicked.connect(self.distill_requested)
        empty_page = QWidget()
        el = QVBoxLayout(empty_page)
        el.addStretch(1)
        centred = QHBoxLayout()  # no alignment flag: the layout then honours heightForWidth
        centred.addStretch(1)
        centred.addWidget(self.empty_label)
        centred.addStretch(1)
        el.addLayout(centred)
        el.addWidget(self.distill_button, 0, Qt.AlignmentFlag.AlignHCenter)
        el.addStretch(2)
        self.stack = QStackedWidget()
        self.stack.addWidget(review_page)
        self.stack.addWidget(empty_page)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.stack, 1)
        layout.addLayout(bottom)

        # -- keys (only while focus is inside this pane) ------------------------------------
        bindings: list[tuple[str, Callable[[], object]]] = [
            ("A", lambda: self.decide_current("ACCEPT")),
            ("1", lambda: self.decide_current("SKIP")),
            ("2", lambda: self.decide_current("UPDATE")),
            ("3", lambda: self.decide_current("ADD")),
            ("X", lambda: self.decide_current("REJECT")),
            ("T", self.choose_target),
            ("E", self.edit_current),
            ("W", self.toggle_wording),
            ("Backspace", self.undo_selected),
        ]
        self.shortcuts: list[QShortcut] = []
        for key, slot in bindings:
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
            self.shortcuts.append(shortcut)
        self.setFocusProxy(self.list_view)
        self._update_buttons()

    def shutdown(self) -> None:
        """Window close: the decisions shown but not yet written are written first."""
        self.closing = True
        self.commits.shutdown()
        self.decisions.finish()

    def _dialog_parent(self) -> QWidget:
        return self

    def _default_show_message(self, title: str, text: str) -> None:
        self.services.dialogs.warning(self, title, text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Ctrl+Z in the list undoes the run's last decision (not the window's relabel undo).

        Accepting the ShortcutOverride makes Qt deliver the key to the list instead of
        triggering the window-wide Undo action.
        """
        if watched is self.list_view and event.type() in (
            QEvent.Type.ShortcutOverride,
            QEvent.Type.KeyPress,
        ):
            assert isinstance(event, QKeyEvent)
            if event.matches(QKeySequence.StandardKey.Undo):
                event.accept()
                if event.type() == QEvent.Type.KeyPress:
                    self.undo_decision()
                return True
        return super().eventFilter(watched, event)

    # -- loading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the staged runs and the current run's candidates (keeping the current one).

        Listing a run's candidates re-checks each one's flags (100 ms for 400 candidates
        at 300,000 episodes), so it is a query off the GUI thread; the progress label says
        "Loading…" meanwhile and the list keeps what it showed.
        """
        wanted = self._wanted_run if self._wanted_run is not None else self.current_run_id()

        def load(ctx: OpContext) -> Loaded:
            runs = review_api.staged_runs(ctx.store)
            ids = [r.id for r in runs]
            run_id = wanted if wanted in ids else (ids[0] if ids else None)
            rows = review_api.list_candidates(ctx.store, run_id) if run_id is not None else []
            return runs, run_id, rows

        self._query(load, keep_current=True)

    def _query(self, load: Callable[[OpContext], Loaded], *, keep_current: bool) -> None:
        """Start a candidates read; decisions still being written postpone it (the
        database is behind the list until they are in)."""
        if self.decisions.pending:
            self._reload_wanted = True
            return
        current = self.current_candidate()
        want = current.id if (current is not None and keep_current) else None
        if self._select_after_load is not None:
            want, self._select_after_load = self._select_after_load, None
        generation = self._generation
        self.loading = True
        self.progress_label.setText("Loading the candidates…")
        self.ops.query(
            "review.candidates",
            load,
            lambda result: self._loaded(result, want, generation),
            self._load_failed,
        )

    def _load_failed(self, message: str) -> None:
        self.loading = False
        self._update_progress()
        self.show_message("Review", f"The candidates could not be read: {message}")

    def _loaded(self, result: Loaded, want: int | None, generation: int) -> None:
        self.loading = False
        if generation != self._generation or self.decisions.pending:
            self._reload_wanted = True  # read before a decision landed: read again
            self._reload_when_idle()
            return
        runs, run_id, rows = result
        if runs is not None:
            self._wanted_run = None
            self.run_combo.blockSignals(True)
            try:
                self.run_combo.clear()
                for run in runs:
                    self.run_combo.addItem(
                        self._run_label(run.id, run.started_at, run.progress), run.id
                    )
                self.run_combo.setCurrentIndex(self.run_combo.findData(run_id))
            finally:
                self.run_combo.blockSignals(False)
            self.stack.setCurrentIndex(0 if runs else 1)
        elif run_id != self.current_run_id():
            return  # the user chose another run meanwhile; its own read follows
        self._candidates = rows
        self._show_rows(want)

    def _reload_when_idle(self) -> None:
        if self._reload_wanted and not self.decisions.pending:
            self._reload_wanted = False
            self.refresh()

    @staticmethod
    def _run_label(run_id: int, started: Any, progress: review_api.ReviewProgress) -> str:
        return (
            f"Run #{run_id} ({format_local(started)}) — "
            f"{progress.reviewed}/{progress.total} reviewed"
        )

    @property
    def settled(self) -> bool:
        """No read of the candidates and no decision write is outstanding (tests wait on it)."""
        return (
            not self.loading
            and not self.decisions.pending
            and not self._reload_wanted
            and not self.sources_loading
        )

    @property
    def sources_loading(self) -> bool:
        """The current candidate's source episodes are being read."""
        return self._sources_wanted is not None and self._sources_wanted != self._sources_shown

    def current_run_id(self) -> int | None:
        data = self.run_combo.currentData()
        return int(data) if data is not None else None

    def select_run(self, run_id: int) -> None:
        """Show ``run_id``; a run not listed yet (staged a moment ago) is read first."""
        index = self.run_combo.findData(run_id)
        if index >= 0:
            self.run_combo.setCurrentIndex(index)
        else:
            self._wanted_run = run_id
            self.refresh()

    def _on_run_changed(self, _index: int) -> None:
        if self.decisions.pending:
            # The read waits for the queued decisions; meanwhile the old run's rows must
            # not stay under the new run's name, where the next key would decide them.
            self._candidates = []
            self._show_rows()
            self.progress_label.setText("Loading the candidates…")
        self._load_candidates(keep_current=False)

    def _load_candidates(self, keep_current: bool = True) -> None:
        """Reload the current run's candidates (in the background)."""
        run_id = self.current_run_id()

        def load(ctx: OpContext) -> Loaded:
            rows = review_api.list_candidates(ctx.store, run_id) if run_id is not None else []
            return None, run_id, rows

        self._query(load, keep_current=keep_current)

    def _show_rows(self, want: int | None = None) -> None:
        """Fill the list from ``_candidates`` (all, or the flagged ones) and select ``want``,
        else the first undecided candidate."""
        if want is None:
            current = self.current_candidate()
            want = current.id if current is not None else None
        shown = self._candidates
        if self.flagged_only.isChecked():
            shown = [c for c in self._candidates if c.flags]
        self.model.set_rows(shown)
        row = -1
        if want is not None:
            row = self.model.find_row(lambda c: c.id == want)
        if row < 0:
            row = self.model.find_row(lambda c: c.action is None)
        if row < 0 and shown:
            row = 0
        self._select_row(row)
        self._update_progress()
        self._update_buttons()

    def _select_row(self, row: int) -> None:
        selection = self.list_view.selectionModel()
        if row < 0:
            selection.clear()
            self._show_candidate(None)
            return
        index = self.model.index(row, 0)
        if selection.currentIndex().row() == row:
            self._show_candidate(self.model.row_at(row))  # currentRowChanged will not fire
        else:  # currentRowChanged shows the candidate
            selection.setCurrentIndex(
                index, selection.SelectionFlag.ClearAndSelect | selection.SelectionFlag.Rows
            )
        self.list_view.scrollTo(index)

    def current_candidate(self) -> Any | None:
        return self.model.row_at(self.list_view.selectionModel().currentIndex().row())

    def candidates(self) -> list[Any]:
        return list(self._candidates)

    def shown_candidates(self) -> list[Any]:
        """The rows in the list now (all candidates, or the flagged ones)."""
        return self.model.rows()

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_candidate(self.model.row_at(current.row()))

    def _show_candidate(self, c: Any | None) -> None:
        self.panel.show_candidate(c, len(self._candidates))
        self._read_sources(c)

    def _read_sources(self, c: Any | None) -> None:
        """The candidate's source episodes, read on a worker thread.

        A candidate distilled from thousands of episodes takes a noticeable time to read at
        300,000 episodes, and moving through the list with the arrow keys must not wait for
        it: the panel says "Reading…" for a newly selected candidate (the one already shown
        keeps its sources meanwhile, without flicker), and only the newest read is shown.
        """
        if c is None:
            self._sources_wanted = self._sources_shown = None
            return
        wanted = self._sources_wanted = int(c.id)
        if wanted != self._sources_shown:
            self._sources_shown = None
            self.panel.show_sources_reading()
        ids, origin = list(c.source_episode_ids), c.origin
        self.ops.query(
            "review.sources",
            lambda ctx: review_api.source_episodes(ctx.store, ids),
            lambda episodes: self._sources_read(wanted, episodes, origin),
            lambda message: self._sources_failed(wanted, message),
        )

    def _sources_read(self, wanted: int, episodes: list[Any], origin: Any) -> None:
        if self._sources_wanted != wanted:
            return  # the selection moved on while this was read
        self._sources_shown = wanted
        self.panel.show_sources(episodes, origin)

    def _sources_failed(self, wanted: int, message: str) -> None:
        if self._sources_wanted == wanted:
            self._sources_wanted = self._sources_shown = None
            self.panel.show_sources_failed(message)

    def _update_progress(self) -> None:
        run_id = self.current_run_id()
        if run_id is None:
            self.progress_label.setText("No staged run.")
            return
        reviewed = sum(1 for c in self._candidates if c.action is not None)
        counts: dict[str, int] = {}
        for c in self._candidates:
            if c.action is not None:
                counts[c.action] = counts.get(c.action, 0) + 1
        parts = ", ".join(f"{n} {action_name(a)}" for a, n in sorted(counts.items()))
        self.progress_label.setText(
            f"<b>{reviewed} / {len(self._candidates)}</b> reviewed"
            + (f" ({parts})" if parts else "")
        )
        index = self.run_combo.currentIndex()
        text = self.run_combo.itemText(index).split(" — ")[0]
        self.run_combo.setItemText(index, f"{text} — {reviewed}/{len(self._candidates)} reviewed")

    def _update_buttons(self) -> None:
        self.accept_all_button.setEnabled(self.current_run_id() is not None)
        self.commits.update_buttons()

    # -- commit (the commit bar runs it in the background) ----------------------------------

    @property
    def commit_dialog(self) -> CommitDialog | None:
        return self.commits.commit_dialog

    def open_commit_dialog(self) -> CommitDialog | None:
        return self.commits.open_commit_dialog()

    def apply_commit(
        self, run_id: int, reviewed_only: bool, shown: CommitPreview | None = None
    ) -> bool:
        """Start the commit off the GUI thread; ``data_changed`` follows when it is done.

        With ``shown`` (the preview accepted) it commits exactly those decisions or refuses."""
        return self.commits.apply_commit(run_id, reviewed_only, shown)

    def last_commit(self) -> ChangesetSummary | None:
        return self.commits.last

    def undo_last_commit(self) -> bool:
        """Ask first (naming the commit, its run and time), then undo in the background."""
        return self.commits.undo_last_commit()

    def _after_commit(self, summary: ChangesetSummary | None) -> None:
        self.refresh()
        if summary is not None:
            self.data_changed.emit()

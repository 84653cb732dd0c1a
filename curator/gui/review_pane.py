"""The Review pane: one decision at a time over a staged distillation run.

Nothing the model proposes reaches the agent's knowledge without a human decision, so
this pane is built for speed and certainty (the Prodigy/Argilla pattern): the candidate,
the existing pattern it matched (as a character diff) and its source episodes are shown
side by side, a single key decides (A accept, 1 skip, 2 update, 3 add, X reject, E edit,
Backspace undo) and the selection moves on to the next undecided candidate.

Committing shows exactly what will change before anything is written; every engine
refusal (a conflict, unreviewed candidates) is shown through :attr:`ReviewPane.show_message`
so it is never swallowed, and tests can capture it without a modal box.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.diff_view import DiffView
from curator.gui.flag_view import (
    FLAG_MARK,
    FlaggedConfirmDialog,
    flags_html,
    flags_tooltip,
    highlight_html,
)
from curator.gui.pane import Pane
from curator.gui.qt_models import Column, RowTableModel
from curator.gui.review_dialogs import CommitDialog, EditDialog
from curator.gui.services import AppServices
from curator.pipeline import commit as commit_api
from curator.pipeline import review as review_api
from curator.store.models import Changeset, Episode, Run, format_local

KEY_HELP = (
    "<b>A</b> accept proposal · <b>1</b> skip · <b>2</b> update · <b>3</b> add · "
    "<b>X</b> reject · <b>E</b> edit · <b>Backspace</b> undo · <b>↑/↓</b> move"
)


def _flat(text: str, limit: int = 140) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _decision(c: Any) -> str:
    return "" if c.action is None else f"✓ {c.action}"


def _text_tooltip(c: Any) -> str:
    if c.final_text is None:
        return str(c.text)
    return f"Edited by the reviewer:\n{c.final_text}\n\nThe model proposed:\n{c.text}"


CANDIDATE_COLUMNS: list[Column[Any]] = [
    Column("#", lambda c: c.ordinal, align_right=True),
    Column("Proposed", lambda c: c.proposed_action),
    Column("Decision", _decision),
    Column(
        "Imp.",
        lambda c: c.effective_importance,
        display=lambda c: f"{c.effective_importance:.2f}",
        align_right=True,
    ),
    Column(
        FLAG_MARK,
        lambda c: len(c.flags),
        display=lambda c: f"{FLAG_MARK} {len(c.flags)}" if c.flags else "",
        tooltip=lambda c: flags_tooltip(c.flags) if c.flags else "",
    ),
    # The text that a commit applies: the reviewer's edit when there is one.
    Column(
        "Candidate",
        lambda c: c.effective_text,
        display=lambda c: ("✎ " if c.final_text is not None else "") + _flat(c.effective_text),
        tooltip=_text_tooltip,
    ),
]


class ReviewPane(Pane):
    """Review a staged run's candidates with single keys, then commit or undo."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("reviewPane")
        self.show_message: Callable[[str, str], None] = self._default_show_message
        """(title, text) -> None: how refusals reach the user; tests replace it to capture."""
        self.commit_dialog: CommitDialog | None = None
        self.edit_dialog: EditDialog | None = None
        self.flagged_dialog: FlaggedConfirmDialog | None = None
        self._candidates: list[Any] = []

        # -- top bar ------------------------------------------------------------------------
        self.run_combo = QComboBox()
        self.run_combo.setObjectName("runCombo")
        self.run_combo.setMinimumWidth(320)
        self.run_combo.currentIndexChanged.connect(self._on_run_changed)
        self.progress_label = QLabel("No staged run.")
        self.progress_label.setObjectName("reviewProgress")
        self.reviewed_only = QCheckBox("commit reviewed only")
        self.reviewed_only.setObjectName("reviewedOnlyCheck")
        self.reviewed_only.setToolTip(
            "Apply the decided candidates now and leave the undecided ones staged"
        )
        self.commit_button = QPushButton("Commit…")
        self.commit_button.setObjectName("commitButton")
        self.commit_button.clicked.connect(self.open_commit_dialog)
        self.flagged_only = QCheckBox(f"{FLAG_MARK} flagged only")
        self.flagged_only.setObjectName("flaggedOnlyCheck")
        self.flagged_only.setToolTip(
            "Show only candidates with memory-poisoning flags (instructions, links, secrets, "
            "personal data, hidden text, identity amendments, untrusted sources)"
        )
        self.flagged_only.toggled.connect(lambda _on: self._load_candidates())
        self.accept_all_button = QPushButton("Accept all…")
        self.accept_all_button.setObjectName("acceptAllButton")
        self.accept_all_button.setToolTip(
            "Accept every undecided proposal; flagged candidates are listed for confirmation"
        )
        self.accept_all_button.clicked.connect(self.accept_all)
        self.undo_commit_button = QPushButton("Undo last commit")
        self.undo_commit_button.setObjectName("undoCommitButton")
        self.undo_commit_button.clicked.connect(self.undo_last_commit)

        # -- candidate list -----------------------------------------------------------------
        self.model = RowTableModel(CANDIDATE_COLUMNS, self, row_background=self._row_background)
        self.list_view = QTableView()
        self.list_view.setObjectName("candidateList")
        self.list_view.setModel(self.model)
        self.list_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.list_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list_view.verticalHeader().setVisible(False)
        self.list_view.setWordWrap(False)
        header = self.list_view.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.list_view.selectionModel().currentRowChanged.connect(self._on_current_changed)

        # -- detail -------------------------------------------------------------------------
        self.detail = QTextBrowser()
        self.detail.setObjectName("candidateDetail")
        self.detail.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.diff = DiffView()
        self.diff.setObjectName("diffView")
        self.diff.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.match_label = QLabel()
        self.match_label.setObjectName("matchLabel")
        self.match_label.setWordWrap(True)
        self.sources = QTextBrowser()
        self.sources.setObjectName("sourceEpisodes")
        self.sources.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        keys = QLabel(KEY_HELP)
        keys.setObjectName("keyHelp")
        keys.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(QLabel("Staged run:"))
        top.addWidget(self.run_combo)
        top.addWidget(self.progress_label, 1)
        top.addWidget(self.flagged_only)
        top.addWidget(self.accept_all_button)
        top.addWidget(self.reviewed_only)
        top.addWidget(self.commit_button)
        top.addWidget(self.undo_commit_button)

        middle = QWidget()
        mv = QVBoxLayout(middle)
        mv.setContentsMargins(0, 0, 0, 0)
        mv.addWidget(QLabel("<b>Candidate</b>"))
        mv.addWidget(self.detail, 1)
        mv.addWidget(QLabel("<b>Matched existing pattern</b>"))
        mv.addWidget(self.match_label)
        mv.addWidget(self.diff, 2)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(QLabel("<b>Source episodes</b>"))
        rv.addWidget(self.sources)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.list_view)
        split.addWidget(middle)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addWidget(keys)

        # -- keys (only while focus is inside this pane) ------------------------------------
        bindings: list[tuple[str, Callable[[], object]]] = [
            ("A", lambda: self.decide_current("ACCEPT")),
            ("1", lambda: self.decide_current("SKIP")),
            ("2", lambda: self.decide_current("UPDATE")),
            ("3", lambda: self.decide_current("ADD")),
            ("X", lambda: self.decide_current("REJECT")),
            ("E", self.edit_current),
            ("Backspace", self.undo_decision),
        ]
        self.shortcuts: list[QShortcut] = []
        for key, slot in bindings:
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
            self.shortcuts.append(shortcut)
        self.setFocusProxy(self.list_view)
        self._update_buttons()

    def _default_show_message(self, title: str, text: str) -> None:
        self.services.dialogs.warning(self, title, text)

    def _row_background(self, c: Any) -> QBrush | None:
        if c.action is None:
            return None
        color = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        color.setAlpha(25 if c.action != "REJECT" else 10)
        return QBrush(color)

    # -- loading ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the staged runs and the current run's candidates (keeping the current one)."""
        run_id = self.current_run_id()
        runs = list(Run.select().where(Run.status == "staged").order_by(Run.id.desc()))
        self.run_combo.blockSignals(True)
        try:
            self.run_combo.clear()
            for run in runs:
                progress = review_api.review_progress(self.services.store, run.id)
                total, reviewed = progress.total, progress.reviewed
                when = format_local(run.started_at)
                self.run_combo.addItem(
                    f"Run #{run.id} ({when}) — {reviewed}/{total} reviewed", run.id
                )
            index = self.run_combo.findData(run_id) if run_id is not None else -1
            self.run_combo.setCurrentIndex(index if index >= 0 else (0 if runs else -1))
        finally:
            self.run_combo.blockSignals(False)
        self._load_candidates()

    def current_run_id(self) -> int | None:
        data = self.run_combo.currentData()
        return int(data) if data is not None else None

    def select_run(self, run_id: int) -> None:
        index = self.run_combo.findData(run_id)
        if index >= 0:
            self.run_combo.setCurrentIndex(index)

    def _on_run_changed(self, _index: int) -> None:
        self._load_candidates(keep_current=False)

    def _load_candidates(self, keep_current: bool = True) -> None:
        current = self.current_candidate()
        current_id = current.id if (current is not None and keep_current) else None
        run_id = self.current_run_id()
        self._candidates = (
            review_api.list_candidates(self.services.store, run_id) if run_id is not None else []
        )
        shown = self._candidates
        if self.flagged_only.isChecked():
            shown = [c for c in self._candidates if c.flags]
        self.model.set_rows(shown)
        row = -1
        if current_id is not None:
            row = self.model.find_row(lambda c: c.id == current_id)
        if row < 0:
            row = self.model.find_row(lambda c: c.action is None)
        if row < 0 and self._candidates:
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

    def _update_progress(self) -> None:
        run_id = self.current_run_id()
        if run_id is None:
            self.progress_label.setText("No staged run to review.")
            return
        progress = review_api.review_progress(self.services.store, run_id)
        parts = ", ".join(f"{n} {action}" for action, n in sorted(progress.by_action.items()))
        self.progress_label.setText(
            f"<b>{progress.reviewed} / {progress.total}</b> reviewed"
            + (f" ({parts})" if parts else "")
        )

    def _update_buttons(self) -> None:
        has_run = self.current_run_id() is not None
        self.commit_button.setEnabled(has_run)
        self.accept_all_button.setEnabled(has_run)
        last = self.last_commit()
        self.undo_commit_button.setEnabled(last is not None)
        self.undo_commit_button.setToolTip(
            f"Undo changeset #{last.id} (run #{last.run_id})"
            if last is not None
            else "Nothing committed yet"
        )

    # -- detail -----------------------------------------------------------------------------

    def _show_candidate(self, c: Any | None) -> None:
        if c is None:
            self.detail.setHtml("<p><i>No candidate selected.</i></p>")
            self.diff.clear_diff()
            self.match_label.setText("")
            self.sources.setHtml("")
            return
        action = c.action or c.current_proposal
        edited = c.final_text is not None
        if c.action in ("SKIP", "UPDATE") and c.target_ratio is not None:
            ratio = c.target_ratio
        elif edited and c.rematch_ratio is not None:
            ratio = c.rematch_ratio
        else:
            ratio = c.proposed_ratio
        decided = (
            f"<b>{c.action}</b> by {html.escape(c.decided_by or '')}"
            if c.action
            else "<i>undecided</i>"
        )
        importance = c.effective_importance
        lines = [
            f"<p>#{c.ordinal} of {len(self._candidates)} · category "
            f"<b>{html.escape(c.category)}</b> · proposed <b>{c.proposed_action}</b> "
            f"(ratio {c.proposed_ratio:.3f}) · decision: {decided}</p>",
            f"<p style='font-size:large'>{highlight_html(c.effective_text, c.flags)}</p>",
        ]
        if c.flags:
            lines.append(flags_html(c.flags))
        if c.distilled_at is not None:
            when = c.distilled_at.astimezone().strftime("%Y-%m-%d")
            lines.append(f"<p><i>Imported knowledge, first distilled {when}.</i></p>")
        if edited:
            lines.append(
                f"<p><i>Edited (re-match: {c.rematch_action}); the model proposed:</i> "
                f"{html.escape(c.text)}</p>"
            )
            if c.action == "UPDATE" and c.target_id is not None:
                lines.append(
                    f"<p>On commit, this wording replaces the text of pattern #{c.target_id}.</p>"
                )
        if c.quality_reasons:
            lines.append(
                "<p style='color:#c0392b'>Quality gate: "
                f"{html.escape('; '.join(c.quality_reasons))}</p>"
            )
        old = c.target_importance
        if action == "UPDATE" and old is not None:
            lines.append(
                f"<p>Importance {old:.2f} → <b>{max(old, importance):.2f}</b> "
                f"(max of existing {old:.2f} and new {importance:.2f})</p>"
            )
        elif action == "SKIP" and old is not None:
            lines.append(
                f"<p>Existing pattern keeps importance {old:.2f} "
                f"(candidate scored {importance:.2f})</p>"
            )
        else:
            lines.append(f"<p>Importance <b>{importance:.2f}</b></p>")
        self.detail.setHtml("".join(lines))

        if c.target_text is not None and c.shown_target_id is not None:
            status = "" if c.target_status in (None, "active") else f" ({c.target_status})"
            self.match_label.setText(
                f"Pattern #{c.shown_target_id}{status}: similarity ratio <b>{ratio:.3f}</b>"
                f" → {action}"
            )
            self.diff.set_texts(c.target_text, c.effective_text)
        else:
            self.match_label.setText(f"No existing pattern is similar (best ratio {ratio:.3f}).")
            self.diff.clear_diff("Nothing to compare: this candidate would be a new pattern.")
        self.sources.setHtml(self._sources_html(list(c.source_episode_ids)))

    @staticmethod
    def _sources_html(ids: list[int]) -> str:
        if not ids:
            return "<p><i>No source episodes recorded.</i></p>"
        episodes = Episode.select().where(Episode.id.in_(ids)).order_by(Episode.timestamp)
        parts = []
        for ep in episodes:
            when = format_local(ep.timestamp)
            label = ep.label or "unlabelled"
            parts.append(
                f"<h4>Episode #{ep.id} · {when} · {html.escape(ep.source or '')} · {label}</h4>"
                f"<pre style='white-space:pre-wrap'>{html.escape(ep.text)}</pre>"
            )
        return "<hr>".join(parts)

    # -- decisions --------------------------------------------------------------------------

    def _run_engine(self, title: str, action: Callable[[], Any]) -> Any:
        """Call the engine; a refusal is shown to the user (never swallowed) and returns None."""
        try:
            return action()
        except CuratorError as exc:
            self.show_message(title, str(exc))
            return None

    def decide_current(self, action: str) -> bool:
        """Decide the current candidate and move on to the next undecided one."""
        c = self.current_candidate()
        if c is None:
            return False
        # SKIP/UPDATE without a target: the engine takes the proposed (or re-matched) one,
        # which keeps the staging-time revision check meaningful.
        done = self._run_engine(
            "Review", lambda: review_api.decide(self.services.store, c.id, action)
        )
        if done is None:
            return False
        self.status_message.emit(f"Candidate #{c.ordinal}: {action}")
        self._after_decision(c.id, advance=True)
        return True

    def accept_all(self) -> int:
        """Accept every undecided proposal that is not flagged; list the flagged ones.

        The flagged ones are accepted only through :class:`FlaggedConfirmDialog`'s OK,
        which names each of them with its reasons (``accept_flagged``).
        """
        run_id = self.current_run_id()
        if run_id is None:
            return 0
        store = self.services.store
        accepted = self._run_engine(
            "Accept all", lambda: review_api.accept_all(store, run_id, actor="window accept-all")
        )
        if accepted is None:
            return 0
        self._load_candidates()
        self._refresh_combo_label()
        self.data_changed.emit()
        flagged = [c for c in self._candidates if c.flags and c.action is None]
        self.status_message.emit(
            f"Accepted {accepted} proposal(s)"
            + (f"; {len(flagged)} flagged candidate(s) left undecided." if flagged else ".")
        )
        if flagged:
            dialog = FlaggedConfirmDialog(flagged, self)
            dialog.accepted.connect(lambda: self.accept_flagged(run_id))
            dialog.finished.connect(lambda _r: setattr(self, "flagged_dialog", None))
            self.flagged_dialog = dialog
            dialog.open()
        return int(accepted)

    def accept_flagged(self, run_id: int) -> int:
        """Accept the flagged proposals too (after the confirmation that listed them)."""
        store = self.services.store
        accepted = self._run_engine(
            "Accept all",
            lambda: review_api.accept_all(
                store, run_id, actor="window accept-all", include_flagged=True
            ),
        )
        if accepted is None:
            return 0
        self.status_message.emit(f"Accepted {accepted} flagged proposal(s) after confirmation.")
        self._load_candidates()
        self._refresh_combo_label()
        self.data_changed.emit()
        return int(accepted)

    def _after_decision(self, candidate_id: int, *, advance: bool) -> None:
        self._load_candidates()
        row = self.model.find_row(lambda x: x.id == candidate_id)
        if advance:
            n = self.model.rowCount()
            start = row if row >= 0 else 0
            for step in range(1, n + 1):
                item = self.model.row_at((start + step) % n)
                if item is not None and item.action is None:
                    row = (start + step) % n
                    break
            else:
                self.status_message.emit("Every candidate is decided: commit when ready.")
        self._select_row(row)
        self._refresh_combo_label()
        self.data_changed.emit()

    def _refresh_combo_label(self) -> None:
        run_id = self.current_run_id()
        if run_id is None:
            return
        progress = review_api.review_progress(self.services.store, run_id)
        text = self.run_combo.currentText().split(" — ")[0]
        self.run_combo.setItemText(
            self.run_combo.currentIndex(),
            f"{text} — {progress.reviewed}/{progress.total} reviewed",
        )

    def undo_decision(self) -> bool:
        """Undo the newest decision of this run and select its candidate again."""
        run_id = self.current_run_id()
        if run_id is None:
            return False
        result = self._run_engine(
            "Undo", lambda: review_api.undo_last_decision(self.services.store, run_id)
        )
        if result is None:
            self.status_message.emit("Nothing to undo.")
            return False
        self.status_message.emit(f"Decision on candidate #{result.ordinal} undone.")
        self._after_decision(result.id, advance=False)
        return True

    def edit_current(self) -> EditDialog | None:
        """Open the edit dialog (text + importance, with the live re-match) for the current."""
        c = self.current_candidate()
        if c is None:
            return None
        dialog = EditDialog(self.services, c, self)
        dialog.accepted.connect(lambda: self._apply_edit(c.id, dialog))
        dialog.finished.connect(lambda _r: setattr(self, "edit_dialog", None))
        self.edit_dialog = dialog
        dialog.open()
        return dialog

    def _apply_edit(self, candidate_id: int, dialog: EditDialog) -> None:
        text, importance = dialog.decision()
        view = self._run_engine(
            "Edit",
            lambda: review_api.decide(
                self.services.store, candidate_id, "ACCEPT", text=text, importance=importance
            ),
        )
        if view is not None:
            self.status_message.emit(f"Edited candidate #{view.ordinal}: {view.action}")
            self._after_decision(candidate_id, advance=True)

    # -- commit -----------------------------------------------------------------------------

    def open_commit_dialog(self) -> CommitDialog | None:
        """Show what the commit would change; the dialog's OK applies it."""
        run_id = self.current_run_id()
        if run_id is None:
            return None
        reviewed_only = self.reviewed_only.isChecked()
        preview = self._run_engine(
            "Commit",
            lambda: commit_api.preview_commit(self.services.store, run_id),
        )
        if preview is None:
            return None
        dialog = CommitDialog(preview, reviewed_only, self)
        dialog.accepted.connect(lambda: self.apply_commit(run_id, reviewed_only))
        dialog.finished.connect(lambda _r: setattr(self, "commit_dialog", None))
        self.commit_dialog = dialog
        dialog.open()
        return dialog

    def apply_commit(self, run_id: int, reviewed_only: bool) -> Any:
        """Apply the run's decisions (the engine re-checks every revision)."""
        summary = self._run_engine(
            "Commit",
            lambda: commit_api.commit_run(self.services.store, run_id, reviewed_only=reviewed_only),
        )
        if summary is None:
            self.refresh()
            return None
        self.status_message.emit(f"Committed run #{run_id}.")
        self.refresh()
        self.data_changed.emit()
        return summary

    def last_commit(self) -> Changeset | None:
        """The newest commit changeset not undone yet (this run's first, else overall)."""
        query = Changeset.select().where(
            (Changeset.kind == "commit") & (Changeset.undone_by.is_null())
        )
        run_id = self.current_run_id()
        if run_id is not None:
            mine = query.where(Changeset.run == run_id).order_by(Changeset.id.desc()).first()
            if mine is not None:
                return mine
        last: Changeset | None = query.order_by(Changeset.id.desc()).first()
        return last

    def undo_last_commit(self) -> bool:
        """Undo the newest commit; the engine refuses (shown) if later edits depend on it."""
        last = self.last_commit()
        if last is None:
            self.show_message("Undo commit", "There is no commit to undo.")
            return False
        sentinel = object()
        done = self._run_engine(
            "Undo commit",
            lambda: commit_api.undo_changeset(self.services.store, last.id) or sentinel,
        )
        self.refresh()
        if done is None:
            return False
        self.status_message.emit(f"Commit #{last.id} undone.")
        self.data_changed.emit()
        return True

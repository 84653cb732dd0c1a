"""The Review pane's commit bar: commit a run, undo the last commit — in the background.

A commit rewrites patterns, links provenance and marks episodes in one transaction, and
an undo restores every row it touched; at 300k episodes either takes seconds. Both run
through ``ops.write`` (their own thread and connection, the window's busy state), never
on the GUI thread. Undo asks first, naming what it reverts and when it was committed.

Commits and runs are numbered separately (run #3 may be committed as commit #1), so both
numbers are named wherever one is: "commit #1 (run #3)".

The preview is read in the background too (it ranks every active pattern before and
after the commit): the dialog opens at once saying "Reading…", with Commit disabled,
and fills in when the read is delivered; closed meanwhile, the result is dropped.

The preview's Commit button commits exactly the decisions it showed (its fingerprint,
:mod:`curator.pipeline.fingerprint`): decisions made meanwhile elsewhere (``curator
decide`` in a shell) make the engine refuse, and a fresh preview opens saying what changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QPushButton, QWidget

from curator.core.wording import plural
from curator.gui.review.review_dialogs import CommitDialog
from curator.gui.review.review_queue import DecisionQueue
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.pipeline import commit as commit_api
from curator.pipeline.commit import ChangesetSummary, CommitPreview
from curator.pipeline.fingerprint import DecisionsChangedError, describe_changes
from curator.store.models import format_local

PREVIEW_QUERY = "review.commit-preview"
"""The background read of a commit preview (the newest request's result is shown)."""


def commit_name(summary: ChangesetSummary) -> str:
    """ "commit #1 (run #3)": both numbers, so neither is mistaken for the other."""
    run = f" (run #{summary.run_id})" if summary.run_id is not None else ""
    return f"commit #{summary.id}{run}"


def counts_text(counts: dict[str, int]) -> str:
    parts = [
        f"{counts.get('ADD', 0):,} added",
        f"{counts.get('UPDATE', 0)} updated",
        plural(counts.get("SKIP", 0), "duplicate"),
        f"{counts.get('REJECT', 0):,} rejected",
    ]
    return ", ".join(parts)


def undo_question(summary: ChangesetSummary) -> str:
    """What the confirmation says before an undo: which commit, when, and what it reverts."""
    counts = summary.counts
    adds, updates = counts.get("ADD", 0), counts.get("UPDATE", 0)
    decided = sum(counts.get(a, 0) for a in ("ADD", "UPDATE", "SKIP", "REJECT"))
    effects = []
    if adds:
        effects.append(f"removes the {plural(adds, 'pattern')} it added")
    if updates:
        effects.append(
            f"restores the {plural(updates, 'pattern')} it updated to their earlier text "
            "and importance"
        )
    effects.append(
        f"puts its {plural(decided, 'decided candidate')} back to review ({counts_text(counts)})"
    )
    return (
        f"Undo {commit_name(summary)}, committed {format_local(summary.created_at)}?\n\n"
        f"It {', '.join(effects[:-1]) + ' and ' if len(effects) > 1 else ''}{effects[-1]}."
    )


class CommitBar(QObject):
    """The commit, "commit reviewed only" and undo-commit controls and what they start."""

    committed = Signal(object)  # ChangesetSummary of the commit
    undone = Signal(object)  # ChangesetSummary of the undo
    message = Signal(str)  # status bar text

    def __init__(
        self,
        services: AppServices,
        parent: QWidget,
        show_message: Callable[[str, str], None],
        run_id: Callable[[], int | None],
        decisions: DecisionQueue | None = None,
    ) -> None:
        super().__init__(parent)
        self._decisions = decisions
        self.services = services
        self._parent = parent
        self._show_message = show_message
        self._run_id = run_id
        self.commit_dialog: CommitDialog | None = None
        self._commit_after_writes = False  # Commit pressed while decisions were queued
        self._shutting_down = False
        self.last: ChangesetSummary | None = None

        self.reviewed_only = QCheckBox("commit reviewed only")
        self.reviewed_only.setObjectName("reviewedOnlyCheck")
        self.reviewed_only.setToolTip(
            "Apply the decided candidates now and leave the undecided ones staged"
        )
        self.commit_button = QPushButton("Commit…")
        self.commit_button.setObjectName("commitButton")
        self.commit_button.clicked.connect(self.open_commit_dialog)
        self.undo_button = QPushButton("Undo last commit…")
        self.undo_button.setObjectName("undoCommitButton")
        self.undo_button.clicked.connect(self.undo_last_commit)
        self.widget = QWidget()
        layout = QHBoxLayout(self.widget)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.reviewed_only)
        layout.addWidget(self.commit_button)
        layout.addWidget(self.undo_button)
        # a method of this object, not a lambda: the connection goes with the bar when
        # its pane is destroyed, and a write delivered later never reaches deleted buttons
        services.ops.busy_changed.connect(self._busy_changed)

    def _busy_changed(self, _busy: bool) -> None:
        self.update_buttons()

    def show_message(self, title: str, text: str) -> None:
        self._show_message(title, text)

    # -- state ------------------------------------------------------------------------------

    def update_buttons(self) -> None:
        """The buttons at once from what was read last; the newest commit read again in
        the background. This runs at every start and end of a write: read here, it cost
        a round trip to a PostgreSQL server on the GUI thread each time. "Undo last
        commit" reads it again when pressed, so a stale tooltip never decides an undo."""
        run_id = self._run_id()
        self.commit_button.setEnabled(run_id is not None and not self.services.ops.busy)
        self._show_last(self.last)
        self.services.ops.query(
            "review.last-commit",
            lambda ctx: commit_api.last_commit(ctx.store, run_id),
            self._show_last,
            lambda _text: None,  # the buttons keep what they showed; Undo reads it again
        )

    def _show_last(self, last: ChangesetSummary | None) -> None:
        self.last = last
        self.undo_button.setEnabled(last is not None and not self.services.ops.busy)
        self.undo_button.setToolTip(
            f"Undo {commit_name(last)}, committed {format_local(last.created_at)}"
            if last is not None
            else "Nothing committed yet"
        )

    def _refused_while_busy(self, title: str) -> bool:
        if not self.services.ops.busy:
            return False
        self.show_message(title, f"Wait until “{self.services.ops.busy_label}” has finished.")
        return True

    # -- commit -----------------------------------------------------------------------------

    def open_commit_dialog(self) -> CommitDialog | None:
        """Show what the commit would change; the dialog's Commit button applies it."""
        run_id = self._run_id()
        if self._decisions is not None and self._decisions.pending:
            # decisions still being written: the preview would miss them; open it after
            # (once, however often Commit was pressed meanwhile)
            if not self._commit_after_writes:
                self._commit_after_writes = True
                self._decisions.idle.connect(
                    self._open_when_written, Qt.ConnectionType.SingleShotConnection
                )
            return None
        if run_id is None or self._refused_while_busy("Commit"):
            return None
        reviewed_only = self.reviewed_only.isChecked()
        dialog = self._open_dialog(None, reviewed_only, run_id=run_id)

        def read(ctx: OpContext) -> CommitPreview:
            return commit_api.preview_commit(ctx.store, run_id)

        def shown(preview: Any) -> None:
            self._preview_read(dialog, preview)

        def failed(text: str) -> None:
            self._preview_failed(dialog, text)

        self.services.ops.query(PREVIEW_QUERY, read, shown, failed)
        return dialog

    def _preview_read(self, dialog: CommitDialog, preview: CommitPreview) -> None:
        if dialog.closed:  # cancelled while reading: the result is dropped quietly
            return
        dialog.show_preview(preview)

    def _preview_failed(self, dialog: CommitDialog, text: str) -> None:
        if dialog.closed:
            return
        dialog.show_failure(text)

    def _show_preview(
        self, preview: CommitPreview, reviewed_only: bool, note: str = ""
    ) -> CommitDialog:
        """Open a preview already read (a refused commit's fresh one)."""
        return self._open_dialog(preview, reviewed_only, note=note)

    def _open_dialog(
        self,
        preview: CommitPreview | None,
        reviewed_only: bool,
        *,
        note: str = "",
        run_id: int | None = None,
    ) -> CommitDialog:
        """Open the dialog; its Commit button commits exactly what it shows (its fingerprint)."""
        dialog = CommitDialog(preview, reviewed_only, self._parent, note=note, run_id=run_id)
        dialog.accepted.connect(lambda d=dialog: self._accepted(d, reviewed_only))
        dialog.finished.connect(lambda _r, d=dialog: self._dialog_closed(d))
        self.commit_dialog = dialog
        dialog.open()
        return dialog

    def _accepted(self, dialog: CommitDialog, reviewed_only: bool) -> None:
        shown = dialog.preview
        if shown is not None:  # the dialog accepts only once a preview is shown
            self.apply_commit(shown.run_id, reviewed_only, shown=shown)

    def _dialog_closed(self, dialog: CommitDialog) -> None:
        if self.commit_dialog is dialog:  # not the fresh preview opened in its place
            self.commit_dialog = None

    def _open_when_written(self) -> None:
        if not self._commit_after_writes:  # the window closed meanwhile (shutdown)
            return
        self._commit_after_writes = False
        self.open_commit_dialog()

    def shutdown(self) -> None:
        """Window close: a commit still waiting for the decisions' writes is dropped (the
        close writes them, and a preview would open for a window that is gone)."""
        self._commit_after_writes = False
        self._shutting_down = True

    def apply_commit(
        self, run_id: int, reviewed_only: bool, shown: CommitPreview | None = None
    ) -> bool:
        """Start the commit in the background (the engine re-checks every revision).

        ``shown`` is the preview the reviewer accepted: the engine commits exactly its
        decisions (its fingerprint, checked under the write lock) or refuses; a refusal
        opens a fresh preview that says in one sentence what changed.
        """
        expect = shown.fingerprint if shown is not None else None

        def commit(ctx: OpContext) -> ChangesetSummary | DecisionsChangedError:
            try:
                return commit_api.commit_run(
                    ctx.store, run_id, reviewed_only=reviewed_only, expect=expect
                )
            except DecisionsChangedError as exc:  # an answer with a fresh preview, not a fault
                return exc

        def done(summary: Any) -> None:
            if isinstance(summary, DecisionsChangedError):
                self._changed_meanwhile(summary, shown, reviewed_only)
                return
            self.message.emit(f"Run #{run_id} committed as commit #{summary.id}.")
            self.committed.emit(summary)

        def failed(text: str) -> None:
            self.show_message("Commit", text)
            self.committed.emit(None)

        started = self.services.ops.write(f"Committing run #{run_id}", commit, done, failed)
        if not started:
            self._refused_while_busy("Commit")
        else:
            self.message.emit(f"Committing run #{run_id}…")
        return started

    def _changed_meanwhile(
        self, refusal: DecisionsChangedError, shown: CommitPreview | None, reviewed_only: bool
    ) -> None:
        """Nothing was committed: say what changed since the preview and show it afresh."""
        fresh = refusal.preview
        changes = describe_changes(shown.decisions, fresh.decisions) if shown else ""
        if shown is not None and shown.refresh_clock != fresh.refresh_clock:
            turned = "on" if fresh.refresh_clock else "off"
            setting = (
                f"the setting “UPDATE refreshes the decay clock” was turned {turned}, which "
                "changes where an UPDATE puts its pattern in the prompt"
            )
            changes = f"{changes} and {setting}" if changes else setting
        note = (
            f"Nothing was committed: since the preview you accepted, {changes}; "
            "this is the run as it is now."
            if changes
            else f"Nothing was committed: {refusal}."
        )
        self.message.emit(f"Run #{fresh.run_id} was not committed: its decisions changed.")
        self.committed.emit(None)  # the pane re-reads the decisions made elsewhere
        if not self._shutting_down:
            self._show_preview(fresh, reviewed_only, note=note)

    # -- undo -------------------------------------------------------------------------------

    def undo_last_commit(self) -> bool:
        """Ask (naming the commit, its run and time), then undo it in the background."""
        if self._refused_while_busy("Undo commit"):
            return False
        last = commit_api.last_commit(self.services.store, self._run_id())
        if last is None:
            self.show_message("Undo commit", "There is no commit to undo.")
            return False
        self.services.dialogs.confirm(
            self._parent,
            "Undo commit",
            undo_question(last),
            lambda: self.start_undo(last),
            yes_text=f"Undo {commit_name(last)}",
        )
        return True

    def start_undo(self, last: ChangesetSummary) -> bool:
        """Undo ``last`` off the GUI thread; the engine refuses (shown) if later edits depend."""

        def undo(ctx: OpContext) -> ChangesetSummary:
            return commit_api.undo_changeset(ctx.store, last.id)

        def done(summary: Any) -> None:
            self.message.emit(f"Undid {commit_name(last)}.")
            self.undone.emit(summary)

        def failed(text: str) -> None:
            self.show_message("Undo commit", text)
            self.undone.emit(None)

        started = self.services.ops.write(f"Undoing {commit_name(last)}", undo, done, failed)
        if not started:
            self._refused_while_busy("Undo commit")
        return started

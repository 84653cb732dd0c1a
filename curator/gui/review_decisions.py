"""The Review pane's decisions: one key per decision, the target picker, edits, undo.

Kept apart from the pane's layout and loading (:mod:`curator.gui.review_pane`) as a
mixin: these methods act on the pane's current candidate and reload the pane after each
decision. A decision is one small transaction on one candidate (milliseconds), recorded
at once so the selection can move on to the next undecided candidate; while a background
write (a commit) holds the database, decisions are refused with its name instead of
waiting on the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.gui.flag_view import FlaggedConfirmDialog
from curator.gui.operations import OpContext
from curator.gui.review_dialogs import EditDialog
from curator.gui.review_list import action_name
from curator.gui.review_target import TargetPicker
from curator.pipeline import review as review_api
from curator.store.opening import StoreBusyError

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QWidget

    from curator.gui.operations import StoreOps
    from curator.gui.qt_models import RowTableModel
    from curator.gui.review_list import CandidateList
    from curator.gui.services import AppServices


GUI_WRITE_WAIT_S = 1.0
"""A decision is one row written on the GUI thread: it waits this long at most for another
process's write lock (the CLI importing or committing), then says the database is busy."""


class ReviewDecisions:
    """Decision slots of :class:`~curator.gui.review_pane.ReviewPane` (a mixin)."""

    if TYPE_CHECKING:  # provided by the pane
        services: AppServices
        ops: StoreOps
        show_message: Callable[[str, str], None]
        status_message: SignalInstance
        data_changed: SignalInstance
        list_view: CandidateList
        model: RowTableModel[Any]
        edit_dialog: EditDialog | None
        flagged_dialog: FlaggedConfirmDialog | None
        target_dialog: TargetPicker | None
        _candidates: list[Any]

        def current_candidate(self) -> Any | None: ...
        def current_run_id(self) -> int | None: ...
        def _load_candidates(self, keep_current: bool = True) -> None: ...
        def _select_row(self, row: int) -> None: ...
        def _show_candidate(self, c: Any | None) -> None: ...
        def _dialog_parent(self) -> QWidget: ...

    def _run_engine(self, title: str, action: Callable[[], Any]) -> Any:
        """Call the engine; a refusal is shown to the user (never swallowed) and returns None."""
        if self.ops.busy:  # a commit holds the write lock: a decision would wait on it
            self.show_message(title, f"Wait until “{self.ops.busy_label}” has finished.")
            return None
        try:
            with self.services.store.waiting_at_most(GUI_WRITE_WAIT_S):
                return action()
        except CuratorError as exc:
            self.show_message(title, str(exc))
            return None

    def _decided(self, view: Any, verb: str = "") -> None:
        target = (
            f" #{view.target_id}" if view.action in review_api.TARGETED and view.target_id else ""
        )
        name = action_name(view.action) + target
        prefix = f"{action_name(verb)}: " if verb == "ACCEPT" else ""
        self.status_message.emit(f"Candidate #{view.ordinal}: {prefix}{name}")
        self._after_decision(view.id, advance=True)

    @staticmethod
    def _update_target(c: Any) -> int | None:
        """The pattern UPDATE takes without a choice (what the engine would use), if any."""
        if c.final_text is not None and c.rematch_target_id is not None:
            return int(c.rematch_target_id)
        return int(c.proposed_target_id) if c.proposed_target_id is not None else None

    def decide_current(self, action: str) -> bool:
        """Decide the current candidate and move on to the next undecided one.

        UPDATE without a pattern to update (none proposed, or the proposed one is gone)
        opens the target picker instead of refusing.
        """
        c = self.current_candidate()
        if c is None:
            return False
        store = self.services.store
        if action == "UPDATE" and not self.ops.busy:
            if self._update_target(c) is None:
                self.choose_target()
                return False
            try:
                with store.waiting_at_most(GUI_WRITE_WAIT_S):
                    view = review_api.decide(store, c.id, "UPDATE")
            except StoreBusyError as exc:
                self.show_message("Review", str(exc))
                return False
            except CuratorError as exc:
                self.choose_target(note=str(exc))
                return False
            self._decided(view)
            return True
        view = self._run_engine("Review", lambda: review_api.decide(store, c.id, action))
        if view is None:
            return False
        self._decided(view, action)
        return True

    def choose_target(self, note: str = "") -> TargetPicker | None:
        """Open the picker of the nearest patterns; its OK records UPDATE of the chosen one."""
        c = self.current_candidate()
        if c is None:
            return None
        dialog = TargetPicker(self.ops, c, note, self._dialog_parent())
        dialog.accepted.connect(lambda: self._apply_target(c.id, dialog))
        dialog.finished.connect(lambda _r: setattr(self, "target_dialog", None))
        self.target_dialog = dialog
        dialog.open()
        return dialog

    def _apply_target(self, candidate_id: int, dialog: TargetPicker) -> None:
        chosen = dialog.chosen()
        if chosen is None:
            return
        store = self.services.store
        view = self._run_engine(
            "Review",
            lambda: review_api.decide(store, candidate_id, "UPDATE", target_id=chosen.id),
        )
        if view is not None:
            self._decided(view)

    def choose_wording(self, keep_pattern_text: bool) -> bool:
        """For an edited UPDATE: keep the pattern's text (True) or use the reviewer's wording."""
        c = self.current_candidate()
        if c is None or c.action != "UPDATE" or c.final_text is None:
            return False
        store = self.services.store
        view = self._run_engine(
            "Review",
            lambda: review_api.decide(
                store, c.id, "UPDATE", target_id=c.target_id, keep_pattern_text=keep_pattern_text
            ),
        )
        if view is None:
            self._show_candidate(self.current_candidate())  # the radio buttons go back
            return False
        choice = "keeps the pattern's text" if keep_pattern_text else "uses your wording"
        self.status_message.emit(f"Candidate #{c.ordinal}: the update {choice}.")
        self._after_decision(c.id, advance=False)
        return True

    def toggle_wording(self) -> bool:
        c = self.current_candidate()
        if c is None or c.action != "UPDATE" or c.final_text is None:
            self.status_message.emit("W switches the wording of an edited Update only.")
            return False
        return self.choose_wording(not c.keep_pattern_text)

    def accept_all(self) -> bool:
        """Accept every undecided proposal that is not flagged (in the background).

        A run can hold hundreds of candidates, each re-gated and flag-checked, so this
        runs through ``ops.write``. When it is done the flagged ones left undecided are
        listed in :class:`FlaggedConfirmDialog`, whose OK accepts them too
        (``accept_flagged``). False when nothing was started.
        """
        run_id = self.current_run_id()
        if run_id is None:
            return False

        def accept(ctx: OpContext) -> int:
            return review_api.accept_all(ctx.store, run_id, actor="window accept-all")

        def done(accepted: Any) -> None:
            self._load_candidates()
            self.data_changed.emit()
            flagged = [c for c in self._candidates if c.flags and c.action is None]
            self.status_message.emit(
                f"Accepted {accepted} proposal(s)"
                + (f"; {len(flagged)} flagged candidate(s) left undecided." if flagged else ".")
            )
            if flagged:
                dialog = FlaggedConfirmDialog(flagged, self._dialog_parent())
                dialog.accepted.connect(lambda: self.accept_flagged(run_id))
                dialog.finished.connect(lambda _r: setattr(self, "flagged_dialog", None))
                self.flagged_dialog = dialog
                dialog.open()

        return self._write(f"Accepting the proposals of run #{run_id}", "Accept all", accept, done)

    def accept_flagged(self, run_id: int) -> bool:
        """Accept the flagged proposals too (after the confirmation that listed them)."""

        def accept(ctx: OpContext) -> int:
            return review_api.accept_all(
                ctx.store, run_id, actor="window accept-all", include_flagged=True
            )

        def done(accepted: Any) -> None:
            self.status_message.emit(f"Accepted {accepted} flagged proposal(s) after confirmation.")
            self._load_candidates()
            self.data_changed.emit()

        return self._write(
            f"Accepting the flagged proposals of run #{run_id}", "Accept all", accept, done
        )

    def _write(
        self, label: str, title: str, fn: Callable[[OpContext], Any], done: Callable[[Any], None]
    ) -> bool:
        """Start a background write; its failure is shown under ``title`` (a refusal,
        while another write runs, by the window's status bar)."""
        return self.ops.write(label, fn, done, lambda text: self.show_message(title, text))

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
        self.data_changed.emit()

    def undo_selected(self) -> bool:
        """Backspace: undo the selected row's newest decision, and say which."""
        c = self.current_candidate()
        if c is None:
            return False
        if c.action is None:
            self.status_message.emit(f"Candidate #{c.ordinal} has no decision to undo.")
            return False
        store = self.services.store
        result = self._run_engine("Undo", lambda: review_api.undo_decision(store, c.id))
        if result is None:
            return False
        self.status_message.emit(self._undo_text(c, result))
        self._after_decision(c.id, advance=False)
        return True

    @staticmethod
    def _undo_text(before: Any, after: Any) -> str:
        now = f"back to {action_name(after.action)}" if after.action else "undecided again"
        return f"Undid {action_name(before.action)} on #{before.ordinal} ({now})."

    def undo_decision(self) -> bool:
        """Ctrl+Z: undo the run's newest decision, wherever it is, and select its row."""
        run_id = self.current_run_id()
        if run_id is None:
            return False
        store = self.services.store
        result = self._run_engine("Undo", lambda: review_api.undo_last_decision(store, run_id))
        if result is None:
            self.status_message.emit("Nothing to undo.")
            return False
        before = next((c for c in self._candidates if c.id == result.id), None)
        if before is not None and before.action is not None:
            self.status_message.emit(self._undo_text(before, result))
        else:
            self.status_message.emit(f"Decision on candidate #{result.ordinal} undone.")
        self._after_decision(result.id, advance=False)
        return True

    def edit_current(self) -> EditDialog | None:
        """Open the edit dialog (text + importance, with the live re-match) for the current."""
        c = self.current_candidate()
        if c is None:
            return None
        dialog = EditDialog(self.services, c, self._dialog_parent())
        dialog.accepted.connect(lambda: self._apply_edit(c, dialog))
        dialog.finished.connect(lambda _r: setattr(self, "edit_dialog", None))
        self.edit_dialog = dialog
        dialog.open()
        return dialog

    def _apply_edit(self, c: Any, dialog: EditDialog) -> None:
        """An edit keeps an UPDATE's chosen pattern or an ADD; otherwise it re-matches."""
        text, importance = dialog.decision()
        store = self.services.store
        if c.action == "UPDATE" and c.target_id is not None:
            verb, target = "UPDATE", int(c.target_id)
        elif c.action == "ADD":
            verb, target = "ADD", None
        else:
            verb, target = "ACCEPT", None
        view = self._run_engine(
            "Edit",
            lambda: review_api.decide(
                store, c.id, verb, target_id=target, text=text, importance=importance
            ),
        )
        if view is not None:
            self.status_message.emit(
                f"Edited candidate #{view.ordinal}: {action_name(view.action)}"
                + (" with your wording (W keeps the pattern's text)" if view.rewords else "")
            )
            self._after_decision(c.id, advance=view.action != "UPDATE")

"""The Review pane's decisions: one key per decision, the target picker, edits, undo.

Kept apart from the pane's layout and loading (:mod:`curator.gui.review.review_pane`) as a
mixin: these methods act on the pane's current candidate. Every decision is written
through :class:`~curator.gui.review.review_queue.DecisionQueue` (``ops.write``, in key order),
never on the GUI thread: a key's decision is shown at once and the selection moves on,
the engine's answer then replaces the row, and a refused write puts the row back and
says so. Each write carries the revision the row was loaded with: a decision another
reviewer made since is refused in one sentence ("candidate 5 was decided ADD by ana at
14:02 ..."), and the reload shows theirs (:mod:`curator.pipeline.review_versions`).
While another background write (a commit) holds the database, decisions are refused
with its name instead of queueing behind it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from curator.core.wording import plural
from curator.gui.review.review_dialogs import EditDialog
from curator.gui.review.review_list import action_name
from curator.gui.review.review_queue import DecisionQueue, predicted
from curator.gui.review.review_target import TargetPicker
from curator.gui.runtime.operations import OpContext
from curator.gui.widgets.flag_view import FlaggedConfirmDialog
from curator.pipeline import review as review_api
from curator.store.db import Store

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QWidget

    from curator.gui.review.review_list import CandidateList
    from curator.gui.runtime.operations import StoreOps
    from curator.gui.runtime.services import AppServices
    from curator.gui.widgets.qt_models import RowTableModel


DECISION_WAIT_S = 5.0
"""How long a decision's write waits for another process's lock (the CLI importing or
committing) before it is reported as not recorded: the window does not freeze meanwhile,
but a decision shown for longer than this without being in the database would mislead."""


def _undecided(ctx: OpContext, run_id: int) -> list[Any]:
    """The run's candidates left undecided, read after the write (in the background)."""
    return [c for c in review_api.list_candidates(ctx.store, run_id) if c.action is None]


class ReviewDecisions:
    """Decision slots of :class:`~curator.gui.review.review_pane.ReviewPane` (a mixin)."""

    if TYPE_CHECKING:  # provided by the pane
        services: AppServices
        ops: StoreOps
        decisions: DecisionQueue
        show_message: Callable[[str, str], None]
        status_message: SignalInstance
        data_changed: SignalInstance
        list_view: CandidateList
        model: RowTableModel[Any]
        edit_dialog: EditDialog | None
        flagged_dialog: FlaggedConfirmDialog | None
        target_dialog: TargetPicker | None
        _candidates: list[Any]
        _generation: int
        _select_after_load: int | None
        closing: bool

        def current_candidate(self) -> Any | None: ...
        def current_run_id(self) -> int | None: ...
        def _load_candidates(self, keep_current: bool = True) -> None: ...
        def _select_row(self, row: int) -> None: ...
        def _show_candidate(self, c: Any | None) -> None: ...
        def _update_progress(self) -> None: ...
        def _dialog_parent(self) -> QWidget: ...

    # -- the write behind every decision ----------------------------------------------------

    def _blocked(self, title: str) -> bool:
        """A commit or an import holds the database: say so instead of queueing behind it."""
        running = self.decisions.blocked_by()
        if running:
            self.show_message(title, f"Wait until “{running}” has finished.")
        return bool(running)

    def _submit(
        self,
        title: str,
        c: Any,
        work: Callable[[Store], Any],
        done: Callable[[Any], None],
        failed: Callable[[str], None] | None = None,
    ) -> None:
        """Queue the engine call ``work`` for candidate ``c``; ``done`` gets its answer on
        the GUI thread. A failure reloads the run from the database (the list shows what
        is recorded) and says which decision was not recorded."""
        self._generation += 1

        def refused(message: str) -> None:
            self._select_after_load = c.id
            self._load_candidates()
            if failed is not None:
                failed(message)
            else:
                self.show_message(title, f"Candidate #{c.ordinal} was not changed: {message}")

        def write(ctx: OpContext) -> Any:
            with ctx.store.waiting_at_most(DECISION_WAIT_S):
                return work(ctx.store)

        self.decisions.submit(
            f"Recording the decision on candidate #{c.ordinal}", write, done, refused
        )

    def _patch(self, view: Any) -> None:
        """Show ``view`` in place of the candidate's row (no reload, selection kept)."""
        self._candidates = [view if x.id == view.id else x for x in self._candidates]
        row = self.model.find_row(lambda x: x.id == view.id)
        if row >= 0:
            self.model.replace_row(row, view)
        current = self.current_candidate()
        if current is not None and current.id == view.id:
            self._show_candidate(current)
        self._update_progress()

    def _recorded(self, view: Any) -> None:
        """The engine's answer: the row shows exactly what was recorded."""
        self._patch(view)
        self.data_changed.emit()

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
        if c.newer_target_id is not None:  # an ADD gone stale: the pattern written since
            return int(c.newer_target_id)
        return int(c.proposed_target_id) if c.proposed_target_id is not None else None

    def decide_current(self, action: str) -> bool:
        """Decide the current candidate and move on to the next undecided one at once.

        The list shows the decision before the database has it (:func:`predicted`); the
        write follows in the background, in key order. UPDATE without a pattern to update
        (none proposed, or the proposed one is gone) opens the target picker instead of
        refusing.
        """
        c = self.current_candidate()
        if c is None or self._blocked("Review"):
            return False
        if action == "UPDATE" and self._update_target(c) is None:
            self.choose_target()
            return False

        def failed(message: str) -> None:
            if action == "UPDATE" and not self.closing:  # the pattern is gone: choose another
                self.choose_target(note=message, candidate=c)
            else:
                self.show_message("Review", f"Candidate #{c.ordinal} was not decided: {message}")

        # an ADD gone stale: SKIP and UPDATE go into the pattern written since
        newer = c.newer_target_id if action in ("SKIP", "UPDATE") else None
        self._submit(
            "Review",
            c,
            lambda store: review_api.decide(
                store, c.id, action, target_id=newer, expect_revision=c.revision
            ),
            self._recorded,
            failed,
        )
        shown = predicted(c, action, newer)
        self._patch(shown)
        self._decided(shown, action)
        return True

    def choose_target(self, note: str = "", candidate: Any | None = None) -> TargetPicker | None:
        """Open the picker of the nearest patterns; its OK records UPDATE of the chosen one.

        For ``candidate``, else the current one: a refused UPDATE names its own candidate,
        because the key moved the selection on before the refusal came back."""
        c = candidate if candidate is not None else self.current_candidate()
        if c is None:
            return None
        dialog = TargetPicker(self.ops, c, note, self._dialog_parent())
        dialog.accepted.connect(lambda: self._apply_target(c, dialog))
        dialog.finished.connect(lambda _r: setattr(self, "target_dialog", None))
        self.target_dialog = dialog
        dialog.open()
        return dialog

    def _apply_target(self, c: Any, dialog: TargetPicker) -> None:
        chosen = dialog.chosen()
        if chosen is None or self._blocked("Review"):
            return
        self._submit(
            "Review",
            c,
            lambda store: review_api.decide(
                store, c.id, "UPDATE", target_id=chosen.id, expect_revision=c.revision
            ),
            self._recorded,
        )
        shown = predicted(c, "UPDATE", chosen.id)
        shown = dataclasses.replace(
            shown,
            target_text=chosen.text,
            target_importance=chosen.importance,
            shown_target_id=chosen.id,
        )
        self._patch(shown)
        self._decided(shown)

    def choose_wording(self, keep_pattern_text: bool) -> bool:
        """For an edited UPDATE: keep the pattern's text (True) or use the reviewer's wording."""
        c = self.current_candidate()
        if c is None or c.action != "UPDATE" or c.final_text is None:
            return False
        if self._blocked("Review"):
            self._show_candidate(c)  # the radio buttons go back
            return False
        choice = "keeps the pattern's text" if keep_pattern_text else "uses your wording"

        def done(view: Any) -> None:
            self._recorded(view)
            self.status_message.emit(f"Candidate #{c.ordinal}: the update {choice}.")

        self._submit(
            "Review",
            c,
            lambda store: review_api.decide(
                store,
                c.id,
                "UPDATE",
                target_id=c.target_id,
                keep_pattern_text=keep_pattern_text,
                expect_revision=c.revision,
            ),
            done,
        )
        self._patch(dataclasses.replace(c, keep_pattern_text=keep_pattern_text))
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
        listed in :class:`FlaggedConfirmDialog`, whose OK accepts those it listed too
        (``accept_flagged``; Enter leaves them undecided). False when nothing was started.
        """
        run_id = self.current_run_id()
        if run_id is None:
            return False

        def accept(ctx: OpContext) -> tuple[int, list[Any]]:
            accepted = review_api.accept_all(ctx.store, run_id, actor="window accept-all")
            return accepted, _undecided(ctx, run_id)

        def done(result: Any) -> None:
            accepted, undecided = result
            self._load_candidates()
            self.data_changed.emit()
            flagged = [c for c in undecided if c.flags]
            held = len(undecided) - len(flagged)
            said = [f"Accepted {plural(int(accepted), 'proposal')}"]
            if flagged:
                said.append(f"{plural(len(flagged), 'flagged candidate')} left undecided")
            if held > 0:
                said.append(
                    f"{plural(held, 'candidate')} left undecided whose proposal no longer "
                    "holds (deciding one says why)"
                )
            self.status_message.emit("; ".join(said) + ".")
            if flagged:
                dialog = FlaggedConfirmDialog(flagged, self._dialog_parent())
                listed = [c.id for c in flagged]
                dialog.accepted.connect(lambda: self.accept_flagged(run_id, listed))
                dialog.finished.connect(lambda _r: setattr(self, "flagged_dialog", None))
                self.flagged_dialog = dialog
                dialog.open()

        return self._write(f"Accepting the proposals of run #{run_id}", "Accept all", accept, done)

    def accept_flagged(self, run_id: int, listed: list[int] | None = None) -> bool:
        """Accept the flagged proposals too (after the confirmation that listed them).

        Only the ``listed`` ones (those the confirmation showed), still undecided: one
        that became undecided since (undone elsewhere) was not shown, so it stays.
        """

        def accept(ctx: OpContext) -> tuple[int, list[Any]]:
            accepted = review_api.accept_all(
                ctx.store, run_id, actor="window accept-all", include_flagged=True, only=listed
            )
            left = [c for c in _undecided(ctx, run_id) if c.flags]
            return accepted, [c for c in left if listed is None or c.id in listed]

        def done(result: Any) -> None:
            accepted, held = result
            said = f"Accepted {plural(int(accepted), 'flagged proposal')} after confirmation"
            if held:
                said += (
                    f"; {plural(len(held), 'candidate')} left undecided whose proposal no "
                    "longer holds (deciding one says why)"
                )
            self.status_message.emit(said + ".")
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
        """Select the candidate's row, or (``advance``) the next undecided one after it."""
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

    def _select_if_last(self, candidate_id: int, *, advance: bool) -> None:
        """:meth:`_after_decision` for an answer that moves the selection only when it
        arrives: keys pressed after its own (queued behind it) have moved the selection
        on already, and pulling it back would point the next key at the wrong row."""
        if not self.decisions.pending:
            self._after_decision(candidate_id, advance=advance)

    def undo_selected(self) -> bool:
        """Backspace: undo the selected row's newest decision, and say which.

        The decision it goes back to is in the database only, so the row changes when
        the undo is written (after the decisions queued before it, in key order).
        """
        c = self.current_candidate()
        if c is None:
            return False
        if c.action is None:
            self.status_message.emit(f"Candidate #{c.ordinal} has no decision to undo.")
            return False
        if self._blocked("Undo"):
            return False

        def done(result: Any) -> None:
            if result is None:  # a second Backspace queued before the first was written
                self.status_message.emit(f"Candidate #{c.ordinal} has no decision to undo.")
                return
            self._recorded(result)
            self.status_message.emit(self._undo_text(c, result))
            self._select_if_last(c.id, advance=False)

        self._submit(
            "Undo",
            c,
            lambda store: review_api.undo_decision(
                store, c.id, edit_first=True, expect_revision=c.revision
            ),
            done,
        )
        return True

    @staticmethod
    def _undo_text(before: Any, after: Any) -> str:
        edited = before.final_text is not None or before.final_importance is not None
        unedited = after.final_text is None and after.final_importance is None
        if edited and unedited and after.action is not None:
            return (
                f"Undid the edit of #{before.ordinal} ({action_name(after.action)} stays; "
                "Backspace again undoes the decision)."
            )
        now = f"back to {action_name(after.action)}" if after.action else "undecided again"
        return f"Undid {action_name(before.action)} on #{before.ordinal} ({now})."

    def undo_decision(self) -> bool:
        """Ctrl+Z: undo the run's newest decision, wherever it is, and select its row."""
        run_id = self.current_run_id()
        c = self.current_candidate()
        if run_id is None or c is None or self._blocked("Undo"):
            return False

        def done(result: Any) -> None:
            if result is None:
                self.status_message.emit("Nothing to undo.")
                return
            before = next((x for x in self._candidates if x.id == result.id), None)
            self._recorded(result)
            if before is not None and before.action is not None:
                self.status_message.emit(self._undo_text(before, result))
            else:
                self.status_message.emit(f"Decision on candidate #{result.ordinal} undone.")
            self._select_if_last(result.id, advance=False)

        self._submit(
            "Undo",
            c,
            lambda store: review_api.undo_last_decision(store, run_id, edit_first=True),
            done,
        )
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
        """An edit keeps an UPDATE's chosen pattern or an ADD; otherwise it re-matches.

        The re-match reads every active pattern (tens of ms at 10,000), so the row
        changes when the engine has answered; the selection then moves on."""
        text, importance = dialog.decision()
        if c.action == "UPDATE" and c.target_id is not None:
            verb, target = "UPDATE", int(c.target_id)
        elif c.action == "ADD":
            verb, target = "ADD", None
        else:
            verb, target = "ACCEPT", None
        if self._blocked("Edit"):
            return

        def done(view: Any) -> None:
            self._recorded(view)
            self.status_message.emit(
                f"Edited candidate #{view.ordinal}: {action_name(view.action)}"
                + (" with your wording (W keeps the pattern's text)" if view.rewords else "")
            )
            self._select_if_last(c.id, advance=view.action != "UPDATE")

        self._submit(
            "Edit",
            c,
            lambda store: review_api.decide(
                store,
                c.id,
                verb,
                target_id=target,
                text=text,
                importance=importance,
                expect_revision=c.revision,
            ),
            done,
        )

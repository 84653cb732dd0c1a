"""The Review pane's two dialogs: edit a candidate, and confirm a commit.

Both are opened with ``open()`` (window-modal, no nested event loop); the pane acts on
their ``accepted`` signal. The edit dialog re-runs the dedup gate on the edited text as
the user types, so the reviewer sees whether the new wording is still a duplicate of an
existing pattern before deciding; that compares the text with every active pattern (75 ms
at 10,000 patterns), so it is an ``ops.query`` and the label says "Re-matching…"
meanwhile. A dialog is made per use and deletes itself when closed.

A pattern is one line of the agent's prompt, so the edit dialog's text box behaves like
a line that wraps: Tab moves on to Importance, Return (or Enter) is OK, and a newline
pasted into it becomes a space in the decision.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from curator.core.textsafety import SHOWS_NOTHING, pattern_line, visible
from curator.core.wording import agree, plural
from curator.gui.review.review_list import action_name
from curator.gui.widgets.diff_view import DiffView
from curator.gui.widgets.errors import cancel_by_default
from curator.pipeline import review as review_api
from curator.pipeline.commit import CommitPreview, PreviewUpdate, Standing
from curator.store.models import format_local

REMATCH_DELAY_MS = 250
"""Re-run the gates this long after the last keystroke (not on every key)."""


class EditDialog(QDialog):
    """Edit a candidate's text and importance; shows the live re-match result."""

    def __init__(self, services: Any, candidate: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("editCandidateDialog")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per edit: none piles up
        self.setWindowTitle(f"Edit candidate #{candidate.ordinal}")
        self.resize(640, 460)
        self._ops = services.ops
        self._key = f"review-rematch-{id(self)}"
        self._closed = False
        self.rematching = False
        """A re-match is being read (the label says so)."""
        self._original = candidate.text

        self.text_edit = QPlainTextEdit(candidate.effective_text)
        self.text_edit.setObjectName("editText")
        self.text_edit.setTabChangesFocus(True)  # Tab moves to Importance, never a tab
        self.text_edit.installEventFilter(self)  # Return is OK (see eventFilter)
        self.importance = QDoubleSpinBox()
        self.importance.setObjectName("editImportance")
        self.importance.setRange(0.0, 1.0)
        self.importance.setSingleStep(0.05)
        self.importance.setDecimals(2)
        self.importance.setValue(candidate.effective_importance)
        self.match_label = QLabel()
        self.match_label.setObjectName("rematchLabel")
        self.match_label.setWordWrap(True)
        self.diff = DiffView()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("Text", self.text_edit)
        form.addRow("Importance", self.importance)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.match_label)
        layout.addWidget(self.diff)
        layout.addWidget(self.buttons)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REMATCH_DELAY_MS)
        self._timer.timeout.connect(self.rematch)
        self.text_edit.textChanged.connect(self._timer.start)
        self.rematch()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Return/Enter in the text box presses OK (when OK is enabled), never a newline."""
        if (
            watched is self.text_edit
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        ):
            ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
            if ok.isEnabled() and visible(pattern_line(self.text_edit.toPlainText())):
                self.accept()
            return True
        return super().eventFilter(watched, event)

    def rematch(self) -> None:
        """Show what the gates say about the current text (the same check ``decide`` runs)."""
        text = pattern_line(self.text_edit.toPlainText())
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(visible(text))
        if not visible(text):
            said = "is empty" if not text else SHOWS_NOTHING
            self.match_label.setText(f"The text {said}; reject the candidate instead.")
            self.diff.clear_diff()
            return
        self.rematching = True
        self.match_label.setText("Re-matching against the active patterns…")
        self._ops.query(
            self._key,
            lambda ctx: review_api.check_text(ctx.store, text),
            lambda check: self._show_check(text, check),
            self._check_failed,
        )

    def done(self, result: int) -> None:
        self._closed = True  # a re-match delivered after this finds no widgets to fill
        super().done(result)

    def _check_failed(self, message: str) -> None:
        if self._closed:
            return
        self.rematching = False
        self.match_label.setText(f"The re-match could not be read: {message}")

    def _show_check(self, text: str, check: review_api.TextCheck) -> None:
        if self._closed:
            return
        self.rematching = False
        reasons = html.escape("; ".join(check.reasons))
        quality = (
            ""
            if check.ok
            else f"<br><span style='color:#c0392b'>Quality gate: {reasons}"
            " — it cannot be added or used to update.</span>"
        )
        if check.action != "ADD" and check.target_text is not None:
            self.match_label.setText(
                f"Re-match: <b>{action_name(check.action)}</b> of pattern #{check.target_id} "
                f"(ratio {check.ratio:.3f}){quality}"
            )
            self.diff.set_texts(check.target_text, text)
        else:
            self.match_label.setText(
                f"Re-match: <b>{action_name('ADD')}</b>, no existing pattern is similar enough "
                f"(best ratio {check.ratio:.3f}){quality}"
            )
            self.diff.clear_diff("A new pattern.")

    def decision(self) -> tuple[str, float]:
        """(text, importance) for ``review.decide(..., "ACCEPT", text=, importance=)``."""
        return pattern_line(self.text_edit.toPlainText()), round(self.importance.value(), 4)


def preview_html(preview: CommitPreview, reviewed_only: bool) -> str:
    """The commit preview as a readable list: adds, updates old → new, skips, rejects.

    Each added or updated pattern also shows what the agent gets: its effective importance
    and its rank in the prompt before → after, in or out of the top K, under the current
    "UPDATE refreshes the decay clock" setting, and in words when an UPDATE will not move
    it; the prompt patterns the commit pushes out are listed after.
    """
    effect = preview.effect
    parts = [
        f"<p>Run #{preview.run_id}: <b>{len(preview.adds):,}</b> new "
        f"{agree(len(preview.adds), 'pattern', 'patterns')}, "
        f"<b>{len(preview.updates):,}</b> {agree(len(preview.updates), 'update', 'updates')}, "
        f"{plural(len(preview.skips), 'duplicate')} skipped, {len(preview.rejects):,} rejected.</p>"
    ]
    if effect is not None and (preview.adds or preview.updates):
        clock = "refreshes" if effect.refresh_clock else "does not refresh"
        parts.append(
            f"<p>In the prompt (the top {effect.top_k}, decay {effect.decay_rate:g} a day) as "
            f"of {format_local(effect.reference_time)}; an UPDATE {clock} the decay clock "
            "(Settings).</p>"
        )
    if preview.unreviewed:
        if reviewed_only:
            parts.append(
                f"<p>{plural(preview.unreviewed, 'undecided candidate')} "
                f"{agree(preview.unreviewed, 'stays', 'stay')} staged.</p>"
            )
        else:
            parts.append(
                f"<p style='color:#c0392b'><b>{plural(preview.unreviewed, 'candidate')} "
                f"{agree(preview.unreviewed, 'is', 'are')} not reviewed.</b> Decide "
                f"{agree(preview.unreviewed, 'it', 'them')}, or tick “commit reviewed only”.</p>"
            )
    if preview.conflicts:
        parts.append(
            "<p style='color:#c0392b'><b>Conflicts</b> (the target changed since the "
            "decision; the commit will be refused):</p><ul>"
        )
        parts += [f"<li>{html.escape(c.describe())}</li>" for c in preview.conflicts]
        parts.append("</ul>")
    if preview.flagged:
        parts.append(
            "<p style='color:#a04000'><b>⚑ Flagged</b> candidates decided (their flags were "
            "shown to the reviewer):</p><ul>"
        )
        parts += [f"<li>{html.escape(f.describe())}</li>" for f in preview.flagged]
        parts.append("</ul>")
    if preview.adds:
        parts.append("<h4>Added</h4><ul>")
        for a in preview.adds:
            standing = effect.adds.get(a.candidate_id) if effect is not None else None
            parts.append(
                f"<li>{html.escape(a.text)} <i>(importance {a.importance:.2f}, "
                f"{html.escape(a.category)})</i>{_standing_html(standing)}</li>"
            )
        parts.append("</ul>")
    if preview.updates:
        parts.append("<h4>Updated (importance old → new)</h4><ul>")
        for u in preview.updates:
            standing = effect.patterns.get(u.pattern_id) if effect is not None else None
            parts.append(f"<li>{_update_html(u)}{_standing_html(standing)}</li>")
        parts.append("</ul>")
    if effect is not None and effect.leaving:
        parts.append(
            f"<h4>Pushed out of the prompt (top {effect.top_k})</h4><ul>"
            + "".join(
                f"<li>#{s.pattern_id}: rank {s.rank_before} → {s.rank_after} "
                f"(effective {s.effective_after:.3f})</li>"
                for s in effect.leaving
            )
            + "</ul>"
        )
    if preview.skips:
        targets = ", ".join(f"#{s.pattern_id}" for s in preview.skips if s.pattern_id)
        parts.append(f"<p>Skipped as duplicates of {targets or 'existing patterns'}.</p>")
    return "".join(parts)


def _standing_html(s: Standing | None) -> str:
    """Effective importance and prompt rank before → after, and the words for them."""
    if s is None:
        return ""
    if s.rank_before is None:
        value = f"effective {s.effective_after:.3f}"
    else:
        value = (
            f"effective {s.effective_before:.3f} → <b>{s.effective_after:.3f}</b>, "
            f"rank {s.rank_before} → <b>{s.rank_after}</b>"
        )
    # green: in the prompt after the commit; amber: an UPDATE that leaves its pattern out
    # of it (the surprise this line is for); grey: a new pattern that lands outside it
    if s.in_prompt_after:
        colour = "#1e8449"
    elif s.rank_before is not None:
        colour = "#a04000"
    else:
        colour = "#7f8c8d"
    words = html.escape(s.words)
    return f"<br><small>{value} · <span style='color:{colour}'>{words}</span></small>"


def _update_html(u: PreviewUpdate) -> str:
    """One UPDATE: importance, and which text the pattern has after the commit."""
    line = f"#{u.pattern_id}: {u.old_importance:.2f} → <b>{u.new_importance:.2f}</b>"
    old = html.escape(u.pattern_text)
    if u.new_text is not None:
        return line + f" · <s>{old}</s> → <b>{html.escape(u.new_text)}</b> (your wording)"
    if u.kept_edit is not None:
        return (
            line + f" · {old} (the pattern's text is kept; your wording "
            f"“{html.escape(u.kept_edit)}” is not written)"
        )
    return line + f" · {old}"


def preview_blocked(preview: CommitPreview, reviewed_only: bool) -> bool:
    """Unreviewed candidates block a full commit (the engine would refuse it too)."""
    return preview.unreviewed > 0 and not reviewed_only


class CommitDialog(QDialog):
    """What a commit will change; OK (enabled unless unreviewed candidates block) applies.

    The commit is the step that lets the decided (and possibly flagged, or accepted in
    bulk) material into Knowledge, so Enter and Escape cancel; committing is a click on
    its own button. ``note`` (a refused commit's one sentence on what changed since the
    previous preview) is shown above the preview.

    Opened with ``preview=None`` it is *loading*: the preview ranks every active pattern
    twice (before and after), a read that is not for the GUI thread, so the window reads
    it in the background and the dialog says "Reading…" with OK disabled until
    :meth:`show_preview` (or :meth:`show_failure`) fills it. OK commits :attr:`preview`,
    exactly the state shown.
    """

    def __init__(
        self,
        preview: CommitPreview | None,
        reviewed_only: bool,
        parent: QWidget | None = None,
        *,
        note: str = "",
        run_id: int | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("commitDialog")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per commit: none piles up
        run = preview.run_id if preview is not None else run_id
        self.setWindowTitle(f"Commit run #{run}")
        self.resize(680, 520)
        self.preview: CommitPreview | None = None
        self.reviewed_only = reviewed_only
        self.note = note
        self.loading = True
        self.blocked = True
        self.closed = False
        self.view = QTextBrowser()
        self.view.setObjectName("commitPreview")
        self.view.setHtml("<p><i>Reading what the commit would change…</i></p>")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText(f"Commit run #{run}")
        self.ok.setEnabled(False)
        cancel_by_default(self.buttons)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        layout.addWidget(self.buttons)
        if preview is not None:
            self.show_preview(preview)

    def show_preview(self, preview: CommitPreview) -> None:
        """Fill the dialog with ``preview``; OK then commits exactly it (its fingerprint)."""
        self.preview = preview
        self.loading = False
        shown = preview_html(preview, self.reviewed_only)
        if self.note:
            shown = f"<p style='color:#c0392b'><b>{html.escape(self.note)}</b></p>" + shown
        self.view.setHtml(shown)
        self.blocked = preview_blocked(preview, self.reviewed_only)
        self.ok.setEnabled(not self.blocked)

    def show_failure(self, message: str) -> None:
        """The preview could not be read: say so; there is nothing to commit from here."""
        self.loading = False
        self.view.setHtml(
            "<p style='color:#c0392b'><b>The preview could not be read:</b> "
            f"{html.escape(message)}</p><p>Nothing was committed.</p>"
        )

    def accept(self) -> None:
        if self.preview is None:  # still reading (or failed): nothing shown to commit
            return
        super().accept()

    def done(self, result: int) -> None:
        self.closed = True  # a preview delivered after this finds no dialog to fill
        super().done(result)

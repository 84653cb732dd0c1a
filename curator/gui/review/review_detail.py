"""The Review pane's detail panel: the candidate, the pattern it would touch, its sources.

The reviewer decides SKIP/UPDATE by reading what actually differs, so the matched (or
chosen) pattern is shown as a character diff beside the candidate. For an UPDATE of an
edited candidate the panel offers the one choice the commit depends on — "use my
wording" or "keep the pattern's text" — and labels the diff with what the commit will
write, so what is shown is what is applied.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from curator.gui.review.review_list import action_name
from curator.gui.widgets.diff_view import DiffView
from curator.gui.widgets.flag_view import flags_html, highlight_html
from curator.pipeline.review_views import SourceEpisode
from curator.store.memtool_origin import describe_origin
from curator.store.models import format_local


def _ratio(c: Any) -> float:
    if c.action in ("SKIP", "UPDATE") and c.target_ratio is not None:
        return float(c.target_ratio)
    if c.final_text is not None and c.rematch_ratio is not None:
        return float(c.rematch_ratio)
    return float(c.proposed_ratio)


def candidate_html(c: Any, total: int) -> str:
    """The candidate's text, decision, edit and importance as the panel shows them."""
    action = c.action or c.current_proposal
    edited = c.final_text is not None
    decided = (
        f"<b>{action_name(c.action)}</b> by {html.escape(c.decided_by or '')}"
        if c.action
        else "<i>undecided</i>"
    )
    importance = c.effective_importance
    lines = [
        f"<p>#{c.ordinal} of {total} · category <b>{html.escape(c.category)}</b> · proposed "
        f"<b>{action_name(c.proposed_action)}</b> (ratio {c.proposed_ratio:.3f}) · "
        f"decision: {decided}</p>",
        f"<p style='font-size:large'>{highlight_html(c.effective_text, c.flags)}</p>",
    ]
    if c.flags:
        lines.append(flags_html(c.flags))
    if c.distilled_at is not None:
        when = c.distilled_at.astimezone().strftime("%Y-%m-%d")
        lines.append(f"<p><i>Imported knowledge, first distilled {when}.</i></p>")
    if edited:
        lines.append(
            f"<p><i>Edited (re-match: {action_name(c.rematch_action)}); the model proposed:</i> "
            f"{html.escape(c.text)}</p>"
        )
        if c.action == "UPDATE" and c.target_id is not None:
            lines.append(
                f"<p>On commit, your wording replaces the text of pattern #{c.target_id}.</p>"
                if c.rewords
                else f"<p>On commit, pattern #{c.target_id} keeps its text; your wording is "
                "not written.</p>"
            )
    if c.final_importance is not None:
        lines.append(f"<p><i>Importance edited; the model scored {c.importance:.2f}.</i></p>")
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
    return "".join(lines)


def sources_html(episodes: list[SourceEpisode], origin: dict[str, Any] | None = None) -> str:
    """The candidate's provenance: its source episodes, or for knowledge imported from
    another memory tool, which memory (block line, passage) it was and its dates there."""
    if origin:
        shown = html.escape(describe_origin(origin))
        imported = f"<h4>Imported knowledge</h4><p>From {shown}.</p>"
        return imported + ("<hr>" + sources_html(episodes) if episodes else "")
    if not episodes:
        return "<p><i>No source episodes recorded.</i></p>"
    parts = []
    for ep in episodes:
        label = ep.label or "unlabelled"
        parts.append(
            f"<h4>Episode #{ep.id} · {format_local(ep.timestamp)} · "
            f"{html.escape(ep.source)} · {html.escape(label)}</h4>"
            f"<pre style='white-space:pre-wrap'>{html.escape(ep.text)}</pre>"
        )
    return "<hr>".join(parts)


class CandidateDetail(QWidget):
    """Candidate, matched pattern (diff), the wording choice, and the source episodes."""

    wording_chosen = Signal(bool)
    """The reviewer picked "keep the pattern's text" (True) or "use my wording" (False)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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

        self.use_mine = QRadioButton("Use my wording")
        self.use_mine.setObjectName("useMyWording")
        self.use_mine.setToolTip("On commit, the edited text replaces the pattern's text")
        self.keep_text = QRadioButton("Keep the pattern's text")
        self.keep_text.setObjectName("keepPatternText")
        self.keep_text.setToolTip(
            "On commit, the pattern keeps its text; only its importance and sources change"
        )
        for button in (self.use_mine, self.keep_text):
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._group = QButtonGroup(self)
        self._group.addButton(self.use_mine)
        self._group.addButton(self.keep_text)
        self.use_mine.clicked.connect(lambda: self.wording_chosen.emit(False))
        self.keep_text.clicked.connect(lambda: self.wording_chosen.emit(True))
        self.wording = QWidget()
        wl = QHBoxLayout(self.wording)
        wl.setContentsMargins(0, 0, 0, 0)
        wl.addWidget(QLabel("On commit:"))
        wl.addWidget(self.use_mine)
        wl.addWidget(self.keep_text)
        wl.addStretch(1)
        self.wording.hide()

        middle = QWidget()
        mv = QVBoxLayout(middle)
        mv.setContentsMargins(0, 0, 0, 0)
        mv.addWidget(QLabel("<b>Candidate</b>"))
        mv.addWidget(self.detail, 1)
        mv.addWidget(QLabel("<b>Existing pattern</b>"))
        mv.addWidget(self.match_label)
        mv.addWidget(self.wording)
        mv.addWidget(self.diff, 2)
        right = QWidget()
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(QLabel("<b>Source episodes</b>"))
        rv.addWidget(self.sources)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("reviewDetailSplitter")  # the window saves its sizes
        self.splitter.addWidget(middle)
        self.splitter.addWidget(right)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([500, 340])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

    def show_candidate(self, c: Any | None, total: int) -> None:
        if c is None:
            self.detail.setHtml("<p><i>No candidate selected.</i></p>")
            self.diff.clear_diff()
            self.match_label.setText("")
            self.sources.setHtml("")
            self.wording.hide()
            return
        self.detail.setHtml(candidate_html(c, total))
        action = c.action or c.current_proposal
        ratio = _ratio(c)
        choice = c.action == "UPDATE" and c.final_text is not None
        self.wording.setVisible(choice)
        if choice:
            (self.keep_text if c.keep_pattern_text else self.use_mine).setChecked(True)
        if c.target_text is not None and c.shown_target_id is not None:
            status = "" if c.target_status in (None, "active") else f" ({c.target_status})"
            self.match_label.setText(
                f"Pattern #{c.shown_target_id}{status}: similarity ratio <b>{ratio:.3f}</b>"
                f" → {action_name(action)}"
            )
            if choice and c.keep_pattern_text:
                labels = ("Existing (kept on commit)", "Your wording (not written)")
            elif choice:
                labels = ("Existing (replaced on commit)", "Your wording (written)")
            else:
                labels = ("Existing", "Candidate")
            self.diff.set_texts(c.target_text, c.effective_text, labels=labels)
        elif c.newer_target_id is not None and c.newer_text is not None:
            self.match_label.setText(
                f"Pattern #{c.newer_target_id}, written since this run was staged: similarity "
                f"ratio <b>{c.newer_ratio or 0.0:.3f}</b>. Adding it is no longer what the "
                "gate proposes: <b>1</b> skips into it, <b>2</b> updates it, <b>3</b> adds "
                "it all the same."
            )
            self.diff.set_texts(
                c.newer_text, c.effective_text, labels=("Written since", "Candidate")
            )
        else:
            self.match_label.setText(
                f"No existing pattern is similar (best ratio {ratio:.3f}). "
                "Press <b>T</b> to choose one to update."
            )
            self.diff.clear_diff("Nothing to compare: this candidate would be a new pattern.")

    def show_sources(
        self, episodes: list[SourceEpisode], origin: dict[str, Any] | None = None
    ) -> None:
        self.sources.setHtml(sources_html(episodes, origin))

    def show_sources_reading(self) -> None:
        self.sources.setHtml("<p><i>Reading the source episodes…</i></p>")

    def show_sources_failed(self, message: str) -> None:
        self.sources.setHtml(
            f"<p><i>The source episodes could not be read: {html.escape(message)}</i></p>"
        )

"""How memory-poisoning flags look in the window: highlighted spans, reasons, confirmation.

The reviewer must see *where* a text is risky, not only that it is: each flag's span is
highlighted in the candidate's text (a colour per kind, the reason as its tooltip) and
the reasons are listed under it. Accepting everything at once never takes a flagged
candidate silently: :class:`FlaggedConfirmDialog` lists them and asks, and Enter or
Escape there leaves them undecided (accepting them is a click on its own button).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from curator.core.flag_type import KIND_LABELS, Flag
from curator.core.wording import agree, plural
from curator.gui.widgets.errors import cancel_by_default
from curator.pipeline.guard_flags import GUARD_KIND_LABELS

FLAG_MARK = "⚑"

KIND_COLOURS = {
    "instruction": "#ffb3a7",
    "link": "#ffd27f",
    "secret": "#f7a1c4",
    "personal": "#c9b6ff",
    "hidden": "#9fe3d4",
    "identity": "#ffe066",
    "untrusted": "#d9d9d9",
    "model": "#a7d8ff",
    "learned": "#b8e6a1",
}

LABELS = {**KIND_LABELS, **GUARD_KIND_LABELS}
"""Every kind's words: the rule flags' and the guard's stored ones."""


def highlight_html(text: str, flags: Sequence[Flag]) -> str:
    """``text`` as HTML with every flag's span highlighted (overlaps: the first flag wins)."""
    marks: list[Flag | None] = [None] * len(text)
    for flag in flags:
        for i in range(max(0, flag.start), min(len(text), flag.end)):
            if marks[i] is None:
                marks[i] = flag
    parts: list[str] = []
    i = 0
    while i < len(text):
        mark = marks[i]
        j = i
        while j < len(text) and marks[j] is mark:
            j += 1
        chunk = html.escape(text[i:j])
        # Invisible characters get a visible stand-in, so the reviewer sees there is something.
        if mark is not None and mark.kind == "hidden" and not text[i:j].isprintable():
            chunk = "".join(ch if ch.isprintable() else "·" for ch in html.escape(text[i:j]))
        if mark is None:
            parts.append(chunk)
        else:
            parts.append(
                f"<span style='background-color:{KIND_COLOURS.get(mark.kind, '#ffd27f')}' "
                f"title='{html.escape(mark.reason, quote=True)}'>{chunk}</span>"
            )
        i = j
    return "".join(parts)


def flags_html(flags: Sequence[Flag]) -> str:
    """The reasons as a short list (kind, reason, the matched text)."""
    if not flags:
        return ""
    items = []
    for flag in flags:
        colour = KIND_COLOURS.get(flag.kind, "#ffd27f")
        match = f": “{html.escape(_short(flag.match))}”" if flag.match.strip() else ""
        items.append(
            f"<li><span style='background-color:{colour}'>&nbsp;{FLAG_MARK} "
            f"{html.escape(LABELS.get(flag.kind, flag.kind))}&nbsp;</span> "
            f"{html.escape(flag.reason)}{match}</li>"
        )
    return (
        f"<p style='color:#a04000'><b>{FLAG_MARK} Flagged</b>: look twice before this enters "
        "the agent's memory (the proposal is unchanged).</p><ul>" + "".join(items) + "</ul>"
    )


def flags_tooltip(flags: Sequence[Flag]) -> str:
    return "\n".join(f"{FLAG_MARK} {f.describe()}" for f in flags)


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class FlaggedConfirmDialog(QDialog):
    """Lists flagged undecided candidates; OK accepts their proposals too."""

    def __init__(self, candidates: Sequence[Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per use: none piles up
        self.setObjectName("flaggedConfirmDialog")
        self.setWindowTitle("Accept flagged candidates too?")
        self.resize(640, 420)
        self.candidates = list(candidates)
        parts = [
            f"<p>{plural(len(self.candidates), 'flagged candidate')} "
            f"{agree(len(self.candidates), 'was', 'were')} left undecided. Accept "
            "their proposals as well? Each one's flags will be recorded as seen.</p>"
        ]
        for c in self.candidates:
            parts.append(
                f"<h4>#{c.ordinal} · {html.escape(c.current_proposal)}</h4>"
                f"<p>{highlight_html(c.effective_text, c.flags)}</p>"
                + "<ul>"
                + "".join(f"<li>{html.escape(f.describe())}</li>" for f in c.flags)
                + "</ul>"
            )
        self.view = QTextBrowser()
        self.view.setObjectName("flaggedList")
        self.view.setHtml("".join(parts))
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText(f"Accept these {len(self.candidates)} too")
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        cancel.setText("Leave them undecided")
        cancel_by_default(self.buttons)  # Enter leaves them undecided; OK is a click
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        layout.addWidget(self.buttons)

"""The Review pane's candidate list: columns, decision names and the row colouring.

The names say what a decision does, not what the model calls it internally: "1 skip"
read as "skip for now" (Prodigy's meaning) while it records "this is a duplicate of an
existing pattern, add nothing". The list shows what a commit will apply: the reviewer's
edited text and importance (marked ✎), and for an UPDATE whether the reviewer's wording
replaces the pattern's text.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QPalette, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QWidget

from curator.gui.widgets.flag_view import FLAG_MARK, flags_tooltip
from curator.gui.widgets.qt_models import FIT_ROWS, Column, RowTableModel
from curator.gui.widgets.row_table import RowTableView

ACTION_NAMES = {
    "ACCEPT": "Accept proposal",
    "SKIP": "Duplicate — skip",
    "UPDATE": "Update existing",
    "ADD": "Add new",
    "REJECT": "Reject",
}
"""What each decision is called on buttons, in the list, the status bar and the key help."""

DECISION_KEYS = (
    ("A", "ACCEPT"),
    ("1", "SKIP"),
    ("2", "UPDATE"),
    ("3", "ADD"),
    ("X", "REJECT"),
)

KEY_HELP = (
    " · ".join(f"<b>{key}</b> {ACTION_NAMES[action]}" for key, action in DECISION_KEYS)
    + " · <b>T</b> choose the pattern to update · <b>E</b> edit · <b>W</b> my wording / "
    "the pattern's text · <b>Backspace</b> undo this row · <b>Ctrl+Z</b> undo last decision"
    " · <b>↑/↓</b> move"
)


def action_name(action: str | None) -> str:
    return ACTION_NAMES.get(action or "", action or "")


def decision_text(c: Any) -> str:
    """The decision as the list shows it: what it does, and to which pattern."""
    if c.action is None:
        return ""
    name = action_name(c.action)
    if c.action in ("SKIP", "UPDATE") and c.target_id is not None:
        name = ("Duplicate of" if c.action == "SKIP" else "Update") + f" #{c.target_id}"
    if c.action == "UPDATE" and c.final_text is not None:
        name += " · my wording" if c.rewords else " · keep text"
    return name


def proposal_text(c: Any) -> str:
    name = action_name(c.proposed_action)
    if c.proposed_action in ("SKIP", "UPDATE") and c.proposed_target_id is not None:
        name += f" #{c.proposed_target_id}"
    return name


def flat(text: str, limit: int = 140) -> str:
    """One line of at most ``limit`` characters (the list is one row per candidate)."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _text_tooltip(c: Any) -> str:
    if c.final_text is None:
        return str(c.text)
    return f"Edited by the reviewer:\n{c.final_text}\n\nThe model proposed:\n{c.text}"


def _importance_display(c: Any) -> str:
    edited = c.final_importance is not None
    return f"{c.effective_importance:.2f}" + (" ✎" if edited else "")


def _importance_tooltip(c: Any) -> str:
    if c.final_importance is None:
        return "Importance scored by the model"
    return f"Edited by the reviewer (the model scored {c.importance:.2f})"


CANDIDATE_COLUMNS: list[Column[Any]] = [
    Column("#", lambda c: c.ordinal, align_right=True),
    # elided when the list is narrow: the tooltip says it whole
    Column("Proposed", proposal_text, tooltip=proposal_text),
    Column("Decision", decision_text, tooltip=decision_text),
    Column(
        "Imp.",
        lambda c: c.effective_importance,
        display=_importance_display,
        tooltip=_importance_tooltip,
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
        display=lambda c: ("✎ " if c.final_text is not None else "") + flat(c.effective_text),
        tooltip=_text_tooltip,
    ),
]


MIN_CANDIDATE_WIDTH = 160
"""Pixels of the Candidate column that stay in view however narrow the list is."""

MIN_COLUMN_WIDTH = 36
"""The narrowest a content-sized column is squeezed to (an elided "U…" still says which)."""


def fitted_widths(wants: list[int], budget: int, floor: int) -> list[int]:
    """``wants`` when they fit in ``budget``; else the widest give way first: each width
    is capped at the largest cap (never below ``floor``) that keeps the sum in budget."""
    if sum(wants) <= budget:
        return list(wants)

    def total(cap: int) -> int:
        return sum(min(w, cap) for w in wants)

    low, high = floor, max(wants)
    if total(low) > budget:
        return [min(w, low) for w in wants]
    while low < high:  # the largest cap whose total fits
        middle = (low + high + 1) // 2
        if total(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    return [min(w, low) for w in wants]


class CandidateList(RowTableView):
    """One row per candidate; decided rows are tinted (rejected ones less).

    The columns before Candidate are sized to their content, but only as far as the
    Candidate column keeps :data:`MIN_CANDIDATE_WIDTH` in view: Qt's ResizeToContents
    pushed it out of a 1024 px window (behind a horizontal scroll bar) once decisions
    read "Update #123 · my wording". The widest columns give way first, elided.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("candidateList")
        self.candidates = RowTableModel(CANDIDATE_COLUMNS, self, row_background=self._background)
        self.setModel(self.candidates)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.setWordWrap(False)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.horizontalHeader()
        header.setStretchLastSection(True)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Measured over a screenful: over every row (Qt measures up to 1,000) each
        # decision's repaint re-read the whole run, 160 ms per key at 400 candidates.
        header.setResizeContentsPrecision(FIT_ROWS)
        # The text takes the room that is left and is elided (the detail shows it whole),
        # so the list never needs a horizontal scroll bar.
        header.setSectionResizeMode(len(CANDIDATE_COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        # refitted once per event-loop pass, however many rows changed
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(0)
        self._fit_timer.timeout.connect(self.fit_columns)
        for signal in (
            self.candidates.modelReset,
            self.candidates.dataChanged,
            self.candidates.rowsInserted,
            self.candidates.layoutChanged,
            self.verticalScrollBar().valueChanged,
        ):
            signal.connect(self._fit_timer.start)

    def fit_columns(self) -> None:
        """Each column before Candidate to its content, as far as Candidate keeps room."""
        header = self.horizontalHeader()
        last = self.candidates.columnCount() - 1
        wants = [max(self.sizeHintForColumn(c), header.sectionSizeHint(c)) for c in range(last)]
        budget = self.viewport().width() - MIN_CANDIDATE_WIDTH
        for column, width in enumerate(fitted_widths(wants, budget, MIN_COLUMN_WIDTH)):
            if header.sectionSize(column) != width:
                header.resizeSection(column, width)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_columns()

    def _background(self, c: Any) -> QBrush | None:
        if c.action is None:
            return None
        color = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        color.setAlpha(25 if c.action != "REJECT" else 10)
        return QBrush(color)

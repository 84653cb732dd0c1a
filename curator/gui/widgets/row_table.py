"""A table read row by row, whose Home and End keys go where a list's do.

Qt's ``QTableView`` takes Home and End to the first and last *column* of the current
row (Ctrl+Home and Ctrl+End to the first and last row). In a table that selects whole
rows (the episodes, the candidates, the patterns, the runs) that move changes nothing
the user can see: End on 120,000 episodes did nothing, and the way to the oldest one
was Ctrl+End, which moves the current row without selecting it, so the detail beside
the table kept showing the episode left behind. Here Home and End go to the first and
last row and select it, as in a list (Shift extends the selection, as it does for the
arrow keys); the current column stays where it was, so the view does not scroll
sideways. Ctrl+Home and Ctrl+End keep Qt's meaning, and a table that selects single
cells keeps Qt's keys altogether.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableView

_ENDS = (
    QAbstractItemView.CursorAction.MoveHome,
    QAbstractItemView.CursorAction.MoveEnd,
)


class RowTableView(QTableView):
    """A :class:`QTableView` for row selection: Home/End go to the first/last row."""

    def moveCursor(
        self, cursorAction: QAbstractItemView.CursorAction, modifiers: Qt.KeyboardModifier
    ) -> QModelIndex:
        rows = self.selectionBehavior() == QAbstractItemView.SelectionBehavior.SelectRows
        control = bool(modifiers & Qt.KeyboardModifier.ControlModifier)
        if cursorAction not in _ENDS or not rows or control:
            return super().moveCursor(cursorAction, modifiers)
        # Qt's own row search with Ctrl (it skips hidden rows), then back to the column
        # the user was in.
        found = super().moveCursor(cursorAction, modifiers | Qt.KeyboardModifier.ControlModifier)
        current = self.currentIndex()
        if found.isValid() and current.isValid():
            return found.siblingAtColumn(current.column())
        return found

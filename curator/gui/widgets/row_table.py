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
cells keeps Qt's keys altogether. A model that appends rows after End (the episodes,
whose first screenful comes before the rest on a large database) takes the selection on
to the new last row, until the user moves elsewhere.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractItemModel, QItemSelectionModel, QModelIndex, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QAbstractItemView, QTableView, QWidget

_ENDS = (
    QAbstractItemView.CursorAction.MoveHome,
    QAbstractItemView.CursorAction.MoveEnd,
)


class RowTableView(QTableView):
    """A :class:`QTableView` for row selection: Home/End go to the first/last row."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._at_end = False
        """End was the last move: rows appended below (a model that loads its rows in
        steps, the first screenful first) take the selection along to the new last row."""

    def setModel(self, model: QAbstractItemModel | None) -> None:
        old = self.model()
        if old is not None:
            old.rowsInserted.disconnect(self._rows_appended)
            old.modelReset.disconnect(self._moved_away)
        super().setModel(model)
        self._at_end = False
        if model is not None:
            model.rowsInserted.connect(self._rows_appended)
            model.modelReset.connect(self._moved_away)

    def _moved_away(self) -> None:
        self._at_end = False

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._at_end = False
        super().mousePressEvent(event)

    def _rows_appended(self, parent: QModelIndex, first: int, last: int) -> None:
        model = self.model()
        current = self.currentIndex()
        appended = not parent.isValid() and last == model.rowCount() - 1
        if not (self._at_end and appended and current.isValid() and current.row() == first - 1):
            return
        end = self._outer_row(last=True, column=current.column())
        if end.isValid() and end.row() > current.row():
            flags = (
                QItemSelectionModel.SelectionFlag.ClearAndSelect
                | QItemSelectionModel.SelectionFlag.Rows
            )
            self.selectionModel().setCurrentIndex(end, flags)

    def moveCursor(
        self, cursorAction: QAbstractItemView.CursorAction, modifiers: Qt.KeyboardModifier
    ) -> QModelIndex:
        rows = self.selectionBehavior() == QAbstractItemView.SelectionBehavior.SelectRows
        control = bool(modifiers & Qt.KeyboardModifier.ControlModifier)
        plain = modifiers & ~Qt.KeyboardModifier.KeypadModifier == Qt.KeyboardModifier.NoModifier
        self._at_end = rows and plain and cursorAction == _ENDS[1]
        if cursorAction not in _ENDS or not rows or control:
            return super().moveCursor(cursorAction, modifiers)
        current = self.currentIndex()
        return self._outer_row(
            last=cursorAction == _ENDS[1], column=current.column() if current.isValid() else -1
        )

    def _outer_row(self, last: bool, column: int = -1) -> QModelIndex:
        """The first (or last) shown row that has a cell that can be current, at
        ``column`` where its cell there can be, else at the first shown column whose
        cell can (invalid: no such row). Hidden rows and columns and disabled cells are
        passed over, as Qt's own keys pass them over."""
        model = self.model()
        if model is None:
            return QModelIndex()
        header = self.horizontalHeader()
        shown = [
            c
            for c in (header.logicalIndex(v) for v in range(header.count()))
            if not self.isColumnHidden(c)
        ]
        if column in shown:
            shown.remove(column)
            shown.insert(0, column)
        rows = self.verticalHeader()
        order = range(rows.count() - 1, -1, -1) if last else range(rows.count())
        for visual in order:
            row = rows.logicalIndex(visual)
            if self.isRowHidden(row):
                continue
            for candidate in shown:
                index = model.index(row, candidate, self.rootIndex())
                if index.flags() & Qt.ItemFlag.ItemIsEnabled:
                    return index
        return QModelIndex()

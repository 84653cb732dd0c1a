"""A small, generic, sortable table model over a list of Python row objects.

The panes show plain dataclasses/peewee rows (candidates, patterns, runs, trace steps).
Rather than one hand-written ``QAbstractTableModel`` per table, each table is a list of
:class:`Column` descriptions over the same model class. Sorting happens in the model (a
Python sort of a few thousand rows is instant), keeping persistent indexes — and so the
view's selection — on the same rows. Every instance must pass ``qtmodeltester``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import QTableView

R = TypeVar("R")

AnyIndex = QModelIndex | QPersistentModelIndex


FIT_ROWS = 50
"""Rows a column fit reads (about a screenful; a view's ``setResizeContentsPrecision``).
Qt's default reads 1,000, and 0 ("the visible rows") reads every row of a view not yet
shown: a fit after a reload held the GUI thread 0.3-1 s formatting rows nobody sees (the
episode table with an agent recording, a classify run's trace, the decay forecast)."""


def headers_ignore_selection(view: QTableView) -> None:
    """Give ``view``'s headers a selection model of their own, always empty.

    Qt's header paints each section asking the selection model whether that whole column
    (or row) is selected, which checks every selected cell: after Ctrl+A on 100,000 rows
    that is 600,000 ``flags()`` calls a repaint (seconds), and on the Knowledge table's
    1,051 patterns 180 ms. The table's own selection is unchanged."""
    model = view.model()
    for side in (view.horizontalHeader(), view.verticalHeader()):
        side.setHighlightSections(False)
        side.setSelectionModel(QItemSelectionModel(model, side))


def selected_spans(view: QTableView) -> list[tuple[int, int]]:
    """The selected rows of a row-selecting ``view`` as sorted, merged (first, last)
    pairs, read from the selection's ranges.

    ``selectedRows()`` asks the model for every selected cell's flags in Python: after
    Ctrl+A that was 100 ms on the Knowledge table's 1,000 patterns, and on 100,000
    episodes one range here is one pair."""
    selection = view.selectionModel().selection()
    count = view.model().rowCount()
    spans = sorted(
        (part.top(), min(part.bottom(), count - 1))
        for part in (selection.at(i) for i in range(selection.count()))
        if part.top() < count
    )
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


@dataclass(frozen=True)
class Column(Generic[R]):
    """One column: its header, how to get the sort value, and how to display it."""

    title: str
    value: Callable[[R], Any]
    display: Callable[[R], str] | None = None
    align_right: bool = False
    tooltip: Callable[[R], str] | None = None

    def text(self, row: R) -> str:
        if self.display is not None:
            return self.display(row)
        value = self.value(row)
        return "" if value is None else str(value)


def _sort_key(value: Any) -> tuple[int, Any]:
    """Sort None last and never compare values of different types."""
    if value is None:
        return (2, "")
    if isinstance(value, bool | int | float):
        return (0, float(value))
    return (1, str(value).casefold())


class RowTableModel(QAbstractTableModel, Generic[R]):
    """A read-only table over ``rows``; optional per-row font and background hooks."""

    def __init__(
        self,
        columns: Sequence[Column[R]],
        parent: QObject | None = None,
        *,
        row_font: Callable[[R], QFont | None] | None = None,
        row_background: Callable[[R], QBrush | None] | None = None,
    ) -> None:
        super().__init__(parent)
        self._columns = list(columns)
        self._rows: list[R] = []
        self._row_font = row_font
        self._row_background = row_background
        self._sort_column = -1
        self._sort_order = Qt.SortOrder.AscendingOrder

    # -- content ----------------------------------------------------------------------------

    def set_rows(self, rows: Sequence[R]) -> None:
        """Replace all rows (a model reset), keeping the current sort order."""
        self.beginResetModel()
        self._rows = list(rows)
        if self._sort_column >= 0:
            self._sort_rows()
        self.endResetModel()

    def replace_row(self, row: int, item: R) -> None:
        """Swap one row's object in place (a live row refreshed; no reset, selection kept)."""
        if not 0 <= row < len(self._rows):
            return
        self._rows[row] = item
        last = self.index(row, len(self._columns) - 1)
        self.dataChanged.emit(self.index(row, 0), last)

    def rows(self) -> list[R]:
        return list(self._rows)

    def row_at(self, row: int) -> R | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def rows_between(self, first: int, last: int) -> list[R]:
        """Rows ``first`` to ``last`` inclusive, those that exist (a slice: a span of
        a selection read row by row cost 12 ms on 5,000 patterns)."""
        return self._rows[max(first, 0) : max(last + 1, 0)]

    def find_row(self, predicate: Callable[[R], bool]) -> int:
        """The first row number matching ``predicate``, or -1."""
        for i, item in enumerate(self._rows):
            if predicate(item):
                return i
        return -1

    def column_index(self, title: str) -> int:
        for i, column in enumerate(self._columns):
            if column.title == title:
                return i
        return -1

    # -- Qt interface -----------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        if not (0 <= index.column() < len(self._columns)):
            return None
        row = self._rows[index.row()]
        column = self._columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return column.text(row)
        if role == Qt.ItemDataRole.ToolTipRole:
            return column.tooltip(row) if column.tooltip is not None else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if column.align_right:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and self._row_font is not None:
            return self._row_font(row)
        if role == Qt.ItemDataRole.BackgroundRole and self._row_background is not None:
            return self._row_background(row)
        return None

    def headerData(
        self,
        section: int,
        orientation: Qt.Orientation,
        role: int = Qt.ItemDataRole.DisplayRole,
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            return self._columns[section].title if 0 <= section < len(self._columns) else None
        return str(section + 1) if 0 <= section < len(self._rows) else None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort the rows in place; persistent indexes (selection) follow their rows."""
        if not (0 <= column < len(self._columns)):
            return
        self._sort_column, self._sort_order = column, order
        self.layoutAboutToBeChanged.emit()
        old_rows = list(self._rows)
        persistent = self.persistentIndexList()
        positions = {id(item): i for i, item in enumerate(old_rows)}
        self._sort_rows()
        new_pos = {id(item): i for i, item in enumerate(self._rows)}
        del positions
        new_indexes = []
        for idx in persistent:
            item = old_rows[idx.row()] if 0 <= idx.row() < len(old_rows) else None
            if item is None:
                new_indexes.append(QModelIndex())
            else:
                new_indexes.append(self.index(new_pos[id(item)], idx.column()))
        self.changePersistentIndexList(persistent, new_indexes)
        self.layoutChanged.emit()

    def _sort_rows(self) -> None:
        column = self._columns[self._sort_column]
        self._rows.sort(
            key=lambda r: _sort_key(column.value(r)),
            reverse=self._sort_order == Qt.SortOrder.DescendingOrder,
        )

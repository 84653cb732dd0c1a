"""A confusion matrix as a Qt table model: counts with row percentages, shaded by share.

Rows are the human's decision, columns the model's (or the gate's), as in
:mod:`curator.core.agreement`. The model only formats a :class:`Confusion`; clicking a
cell is handled by the pane, which knows which episodes a cell holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from curator.core.agreement import Confusion

AnyIndex = QModelIndex | QPersistentModelIndex


class ConfusionModel(QAbstractTableModel):
    def __init__(
        self, labels: tuple[str, ...], parent: QObject | None = None, columns: str = "model"
    ) -> None:
        super().__init__(parent)
        self._columns_title = columns
        self._confusion = Confusion(labels, np.zeros((len(labels), len(labels)), dtype=np.int64))
        self._percent: list[list[float | None]] = self._confusion.row_percent()

    def set_confusion(self, confusion: Confusion) -> None:
        self.beginResetModel()
        self._confusion = confusion
        self._percent = confusion.row_percent()
        self.endResetModel()

    @property
    def labels(self) -> tuple[str, ...]:
        return self._confusion.labels

    def cell(self, row: int, column: int) -> tuple[str, str]:
        """(human, model) of a cell."""
        return self.labels[row], self.labels[column]

    def count(self, row: int, column: int) -> int:
        return int(self._confusion.counts[row, column])

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.labels)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.labels)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if not (0 <= r < len(self.labels) and 0 <= c < len(self.labels)):
            return None
        count = self.count(r, c)
        share = self._percent[r][c]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{count}" if share is None else f"{count}  ({share:.0f}%)"
        if role == Qt.ItemDataRole.ToolTipRole:
            human, model = self.cell(r, c)
            return f"human {human}, model {model}: {count}"
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.BackgroundRole and share is not None:
            base = QColor(60, 160, 90) if r == c else QColor(200, 80, 60)
            base.setAlpha(int(30 + 170 * share / 100.0))
            return QBrush(base)
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole or not (0 <= section < len(self.labels)):
            return None
        # Who decided on one line, what on the next: on one line, "model: uncategorized"
        # was cut to "del: uncategori" in a column of a narrow window.
        horizontal = orientation == Qt.Orientation.Horizontal
        prefix = f"{self._columns_title}:\n" if horizontal else "human:\n"
        return prefix + self.labels[section]

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

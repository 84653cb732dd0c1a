"""Fitting a column to its contents reads a screenful of rows, in every table.

Qt's default reads 1,000 rows, and 0 ("the visible rows") reads every row of a view not yet
shown: a classify run's trace of 564 steps held the GUI thread 413-765 ms, the decay
forecast (a row per pattern) 375-460 ms at each refresh of Insights. The class is held
here, for every table of the window (panes built later included), and at its worst case:
a view fitted before it is shown.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableView

from curator.gui.widgets.qt_models import FIT_ROWS
from curator.gui.window.main_window import MainWindow


class _CountingRows(QAbstractTableModel):
    """5,000 rows that count which rows were read for their text."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[int] = set()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 5000

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else 3

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> object:
        if role == Qt.ItemDataRole.DisplayRole:
            self.read.add(index.row())
            return f"row {index.row()} " + "x" * (index.row() % 40)
        return None


def test_every_table_fits_its_columns_from_a_screenful_of_rows(main_window: MainWindow) -> None:
    for pane in main_window.panes:
        main_window.tabs.setCurrentWidget(pane)  # a pane builds its sections when shown
    views = main_window.findChildren(QTableView)
    assert len(views) >= 8  # episodes, review, knowledge, runs, trace, insights' tables
    wrong = {
        view.objectName() or type(view).__name__: view.horizontalHeader().resizeContentsPrecision()
        for view in views
        if not 0 < view.horizontalHeader().resizeContentsPrecision() <= FIT_ROWS
    }
    assert wrong == {}


def test_a_fit_before_the_view_is_shown_reads_no_more(qtbot) -> None:
    view = QTableView()
    qtbot.addWidget(view)
    model = _CountingRows()
    view.setModel(model)
    view.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
    view.resizeColumnToContents(1)  # not shown: Qt's 0 would read all 5,000 here
    assert 0 < len(model.read) <= FIT_ROWS + 1


def test_tables_that_select_many_rows_keep_their_headers_out_of_it(
    main_window: MainWindow,
) -> None:
    """A header asks the selection model, per section, whether its whole column is
    selected: after Ctrl+A every repaint read every selected cell (seconds at 100,000
    episodes, 180 ms at 1,051 patterns). Tables where many rows can be selected give their
    headers a selection of their own."""
    for pane in main_window.panes:
        main_window.tabs.setCurrentWidget(pane)
    many = QAbstractItemView.SelectionMode.ExtendedSelection
    wrong = [
        view.objectName()
        for view in main_window.findChildren(QTableView)
        if view.selectionMode() == many
        for header in (view.horizontalHeader(), view.verticalHeader())
        if header.highlightSections() or header.selectionModel() is view.selectionModel()
    ]
    assert wrong == []

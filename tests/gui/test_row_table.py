"""Home and End in the tables that select whole rows go to the first and last row."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView

from curator.gui.widgets.row_table import RowTableView

ROWS, COLUMNS = 40, 4


@pytest.fixture
def view(qtbot) -> RowTableView:
    model = QStandardItemModel(ROWS, COLUMNS)
    for row in range(ROWS):
        for column in range(COLUMNS):
            model.setItem(row, column, QStandardItem(f"{row}.{column}"))
    table = RowTableView()
    table.setModel(model)
    model.setParent(table)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    qtbot.addWidget(table)
    table.resize(400, 300)
    table.show()
    qtbot.waitExposed(table)
    table.setFocus()
    table.selectRow(5)
    table.setCurrentIndex(table.model().index(5, 1))
    return table


def selected_rows(view: RowTableView) -> list[int]:
    return sorted(index.row() for index in view.selectionModel().selectedRows())


def test_home_and_end_select_the_first_and_last_row_in_the_same_column(qtbot, view) -> None:
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert (view.currentIndex().row(), view.currentIndex().column()) == (ROWS - 1, 1)
    assert selected_rows(view) == [ROWS - 1]
    qtbot.keyClick(view, Qt.Key.Key_Home)
    assert (view.currentIndex().row(), view.currentIndex().column()) == (0, 1)
    assert selected_rows(view) == [0]


def test_shift_end_extends_the_selection_and_ctrl_keeps_qts_meaning(qtbot, view) -> None:
    qtbot.keyClick(view, Qt.Key.Key_End, Qt.KeyboardModifier.ShiftModifier)
    assert selected_rows(view) == list(range(5, ROWS))
    view.selectRow(5)
    qtbot.keyClick(view, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    assert view.currentIndex().row() == 0  # moved, the selection left as it was
    assert selected_rows(view) == [5]


def test_hidden_rows_are_skipped(qtbot, view) -> None:
    view.setRowHidden(ROWS - 1, True)
    view.setRowHidden(0, True)
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert selected_rows(view) == [ROWS - 2]
    qtbot.keyClick(view, Qt.Key.Key_Home)
    assert selected_rows(view) == [1]


def test_a_table_of_cells_keeps_qts_keys(qtbot, view) -> None:
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert (view.currentIndex().row(), view.currentIndex().column()) == (5, COLUMNS - 1)


def test_end_in_the_episodes_shows_the_oldest_episode(qtbot, main_window) -> None:
    """Newest first: End selects the last row, and the detail beside shows its episode."""
    main_window.tabs.setCurrentIndex(0)
    pane = main_window.episodes_pane
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.rowCount() > 1)
    pane.table.setFocus()
    pane.table.selectRow(0)
    qtbot.keyClick(pane.table, Qt.Key.Key_End)
    last = pane.model.rowCount() - 1
    oldest = pane.model.episode_id(last)
    assert pane.selected_ids() == [oldest]
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)  # read in the background
    assert pane.detail_reader._shown == oldest
    assert "Label in force" in pane.detail.toPlainText()

"""Home and End in the tables that select whole rows go to the first and last row."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView

from curator.gui.episodes import episode_model
from curator.gui.widgets.row_table import RowTableView
from curator.store.episode_queries import EpisodeSort

ROWS, COLUMNS = 40, 4


def row_table(
    qtbot,
    rows: int,
    columns: int,
    *,
    disabled: Collection[tuple[int, int]] = (),
    hidden_rows: Collection[int] = (),
    hidden_columns: Collection[int] = (),
) -> RowTableView:
    """A shown, focused table of ``rows`` x ``columns`` cells "row.column" that selects
    whole rows, with the ``disabled`` cells and the hidden rows and columns asked for."""
    model = QStandardItemModel(rows, columns)
    for row in range(rows):
        for column in range(columns):
            item = QStandardItem(f"{row}.{column}")
            item.setEnabled((row, column) not in disabled)
            model.setItem(row, column, item)
    table = RowTableView()
    table.setModel(model)
    model.setParent(table)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    qtbot.addWidget(table)
    for row in hidden_rows:
        table.setRowHidden(row, True)
    for column in hidden_columns:
        table.setColumnHidden(column, True)
    table.resize(400, 300)
    table.show()
    qtbot.waitExposed(table)
    table.setFocus()
    return table


@pytest.fixture
def view(qtbot) -> RowTableView:
    table = row_table(qtbot, ROWS, COLUMNS)
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


@pytest.mark.parametrize("key", [Qt.Key.Key_End, Qt.Key.Key_Home])
def test_without_a_current_row_end_and_home_still_go_to_the_ends(qtbot, view, key) -> None:
    """After a reset (a new search) there is no current row: Qt answers the first cell for
    either key."""
    view.selectionModel().clear()
    view.setCurrentIndex(QModelIndex())
    assert not view.currentIndex().isValid()
    qtbot.keyClick(view, key)
    assert selected_rows(view) == [ROWS - 1 if key == Qt.Key.Key_End else 0]


def test_a_hidden_or_disabled_current_column_does_not_lose_the_row(qtbot, view) -> None:
    view.setColumnHidden(1, True)
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert selected_rows(view) == [ROWS - 1]
    view.setColumnHidden(1, False)
    view.setCurrentIndex(view.model().index(3, 1))
    model = view.model()
    assert isinstance(model, QStandardItemModel)
    model.item(ROWS - 1, 1).setEnabled(False)
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert selected_rows(view) == [ROWS - 1]


def test_rows_appended_after_end_take_the_selection_along_until_the_user_moves(qtbot, view) -> None:
    model = view.model()
    assert isinstance(model, QStandardItemModel)
    qtbot.keyClick(view, Qt.Key.Key_End)
    model.appendRow([QStandardItem("late") for _ in range(COLUMNS)])
    assert selected_rows(view) == [ROWS]
    assert view.currentIndex().column() == 1
    qtbot.keyClick(view, Qt.Key.Key_Up)
    model.appendRow([QStandardItem("later") for _ in range(COLUMNS)])
    assert selected_rows(view) == [ROWS - 1]


@pytest.mark.parametrize("engine", ["postgresql"])
def test_end_while_the_episodes_come_in_steps_ends_on_the_oldest(
    qtbot, main_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server a new order shows its first rows before the rest: End pressed between
    the two ends on the last row of all of them, not of the first screenful."""
    main_window.tabs.setCurrentIndex(0)
    pane = main_window.episodes_pane
    model = pane.model
    qtbot.waitUntil(lambda: model.complete and not model.loading and model.rowCount() > 20)
    everything = model.rowCount()
    real = episode_model.query_ids
    rest = threading.Event()

    def held(*args: Any) -> Any:  # fault injection: a slow read of every id
        assert rest.wait(30)
        return real(*args)

    monkeypatch.setattr(episode_model, "query_ids", held)
    model.first_rows = 10
    model.set_query(sort=EpisodeSort("time", False))
    qtbot.waitUntil(lambda: model.rowCount() == 10 and not model.complete)
    pane.table.setFocus()
    pane.table.selectRow(0)
    qtbot.keyClick(pane.table, Qt.Key.Key_End)
    assert pane.selected_ids() == [model.episode_id(9)]
    rest.set()
    qtbot.waitUntil(lambda: model.complete and model.rowCount() == everything)
    assert pane.selected_ids() == [model.episode_id(everything - 1)]


# -- any table, any state, any keys -------------------------------------------------------

TABLES = st.builds(
    lambda rows, columns, data: (rows, columns, data),
    st.integers(1, 25),
    st.integers(1, 5),
    st.data(),
)
KEYS = st.lists(
    st.sampled_from(["Home", "End", "Up", "Down", "PageDown", "click"]), min_size=1, max_size=8
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(table=TABLES, keys=KEYS)
def test_home_and_end_reach_the_first_and_last_shown_row_of_any_table(
    qtbot, table: tuple[int, int, Any], keys: list[str]
) -> None:
    """Any size, hidden rows and columns, disabled cells, a current cell or none, any
    keys between: Home and End select exactly the first and last shown row that has a
    cell that can be current, on a shown and enabled cell, and stay in the column the
    user was in when its cell there can take it."""
    rows, columns, data = table
    hidden_rows = data.draw(st.sets(st.integers(0, rows - 1), max_size=rows - 1))
    hidden_columns = data.draw(st.sets(st.integers(0, columns - 1), max_size=columns - 1))
    disabled = data.draw(
        st.sets(st.tuples(st.integers(0, rows - 1), st.integers(0, columns - 1)), max_size=6)
    )
    view = row_table(
        qtbot,
        rows,
        columns,
        disabled=disabled,
        hidden_rows=hidden_rows,
        hidden_columns=hidden_columns,
    )
    model = view.model()
    start = data.draw(st.none() | st.tuples(st.integers(0, rows - 1), st.integers(0, columns - 1)))
    if start is not None:
        view.setCurrentIndex(model.index(*start))
    shown_rows = [r for r in range(rows) if r not in hidden_rows]
    shown_columns = [c for c in range(columns) if c not in hidden_columns]
    # rows that can be current: shown, with a shown cell that is enabled
    able = [r for r in shown_rows if any((r, c) not in disabled for c in shown_columns)]
    for key in keys:
        before = view.currentIndex()
        if key == "click":
            row = data.draw(st.sampled_from(shown_rows))
            column = data.draw(st.sampled_from(shown_columns))
            qtbot.mouseClick(
                view.viewport(),
                Qt.MouseButton.LeftButton,
                pos=view.visualRect(model.index(row, column)).center(),
            )
            continue
        qtbot.keyClick(view, getattr(Qt.Key, f"Key_{key}"))
        if key not in ("Home", "End"):
            continue
        now = view.currentIndex()
        if not able:  # nowhere to go: nothing moves
            assert (now.row(), now.column()) == (before.row(), before.column())
            continue
        assert now.row() == (able[0] if key == "Home" else able[-1])
        assert now.column() in shown_columns and (now.row(), now.column()) not in disabled
        assert selected_rows(view) == [now.row()]
        was = before.column() if before.isValid() else -1
        if was in shown_columns and (now.row(), was) not in disabled:
            assert now.column() == was

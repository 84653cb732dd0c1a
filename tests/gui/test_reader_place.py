"""The reader keeps their place while episodes arrive (an agent recording, a followed log).

Episodes are recorded through the Python API on a connection of their own, as an agent's
would be; the window hears the change and reloads the table. The episode being read stays
selected, current and on the same row of the screen; Down goes on from it; with nothing
selected the top row of the view stays on top, and at the very top the arrivals show.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QApplication, QTableView

from curator import Curator
from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.models import Episode

_numbers = itertools.count()


def _arrive(qtbot, pane: EpisodesPane, store: Store, count: int) -> None:
    """``count`` new episodes from another connection; waits until the table shows them."""
    before = pane.model.rowCount()
    with Curator(store.path) as agent:
        for _ in range(count):
            agent.record(f"an episode recorded while the person reads, number {next(_numbers)}")
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + count, timeout=10_000)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    QApplication.processEvents()


def _top(table: QTableView) -> int:
    return table.rowAt(0)


def _select(pane: EpisodesPane, row: int) -> int:
    index = pane.model.index(row, 0)
    pane.table.selectionModel().setCurrentIndex(
        index,
        QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
    )
    return pane.model.episode_id(row)


def _scroll_to_row(pane: EpisodesPane, row: int) -> None:
    pane.table.scrollTo(pane.model.index(row, 0), QTableView.ScrollHint.PositionAtTop)
    QApplication.processEvents()
    assert _top(pane.table) == row


@pytest.fixture
def pane(qtbot, main_window: MainWindow) -> EpisodesPane:
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.model.rowCount() > 60 and not pane.model.loading)
    pane.table.setFocus()
    return pane


def test_the_episode_being_read_stays_on_its_row_and_down_goes_on_from_it(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    """Newest first (the default order), at the top of the list: the arrivals come in
    above the episode being read, which must not move on the screen."""
    reading = _select(pane, 5)
    below = pane.model.episode_id(6)
    _arrive(qtbot, pane, store, 12)

    row = pane.model.row_of(reading)
    assert row == 17  # twelve newer episodes above it
    assert row - _top(pane.table) == 5  # the same row of the screen
    assert pane.selected_ids() == [reading]
    assert pane.table.currentIndex().row() == row

    qtbot.keyClick(pane.table, Qt.Key.Key_Down)
    assert pane.selected_ids() == [below]  # on from the episode read, not the first row


def test_with_nothing_selected_the_top_row_of_the_view_stays_on_top(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    _scroll_to_row(pane, 30)
    first_shown = pane.model.episode_id(30)
    _arrive(qtbot, pane, store, 7)
    assert pane.model.row_of(first_shown) == 37
    assert _top(pane.table) == 37


def test_at_the_very_top_with_nothing_selected_the_arrivals_show(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    newest_before = pane.model.episode_id(0)
    _arrive(qtbot, pane, store, 3)
    assert _top(pane.table) == 0
    assert pane.model.row_of(newest_before) == 3  # the three new ones above it, on screen


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    column=st.sampled_from([0, 1, 5]),  # Time, Source, Preview: arrivals land anywhere
    order=st.sampled_from([Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder]),
    top=st.integers(0, 40),
    offset=st.integers(0, 12),
    count=st.integers(1, 6),
)
def test_in_any_order_the_selected_episode_keeps_its_row_of_the_screen(
    qtbot, pane: EpisodesPane, store: Store, column, order, top, offset, count
) -> None:
    pane.table.sortByColumn(column, order)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    QApplication.processEvents()
    _scroll_to_row(pane, top)
    reading = _select(pane, top + offset)
    _arrive(qtbot, pane, store, count)

    row = pane.model.row_of(reading)
    assert row is not None
    assert pane.selected_ids() == [reading]
    assert pane.table.currentIndex().row() == row
    # where the rows above allow it (the list cannot scroll above its first row)
    assert row - _top(pane.table) == min(offset, row)


def test_a_new_order_keeps_the_current_episode_in_view(qtbot, pane: EpisodesPane) -> None:
    """Not a live arrival: a new order shows the selected episode where it now stands
    (as file managers do), current for the keyboard. Before, the scroll bar kept its
    value and showed whatever rows now stood there."""
    _scroll_to_row(pane, 40)
    reading = _select(pane, 45)
    pane.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.row_of(reading) != 45)
    QApplication.processEvents()
    row = pane.model.row_of(reading)
    assert row is not None and pane.table.currentIndex().row() == row
    assert pane.selected_ids() == [reading]
    shown = pane.table.rowAt(0), pane.table.rowAt(pane.table.viewport().height() - 1)
    assert shown[0] <= row <= shown[1]


@pytest.mark.parametrize("words", ["the", ""])
def test_a_new_search_starts_at_its_first_result(qtbot, pane: EpisodesPane, words: str) -> None:
    """Typed while scrolled down, a search showed its 40th result first."""
    pane.search_edit.setText("the")
    pane.apply_filter()
    qtbot.waitUntil(lambda: not pane.model.loading)
    _scroll_to_row(pane, 40)
    _select(pane, 45)
    pane.search_edit.setText(words + " a" if words else "")
    pane.apply_filter()
    qtbot.waitUntil(lambda: not pane.model.loading)
    QApplication.processEvents()
    assert _top(pane.table) == 0


def _record(store: Store, count: int) -> None:
    with Curator(store.path) as agent:
        for _ in range(count):
            agent.record(f"an episode recorded while the person reads, number {next(_numbers)}")


def _background(pane: EpisodesPane) -> None:
    """Reads run off the GUI thread as at 100,000 episodes (the rows arrive later)."""
    pane.model.async_above = 0
    assert pane.model.in_background


def test_the_place_is_taken_when_the_rows_come_not_when_they_were_asked_for(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    """A reload in the background: the reader scrolls on and picks another episode while
    it runs; the place kept is theirs then (the one before the wait threw them back)."""
    _background(pane)
    _scroll_to_row(pane, 20)
    _select(pane, 22)
    _record(store, 4)
    pane.refresh()
    # meanwhile, with no event handled (the rows could otherwise come in between)
    pane.table.scrollTo(pane.model.index(60, 0), QTableView.ScrollHint.PositionAtTop)
    assert _top(pane.table) == 60
    chosen = _select(pane, 63)
    qtbot.waitUntil(lambda: pane.model.row_of(chosen) == 67 and not pane.model.loading)
    QApplication.processEvents()
    assert _top(pane.table) == 64 and pane.selected_ids() == [chosen]


def test_a_new_search_then_a_reload_still_starts_at_the_first_result(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    _background(pane)
    _scroll_to_row(pane, 40)
    pane.search_edit.setText("the")
    pane.apply_filter()  # a new search
    _record(store, 2)
    pane.refresh()  # asked before the filter's rows came
    qtbot.waitUntil(lambda: not pane.model.loading)
    QApplication.processEvents()
    assert _top(pane.table) == 0


def test_a_deleted_top_row_hands_the_place_to_the_row_below_it(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    _scroll_to_row(pane, 40)
    gone, below = pane.model.episode_id(40), pane.model.episode_id(41)
    with store.write():
        Episode.delete().where(Episode.id == gone).execute()
    _record(store, 10)
    pane.refresh()
    qtbot.waitUntil(lambda: pane.model.row_of(gone) is None and not pane.model.loading)
    QApplication.processEvents()
    row = pane.model.row_of(below)
    assert row == 50  # ten new above it, one gone
    height = pane.table.verticalHeader().defaultSectionSize()
    assert pane.table.rowViewportPosition(row) == height  # where it stood, one row down


def test_scrolled_by_pixels_the_row_keeps_its_height(
    qtbot, pane: EpisodesPane, store: Store
) -> None:
    table = pane.table
    table.setVerticalScrollMode(QTableView.ScrollMode.ScrollPerPixel)
    height = table.verticalHeader().defaultSectionSize()
    table.verticalScrollBar().setValue(30 * height + height // 2)
    QApplication.processEvents()
    reading = _select(pane, 34)
    y = table.rowViewportPosition(34)
    _arrive(qtbot, pane, store, 6)
    assert table.rowViewportPosition(pane.model.row_of(reading)) == y

"""Nothing jumps, nothing hides: controls whose text changes keep their geometry, the
Time column shows whole times, the Review list's Candidate column stays in view at
1024×700, and a relabel in Episodes moves on to the next episode (as Review does)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QApplication

from curator.gui.episodes.episode_model import COLUMNS
from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.review.review_list import MIN_CANDIDATE_WIDTH, fitted_widths
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from tests.gui.review_runs import TEXTS, stage_texts

TIME = next(i for i, (key, _title) in enumerate(COLUMNS) if key == "time")


def _settle(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.services.ops.pending == 0, timeout=10_000)


def _select_rows(pane: EpisodesPane, rows: list[int]) -> None:
    model = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    model.clearSelection()
    model.setCurrentIndex(pane.model.index(rows[0], 0), QItemSelectionModel.SelectionFlag.NoUpdate)
    for row in rows:
        model.select(pane.model.index(row, 0), flags)


def _time_fits(pane: EpisodesPane) -> bool:
    table = pane.table
    return table.horizontalHeader().sectionSize(TIME) >= table.sizeHintForColumn(TIME)


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_the_time_column_shows_whole_times(qtbot, main_window: MainWindow, size) -> None:
    main_window.resize(*size)
    qtbot.waitUntil(lambda: (main_window.width(), main_window.height()) == size)
    pane = main_window.episodes_pane
    QApplication.processEvents()
    assert pane.model.rowCount() > 0
    assert _time_fits(pane), (pane.table.columnWidth(TIME), pane.table.sizeHintForColumn(TIME))
    # Preview still on screen at 1024 px
    table = pane.table
    preview = pane.model.columnCount() - 1
    assert (
        table.horizontalHeader().sectionViewportPosition(preview) + 100 <= table.viewport().width()
    )


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(width=st.integers(700, 2200))
def test_the_time_column_fits_at_any_width(qtbot, services: AppServices, width: int) -> None:
    pane = _shown_pane(qtbot, services)
    pane.resize(width, 600)
    QApplication.processEvents()
    assert _time_fits(pane)
    pane.close()
    pane.deleteLater()


def _shown_pane(qtbot, services: AppServices) -> EpisodesPane:
    pane = EpisodesPane(services)
    qtbot.addWidget(pane)
    pane.resize(1000, 600)
    pane.show()
    qtbot.waitExposed(pane)
    pane.refresh()  # what the window does when the pane is first shown
    return pane


COUNTS = st.one_of(
    st.just("Searching…"),
    st.builds(
        lambda total, shown, more: f"{total:,} episodes ({shown:,}{'+' if more else ''} shown)",
        st.integers(0, 999_999_999),
        st.integers(0, 999_999_999),
        st.booleans(),
    ),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(COUNTS, min_size=1, max_size=5))
def test_the_search_box_stays_put_while_the_count_changes(
    qtbot, services: AppServices, texts: list[str]
) -> None:
    """A click meant for the search box's clear button lands there, whatever the count
    says by then."""
    pane = _shown_pane(qtbot, services)
    pane.layout().activate()
    before = (pane.search_edit.geometry(), pane.relevance_check.geometry())
    for text in texts:
        pane.count_label.setText(text)
        pane.layout().activate()
        QApplication.processEvents()
        assert (pane.search_edit.geometry(), pane.relevance_check.geometry()) == before
        hint = pane.count_label.fontMetrics().horizontalAdvance(text)
        assert hint <= pane.count_label.contentsRect().width()  # and the count is whole
    pane.close()
    pane.deleteLater()


def test_a_real_search_does_not_move_the_search_box(qtbot, main_window: MainWindow) -> None:
    pane = main_window.episodes_pane
    before = pane.search_edit.geometry()
    for text in ("burnt", "no episode says this", ""):
        pane.search_edit.setText(text)
        pane.apply_filter()
        QApplication.processEvents()
        assert pane.search_edit.geometry() == before


def test_a_relabel_moves_on_to_the_next_episode(qtbot, main_window: MainWindow) -> None:
    pane = main_window.episodes_pane
    pane.table.setFocus()
    _select_rows(pane, [5])
    first = pane.selected_ids()
    following = pane.model.episode_id(6)
    qtbot.keyClick(pane.table, Qt.Key.Key_N)
    _settle(qtbot, main_window)
    assert pane.selected_ids() == [following]
    assert pane.table.currentIndex().row() == 6
    qtbot.keyClick(pane.table, Qt.Key.Key_C)  # and on again
    _settle(qtbot, main_window)
    assert pane.selected_ids() == [pane.model.episode_id(7)]
    # several rows: on to the row after the last of them
    _select_rows(pane, [10, 11, 12])
    qtbot.keyClick(pane.table, Qt.Key.Key_U)
    _settle(qtbot, main_window)
    assert pane.selected_ids() == [pane.model.episode_id(13)]
    # undo goes back to the undone rows
    qtbot.keyClick(pane.table, Qt.Key.Key_Backspace)
    _settle(qtbot, main_window)
    assert pane.selected_ids() == [pane.model.episode_id(r) for r in (10, 11, 12)]
    del first


def test_the_last_row_keeps_its_selection(qtbot, main_window: MainWindow) -> None:
    pane = main_window.episodes_pane
    last = pane.model.rowCount() - 1
    _select_rows(pane, [last])
    ids = pane.selected_ids()
    qtbot.keyClick(pane.table, Qt.Key.Key_N)
    _settle(qtbot, main_window)
    assert pane.selected_ids() == ids


def test_a_label_filter_moves_on_to_the_episode_that_followed(qtbot, main_window) -> None:
    """The relabelled episode leaves the filtered list; the one below it is selected."""
    pane = main_window.episodes_pane
    pane.label_combo.setCurrentIndex(pane.label_combo.findData("unlabelled"))
    qtbot.waitUntil(lambda: pane.model.rowCount() > 3)
    _select_rows(pane, [1])
    following = pane.model.episode_id(2)
    qtbot.keyClick(pane.table, Qt.Key.Key_C)
    _settle(qtbot, main_window)
    qtbot.waitUntil(lambda: pane.selected_ids() == [following], timeout=5000)


@pytest.mark.parametrize("size", [(1024, 700), (1400, 900)])
def test_the_review_candidate_column_stays_in_view(
    qtbot, main_window: MainWindow, tmp_path, size
) -> None:
    """At 1024×700 the content-sized columns left the Candidate column scrolled out of
    view; now they give way (elided, whole in their tooltip) and the text stays."""
    # long candidates, two different sentences each (one sentence twice is junk to the gate)
    longer = tuple(f"{t} {TEXTS[(i + 1) % len(TEXTS)]}" for i, t in enumerate(TEXTS))
    stage_texts(main_window.services, tmp_path, longer)
    pane = main_window.pane("reviewPane")
    main_window.tabs.setCurrentWidget(pane)
    main_window.resize(*size)
    pane.refresh()
    qtbot.waitUntil(lambda: pane.settled, timeout=30_000)
    view = pane.list_view
    model = view.candidates
    assert model.rowCount() == len(TEXTS)
    # the longest texts a decision can show, in the content-sized columns
    rows = [
        replace(
            c,
            proposed_action="UPDATE",
            proposed_target_id=123456,
            action="UPDATE",
            target_id=123456,
            final_text=c.text + " (edited)",
            final_importance=0.75,
        )
        for c in model.rows()
    ]
    model.set_rows(rows)
    QApplication.processEvents()
    _assert_candidate_visible(view)


def _assert_candidate_visible(view) -> None:
    header = view.horizontalHeader()
    last = view.candidates.columnCount() - 1
    left = header.sectionViewportPosition(last)
    assert left >= 0 and left + MIN_CANDIDATE_WIDTH <= view.viewport().width() + 1, (
        left,
        view.viewport().width(),
        [header.sectionSize(c) for c in range(last + 1)],
    )
    assert view.horizontalScrollBar().value() == 0


@settings(max_examples=300, deadline=None)
@given(
    wants=st.lists(st.integers(0, 800), min_size=1, max_size=8),
    budget=st.integers(-100, 2000),
    floor=st.integers(0, 80),
)
def test_fitted_widths_share_the_budget(wants: list[int], budget: int, floor: int) -> None:
    """Columns that fit keep their width; else the widest give way first, none below
    the floor (or its own want), and together they take no more than the budget allows."""
    widths = fitted_widths(wants, budget, floor)
    assert len(widths) == len(wants)
    for want, width in zip(wants, widths, strict=True):
        assert min(want, floor) <= width <= want
    if sum(wants) <= budget:
        assert widths == wants
    else:
        assert sum(widths) <= max(budget, sum(min(w, floor) for w in wants))
        # the narrow ones are untouched while a wider one gives way
        cap = max(widths)
        assert all(width == want for want, width in zip(wants, widths, strict=True) if want < cap)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.integers(0, 40), min_size=1, max_size=4, unique=True),
    key=st.sampled_from([Qt.Key.Key_C, Qt.Key.Key_N, Qt.Key.Key_U]),
)
def test_any_relabel_moves_on_below_its_last_row(
    qtbot, main_window: MainWindow, rows: list[int], key: Qt.Key
) -> None:
    pane = main_window.episodes_pane
    _select_rows(pane, sorted(rows))
    following = pane.model.episode_id(max(rows) + 1)
    qtbot.keyClick(pane.table, key)
    _settle(qtbot, main_window)
    assert pane.selected_ids() == [following]
    assert pane.table.currentIndex().row() == max(rows) + 1


def test_the_fixed_columns_fit_their_content_on_a_wide_window(qtbot, main_window) -> None:
    """At 1400×900 there is room: no fixed column cuts its text ("schedu…")."""
    main_window.resize(1400, 900)
    qtbot.waitUntil(lambda: main_window.width() == 1400)
    pane = main_window.episodes_pane
    QApplication.processEvents()
    table = pane.table
    for column in range(pane.model.columnCount() - 1):
        assert table.columnWidth(column) >= table.sizeHintForColumn(column), COLUMNS[column]


def test_a_column_the_user_sized_keeps_its_width(qtbot, main_window) -> None:
    """Window resizes (the stretching Preview follows them) keep fitting the columns;
    a column the user dragged stops it."""
    pane = main_window.episodes_pane
    header = pane.table.horizontalHeader()
    main_window.resize(1100, 760)
    qtbot.waitUntil(lambda: main_window.width() == 1100)
    assert not pane.table.user_sized
    header.resizeSection(2, 222)  # as a drag does
    main_window.resize(1300, 800)
    qtbot.waitUntil(lambda: main_window.width() == 1300)
    assert pane.table.user_sized and header.sectionSize(2) == 222

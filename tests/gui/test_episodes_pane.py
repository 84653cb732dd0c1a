"""The Episodes pane in the real window: filters, detail panel, relabel keys and undo."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QApplication, QLabel

from curator.gui.episodes.episode_model import ID_ROLE


def _pane(main_window):
    main_window.tabs.setCurrentIndex(0)
    return main_window.episodes_pane


def _settle(qtbot, main_window) -> None:
    """Relabel and undo are background writes: wait until their result is delivered."""
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=10_000)


def _db_labels(store, ids):
    marks = ",".join("?" * len(ids))
    rows = store.execute(
        f"SELECT id, label, label_by, human_label FROM episode WHERE id IN ({marks})", tuple(ids)
    )
    return {r[0]: r[1:] for r in rows}


def _select_rows(pane, rows):
    selection = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    selection.setCurrentIndex(
        pane.model.index(rows[0], 0), QItemSelectionModel.SelectionFlag.NoUpdate
    )
    selection.clearSelection()
    for row in rows:
        selection.select(pane.model.index(row, 0), flags)
    assert len(pane.selected_ids()) == len(rows)


def test_pane_shows_every_episode(main_window, store) -> None:
    pane = _pane(main_window)
    (total,) = store.execute("SELECT count(*) FROM episode")[0]
    assert pane.model.rowCount() == total
    assert pane.count_label.text() == f"{total} episodes ({total} shown)"


def test_relabel_keys_and_backspace_undo(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    pane.table.setFocus()
    pane.table.scrollTo(pane.model.index(40, 0))
    _select_rows(pane, [40, 41, 42])
    ids = pane.selected_ids()
    before = _db_labels(store, ids)
    scroll = pane.table.verticalScrollBar().value()

    qtbot.keyClick(pane.table, Qt.Key.Key_N)
    _settle(qtbot, main_window)
    after = _db_labels(store, ids)
    assert all(after[i] == ("noise", "human", "noise") for i in ids)
    assert pane.selected_ids() == [pane.model.episode_id(43)]  # moved on to the next row
    rows = pane.table.viewport().rect()
    assert rows.contains(pane.table.visualRect(pane.model.index(43, 0)))  # in view
    assert abs(pane.table.verticalScrollBar().value() - scroll) <= 4  # no jump
    assert "noise (human)" in pane.model.data(pane.model.index(40, 2))

    _select_rows(pane, [40, 41, 42])
    qtbot.keyClick(pane.table, Qt.Key.Key_C)
    _settle(qtbot, main_window)
    assert all(v[0] == "constitutional" for v in _db_labels(store, ids).values())

    qtbot.keyClick(pane.table, Qt.Key.Key_Backspace)
    _settle(qtbot, main_window)
    assert all(v[0] == "noise" for v in _db_labels(store, ids).values())
    qtbot.keyClick(pane.table, Qt.Key.Key_Backspace)
    _settle(qtbot, main_window)
    assert _db_labels(store, ids) == before
    assert pane.selected_ids() == ids


def test_undo_relabel_menu_action(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    _select_rows(pane, [0])
    (episode_id,) = pane.selected_ids()
    qtbot.keyClick(pane.table, Qt.Key.Key_U)
    _settle(qtbot, main_window)
    assert _db_labels(store, [episode_id])[episode_id][0] == "uncategorized"
    main_window.undo_action.trigger()
    _settle(qtbot, main_window)
    assert _db_labels(store, [episode_id])[episode_id][2] is None


def test_label_filter_narrows_after_relabel(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    _select_rows(pane, [1, 2])
    qtbot.keyClick(pane.table, Qt.Key.Key_C)
    _settle(qtbot, main_window)
    pane.label_combo.setCurrentIndex(pane.label_combo.findData("constitutional"))
    (expected,) = store.execute("SELECT count(*) FROM episode WHERE label = 'constitutional'")[0]
    assert pane.model.rowCount() == expected >= 2
    pane.label_combo.setCurrentIndex(pane.label_combo.findData("human"))
    assert pane.model.rowCount() == 2
    pane.label_combo.setCurrentIndex(pane.label_combo.findData("all"))
    (total,) = store.execute("SELECT count(*) FROM episode")[0]
    assert pane.count_label.text() == f"{total} episodes ({total} shown)"


def test_source_and_date_filters(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    qtbot.waitUntil(lambda: not pane.facts_loading, timeout=10_000)  # read in the background
    source = pane.source_combo.itemData(1)
    pane.source_combo.setCurrentIndex(1)
    (expected,) = store.execute("SELECT count(*) FROM episode WHERE source = ?", (source,))[0]
    assert pane.model.rowCount() == expected
    shown = {pane.model.data(pane.model.index(r, 1)) for r in range(pane.model.rowCount())}
    assert shown == {source}
    pane.source_combo.setCurrentIndex(0)
    pane.date_check.setChecked(True)
    pane.date_to.setDate(pane.date_from.date())
    day = pane.date_from.date().toString("yyyy-MM-dd")
    (expected,) = store.execute(
        "SELECT count(*) FROM episode WHERE substr(timestamp, 1, 10) = ?", (day,)
    )[0]
    assert pane.model.rowCount() == expected


def test_search_is_debounced(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    total = pane.model.rowCount()
    qtbot.keyClicks(pane.search_edit, "burnt out")
    assert pane.model.rowCount() == total  # not yet: the timer runs
    (expected,) = store.execute("SELECT count(*) FROM episode WHERE text LIKE '%burnt out%'")[0]
    qtbot.waitUntil(lambda: pane.model.rowCount() == expected, timeout=3000)
    assert expected < total


def test_detail_shows_chat_messages_by_speaker(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    (chat_id,) = store.execute("SELECT id FROM episode WHERE messages IS NOT NULL LIMIT 1")[0]
    row = pane.model.row_of(chat_id)
    pane.table.selectRow(row)
    assert pane.model.data(pane.model.index(row, 0), ID_ROLE) == chat_id
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)  # read in the background
    html = pane.detail.toHtml()
    assert "Label in force" in html and "Distilled" in html
    assert "font-weight" in html  # the speakers are bold


def test_search_matches_are_highlighted_in_the_detail(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    pane.search_edit.setText("BURNT out")
    pane.apply_filter()
    assert pane.model.rowCount() > 0
    pane.table.selectRow(0)
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)  # read in the background
    html = pane.detail.toHtml()
    assert "background-color:#ffe066" in html  # Qt keeps the span's style
    (text,) = store.execute("SELECT text FROM episode WHERE id = ?", (pane.selected_ids()[0],))[0]
    assert "burnt out" in text.lower()


def test_best_match_first_orders_by_relevance_until_a_column_is_clicked(
    qtbot, main_window, store
) -> None:
    from curator.store.episode_queries import RELEVANCE, EpisodeFilter, EpisodeSort, query_ids

    pane = _pane(main_window)
    pane.search_edit.setText("the")
    pane.apply_filter()
    pane.relevance_check.setChecked(True)
    ranked = query_ids(store, EpisodeFilter(text="the"), EpisodeSort(RELEVANCE))
    shown = [pane.model.data(pane.model.index(r, 0), ID_ROLE) for r in range(len(ranked))]
    assert shown == ranked and ranked != sorted(ranked) and ranked != sorted(ranked)[::-1]
    pane.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert not pane.relevance_check.isChecked()
    assert pane.model.sort_spec == EpisodeSort("time", False)


def test_a_large_search_shows_its_first_rows_as_such_and_keeps_the_selection(
    qtbot, main_window, store
) -> None:
    """On a large database a new filter/sort shows its first rows before the rest: the
    count says there are more ("3+ shown"), and a selected episode past the first rows is
    selected again when the rest arrives."""
    pane = _pane(main_window)
    pane.model.async_above = 0  # what a database of more than ASYNC_ABOVE episodes does
    pane.model.first_rows = 3
    middle = pane.model.rowCount() // 2
    chosen = pane.model.episode_id(middle)
    _select_rows(pane, [middle])
    labels: list[str] = []
    pane.model.loaded.connect(lambda: labels.append(pane.count_label.text()))
    pane.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # oldest first
    qtbot.waitUntil(lambda: not pane.model.loading and len(labels) == 3, timeout=10_000)
    (total,) = store.execute("SELECT count(*) FROM episode")[0]
    every = f"{total} episodes ({total} shown)"
    assert labels == [f"{total} episodes (3+ shown)", every, every]  # first rows, all, counts
    assert pane.model.row_of(chosen) == middle or pane.model.row_of(chosen) > 3
    assert pane.selected_ids() == [chosen]


def test_squeezed_column_titles_end_in_an_ellipsis_with_the_title_as_tooltip(
    qtbot, main_window
) -> None:
    """At 800 pixels the label columns are scaled down for Preview, and their titles were
    clipped at both ends ("abel in forc"): they now elide at the right, and each column's
    whole title is its header's tooltip."""
    pane = _pane(main_window)
    main_window.resize(800, 700)
    QApplication.processEvents()
    header = pane.table.horizontalHeader()
    model = pane.table.model()
    squeezed = 0
    for column in range(header.count()):
        title = model.headerData(column, Qt.Orientation.Horizontal)
        assert (
            model.headerData(column, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
            == title
        )
        squeezed += header.sectionSize(column) < header.fontMetrics().horizontalAdvance(title)
    assert squeezed >= 1  # the case this is about: some title does not fit
    assert header.textElideMode() == Qt.TextElideMode.ElideRight


def test_typed_letters_read_no_rows_and_ctrl_f_goes_to_the_search(qtbot, main_window) -> None:
    """Qt's type-ahead reads every row for a match (at 110,000 episodes, 5 s a key): the
    table has none; the search field, one Ctrl+F away, searches instead."""
    pane = _pane(main_window)
    pane.model.page_size = 20  # many pages even in the demo's 203 episodes
    pane.refresh()  # the reload drops the pages read at the former size
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    pane.table.setFocus()
    _select_rows(pane, [1])
    pane.table.grab()  # the visible rows are read now, not during the keys
    fetched, chosen = pane.model.pages_fetched, pane.selected_ids()

    for key in (Qt.Key.Key_L, Qt.Key.Key_I, Qt.Key.Key_Z, Qt.Key.Key_2):
        qtbot.keyClick(pane.table, key)

    assert pane.model.pages_fetched == fetched
    assert pane.selected_ids() == chosen
    pane.search_edit.setText("old text")
    qtbot.keyClick(pane.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert pane.search_edit.hasFocus()
    assert pane.search_edit.selectedText() == "old text"  # typed over at once
    assert "search" in pane.findChild(QLabel, "keyHint").text()


def _text_of(store, episode_id: int) -> str:
    return str(store.execute("SELECT text FROM episode WHERE id = ?", (episode_id,))[0][0])


def test_down_in_the_search_enters_the_results_at_their_first_row(qtbot, main_window) -> None:
    """Tab walks through six filters between the search and the table; Down goes
    straight to the first result, which the detail panel then shows."""
    pane = _pane(main_window)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    # A current cell and no selection, as a table holds after a restart (the detail
    # still says "select an episode"): Down selects the first result all the same.
    selection = pane.table.selectionModel()
    selection.clearSelection()
    selection.setCurrentIndex(pane.model.index(3, 0), QItemSelectionModel.SelectionFlag.NoUpdate)
    pane.focus_search()
    qtbot.waitUntil(pane.search_edit.hasFocus)

    qtbot.keyClick(pane.search_edit, Qt.Key.Key_Down)

    assert pane.table.hasFocus()
    first = pane.model.episode_id(0)
    assert pane.selected_ids() == [first]
    qtbot.waitUntil(lambda: bool(pane.detail.toPlainText().strip()), timeout=10_000)


def test_down_right_after_typing_enters_the_new_results_not_the_old_ones(
    qtbot, main_window, store
) -> None:
    """On a large database the search runs in the background after a typing pause;
    Down pressed before it ends selects the first row of the text typed once it is
    in, never a row of the list it replaces."""
    pane = _pane(main_window)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    pane.model.async_above = 0  # what a database of more than ASYNC_ABOVE episodes does
    old_first = pane.model.episode_id(0)
    seen: list[list[int]] = []
    pane.table.selectionModel().selectionChanged.connect(
        lambda *_: seen.append(pane.selected_ids())
    )
    pane.table.selectionModel().clearSelection()
    pane.focus_search()
    qtbot.waitUntil(pane.search_edit.hasFocus)
    word = "webhook"
    assert word not in _text_of(store, old_first).casefold()

    qtbot.keyClicks(pane.search_edit, word)
    qtbot.keyClick(pane.search_edit, Qt.Key.Key_Down)  # before the typing pause is over

    assert pane.table.hasFocus()
    qtbot.waitUntil(lambda: not pane.model.loading and bool(pane.selected_ids()), timeout=10_000)
    (chosen,) = pane.selected_ids()
    assert chosen == pane.model.episode_id(0)
    assert word in _text_of(store, chosen).casefold()
    assert all(old_first not in ids for ids in seen)


def test_down_in_the_search_keeps_a_selection_and_shift_down_stays_in_the_field(
    qtbot, main_window
) -> None:
    pane = _pane(main_window)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    _select_rows(pane, [5])
    chosen = pane.selected_ids()
    pane.focus_search()
    qtbot.waitUntil(pane.search_edit.hasFocus)

    qtbot.keyClick(pane.search_edit, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    assert pane.search_edit.hasFocus()  # Shift+Down selects text in the field, as before
    qtbot.keyClick(pane.search_edit, Qt.Key.Key_PageDown)

    assert pane.table.hasFocus()
    assert pane.selected_ids() == chosen

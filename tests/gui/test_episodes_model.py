"""The lazy episode model and its SQL: correctness against the database, laziness, Qt API."""

from __future__ import annotations

from datetime import date

import pytest
from PySide6.QtCore import Qt

from curator.gui.episodes.episode_model import COLUMNS, ID_ROLE, EpisodeTableModel, indexed
from curator.store.episode_queries import (
    EpisodeFilter,
    EpisodeSort,
    escape_like,
    fetch_rows,
    query_ids,
)


def test_model_passes_qtmodeltester(qtmodeltester, store) -> None:
    model = EpisodeTableModel(store, page_size=7, max_pages=3)
    model.set_query()
    assert model.rowCount() > 100
    qtmodeltester.check(model)


def test_model_passes_qtmodeltester_when_filtered_to_nothing(qtmodeltester, store) -> None:
    model = EpisodeTableModel(store)
    model.set_query(EpisodeFilter(text="no episode contains this sentence"))
    assert model.rowCount() == 0
    qtmodeltester.check(model)


def test_rows_are_fetched_lazily_page_by_page(store) -> None:
    model = EpisodeTableModel(store, page_size=50, max_pages=2)
    model.set_query()
    assert model.pages_fetched == 0  # the id query alone
    model.data(model.index(0, 0))
    model.data(model.index(49, 5))
    assert model.pages_fetched == 1
    model.data(model.index(120, 1))
    model.data(model.index(160, 1))
    assert model.pages_fetched == 3  # pages 0, 2, 3; the LRU keeps two of them
    model.data(model.index(0, 0))
    assert model.pages_fetched == 4  # page 0 was evicted and is read again


def test_display_matches_the_database(store) -> None:
    model = EpisodeTableModel(store)
    model.set_query()
    newest = store.execute("SELECT id, source FROM episode ORDER BY timestamp DESC, id DESC")
    assert model.data(model.index(0, 0), ID_ROLE) == newest[0][0]
    assert model.data(model.index(0, 1)) == newest[0][1]
    assert model.headerData(0, Qt.Orientation.Horizontal) == COLUMNS[0][1]


def test_sort_is_done_by_sql(store) -> None:
    model = EpisodeTableModel(store)
    model.set_query()
    model.sort(1, Qt.SortOrder.AscendingOrder)  # source
    sources = [model.data(model.index(r, 1)) for r in range(model.rowCount())]
    assert sources == sorted(sources)
    assert model.sort_spec == EpisodeSort("source", descending=False)


def test_filters_match_python_filtering(store) -> None:
    rows = store.execute("SELECT id, source, text, timestamp FROM episode")
    source = rows[0][1]
    ids = query_ids(store, EpisodeFilter(source=source), EpisodeSort())
    assert sorted(ids) == sorted(r[0] for r in rows if r[1] == source)
    word = "the"
    ids = query_ids(store, EpisodeFilter(text=word), EpisodeSort())
    assert sorted(ids) == sorted(r[0] for r in rows if word.lower() in r[2].lower())
    first = min(r[3] for r in rows)[:10]
    day = date.fromisoformat(first)
    ids = query_ids(store, EpisodeFilter(date_from=day, date_to=day), EpisodeSort())
    assert ids and sorted(ids) == sorted(r[0] for r in rows if r[3][:10] == first)
    assert query_ids(store, EpisodeFilter(label="unlabelled"), EpisodeSort()) != []


@pytest.mark.parametrize("needle", ["%", "_", "100%", "a_b", "\\"])
def test_like_wildcards_match_literally(store, needle: str) -> None:
    with store.write():
        store.db.execute_sql(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
            " classify_truncated) VALUES (?, ?, ?, '', '{}', ?, 0)",
            (
                f"hash-{needle}",
                f"literal {needle} here",
                "2020-01-01T00:00:00.000000+00:00",
                "2020-01-01T00:00:00.000000+00:00",
            ),
        )
    texts = {r[0]: r[1] for r in store.execute("SELECT id, text FROM episode")}
    ids = query_ids(store, EpisodeFilter(text=needle), EpisodeSort())
    assert sorted(ids) == sorted(i for i, t in texts.items() if needle in t)
    assert escape_like("50%_\\") == "50\\%\\_\\\\"


def test_fetch_rows_skips_deleted(store) -> None:
    (first,) = store.execute("SELECT min(id) FROM episode")[0]
    assert set(fetch_rows(store, [first, 10**9])) == {first}


def test_refresh_ids_repaints_only_those_rows(qtbot, store) -> None:
    model = EpisodeTableModel(store, page_size=20)
    model.set_query()
    ids = model.ids
    changed: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda a, b, _roles=None: changed.append((a.row(), b.row())))
    model.refresh_ids([ids[3], ids[4], ids[10]])
    assert changed == [(3, 4), (10, 10)]


def test_refresh_of_more_ids_than_the_cache_holds_looks_only_at_cached_rows(qtbot, store) -> None:
    """Relabelling every row must not cost the GUI thread a loop over every row: rows
    outside the cache are read fresh when painted, so only cached ones are repainted."""
    model = EpisodeTableModel(store, page_size=20, max_pages=2)
    model.set_query()
    ids = model.ids
    assert len(ids) > 3 * 20  # more ids than the cache holds
    model.row_data(25)  # page 1 is cached (what a view scrolled there has painted)
    fetched = model.pages_fetched
    changed: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda a, b, _roles=None: changed.append((a.row(), b.row())))

    model.refresh_ids(ids)

    assert changed == [(20, 39)]
    model.row_data(25)  # the changed page is read again, not served stale
    assert model.pages_fetched == fetched + 1


def test_id_filter_shows_exactly_those_episodes(store) -> None:
    """The hook the Insights pane uses (one confusion-matrix cell); 0 ids shows nothing."""
    every = query_ids(store, EpisodeFilter(), EpisodeSort())
    chosen = tuple(every[::7])
    assert sorted(query_ids(store, EpisodeFilter(ids=chosen), EpisodeSort())) == sorted(chosen)
    assert query_ids(store, EpisodeFilter(ids=()), EpisodeSort()) == []
    # combined with the other filters, as a further restriction
    source = store.execute("SELECT source FROM episode WHERE id = ?", (chosen[0],))[0][0]
    same = set(query_ids(store, EpisodeFilter(source=source), EpisodeSort()))
    both = query_ids(store, EpisodeFilter(source=source, ids=chosen), EpisodeSort())
    assert 0 < len(both) < len(chosen)
    assert set(both) == same & set(chosen)


def _two_step_model(qtbot, services, first_rows: int) -> EpisodeTableModel:
    """A model that loads as on a large database (in the background, in two steps)."""
    model = EpisodeTableModel(services.store, ops=services.ops)
    model.async_above = 0
    model.first_rows = first_rows
    return model


def test_a_large_database_shows_the_first_rows_then_appends_the_rest_in_order(
    qtbot, services, store
) -> None:
    model = _two_step_model(qtbot, services, 5)
    steps: list[tuple[bool, list[int]]] = []
    model.loaded.connect(lambda: steps.append((model.complete, model.ids)))
    model.loaded.connect(lambda: model.data(model.index(0, 0)))  # a page cached in between
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    flt = EpisodeFilter(text="the")
    model.set_query(flt)
    assert model.loading
    qtbot.waitUntil(lambda: not model.loading, timeout=10_000)
    expected = query_ids(store, flt, EpisodeSort())
    assert len(expected) > 5
    assert steps == [(False, expected[:5]), (True, expected), (True, expected)]  # + counts
    assert inserted == [(5, len(expected) - 1)]  # appended: the view keeps its place
    last = len(expected) - 1  # scrolled to the end: every match, in order
    assert [model.data(model.index(r, 0), ID_ROLE) for r in range(last + 1)] == expected
    assert [getattr(model.row_data(r), "id", None) for r in range(last + 1)] == expected
    assert model.total == len(store.execute("SELECT id FROM episode"))


def test_a_search_with_fewer_matches_than_the_first_rows_is_complete_at_once(
    qtbot, services, store
) -> None:
    model = _two_step_model(qtbot, services, 500)
    flt = EpisodeFilter(text="the")
    model.set_query(flt, EpisodeSort("preview", descending=False))  # no index: plain LIMIT
    qtbot.waitUntil(lambda: not model.loading, timeout=10_000)
    assert model.ids == query_ids(store, flt, EpisodeSort("preview", descending=False))
    assert model.complete and 0 < model.rowCount() < 500


def test_a_newer_search_replaces_the_rest_of_an_older_one(qtbot, services, store) -> None:
    model = _two_step_model(qtbot, services, 2)
    newer = EpisodeFilter(text="ing")
    seen: list[tuple[str, bool]] = []

    def on_loaded() -> None:
        seen.append((model.filter.text, model.complete))
        if seen == [("the", False)]:  # the older search's rest is being read now
            model.set_query(newer)

    model.loaded.connect(on_loaded)
    model.set_query(EpisodeFilter(text="the"))
    qtbot.waitUntil(lambda: not model.loading, timeout=10_000)
    qtbot.wait(200)  # the older search's rest, had it been delivered, would show here
    assert seen == [("the", False), ("ing", False), ("ing", True), ("ing", True)]
    assert model.ids == query_ids(store, newer, EpisodeSort()) and model.complete


def test_the_rest_replaces_first_rows_that_are_no_longer_its_beginning(store) -> None:
    """A write between the two reads can change the first rows (a newer episode now comes
    first): then the rest is not appended to them but replaces them, by a reset."""
    model = EpisodeTableModel(store)
    model.set_query()
    every = model.ids
    model._reset_to(indexed(every[1:4]))  # the first rows as read before the write
    resets: list[bool] = []
    model.modelReset.connect(lambda: resets.append(True))
    assert model._extend_to(indexed(every)) is True
    assert resets == [True] and model.ids == every
    assert [getattr(model.row_data(r), "id", None) for r in range(len(every))] == every
    model._reset_to(indexed(every[:3]))  # a reset of its own; then the rest is appended
    assert model._extend_to(indexed(every)) is False and resets == [True, True]
    assert model.ids == every
    assert [model.row_of(i) for i in every] == list(range(len(every)))


def test_a_sort_by_a_column_without_an_index_loads_in_one_step(qtbot, services, store) -> None:
    """Its first rows would cost a read of the whole table too: only the full list."""
    model = _two_step_model(qtbot, services, 5)
    steps: list[tuple[bool, int]] = []
    model.loaded.connect(lambda: steps.append((model.complete, model.rowCount())))
    model.set_query(EpisodeFilter(), EpisodeSort("model_label"))
    qtbot.waitUntil(lambda: not model.loading, timeout=10_000)
    assert steps == [(True, len(query_ids(store, EpisodeFilter(), EpisodeSort())))]


def test_the_row_lookup_of_a_background_load_is_built_off_the_gui_thread(
    qtbot, services, store, monkeypatch
) -> None:
    """At 1,000,000 episodes the id-to-row dict takes 150-210 ms to build: the full list's
    lookup is built by the query's thread, not by the GUI thread when it is applied."""
    import threading

    import curator.gui.episodes.episode_model as episode_model

    built: list[tuple[int, bool]] = []  # (ids, on the GUI thread)
    real = episode_model.indexed

    def recording(ids: list[int]):  # a spy around the real function, not a replacement
        built.append((len(ids), threading.current_thread() is threading.main_thread()))
        return real(ids)

    monkeypatch.setattr(episode_model, "indexed", recording)
    model = _two_step_model(qtbot, services, 5)
    model.set_query()
    qtbot.waitUntil(lambda: model.complete and not model.loading, timeout=10_000)
    every = query_ids(store, EpisodeFilter(), EpisodeSort())
    assert len(every) > 5 and model.ids == every
    assert (len(every), False) in built and (len(every), True) not in built
    assert [model.row_of(i) for i in every] == list(range(len(every)))

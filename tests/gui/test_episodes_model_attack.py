"""The two-step Episodes load under searches typed fast, sort changes, reloads and writes
arriving between its steps: it must always end on exactly the full list, in order."""

from __future__ import annotations

import random

from curator.gui.episodes.episode_model import ID_ROLE, EpisodeTableModel
from curator.gui.runtime.services import AppServices
from curator.store.episode_queries import (
    RELEVANCE,
    SORT_KEYS,
    EpisodeFilter,
    EpisodeSort,
    query_ids,
)

QUERIES = ("", "t", "th", "the", "the ", "ing", "%", "_", "e_", "100%", "é", "zzzz", "x" * 300)


def _write(services: AppServices, k: int) -> None:
    with services.store.write():
        services.store.execute(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
            " imported_at, classify_truncated) VALUES (?, ?, ?, 'attack', '{}', ?, 0)",
            (f"attack{k}", f"the newest thing {k}", f"2099-01-01T00:00:{k % 60:02d}+00:00", "2099"),
        )


def test_random_interleavings_end_on_the_full_list(qtbot, services: AppServices) -> None:
    rng = random.Random(11)
    model = EpisodeTableModel(services.store, ops=services.ops)
    model.async_above = 0
    model.first_rows = 3
    sorts = [EpisodeSort(k, d) for k in (*SORT_KEYS, RELEVANCE) for d in (True, False)]
    writes = 0

    def act() -> None:
        nonlocal writes
        choice = rng.random()
        if choice < 0.45:
            model.set_query(EpisodeFilter(text=rng.choice(QUERIES)), rng.choice(sorts))
        elif choice < 0.6:
            model.set_query(sort=rng.choice(sorts))
        elif choice < 0.75:
            model.reload()
        elif choice < 0.9:
            writes += 1
            _write(services, writes)
        else:
            model.data(model.index(min(model.rowCount() - 1, 2), 0))  # a page cached

    budget = {"n": 0}

    def on_loaded() -> None:
        if budget["n"] < 40 and rng.random() < 0.6:
            budget["n"] += 1
            act()

    model.loaded.connect(on_loaded)
    for _round in range(6):
        for _ in range(rng.randint(1, 4)):  # typed fast: no event loop in between
            act()
        qtbot.waitUntil(lambda: not model.loading and services.ops.pending == 0, timeout=30_000)
        budget["n"] = 0
        if services.ops.pending == 0 and not model.loading:
            model.reload()  # the writes made last are read in
            qtbot.waitUntil(lambda: not model.loading, timeout=30_000)
        expected = query_ids(services.store, model.filter, model.sort_spec)
        assert model.complete
        assert model.ids == expected, (model.filter, model.sort_spec)
        shown = [model.data(model.index(r, 0), ID_ROLE) for r in range(model.rowCount())]
        assert shown == expected

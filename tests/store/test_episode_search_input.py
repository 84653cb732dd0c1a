"""Search text a user can paste but not type: it must not fail or match everything."""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.episode_queries import (
    RELEVANCE,
    EpisodeFilter,
    EpisodeSort,
    query_first_ids,
    query_ids,
)

TEXTS = ("alpha deploy", "beta release", "gamma deploy notes")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    db = Store(tmp_path / "search.sqlite")
    with db.write():
        for k, text in enumerate(TEXTS):
            db.execute(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated) VALUES (?, ?, ?, 's', '{}', ?, 0)",
                (f"h{k}", text, f"2026-01-01T00:00:0{k}.000000+00:00", "2026-01-01"),
            )
    return db


@pytest.mark.parametrize("sort", [EpisodeSort("time"), EpisodeSort(RELEVANCE)])
@pytest.mark.parametrize(("query", "same_as"), [("dep\x00loy", "deploy"), ("\x00et", "et")])
def test_a_nul_in_the_query_is_dropped(
    store: Store, sort: EpisodeSort, query: str, same_as: str
) -> None:
    """SQLite's LIKE stops at a NUL (so "\\0" matched every episode) and FTS5's query
    parser rejects one inside a phrase ("unterminated string")."""
    expected = query_ids(store, EpisodeFilter(text=same_as), sort)
    assert expected
    assert query_ids(store, EpisodeFilter(text=query), sort) == expected
    first = query_first_ids(store, EpisodeFilter(text=query), sort, 1, walk_above=0)
    assert first == expected[:1]

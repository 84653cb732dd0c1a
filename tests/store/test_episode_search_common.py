"""The first page of a search for terms that occur in nearly every episode.

With a small vocabulary every trigram of a query is in nearly every episode: the index
narrows nothing, and asking it for every candidate (to walk the sort index against that
set) costs time in proportion to the whole table. The first page must then come from the
sort index alone, checked with ``LIKE`` (which defines the result anyway), and stay
identical to the ``LIKE`` path's first ids.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.episode_queries import (
    SORT_INDEXES,
    EpisodeFilter,
    EpisodeSort,
    query_first_ids,
    query_ids,
    where_clause,
)

COMMON = [
    "agent", "tool", "memory", "call", "error", "user", "reply", "file", "task",
    "plan", "step", "note", "run", "Check", "done",
]  # fmt: skip
"""Fifteen words: each in nearly every episode of :func:`_fill`."""


def _like_ids(store: Store, flt: EpisodeFilter, sort: EpisodeSort) -> list[int]:
    """The search without the index, in display order: the reference."""
    where, params = where_clause(flt, use_index=False)
    column = {"time": "timestamp", "source": "source"}[sort.key]
    direction = "DESC" if sort.descending else "ASC"
    sql = f"SELECT id FROM episode WHERE {where} ORDER BY {column} {direction}, id {direction}"
    return [int(r[0]) for r in store.execute(sql, tuple(params))]


def _fill(store: Store, rng: random.Random, words: list[str], count: int) -> None:
    """``count`` episodes of 10-60 words of ``words``, with tied timestamps and sources."""
    with store.write():
        for k in range(count):
            text = " ".join(rng.choices(words, k=rng.randint(10, 60)))
            store.execute(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated, label) VALUES (?, ?, ?, ?, '{}', ?, 0, ?)",
                (
                    f"c{k}",
                    text,
                    f"2026-02-{1 + rng.randrange(20):02d}T0{rng.randrange(3)}:00:00.000000+00:00",
                    rng.choice(("dm", "replies", "timeline")),
                    "2026-02-01",
                    rng.choice((None, "noise", "success")),
                ),
            )


def _whole_candidate_sets(statements: list[str]) -> list[str]:
    """The statements (as traced, parameters filled in) that ask the index for every
    candidate, i.e. with no ``LIMIT`` right after the ``MATCH``: their cost grows with the
    table when the terms are common."""
    limited = re.compile(r"episode_fts MATCH '(?:[^']|'')*' LIMIT \d+")
    return [
        s
        for s in statements
        if not s.startswith("--") and "episode_fts MATCH" in s and not limited.search(s)
    ]


@pytest.fixture(scope="module")
def common_store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store(tmp_path_factory.mktemp("common") / "common.sqlite")
    _fill(store, random.Random(23), COMMON, 3_000)
    return store


@pytest.mark.parametrize(
    "query", ["agent", "memory", "error user", "TOOL", "ask pl", "call rep", "heck d"]
)
@pytest.mark.parametrize("sort", [EpisodeSort(k, d) for k in SORT_INDEXES for d in (True, False)])
def test_common_terms_fill_the_first_page_without_every_candidate(
    common_store: Store, query: str, sort: EpisodeSort
) -> None:
    flt = EpisodeFilter(text=query)
    expected = _like_ids(common_store, flt, sort)
    assert len(expected) > 200  # the terms are common indeed
    statements: list[str] = []
    common_store.db.connection().set_trace_callback(statements.append)
    try:
        first = query_first_ids(common_store, flt, sort, 200)
    finally:
        common_store.db.connection().set_trace_callback(None)
    assert first == expected[:200]
    assert _whole_candidate_sets(statements) == [], statements


def test_the_checker_sees_a_whole_candidate_set() -> None:
    walk = (
        "SELECT id FROM episode INDEXED BY episode_timestamp WHERE id IN (SELECT rowid FROM "
        "episode_fts WHERE episode_fts MATCH '\"it''s\"') AND text LIKE '%it''s%' ESCAPE '\\' "
        "ORDER BY timestamp DESC, id DESC LIMIT 200"
    )
    probe = "SELECT rowid FROM episode_fts WHERE episode_fts MATCH '\"it''s\"' LIMIT 2001"
    assert _whole_candidate_sets([walk, probe]) == [walk]


@pytest.mark.parametrize(
    "flt",
    [
        EpisodeFilter(text="agent", label="noise"),
        EpisodeFilter(text="memory", source="dm"),
        EpisodeFilter(text="error user", label="unlabelled", source="replies"),
        EpisodeFilter(text="AGENT"),  # LIKE folds ASCII case: as common as "agent"
        EpisodeFilter(text="agent zebra"),  # every trigram common, the phrase nowhere
        EpisodeFilter(text="ag\u212aent"),  # the index folds the Kelvin sign, LIKE does not
    ],
)
def test_common_terms_with_filters_or_without_matches(
    common_store: Store, flt: EpisodeFilter
) -> None:
    for sort in (EpisodeSort("time"), EpisodeSort("source", False)):
        expected = _like_ids(common_store, flt, sort)
        for limit in (1, 50, 200):
            assert query_first_ids(common_store, flt, sort, limit) == expected[:limit]
            assert query_ids(common_store, flt, sort)[:limit] == expected[:limit]


_WORD = st.text(alphabet="abcdeKk\u212a\u00e9\u00c9_% ", min_size=1, max_size=6)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    words=st.lists(_WORD, min_size=1, max_size=15, unique=True),
    seed=st.integers(0, 2**16),
    count=st.integers(1, 400),
    query=st.one_of(
        st.text(alphabet="abcdeKk\u212a\u00e9\u00c9_% ", min_size=0, max_size=8),
        st.tuples(st.integers(0, 200), st.integers(1, 12), st.booleans()),  # a piece of text
    ),
    limit=st.sampled_from([1, 7, 50, 200]),
    walk=st.sampled_from(
        [(0, 10_000, 5_000), (0, 30, 20), (5, 3, 3), (2_000, 50_000, 5_000), (0, 10_000, 0)]
    ),
    sort=st.sampled_from([EpisodeSort(k, d) for k in SORT_INDEXES for d in (True, False)]),
)
@example(words=["a"], seed=0, count=300, query=(0, 3, True), limit=200, walk=(0, 10_000, 5_000),
         sort=EpisodeSort())  # fmt: skip
@example(words=["ab", "\u00e9"], seed=1, count=300, query="\u00c9", limit=7,
         walk=(0, 30, 20), sort=EpisodeSort("source", False))  # fmt: skip
def test_first_page_matches_like_over_random_vocabularies(
    tmp_path_factory: pytest.TempPathFactory,
    words: list[str],
    seed: int,
    count: int,
    query: str | tuple[int, int, bool],
    limit: int,
    walk: tuple[int, int, int],
    sort: EpisodeSort,
) -> None:
    """Whatever the vocabulary (a handful of words, so everything is common, or many),
    the query and the walks' bounds, the first page is the LIKE path's first ids."""
    if isinstance(query, tuple):  # a piece of what the episodes say, its ASCII case flipped
        start, size, flip = query
        said = " ".join(words * 3)
        query = said[start % len(said) :][:size]
        query = query.swapcase() if flip and query.isascii() else query
    store = Store(tmp_path_factory.mktemp("vocab") / "v.sqlite")
    try:
        _fill(store, random.Random(seed), words, count)
        for flt in (EpisodeFilter(text=query), EpisodeFilter(text=query, label="noise")):
            expected = _like_ids(store, flt, sort)[:limit]
            first = query_first_ids(
                store,
                flt,
                sort,
                limit,
                walk_above=walk[0],
                walk_steps=walk[1],
                dense_steps=walk[2],
            )
            assert first == expected
    finally:
        store.close()

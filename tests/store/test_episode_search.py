"""Episode search through the trigram index returns exactly what LIKE returns."""

from __future__ import annotations

import random
import sqlite3
from datetime import date
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.episode_queries import (
    RELEVANCE,
    SORT_INDEXES,
    SORT_KEYS,
    EpisodeFilter,
    EpisodeSort,
    first_page_is_quicker,
    highlight_spans,
    query_first_ids,
    query_ids,
    where_clause,
)
from curator.store.migrations import LATEST_VERSION, MIGRATIONS
from curator.store.models import LABELS


def _like_ids(store: Store, flt: EpisodeFilter) -> list[int]:
    """Today's search without the index: the reference."""
    where, params = where_clause(flt, use_index=False)
    sql = f"SELECT id FROM episode WHERE {where} ORDER BY timestamp DESC, id DESC"
    return [int(r[0]) for r in store.execute(sql, tuple(params))]


def _uses_index(store: Store, flt: EpisodeFilter) -> bool:
    where, params = where_clause(flt)
    plan = store.execute(f"EXPLAIN QUERY PLAN SELECT id FROM episode WHERE {where}", tuple(params))
    return any("episode_fts" in str(row[-1]) for row in plan)


def _insert(store: Store, texts: list[str]) -> None:
    with store.write():
        for k, text in enumerate(texts):
            store.execute(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated) VALUES (?, ?, ?, 's', '{}', ?, 0)",
                (f"h{k}", text, f"2026-01-01T00:00:{k % 60:02d}.{k:06d}+00:00", "2026-01-01"),
            )


def _flip_ascii_case(rng: random.Random, text: str) -> str:
    return "".join(c.swapcase() if c.isascii() and rng.random() < 0.5 else c for c in text)


def random_queries(rng: random.Random, texts: list[str], n: int, min_size: int = 3) -> list[str]:
    """``n`` pieces of ``texts`` (``min_size`` to 12 characters), half of them with ASCII
    letters' case flipped at random: the queries the search's result sets are compared on."""
    found: list[str] = []
    while len(found) < n:
        text = rng.choice(texts)
        if len(text) < 3:
            continue
        size = rng.randint(min_size, min(12, len(text)))
        start = rng.randrange(len(text) - size + 1)
        piece = text[start : start + size]
        found.append(_flip_ascii_case(rng, piece) if rng.random() < 0.5 else piece)
    return found


def test_same_result_sets_as_like_on_the_demo_data(tmp_path: Path) -> None:
    store = Store(tmp_path / "demo.sqlite")
    create_demo(store)
    texts = [str(r[0]) for r in store.execute("SELECT text FROM episode")]
    rng = random.Random(3)
    queries = [*random_queries(rng, texts, 150), "the", "THE", "api", "zzzq", "ing ", " a "]
    hits = 0
    for query in queries:
        flt = EpisodeFilter(text=query)
        assert _uses_index(store, flt) == (len(query.strip()) >= 3)
        expected = _like_ids(store, flt)
        assert query_ids(store, flt, EpisodeSort()) == expected, query
        assert sorted(query_ids(store, flt, EpisodeSort(RELEVANCE))) == sorted(expected)
        hits += bool(expected)
    assert hits > 100  # the comparison is not vacuous
    store.close()


ALPHABET = (
    "abcXYZ  .,;:!?-'\"()[]{}%_\\/*^$#@~`|<>="  # punctuation and LIKE's wildcards
    "\u00e9\u00c9\u00df\u1e9e\u03a3\u03c3\u03c2\u0130\u0131i\u00c5\u212b"  # case beyond ASCII
    "\u4e2d\u6587\U0001f600\u0301\t\n"
)


def test_same_result_sets_as_like_on_punctuation_unicode_and_wildcards(tmp_path: Path) -> None:
    rng = random.Random(11)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))) for _ in range(400)]
    texts += ["50% off", "50_ off", "500 off", "snake_case", "snakeXcase", "a\\b%c", "ÉCOLE école"]
    store = Store(tmp_path / "gen.sqlite")
    _insert(store, texts)
    queries = random_queries(rng, texts, 300)
    queries += ["50%", "0_ ", "e_c", "\\b%", "%%%", "___", "ÉCO", "éco", "Éco", "ss\u00df"]
    queries += ['"a"', 'a" OR "b', "NEAR(a b)", "abc*", "x:y", "()", "\u03c3\u03c3\u03c3"]
    for query in queries:
        flt = EpisodeFilter(text=query)
        expected = _like_ids(store, flt)
        assert query_ids(store, flt, EpisodeSort()) == expected, repr(query)
        assert sorted(query_ids(store, flt, EpisodeSort(RELEVANCE))) == sorted(expected)
    assert query_ids(store, EpisodeFilter(text="50%"), EpisodeSort()) != []
    assert len(query_ids(store, EpisodeFilter(text="éco"), EpisodeSort())) == 1  # not "É"
    store.close()


def test_short_queries_scan_with_like(tmp_path: Path) -> None:
    store = Store(tmp_path / "short.sqlite")
    _insert(store, ["ab", "xAbx", "a", "ba"])
    flt = EpisodeFilter(text="ab")
    assert not _uses_index(store, flt)
    assert len(query_ids(store, flt, EpisodeSort())) == 2
    assert len(query_ids(store, flt, EpisodeSort(RELEVANCE))) == 2  # falls back to time order
    store.close()


def test_index_follows_inserts_updates_and_deletes(tmp_path: Path) -> None:
    store = Store(tmp_path / "sync.sqlite")
    _insert(store, ["the quick brown fox", "lazy dogs sleep"])
    find = lambda q: query_ids(store, EpisodeFilter(text=q), EpisodeSort())  # noqa: E731
    (fox,) = find("quick")
    with store.write():
        store.execute("UPDATE episode SET text = 'a slow red fox' WHERE id = ?", (fox,))
    assert find("quick") == [] and find("slow red") == [fox]
    with store.write():
        store.execute("DELETE FROM episode WHERE id = ?", (fox,))
    assert find("slow red") == []
    assert store.execute("INSERT INTO episode_fts(episode_fts) VALUES ('integrity-check')") == []
    store.close()


def test_relevance_puts_the_better_match_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "rank.sqlite")
    _insert(store, ["deploy " * 6 + "and more", "one deploy among many other words here today"])
    ranked = query_ids(store, EpisodeFilter(text="deploy"), EpisodeSort(RELEVANCE))
    by_id = sorted(ranked)
    assert ranked == by_id  # the text repeating "deploy" (inserted first) ranks first
    worst_first = query_ids(store, EpisodeFilter(text="deploy"), EpisodeSort(RELEVANCE, False))
    assert worst_first == ranked[::-1]
    store.close()


def test_migration_indexes_the_episodes_of_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for migration in MIGRATIONS[:-1]:
        for statement in migration:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION - 1}")
    conn.execute(
        "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
        " classify_truncated) VALUES ('h1', 'Hello, World', '2026-01-01T00:00:00.000000+00:00',"
        " 's', '{}', '2026-01-01T00:00:00.000000+00:00', 0)"
    )
    conn.commit()
    conn.close()
    store = Store(path)
    assert store.schema_version == LATEST_VERSION
    flt = EpisodeFilter(text="lo, wor")
    assert _uses_index(store, flt) and len(query_ids(store, flt, EpisodeSort())) == 1
    store.close()


@pytest.mark.parametrize(
    ("text", "query", "spans"),
    [
        ("Deploy the API; deploy again", "DEPLOY", [(0, 6), (16, 22)]),
        ("École ecole", "école", []),  # É is not folded (LIKE folds ASCII only)
        ("aaaa", "aa", [(0, 2), (2, 4)]),
        ("50% off", " 50% ", [(0, 3)]),  # the query is stripped, as the search does
        ("anything", "   ", []),
    ],
)
def test_highlight_spans_follow_like(text: str, query: str, spans: list[tuple[int, int]]) -> None:
    assert highlight_spans(text, query) == spans


def _insert_varied(store: Store, rng: random.Random, count: int) -> None:
    """Episodes of a small alphabet (so short queries match many), with repeated
    timestamps, three sources and labels, so ties and every sort index are exercised."""
    words = ["deploy", "Deploy", "café", "50%", "snake_case", "abc", "xyz", "K\u212aq", "é"]
    with store.write():
        for k in range(count):
            text = " ".join(rng.choices(words, k=rng.randint(1, 8)))
            store.execute(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated, label) VALUES (?, ?, ?, ?, '{}', ?, 0, ?)",
                (
                    f"v{k}",
                    text,
                    f"2026-01-{1 + k % 5:02d}T00:00:00.000000+00:00",
                    rng.choice(("dm", "replies", "timeline")),
                    "2026-01-01",
                    rng.choice((None, *LABELS)),
                ),
            )


def test_first_page_is_the_start_of_the_full_list(tmp_path: Path) -> None:
    """Every way of finding the first page (fetch the few candidates; walk the sort index
    past many, fetching index candidates or checking every episode with LIKE) gives
    exactly the first ids of the full list, whatever the filter and sort."""
    rng = random.Random(5)
    store = Store(tmp_path / "first.sqlite")
    _insert_varied(store, rng, 600)
    queries = ["deploy", "DEPLOY", "café", "50%", "e_c", "kkq", "Kkq", "abc xyz", "zzz", "  é  "]
    filters = [
        EpisodeFilter(text=q, label=label, source=source)
        for q in queries
        for label, source in (("all", None), ("noise", None), ("all", "dm"), ("unlabelled", None))
    ]
    filters.append(EpisodeFilter(text="deploy", date_from=date(2026, 1, 2), ids=tuple(range(300))))
    filters.append(
        EpisodeFilter(text="deploy", date_from=date(2026, 1, 2), date_to=date(2026, 1, 3))
    )
    filters.append(EpisodeFilter(text="CAFÉ"))  # the index's candidates, none of them LIKE's
    filters.append(EpisodeFilter(text="de"))  # too short for the index
    sorts = [EpisodeSort(key, desc) for key in SORT_KEYS for desc in (True, False)]
    sorts += [EpisodeSort(RELEVANCE, True), EpisodeSort(RELEVANCE, False)]
    walked = fetched = dense = 0
    bounds = ((0, 10_000, 0), (0, 300, 0), (0, 40, 0), (5, 3, 0), (2_000, 1, 0))
    bounds += ((0, 10_000, 5_000), (0, 300, 20), (5, 3, 3))
    statements: list[str] = []
    store.db.connection().set_trace_callback(
        lambda sql: None if sql.startswith("--") else statements.append(sql)  # not FTS5's own
    )
    for flt in filters:
        for sort in sorts:
            full = query_ids(store, flt, sort)
            for walk_above, walk_steps, dense_steps in bounds:
                limit = rng.choice((1, 7, 50, 200))
                statements.clear()
                first = query_first_ids(
                    store,
                    flt,
                    sort,
                    limit,
                    walk_above=walk_above,
                    walk_steps=walk_steps,
                    dense_steps=dense_steps,
                )
                assert first == full[:limit], (flt, sort, walk_above, walk_steps, limit)
                ran = statements[-1]  # the walk, or the query that decided after all
                walked += "INDEXED BY" in ran and "episode_fts" in ran and len(first) > 0
                dense += "INDEXED BY" in ran and "episode_fts" not in ran and len(first) > 0
                fetched += "id IN (" in ran and "episode_fts" not in ran and len(first) > 0
    store.db.connection().set_trace_callback(None)
    assert walked > 50 and fetched > 100 and dense > 50  # every way compared, with matches
    store.close()


def test_the_first_page_of_many_matches_walks_the_sort_index(tmp_path: Path) -> None:
    """With many candidates the page comes from the sort column's index in order: no
    sort of every match in a temporary B-tree (whose cost grows with the matches)."""
    store = Store(tmp_path / "walk.sqlite")
    _insert_varied(store, random.Random(8), 300)
    statements: list[str] = []
    store.db.connection().set_trace_callback(statements.append)
    for key, index in SORT_INDEXES.items():
        statements.clear()
        flt = EpisodeFilter(text="deploy")
        for dense_steps in (0, 100):  # fetching index candidates; checking every episode
            query_first_ids(
                store,
                flt,
                EpisodeSort(key),
                20,
                walk_above=5,
                walk_steps=100,
                dense_steps=dense_steps,
            )
            (walk,) = [s for s in statements if "INDEXED BY" in s and "LIKE" in s]
            statements.clear()
            assert ("episode_fts" in walk) is (dense_steps == 0)
            plan = " | ".join(str(r[-1]) for r in store.execute(f"EXPLAIN QUERY PLAN {walk}"))
            assert f"USING INDEX {index} (" in plan and "TEMP B-TREE" not in plan, plan
    store.db.connection().set_trace_callback(None)
    store.close()


@pytest.mark.parametrize(
    ("flt", "sort", "quicker"),
    [
        (EpisodeFilter(text="deploy"), EpisodeSort("model_label"), True),  # the index narrows
        (EpisodeFilter(text="de"), EpisodeSort("time"), True),  # walks episode_timestamp
        (EpisodeFilter(), EpisodeSort("label", descending=False), True),
        (EpisodeFilter(), EpisodeSort("source"), True),
        (EpisodeFilter(), EpisodeSort("model_label"), False),  # both read the whole table
        (EpisodeFilter(text="de"), EpisodeSort("preview"), False),
        (EpisodeFilter(label="uncertain"), EpisodeSort("preview"), True),  # its own order
    ],
)
def test_first_page_is_quicker_where_an_index_helps(
    flt: EpisodeFilter, sort: EpisodeSort, quicker: bool
) -> None:
    assert first_page_is_quicker(flt, sort) is quicker

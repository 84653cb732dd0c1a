"""PostgreSQL's plans for the first search page: the trigram index, never a table scan.

The first page asks the index for up to ``WALK_ABOVE + 1`` candidates (the probe,
:func:`curator.store.episode_queries.query_first_ids`). With that LIMIT PostgreSQL's
planner prices a sequential scan that stops early as cheap, and it guesses how many rows
a substring matches from statistics that know nothing of substrings, so on a table of
some size it read the whole table for a rare phrase where SQLite asks its trigram index.
These tests EXPLAIN every statement of the first page on the real test server, in the
session state the application ran it in, on 20,000 short episodes (enough for the
planner to prefer a scan), for rare, common and 3-character queries.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.store.db import Store
from curator.store.episode_queries import (
    RELEVANCE,
    WALK_ABOVE,
    EpisodeFilter,
    EpisodeSort,
    query_first_ids,
    query_ids,
)

WORDS = [
    "deploy",
    "backup",
    "status",
    "update",
    "user",
    "prefers",
    "short",
    "answers",
    "config",
    "production",
    "window",
    "incident",
    "summary",
    "review",
    "team",
    "weekly",
    "report",
    "friday",
    "billing",
    "retry",
    "api",
    "jitter",
    "files",
    "confirm",
    "operator",
    "on-call",
    "engineer",
    "greeting",
    "name",
    "conversation",
]
ROWS = 20_000
RARE_EVERY = 5_000

_BUILD = f"""
INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,
                     classify_truncated)
SELECT 'h' || g,
       (SELECT string_agg(w, ' ') FROM (
            SELECT (ARRAY[{",".join(f"'{w}'" for w in WORDS)}])
                   [1 + ((g * 7 + k * 13 + k * k * g) % {len(WORDS)})] AS w
            FROM generate_series(1, 8) k) t)
       || CASE WHEN g % {RARE_EVERY} = 0 THEN ' production window' ELSE '' END
       || ' n' || g,
       '2026-01-' || lpad((1 + g % 28)::text, 2, '0') || 'T00:00:00.'
       || lpad(g::text, 6, '0') || '+00:00',
       's' || (g % 3), '{{}}', '2026-01-01', 0
FROM generate_series(1, {ROWS}) g
"""


@pytest.fixture(scope="module")
def big_store(pg_server: PostgresServer) -> Iterator[Store]:
    """20,000 short episodes of a 30-word vocabulary, "production window" in 4 of them."""
    name = pg_server.fresh_database()
    store = Store(pg_server.url(name))
    with store.write():
        store.execute(_BUILD)
    store.execute("ANALYZE episode")
    yield store
    store.close()
    pg_server.drop(name)


def _seq_scans(node: dict[str, Any]) -> Iterator[str]:
    if node.get("Node Type") == "Seq Scan":
        yield str(node.get("Relation Name"))
    for child in node.get("Plans", []):
        yield from _seq_scans(child)


@contextmanager
def explaining(store: Store, plans: list[tuple[str, list[str]]]) -> Iterator[None]:
    """Every SELECT ``store`` runs meanwhile is first EXPLAINed on the same connection,
    inside the same transaction and with the same settings, so the plan is the one the
    statement itself gets: (statement, tables scanned whole)."""
    original = store.db.execute_sql

    def execute_sql(sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        if re.match(r"\s*(SELECT|WITH)\b.*\bFROM episode\b", sql, re.I | re.S):
            found = original(f"EXPLAIN (FORMAT JSON) {sql}", params).fetchone()[0]
            plan = found if isinstance(found, list) else json.loads(found)
            plans.append((sql, list(_seq_scans(plan[0]["Plan"]))))
        return original(sql, params, *args, **kwargs)

    store.db.execute_sql = execute_sql  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store.db.execute_sql


def _probe_plans(store: Store, text: str) -> list[tuple[str, list[str]]]:
    plans: list[tuple[str, list[str]]] = []
    with explaining(store, plans):
        query_first_ids(store, EpisodeFilter(text=text), EpisodeSort())
    probes = [p for p in plans if p[0].rstrip().endswith(f"LIMIT {WALK_ABOVE + 1}")]
    assert len(probes) == 1, plans
    return probes


@pytest.mark.parametrize("text", ["production window", "status", "tus"])
def test_the_probe_reads_the_trigram_index_for_rare_and_common_queries(
    big_store: Store, text: str
) -> None:
    [(sql, scanned)] = _probe_plans(big_store, text)
    assert "episode" not in scanned, f"Seq Scan on episode: {sql}"


@pytest.mark.parametrize("text", ["production window", "zq0042", "status", "tus"])
@pytest.mark.parametrize(
    "sort",
    [EpisodeSort(), EpisodeSort("source", False), EpisodeSort("preview"), EpisodeSort(RELEVANCE)],
)
def test_no_statement_of_a_search_scans_the_episodes(
    big_store: Store, text: str, sort: EpisodeSort
) -> None:
    """The first page (its probe, its walk along the sort column's index, its fetch of
    known candidates) and the full list, in every order: the same class as the probe,
    where SQLite asks its trigram or sort index and PostgreSQL's planner read the table
    (the full list of a rare phrase; the bound of a walk by source)."""
    plans: list[tuple[str, list[str]]] = []
    with explaining(big_store, plans):
        query_first_ids(big_store, EpisodeFilter(text=text), sort)
        query_ids(big_store, EpisodeFilter(text=text), sort)
    assert plans
    scanned = [sql for sql, tables in plans if "episode" in tables]
    assert not scanned, scanned


def test_the_forced_index_stays_with_the_probe(big_store: Store) -> None:
    """The setting that prices scans out is the probe's alone: a statement after it in
    the same read (a snapshot of several queries) is planned as usual, and the first
    page finds the same episodes as the full list."""
    flt = EpisodeFilter(text="production window")
    with big_store.read():
        first = query_first_ids(big_store, flt, EpisodeSort())
        after = big_store.execute("SELECT current_setting('enable_seqscan')")[0][0]
    assert after == "on"
    assert first == query_ids(big_store, flt, EpisodeSort())[: len(first)]
    assert len(first) == ROWS // RARE_EVERY


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet="abcdeé%_\\' -ntusPROD", min_size=3, max_size=12))
@example(text="a b")
@example(text="%%%")
@example(text="___")
@example(text="zq0042")
def test_no_query_of_three_or_more_characters_scans_the_episodes(
    big_store: Store, text: str
) -> None:
    if len(text.strip()) < 3:
        text = text.strip() + "abc"
    [(sql, scanned)] = _probe_plans(big_store, text)
    assert "episode" not in scanned, f"Seq Scan on episode for {text!r}: {sql}"

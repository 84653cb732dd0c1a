"""Episode text search at scale, as the Episodes pane runs it, against the LIKE scan.

Usage: ``python benchmarks/bench_search.py [--episodes N] [--repeat R] [--like-repeat L]
[--keep PATH]``

Builds a throw-away database of N synthetic episodes (default 300,000; written with SQL
at the schema *before* the search index, then upgraded, so the migration's rebuild of
an existing database is timed too), then times each query the ways the pane and its
predecessors ran it, alternately, each on its own connection in its own thread as a
``StoreOps.query`` runs it:

- ``LIKE scan``: the former search (``where_clause(use_index=False)``), every id;
- ``all ids``: the indexed search, every id in display order (``query_ids``; what the
  pane waited for before it showed anything, now its second step);
- ``first page``: the pane's first step, the first 200 ids in display order
  (``query_first_ids``); the count it shows then is exact when fewer than 200 matched,
  otherwise "200+" until the next step brings every id.

Every query's lists must agree: all ids identical to the LIKE scan's, the first page
identical to their first 200. Goal: <= 30 ms per query (median) until the pane shows
the first page, at 1,000,000 episodes (``--episodes 1000000 --like-repeat 1 --keep
PATH``: building that database takes several minutes, and each LIKE scan seconds, so
the scan runs once per query there).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.store.db import Store
from curator.store.episode_queries import (
    FIRST_PAGE,
    EpisodeFilter,
    EpisodeSort,
    count_episodes,
    count_pending,
    query_first_ids,
    query_ids,
    where_clause,
)
from curator.store.migrations import MIGRATIONS

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ren",
    "tas",
    "vu",
    "del",
    "ox",
    "pri",
    "sen",
    "ta",
    "gor",
    "in",
    "el",
]
SPECIAL = [
    "deploy", "rollback", "Kubernetes", "PostgreSQL", "invoice", "refund", "onboarding",
    "Grafana", "webhook", "\u00e9t\u00e9", "caf\u00e9", "na\u00efve", "50%", "snake_case",
    "user_id", "#incident", "@maria", "e-mail", "can't", "timeout", "retry", "water",
]  # fmt: skip
"""Terms a person searches for, each in a few percent of the episodes at most."""


def vocabulary(rng: random.Random, size: int = 8000) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf frequencies (a few very common, a long tail of rare ones)."""
    words = sorted({"".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(size)})
    rng.shuffle(words)
    words = SPECIAL + words
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    for k in range(len(SPECIAL)):  # far rarer than their Zipf rank
        weights[k] = weights[min(len(words) - 1, 300 + 100 * k)]
    total = 0.0
    cumulative = []
    for weight in weights:
        total += weight
        cumulative.append(total)
    return words, cumulative


QUERIES = (
    "deploy",
    "rollback",
    "kubernetes",
    "PostgreSQL",
    "caf\u00e9",
    "50%",
    "user_id",
    "@maria",
    "timeout retry",
    "zebra crossing",  # no match
    "incident",
    "can't",
    "water",
    "e-mail",
    "snake_case",
    "CAF\u00c9",  # the index folds É to é, LIKE does not: 10,000 candidates, no match
)


def build(path: Path, count: int, seed: int = 7) -> tuple[float, float]:
    """Episodes at the schema version before the index, then the upgrade: (fill s, migrate s)."""
    conn = sqlite3.connect(path)
    # Up to the migration that creates the index (later ones were appended after it):
    # filling through its triggers would hide the rebuild an existing database gets.
    before = next(k for k, m in enumerate(MIGRATIONS) if any("episode_fts" in s for s in m))
    for migration in MIGRATIONS[:before]:
        for statement in migration:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {before}")
    rng = random.Random(seed)
    words, cumulative = vocabulary(rng)
    started = time.perf_counter()
    batch = []
    for i in range(count):
        text = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(20, 120)))
        stamp = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00.{i % 1000000:06d}+00:00"
        batch.append((f"h{i}", text, stamp, ("dm", "replies", "timeline")[i % 3], stamp))
        if len(batch) == 50_000:
            conn.executemany(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated) VALUES (?, ?, ?, ?, '{}', ?, 0)",
                batch,
            )
            batch.clear()
    if batch:
        conn.executemany(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
            " imported_at, classify_truncated) VALUES (?, ?, ?, ?, '{}', ?, 0)",
            batch,
        )
    conn.commit()
    conn.close()
    filled = time.perf_counter() - started
    started = time.perf_counter()
    Store(path).close()  # runs the pending migration: the index is built here
    return filled, time.perf_counter() - started


def like_ids(store: Store, flt: EpisodeFilter) -> list[int]:
    where, params = where_clause(flt, use_index=False)
    sql = f"SELECT id FROM episode WHERE {where} ORDER BY timestamp DESC, id DESC"
    return [int(r[0]) for r in store.execute(sql, tuple(params))]


def timed_in_thread(store: Store, fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """``fn(store, *args)`` on a new thread with its own connection, closed after, as a
    ``StoreOps.query`` runs it: (ms, result)."""
    out: dict[str, Any] = {}

    def run() -> None:
        start = time.perf_counter()
        try:
            out["result"] = fn(store, *args)
        finally:
            out["ms"] = (time.perf_counter() - start) * 1000
            store.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "result" not in out:
        raise RuntimeError("the query failed")
    return out["ms"], out["result"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--like-repeat", type=int, default=None, help="LIKE scans per query (default: --repeat)"
    )
    parser.add_argument("--keep", type=Path, default=None, help="reuse/keep this database")
    args = parser.parse_args(argv)
    like_repeat = args.repeat if args.like_repeat is None else args.like_repeat
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "search.sqlite"
        filled = migrated = float("nan")
        if not path.exists():
            filled, migrated = build(path, args.episodes)
        size_mb = path.stat().st_size / 1e6
        store = Store(path)
        count = count_episodes(store)
        counts_ms, _ = timed_in_thread(store, lambda s: (count_episodes(s), count_pending(s)))
        ways: dict[str, Callable[[Store, EpisodeFilter], list[int]]] = {
            "like": like_ids,
            "all": lambda s, flt: query_ids(s, flt, EpisodeSort()),
            "first": lambda s, flt: query_first_ids(s, flt, EpisodeSort()),
        }
        best: dict[str, list[float]] = {name: [] for name in ways}
        rows = []
        for query in QUERIES:
            flt = EpisodeFilter(text=query)
            timings: dict[str, list[float]] = {name: [] for name in ways}
            results: dict[str, list[int]] = {}
            for attempt in range(args.repeat):  # alternate the ways: noise hits all alike
                for name, way in ways.items():
                    if name == "like" and attempt >= like_repeat:
                        continue
                    ms, results[name] = timed_in_thread(store, way, flt)
                    timings[name].append(ms)
            if results["like"] != results["all"] or results["first"] != results["all"][:FIRST_PAGE]:
                print(f"MISMATCH for {query!r}", file=sys.stderr)
                return 1
            like, full, first = (min(timings[name]) for name in ways)
            for name, ms in zip(ways, (like, full, first), strict=True):
                best[name].append(ms)
            rows.append(
                f"| `{query}` | {len(results['all']):,} | {like:.0f} | {full:.1f} "
                f"| {first:.1f} | {like / first:.0f}x |"
            )
        store.close()
    like_ms, all_ms, first_ms = (statistics.median(best[name]) for name in ways)
    print(
        f"{count:,} synthetic episodes, {size_mb:,.0f} MB with the index; filled in "
        f"{filled:.0f} s, migration (index rebuild) {migrated:.0f} s; SQLite "
        f"{sqlite3.sqlite_version}, Python {platform.python_version()}, {os.cpu_count()} "
        f"CPUs, load average {load_before:.2f} at the start and {os.getloadavg()[0]:.2f} at "
        f"the end; best of {args.repeat} (LIKE: {like_repeat}), each on a fresh connection"
    )
    print("| query | matches | LIKE scan ms | all ids ms | first page ms | LIKE / first page |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(
        f"\n- median per query: LIKE scan {like_ms:.0f} ms, all ids {all_ms:.1f} ms "
        f"({like_ms / all_ms:.0f}x), first page {first_ms:.1f} ms ({like_ms / first_ms:.0f}x); "
        f"goal <= 30 ms to the first page: {'yes' if first_ms <= 30 else 'NO'}"
    )
    print(
        f"- then the pane reads the episode and pending counts: {counts_ms:.0f} ms "
        "(whatever the query; after the ids)"
    )
    print("- every query: all ids identical to the LIKE scan's, first page = their first 200")
    return 0


if __name__ == "__main__":
    sys.exit(main())

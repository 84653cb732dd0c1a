"""The same work on SQLite and on PostgreSQL in one run, and the ratios PostgreSQL/SQLite.

Usage: ``python benchmarks/bench_engines.py [--episodes N | --small] [--changes C]``

For each engine, on a fresh database (a SQLite file in a temporary folder; a database on
a throwaway PostgreSQL server started on loopback, as the tests do, tests/pg_server.py):

- ``import``: N synthetic episodes (default 300,000; ``--small``: 20,000) from one JSONL
  file through :func:`curator.store.importer.import_file`, as ``curator import`` runs it;
- ``first search page``: the Episodes pane's first step (``query_first_ids``) for a few
  queries, common and rare terms, median;
- ``commit`` / ``undo``: a staged run of 200 reviewed candidates (60 % ADD, 30 % UPDATE,
  10 % SKIP, two source episodes each) committed, then undone;
- ``background job``: a read on a thread of its own that ends by handing its connection
  back (:meth:`curator.store.db.Store.hand_back`), as each of the window's page reads and
  searches runs (:mod:`curator.gui.runtime.operations`), median of 50; on PostgreSQL also
  with the connection closed instead, a new one a job, as before connections were kept;
- ``change seen``: C (default 200) one-episode commits by a second connection, each
  timed from just before its COMMIT until the first connection's watcher
  (:meth:`curator.store.db.Store.changes`, what the window listens on) reports it: p50
  and p95. SQLite's watcher polls ``data_version``; PostgreSQL's is a NOTIFY round trip.

Then every statement the search, commit and undo ran on PostgreSQL is EXPLAINed there, and
the same steps' statements on SQLite with EXPLAIN QUERY PLAN: a table PostgreSQL scans
whole where SQLite searched it by an index is reported as a FULL SCAN line (the run's
verdict is the last line). Tables of a few hundred rows are scanned whole by PostgreSQL's
planner by choice (cheaper than an index there); they are listed apart, not as failures.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench_commit import stage_candidates  # noqa: E402
from pg_server import running_server  # noqa: E402

from curator.core.scoring import rank_key  # noqa: E402
from curator.pipeline.commit import commit_run, undo_changeset  # noqa: E402
from curator.store.db import Store  # noqa: E402
from curator.store.episode_queries import EpisodeFilter, EpisodeSort, query_first_ids  # noqa: E402
from curator.store.importer import import_file  # noqa: E402
from curator.store.models import (  # noqa: E402
    ALL_MODELS,
    Episode,
    Pattern,
    utcnow,
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
RARE = [f"zq{n:04d}" for n in range(3000)]
QUERIES = ("status", "production window", "zq0042", "zq2999 report", "on-call engineer")
CANDIDATES = 200
PATTERNS = 100
SMALL_TABLE = 10_000
"""Below this many rows a whole-table scan is the planner's cheap choice, not a defect."""


def write_episodes(path: Path, count: int, seed: int = 5) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            words = rng.choices(WORDS, k=rng.randint(20, 60)) + rng.choices(RARE, k=3)
            rng.shuffle(words)
            day = 1 + n % 28
            record = {
                "id": f"bench-{n}",
                "text": f"user: {' '.join(words)}\nagent: noted {n}",
                "timestamp": f"2026-0{1 + n % 9}-{day:02d}T{n % 24:02d}:00:00Z",
                "source": "chat" if n % 3 else "tool",
            }
            out.write(json.dumps(record) + "\n")


def use(store: Store) -> Store:
    """The models follow ``store`` (two stores are open at a time here)."""
    store.db.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
    return store


def stage(store: Store, seed: int = 11) -> int:
    """Patterns to update, and one staged run of reviewed candidates, as review leaves it."""
    rng = random.Random(seed)
    now = utcnow()
    with store.write():
        patterns = [
            Pattern.create(
                text=f"Pattern {n}: " + " ".join(rng.choices(WORDS, k=10)),
                importance=0.5,
                distilled_at=now,
                rank_key=rank_key(0.5, now),
                category="uncategorized",
            ).id
            for n in range(PATTERNS)
        ]
        targets = iter(rng.sample(patterns, len(patterns)))
        sources = iter(range(1, 2 * CANDIDATES + 1))
        return stage_candidates(rng, CANDIDATES, targets, sources, WORDS)


@contextmanager
def recording(store: Store, into: list[tuple[str, tuple[Any, ...]]]) -> Iterator[None]:
    """Every statement ``store`` runs meanwhile, with its parameters (for EXPLAIN)."""
    original = store.db.execute_sql

    def execute_sql(sql: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        into.append((sql, tuple(params or ())))
        return original(sql, params, *args, **kwargs)

    store.db.execute_sql = execute_sql  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store.db.execute_sql


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def background_jobs(store: Store, hand_back: bool, jobs: int = 50) -> float:
    """The median time of a one-page read run on a thread of its own, as the window runs
    each (the thread's connection handed back, or closed, as it ends)."""
    store.close()  # the opening thread's own: every job connects on its own thread
    times: list[float] = []

    def job() -> None:
        started = time.perf_counter()
        try:
            store.execute("SELECT id FROM episode ORDER BY id LIMIT 100")
        finally:
            store.hand_back() if hand_back else store.close()
        times.append(time.perf_counter() - started)

    for _ in range(jobs):
        thread = threading.Thread(target=job)
        thread.start()
        thread.join()
    return statistics.median(times)


def change_latency(location: str, changes: int) -> list[float]:
    """Seconds from just before a second connection's COMMIT to the watcher's report."""
    watching = use(Store(location))
    writer = use(Store(location))
    seen: list[float] = []
    started: list[float] = []
    ready = threading.Event()
    heard = threading.Event()

    def listen() -> None:
        with watching.changes() as watcher:
            watcher.wait(0.0)
            ready.set()
            while len(seen) < changes:
                if watcher.wait(0.5) is not None and len(seen) < len(started):
                    seen.append(time.perf_counter() - started[len(seen)])
                    heard.set()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        for n in range(changes):
            heard.clear()
            with writer.write():
                Episode.create(content_hash=f"latency-{n}", text=f"change {n}", timestamp=utcnow())
                started.append(time.perf_counter())  # COMMIT follows at once
            if not heard.wait(10):
                raise RuntimeError(f"change {n} was not seen within 10 s")
    finally:
        thread.join(timeout=15)
        writer.close()
        watching.close()
    return seen


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


TABLE_NAMES = {m._meta.table_name for m in ALL_MODELS}


def _seq_scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if node.get("Node Type") == "Seq Scan":
        yield node
    for child in node.get("Plans", []):
        yield from _seq_scans(child)


def pg_full_scans(store: Store, statements: list[tuple[str, tuple[Any, ...]]]) -> dict[str, str]:
    """The application tables PostgreSQL's plans scan whole, each with the first
    statement that does (shortened). A read is EXPLAINed with ANALYZE, so a sequential
    scan that a LIMIT stopped after a few rows (a term in most episodes: the cheapest
    plan) is told apart from one that read the table; a write is only EXPLAINed. The
    statements are replayed in order in one snapshot, their settings (``set_config``,
    such as the search probe's, :meth:`curator.store.engine.Dialect.no_table_scan`)
    run again, so each plan is the one its statement got."""
    found: dict[str, str] = {}
    with store.read():
        for sql, params in statements:
            _explain_one(store, sql, params, found)
    return found


def _explain_one(store: Store, sql: str, params: tuple[Any, ...], found: dict[str, str]) -> None:
    """EXPLAIN one recorded statement (see :func:`pg_full_scans`); a setting runs again."""
    if "set_config(" in sql:
        store.db.execute_sql(sql, params)
        return
    if not re.match(r"\s*(SELECT|UPDATE|DELETE|WITH)\b", sql, re.I) or "pg_" in sql:
        return
    reads = re.match(r"\s*SELECT\b", sql, re.I) is not None
    options = "ANALYZE, FORMAT JSON" if reads else "FORMAT JSON"
    plan = store.db.execute_sql(f"EXPLAIN ({options}) {sql}", params).fetchone()[0]
    for scan in _seq_scans(plan[0]["Plan"]):
        table = str(scan.get("Relation Name"))
        if table not in TABLE_NAMES:
            continue
        shown = f"{' '.join(sql.split())[:160]} {params[:3]}"
        if reads:
            read = scan["Actual Rows"] * scan["Actual Loops"]
            read += scan.get("Rows Removed by Filter", 0) * scan["Actual Loops"]
            total = int(store.execute(f'SELECT count(*) FROM "{table}"')[0][0])
            if read < total // 2:
                print(f"  (PostgreSQL stopped its scan of {table} at {read:,} of {total:,} rows)")
                continue
        found.setdefault(table, shown)


def sqlite_full_scans(
    store: Store, statements: list[tuple[str, tuple[Any, ...]]]
) -> dict[str, str]:
    """The application tables SQLite's plans scan whole (no index)."""
    found: dict[str, str] = {}
    for sql, params in statements:
        if not re.match(r"\s*(SELECT|UPDATE|DELETE|WITH)\b", sql, re.I) or "PRAGMA" in sql:
            continue
        for row in store.db.execute_sql(f"EXPLAIN QUERY PLAN {sql}", params).fetchall():
            detail = str(row[-1])
            match = re.match(r"SCAN (?:TABLE )?(\w+)", detail)
            if match and "USING" not in detail and match.group(1) in TABLE_NAMES:
                found.setdefault(match.group(1), " ".join(sql.split())[:160])
    return found


def run_engine(location: str, jsonl: Path, episodes: int, changes: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    store = use(Store(location))
    try:
        results["import"], report = timed(lambda: import_file(store, jsonl))
        assert report.imported == episodes, report
        if not store.dialect.is_file:
            store.execute("ANALYZE")  # as autovacuum would soon after a bulk import
        statements: list[tuple[str, tuple[Any, ...]]] = []
        pages: list[float] = []
        with recording(store, statements):
            for query in QUERIES:
                flt = EpisodeFilter(text=query)
                started = time.perf_counter()
                query_first_ids(store, flt, EpisodeSort())
                pages.append(time.perf_counter() - started)
        results["first search page"] = statistics.median(pages)
        run_id = stage(store)
        with recording(store, statements):
            results["commit"], summary = timed(lambda: commit_run(store, run_id))
            results["undo"], _ = timed(lambda: undo_changeset(store, summary.id))
        results["background job"] = background_jobs(store, hand_back=True)
        if not store.dialect.is_file:
            results["background job, a new connection"] = background_jobs(store, False)
        scans = (sqlite_full_scans if store.dialect.is_file else pg_full_scans)(store, statements)
        sizes = {
            t: (int(store.execute(f'SELECT count(*) FROM "{t}"')[0][0]), sql)
            for t, sql in scans.items()
        }
    finally:
        store.dispose()
    latency = change_latency(location, changes)
    results["change seen p50"] = percentile(latency, 0.50)
    results["change seen p95"] = percentile(latency, 0.95)
    results["scans"] = sizes
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=300_000)
    parser.add_argument("--small", action="store_true", help="20,000 episodes")
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    episodes = 20_000 if args.small else args.episodes
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as folder:
        jsonl = Path(folder) / "episodes.jsonl"
        write_episodes(jsonl, episodes)
        print(f"{episodes:,} episodes, {CANDIDATES} candidates, {args.changes} changes")
        sqlite = run_engine(str(Path(folder) / "bench.sqlite"), jsonl, episodes, args.changes)
        with running_server() as server:
            pg = run_engine(server.url(server.fresh_database()), jsonl, episodes, args.changes)
    print(f"{'step':<20} {'SQLite':>10} {'PostgreSQL':>11} {'PG/SQLite':>10}")
    for step in ("import", "first search page", "commit", "undo"):
        print(
            f"{step:<20} {sqlite[step]:>9.3f}s {pg[step]:>10.3f}s {pg[step] / sqlite[step]:>9.2f}x"
        )
    for step in ("background job", "change seen p50", "change seen p95"):
        a, b = sqlite[step] * 1000, pg[step] * 1000
        print(f"{step:<20} {a:>8.1f}ms {b:>9.1f}ms {b / a:>9.2f}x")
    alone = pg["background job, a new connection"] * 1000
    print(
        f"{'background job, PostgreSQL, a new connection a job':<52} {alone:>7.2f}ms "
        f"({alone / (pg['background job'] * 1000):.1f}x the kept connection's)"
    )
    failures = []
    for table, (rows, sql) in sorted(pg["scans"].items()):
        indexed_on_sqlite = table not in sqlite["scans"]
        if indexed_on_sqlite and rows >= SMALL_TABLE:
            failures.append(table)
            print(f"FULL SCAN on PostgreSQL of {table} ({rows:,} rows), indexed on SQLite: {sql}")
        else:
            why = "scanned on SQLite too" if not indexed_on_sqlite else "small table"
            print(f"whole-table scan on PostgreSQL of {table} ({rows:,} rows): {why}")
    print("no full table scan where SQLite uses an index" if not failures else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

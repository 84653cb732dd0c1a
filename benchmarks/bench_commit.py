"""Commit and undo of one reviewed run: the same cost on a small and a large database.

Usage: ``python benchmarks/bench_commit.py [--small N] [--large N] [--candidates C]
[--repeat R] [--former-repeat F] [--quick] [--no-gui]``

Builds two throw-away databases (default 10,000 and 1,000,000 episodes, filled with bulk
SQL inserts; 2,000 active patterns each), stages one run of C reviewed candidates (default
200: 60 % ADD, 30 % UPDATE, 10 % SKIP, two source episodes each; the source episodes are
the consecutive ones a distill run takes, the oldest undistilled of a label; with
``--scattered`` they are drawn from the whole database instead), then times on each
database, the two alternately (which goes first alternates too, so a change of the shared
machine's load weighs on both sides alike):

- *former commit*: what a commit did before: a full online backup of the database with
  ``integrity_check`` (the former ``backup_database``), then the commit;
- *commit*: :func:`curator.pipeline.commit.commit_run` as it is now (no copy);
- *undo*: :func:`curator.pipeline.commit.undo_changeset` of that commit (it never took
  a copy; timed to show it does not grow with the database either).

Every commit is undone before the next, so each repetition applies the same run to the
same state. Prints the medians and the large/small ratio of each; goal: commit and undo
within 20 % (ratio <= 1.2). Then File > Backup now runs on the large database with the
window's own machinery (offscreen Qt) while a 5 ms timer on the GUI thread records the
longest gap of its event loop (goal: under 100 ms); ``--no-gui`` skips it.

Why consecutive sources by default: a commit marks its source episodes distilled, and
the cost of that is the number of distinct table and index pages it dirties (written to
the WAL, checkpointed). 400 episodes drawn at random from 10,000 share pages (the small
database has only a few hundred), from 1,000,000 they do not: ``--scattered`` measures
that worst case, where the small database is the one that is unusually cheap; the cost
stops growing once no two sources share a page (O(candidates x log(database))).

The search index (FTS5 trigram) of the filler episodes is left empty so a million rows
are written in about a minute: a commit never writes episode text (only ``distilled_at``),
so the index plays no part in its cost; it only makes the *former* commit's copy
smaller than a real database's of that size (the "before" column is an underestimate).
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
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.pipeline.commit import commit_run, undo_changeset
from curator.store.db import Store
from curator.store.models import (
    ALL_MODELS,
    Candidate,
    CandidateEpisode,
    Episode,
    Pattern,
    Run,
    format_utc,
    utcnow,
)

PATTERNS = 2000
WORDS = [
    "deploy", "rollback", "retry", "timeout", "invoice", "refund", "operator", "prefers",
    "short", "status", "updates", "morning", "standup", "billing", "network", "backoff",
    "jitter", "confirmation", "weekly", "report", "friday", "summary", "bullet", "points",
    "incident", "webhook", "onboarding", "customer", "ticket", "escalation",
]  # fmt: skip


def fill(path: Path, episodes: int, seed: int = 7) -> None:
    """The schema by opening a Store, then episodes and patterns by bulk SQL."""
    Store(path).close()
    rng = random.Random(seed)
    filler = " ".join(rng.choice(WORDS) for _ in range(400))
    stamp = format_utc(utcnow())
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous=OFF")
        triggers = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'episode'"
        ).fetchall()
        conn.execute("BEGIN")
        for name, _ in triggers:
            conn.execute(f'DROP TRIGGER "{name}"')
        conn.execute(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
            " classify_truncated, model_label, label, label_by) "
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?) "
            "SELECT printf('bench-%d', i), "
            "printf('episode %d: ', i) || substr(?, 1 + (i * 37) % 1500, 120 + (i * 13) % 240),"
            " ?, 'bench', '{}', ?, 0, 'constitutional', 'constitutional', 'model' FROM seq",
            (episodes, filler, stamp, stamp),
        )
        conn.execute(
            "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status,"
            " revision, created_at, updated_at) "
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?) "
            "SELECT printf('Pattern %d: ', i) || substr(?, 1 + (i * 53) % 1500, 80), "
            "0.5, ?, 0.5, 'uncategorized', 'active', 1, ?, ? FROM seq",
            (PATTERNS, filler, stamp, stamp, stamp),
        )
        for _, sql in triggers:
            conn.execute(sql)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def source_episodes(episodes: int, count: int, scattered: bool, rng: random.Random) -> list[int]:
    """The episodes a run distils: the oldest undistilled ones of a label, in order (as
    :mod:`curator.pipeline.distill` picks them), so consecutive rows; ``scattered``: ids
    drawn from the whole database instead, the worst case (see the module docstring)."""
    if scattered:
        return rng.sample(range(1, episodes + 1), count)
    query = (
        Episode.select(Episode.id)
        .where((Episode.label == "constitutional") & Episode.distilled_at.is_null())
        .order_by(Episode.timestamp, Episode.id)
        .limit(count)
    )
    return [int(e.id) for e in query]


def stage(store: Store, episodes: int, candidates: int, scattered: bool, seed: int = 11) -> int:
    """One staged run of reviewed candidates (ADD / UPDATE / SKIP), as review leaves it."""
    rng = random.Random(seed)
    targets = iter(rng.sample(range(1, PATTERNS + 1), candidates))
    sources = iter(source_episodes(episodes, 2 * candidates, scattered, rng))
    with store.write():
        return stage_candidates(rng, candidates, targets, sources, WORDS)


def stage_candidates(
    rng: random.Random,
    candidates: int,
    targets: Iterator[int],
    sources: Iterator[int],
    words: list[str],
) -> int:
    """Inside a write: a staged run of ``candidates`` reviewed ones, six in ten ADD, three
    UPDATE (of the next of ``targets``), one SKIP, each from two of ``sources``."""
    run = Run.create(kind="distill", status="staged")
    for ordinal in range(candidates):
        share = ordinal % 10
        action = "ADD" if share < 6 else "UPDATE" if share < 9 else "SKIP"
        target = None if action == "ADD" else next(targets)
        candidate = Candidate.create(
            run=run.id,
            ordinal=ordinal,
            text=f"Candidate {ordinal}: " + " ".join(rng.choices(words, k=12)),
            importance=0.6,
            proposed_action=action,
            proposed_target=target,
            target_revision=1 if target else None,
            action=action,
            target=target,
            decided_by="human",
            decided_at=utcnow(),
            state="reviewed",
        )
        for _ in range(2):
            CandidateEpisode.create(candidate=candidate.id, episode=next(sources))
    return int(run.id)


def former_backup(store: Store, folder: Path) -> None:
    """What every commit did first until now: a full online copy, integrity_check, rename."""
    folder.mkdir(exist_ok=True)
    partial = folder / "copy.partial"
    source = sqlite3.connect(store.path)
    try:
        target = sqlite3.connect(partial)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            result = target.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            target.close()
    finally:
        source.close()
    assert result == "ok", result
    partial.replace(folder / "copy.sqlite")


def use(store: Store) -> Store:
    """Bind the models to ``store`` (a Store binds them when opened; two stay open here)."""
    store.db.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
    return store


def commit_and_undo(store: Store, run_id: int, candidates: int, former: bool) -> tuple[float, ...]:
    """(commit seconds, undo seconds), the commit preceded by the former copy if asked."""
    use(store)
    started = time.perf_counter()
    if former:
        former_backup(store, store.path.parent / "former-backups")
    summary = commit_run(store, run_id)
    committed = time.perf_counter() - started
    counts = summary.counts
    assert counts["ADD"] + counts["UPDATE"] + counts["SKIP"] == candidates
    assert not (store.path.parent / "backups").exists()  # the commit copied nothing
    started = time.perf_counter()
    undo_changeset(store, summary.id)
    return committed, time.perf_counter() - started


def measure(
    stores: dict[int, Store], candidates: int, repeat: int, former_repeat: int, scattered: bool
) -> dict[int, dict[str, list[float]]]:
    """Both databases in turn, alternating which goes first, so a change of the machine's
    load (other people's test runs) weighs on both sides alike."""
    runs = {n: stage(use(store), n, candidates, scattered) for n, store in stores.items()}
    times: dict[int, dict[str, list[float]]] = {
        n: {"former commit": [], "commit": [], "undo": []} for n in stores
    }
    sizes = list(stores)
    for r in range(repeat):
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            commit, undo = commit_and_undo(stores[n], runs[n], candidates, former=False)
            times[n]["commit"].append(commit)
            times[n]["undo"].append(undo)
    # Last: each former copy writes the whole database once more, and the writeback of
    # those hundreds of MB would slow the commits measured after it.
    for r in range(former_repeat):
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            former, _ = commit_and_undo(stores[n], runs[n], candidates, former=True)
            times[n]["former commit"].append(former)
    for store in stores.values():
        assert use(store) and Pattern.select().count() == PATTERNS  # every commit undone
    return times


def gui_gaps_during_backup(path: Path) -> tuple[float, float, float]:
    """File > Backup now on ``path`` with the window's machinery (offscreen): the longest
    gap between two 5 ms ticks of the GUI thread's event loop while the backup runs.

    Returns (backup seconds, backup MB, longest gap in ms).
    """
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from curator.gui.runtime.operations import StoreOps
    from curator.gui.window.auto_backup import AutoBackup
    from curator.store.backup import BackupResult

    app = QApplication.instance() or QApplication([])
    store = Store(path)
    try:
        auto = AutoBackup(path, lambda: 0, StoreOps(store))
        gaps: list[float] = []
        last = [time.perf_counter()]

        def beat() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        outcome: list[object] = []

        def done(result: object) -> None:
            outcome.append(result)
            app.quit()

        auto.finished.connect(done)
        auto.ops.failed.connect(lambda _label, error: done(error))
        ticker = QTimer()
        ticker.setInterval(5)
        ticker.timeout.connect(beat)
        ticker.start()
        QTimer.singleShot(0, auto.backup_now)
        app.exec()
        ticker.stop()
        auto.shutdown()
    finally:
        store.close()
    result = outcome[0]
    if not isinstance(result, BackupResult):
        raise SystemExit(f"the backup failed: {result}")
    return result.seconds, result.size / 1e6, max(gaps) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000, help="episodes (default 10,000)")
    parser.add_argument("--large", type=int, default=1_000_000, help="episodes (default 1e6)")
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=9, help="commits and undos per size")
    parser.add_argument(
        "--former-repeat", type=int, default=3, help="commits with the former copy per size"
    )
    parser.add_argument(
        "--quick", action="store_true", help="10,000 vs 100,000 episodes, fewer repetitions"
    )
    parser.add_argument(
        "--scattered",
        action="store_true",
        help="source episodes drawn from the whole database (worst case) instead of the "
        "consecutive ones a run distils",
    )
    parser.add_argument(
        "--no-gui", action="store_true", help="skip the GUI-thread measurement of a backup"
    )
    args = parser.parse_args()
    backup: tuple[float, float, float] | None = None
    if args.quick:
        args.large, args.repeat, args.former_repeat = 100_000, 5, 2
    sizes: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="curator-bench-commit-") as tmp:
        paths: dict[int, Path] = {}
        for episodes in (args.small, args.large):
            folder = Path(tmp) / str(episodes)
            folder.mkdir()
            paths[episodes] = folder / "curator.sqlite"
            started = time.perf_counter()
            fill(paths[episodes], episodes)
            os.sync()  # the fill's writeback must not land in the timed commits
            sizes[episodes] = paths[episodes].stat().st_size
            print(
                f"{episodes:,} episodes: {sizes[episodes] / 1e6:,.0f} MB, "
                f"filled in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
        stores = {n: Store(path) for n, path in paths.items()}
        try:
            results = measure(
                stores, args.candidates, args.repeat, args.former_repeat, args.scattered
            )
        finally:
            for store in stores.values():
                store.close()
        if not args.no_gui:
            backup = gui_gaps_during_backup(paths[args.large])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n{args.candidates} candidates per commit, "
        f"{'scattered' if args.scattered else 'consecutive'} source episodes; "
        f"median of {args.repeat} (former commit: "
        f"{args.former_repeat}), the two sizes alternately; SQLite "
        f"{sqlite3.sqlite_version}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f}"
    )
    small, large = args.small, args.large
    print(f"| operation | {small:,} episodes ms | {large:,} episodes ms | ratio |")
    print("|---|---|---|---|")
    verdict = []
    for name in ("former commit", "commit", "undo"):
        if not results[small][name]:
            continue
        a = statistics.median(results[small][name]) * 1000
        b = statistics.median(results[large][name]) * 1000
        print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
        if name != "former commit":
            verdict.append(f"{name} {b / a:.2f}")
    ok = all(
        statistics.median(results[large][n]) <= 1.2 * statistics.median(results[small][n])
        for n in ("commit", "undo")
    )
    print(f"\n- large/small: {', '.join(verdict)}; goal <= 1.20: {'yes' if ok else 'NO'}")
    if backup is not None:
        seconds, mb, gap = backup
        print(
            f"- Backup now on the {large:,}-episode database: {mb:,.0f} MB copied in steps and "
            f"checked in {seconds:.1f} s on a background thread; longest GUI-thread gap "
            f"{gap:.0f} ms (goal < 100 ms: {'yes' if gap < 100 else 'NO'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

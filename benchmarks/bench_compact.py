"""Disk use of a big database: backups, relabel/undo cycles, ``curator compact``.

Builds a throw-away database of N synthetic episodes (default 100,000; the episode
generator of ``bench_search.py``), then measures:

* one backup (size and seconds), and whether a second one is due with nothing changed;
* the database's size (file and ``-wal``) after each of two cycles of "relabel every
  episode, then undo the relabel" (the growth the issue saw: 443 -> 700 MB);
* ``compact_database`` afterwards: bytes before and after, and seconds.

    python benchmarks/bench_compact.py [--episodes N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build

from curator.pipeline.labels import relabel, undo_last_relabel
from curator.store.backup import backup_due, take_backup
from curator.store.compact import compact_database, database_bytes
from curator.store.db import Store


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "curator.sqlite"
        filled, migrated = build(path, args.episodes)
        print(f"{args.episodes:,} episodes: {mb(database_bytes(path))} ({filled + migrated:.0f} s)")
        started = time.perf_counter()
        backup = take_backup(path)
        print(f"backup: {mb(backup.size)} in {time.perf_counter() - started:.1f} s")
        Store(path).close()  # a session that changes nothing (its close checkpoints)
        print(f"a second backup due with nothing changed: {backup_due(path)}")
        for cycle in (1, 2):
            store = Store(path)
            ids = [row[0] for row in store.execute("SELECT id FROM episode")]
            relabel(store, ids, "noise")
            after_relabel = database_bytes(path)
            undo_last_relabel(store)
            store.close()
            print(
                f"cycle {cycle}: after relabel {mb(after_relabel)}, "
                f"after undo {mb(database_bytes(path))}"
            )
        print(f"a backup due after the cycles: {backup_due(path)}")
        report = compact_database(path)
        print(report.describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

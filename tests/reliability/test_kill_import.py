"""An import killed at a random moment leaves each file's good lines all imported or none.

The process is really killed (SIGKILL: no handler, no rollback code runs). Two files are
imported one after the other, each in its own transaction, so after a kill the database
holds, per file, either every good line of it or nothing of it, and passes SQLite's
``integrity_check``; a kill between the two files leaves the first complete and the
second absent.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import killable
import pytest

from curator.store.db import Store

KILLS = 30
LINES = 6000
BAD_EVERY = 97  # every 97th line is rejected, so "all good lines" is not "all lines"


def _episode_file(path: Path, source: str) -> int:
    """A JSONL file of LINES lines; returns how many of them are good."""
    good = 0
    with path.open("w", encoding="utf-8") as out:
        for i in range(LINES):
            if i % BAD_EVERY == 0:
                out.write(json.dumps({"content": i, "source": source}) + "\n")
                continue
            good += 1
            record = {
                "content": f"{source} episode {i}: the agent answered a question about item {i}.",
                "source": source,
                "timestamp": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z",
            }
            out.write(json.dumps(record) + "\n")
    return good


def _by_source(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return {
            s: int(n)
            for s, n in conn.execute("SELECT source, count(*) FROM episode GROUP BY source")
        }
    finally:
        conn.close()


def _import_in_child(db: Path, files: list[Path], kill_after: float | None) -> tuple[bool, float]:
    """Import in a child killed ``kill_after`` s after it starts (see tests/killable.py)."""
    return killable.run_killed(
        killable.import_episodes, (str(db), list(map(str, files))), kill_after
    )


@pytest.mark.slow
def test_import_killed_at_random_moments_is_all_or_nothing_per_file(tmp_path: Path) -> None:
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    expected = {"first": _episode_file(first, "first"), "second": _episode_file(second, "second")}
    template = tmp_path / "template.sqlite"
    Store(template).close()  # an empty database of the current schema

    probe = tmp_path / "probe.sqlite"
    shutil.copyfile(template, probe)
    _, duration = _import_in_child(probe, [first, second], kill_after=None)
    assert _by_source(probe) == expected

    rng = random.Random(20261201)
    outcomes: dict[str, int] = {}
    for attempt in range(KILLS):
        db = tmp_path / f"kill-{attempt}.sqlite"
        shutil.copyfile(template, db)
        finished, _ = _import_in_child(db, [first, second], rng.uniform(0.0, 1.1 * duration))
        counts = _by_source(db)
        for source, n in counts.items():
            assert n == expected[source], f"kill {attempt}: {source} partly imported ({n})"
        if "second" in counts:
            assert "first" in counts, f"kill {attempt}: the second file came before the first"
        state = "+".join(sorted(counts)) or "none"
        outcomes[state] = outcomes.get(state, 0) + 1
        if finished:
            assert state == "first+second", f"kill {attempt}: DONE printed but {state}"
        db.unlink()
        for leftover in tmp_path.glob(f"kill-{attempt}.sqlite-*"):
            leftover.unlink()
    print(f"import of two files killed {KILLS} times: outcomes {outcomes}")
    # The kills landed during the import, not only before or after it.
    assert outcomes.get("first", 0) >= 1, outcomes
    assert outcomes.get("none", 0) >= 1, outcomes

"""A commit killed at a random moment leaves all of the run's decisions applied or none.

The process is really killed (SIGKILL: no handler, no rollback code runs), so what is
tested is SQLite's atomic commit through the WAL plus the commit running in one
transaction, not any cleanup code of ours.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import killable
import pytest

from curator.pipeline import review
from curator.store.db import Store
from curator.store.models import Candidate
from curator.store.snapshot import logical_dump
from review.conftest import make_pattern, make_staged_run

KILLS = 40
MIN_INSIDE = 10
"""Kills that must land inside the commit (its transaction or the relearning after it)."""
MAX_KILLS = 120
"""The most kills tried to get :data:`MIN_INSIDE` of them inside on a loaded machine."""
CANDIDATES = 2000


@dataclass(frozen=True)
class Template:
    path: Path
    run_id: int
    dump: dict[str, list[dict[str, object]]]
    expected: dict[str, int]


def _counts(path: Path, run_id: int) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        one = lambda sql: int(conn.execute(sql, (run_id,)).fetchone()[0])  # noqa: E731
        return {
            "created": one("SELECT count(*) FROM pattern WHERE created_run_id = ?"),
            "updated": one("SELECT count(*) FROM pattern WHERE updated_run_id = ?"),
            "links": one("SELECT count(*) FROM pattern_episode WHERE run_id = ?"),
            "episodes": one("SELECT count(*) FROM episode WHERE distilled_run_id = ?"),
            "applied": one("SELECT count(*) FROM candidate WHERE run_id = ? AND state = 'applied'"),
            "committed": one("SELECT count(*) FROM run WHERE id = ? AND status = 'committed'"),
            "changesets": one("SELECT count(*) FROM changeset WHERE run_id = ?"),
        }
    finally:
        conn.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A database with a reviewed 2,000-candidate run, built once and copied per kill."""
    folder = tmp_path_factory.mktemp("kill-template")
    path = folder / "template.sqlite"
    store = Store(path)
    with store.write():
        patterns = [
            make_pattern(store, f"Existing pattern {i}: the agent keeps note {i * 7} in mind.")
            for i in range(200)
        ]
    rng = random.Random(7)
    specs: list[dict[str, object]] = []
    for i in range(CANDIDATES):
        kind = i % 20
        if kind == 0:
            specs.append(
                {
                    "text": f"Candidate {i} refines a pattern.",
                    "action": "UPDATE",
                    "target": patterns[i % 200],
                    "importance": 0.9,
                }
            )
        elif kind == 1:
            specs.append(
                {
                    "text": f"Candidate {i} repeats a pattern.",
                    "action": "SKIP",
                    "target": patterns[(3 * i) % 200],
                }
            )
        else:
            specs.append(
                {
                    "text": f"Candidate pattern {i}: remember detail {i} of the work.",
                    "action": "ADD",
                    "importance": rng.random(),
                }
            )
    run = make_staged_run(store, specs)
    review.accept_all(store, run.id)
    rejected = [c.id for c in Candidate.select().where(Candidate.run == run.id)][2::20]
    for cid in rejected:
        review.decide(store, cid, "REJECT")
    dump = logical_dump(store)
    store.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()

    # One full commit on a copy: the counts of "all applied", and how long a commit takes.
    probe = folder / "probe.sqlite"
    shutil.copyfile(path, probe)
    _, seconds = _commit_in_child(probe, run.id, kill_after=None)
    expected = _counts(probe, run.id)
    assert expected["committed"] == 1 and expected["applied"] == CANDIDATES
    return Template(path, run.id, dump, expected | {"seconds_x1000": int(seconds * 1000)})


def _commit_in_child(path: Path, run_id: int, kill_after: float | None) -> tuple[bool, float]:
    """Commit in a child killed ``kill_after`` s after it starts (see tests/killable.py)."""
    return killable.run_killed(killable.commit, (str(path), run_id), kill_after)


@pytest.mark.slow
def test_commit_killed_at_random_moments_is_all_or_nothing(
    template: Template, tmp_path: Path
) -> None:
    duration = template.expected["seconds_x1000"] / 1000
    expected = {k: v for k, v in template.expected.items() if k != "seconds_x1000"}
    rng = random.Random(20240611)
    inside = after = applied = attempts = 0
    # A little past the measured duration too, so some kills land after the commit. The
    # one measured duration says little on a loaded machine (a run saw 5 of 40 kills
    # land inside): each kill that comes after the commit has finished narrows the
    # window, and the kills go on until enough landed inside (or MAX_KILLS).
    window = 1.25 * duration
    while attempts < KILLS or (inside < MIN_INSIDE and attempts < MAX_KILLS):
        attempt, attempts = attempts, attempts + 1
        path = tmp_path / f"kill-{attempt}.sqlite"
        shutil.copyfile(template.path, path)
        finished, _ = _commit_in_child(path, template.run_id, rng.uniform(0.0, window))
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
        counts = _counts(path, template.run_id)
        if counts["committed"]:
            assert counts == expected, f"kill {attempt}: partly applied {counts}"
            applied += 1
        else:
            store = Store(path)
            try:
                assert logical_dump(store) == template.dump, f"kill {attempt}: partly applied"
            finally:
                store.close()
        if finished:
            after += 1
            window *= 0.85
        else:
            inside += 1
        path.unlink()
        for leftover in tmp_path.glob(f"kill-{attempt}.sqlite-*"):
            leftover.unlink()
    print(
        f"kills inside the commit: {inside}, after it had finished: {after}; "
        f"run applied afterwards: {applied}, not applied: {attempts - applied}"
    )
    assert inside >= MIN_INSIDE, f"only {inside} of {attempts} kills landed inside the commit"
    # Some inside its transaction itself, too, not only in the relearning after it.
    undone = attempts - applied
    assert undone >= 5, f"only {undone} of {attempts} kills undid the commit"

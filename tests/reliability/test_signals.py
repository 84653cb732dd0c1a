"""Signals and dead processes never leave a run ``running`` for ever.

Before the fix, SIGTERM or SIGHUP killed ``curator classify/distill`` at once and the run
stayed ``running``; review and commit then refused it, and nothing ever cleaned it up.
Now both cancel the run like Ctrl-C (``cancelled``, exit 143 / 129), and every start marks
a run whose process is gone (``kill -9``) as ``abandoned``, never a live one.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from curator.pipeline.distill_plan import distillable_episode_ids
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.liveness import ABANDON_AFTER, mark_abandoned_runs, this_host
from curator.store.models import DISTILLABLE_LABELS, Run, utcnow
from reliability.harness import Expect, run_case, run_curator

SLOW = [pytest.mark.llm, pytest.mark.slow]


def slow(test: Any) -> Any:
    for mark in SLOW:
        test = mark(test)
    return test


def _start(db: Path, *argv: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.pop("CURATOR_DB", None)
    env.pop("CURATOR_MODEL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "curator", "--db", str(db), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for(proc: subprocess.Popen[str], prefix: str, limit_s: float = 240) -> list[str]:
    """Read stderr until a line starts with ``prefix`` (the run row exists by then)."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith(prefix):
            return seen
    proc.kill()
    proc.communicate(timeout=30)
    raise AssertionError(f"never saw {prefix!r}:\n{''.join(seen)}")


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


def _runs(db: Path) -> list[tuple[int, str, str, Any, Any]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute("SELECT id, kind, status, pid, host FROM run ORDER BY id"))
    finally:
        conn.close()


def _episode_ids(db: Path, run_id: int) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        stats = conn.execute("SELECT stats FROM run WHERE id = ?", (run_id,)).fetchone()[0]
    finally:
        conn.close()
    return [int(e) for e in json.loads(stats).get("episode_ids", [])]


def _distillable(db: Path) -> list[int]:
    """The episodes a distill run may take (labelled for it, neither distilled nor
    claimed), in the order it takes them: label by label, oldest first."""
    store = Store(db)
    try:
        ids = (distillable_episode_ids(store, label) for label in DISTILLABLE_LABELS)
        return [i for some in ids for i in some]
    finally:
        store.close()


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    path = tmp_path / "demo.sqlite"
    store = Store(path)
    try:
        create_demo(store)
    finally:
        store.close()
    return path


@slow
def test_sigterm_during_distill_cancels_and_distill_restarts(
    tmp_path: Path, classified_demo: Any
) -> None:
    db = classified_demo.copy_to(tmp_path)
    pending = _distillable(db)
    assert pending
    # One episode, in both runs: the second takes the one the cancelled run had.
    proc = _start(db, "distill", "--limit", "1", "--json")
    _wait_for(proc, "extract 0/")
    proc.send_signal(signal.SIGTERM)
    code, out, err = _finish(proc)
    assert code == 143, err
    assert "Traceback" not in err and "SIGTERM" in err
    doc = json.loads(out)
    assert doc["status"] == "cancelled"
    first = doc["run_id"]
    assert _runs(db)[-1][:3] == (first, "distill", "cancelled")
    # the episode the cancelled run was distilling is free again, as is every other
    assert _distillable(db) == pending

    again = run_curator(["--db", str(db), "--json", "distill", "--limit", "1"], timeout=600)
    assert again.code == 0, again.stderr
    second = json.loads(again.stdout)
    assert second["status"] == "staged"
    # ... and the second run, given one episode too, takes the one the first was distilling
    assert _episode_ids(db, second["run_id"]) == pending[:1]


STOP_SIGNALS = [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)]


@slow
@pytest.mark.parametrize(("name", "code"), STOP_SIGNALS, ids=[n for n, _ in STOP_SIGNALS])
def test_stop_signal_cancels_and_a_live_run_is_never_marked_abandoned(
    demo_db: Path, name: str, code: int
) -> None:
    proc = _start(demo_db, "classify", "--limit", "60", "--json")
    _wait_for(proc, "classify 1/60")
    # another process starts meanwhile: the live run must stay running
    look = run_curator(["--db", str(demo_db), "--json", "runs"])
    assert look.code == 0, look.stderr
    assert [r["status"] for r in json.loads(look.stdout)["runs"]] == ["running"]
    _, kind, status, pid, host = _runs(demo_db)[0]
    assert (kind, status, pid, host) == ("classify", "running", proc.pid, this_host())
    proc.send_signal(getattr(signal, name))
    got, out, err = _finish(proc)
    assert got == code, err
    assert "Traceback" not in err
    assert json.loads(out)["status"] == "cancelled"
    assert _runs(demo_db)[0][2] == "cancelled"


@slow
def test_kill_9_during_classify_is_marked_abandoned_at_the_next_start(demo_db: Path) -> None:
    proc = _start(demo_db, "classify", "--limit", "60")
    _wait_for(proc, "classify 1/60")
    proc.kill()
    proc.communicate(timeout=30)
    assert _runs(demo_db)[0][2] == "running"  # nobody could finish it

    result = run_case(["--db", str(demo_db), "runs"], Expect(code=0, db=demo_db))
    assert "abandoned" in result.stdout
    run_id, _, status, _, _ = _runs(demo_db)[0]
    assert status == "abandoned"
    conn = sqlite3.connect(demo_db)
    try:
        reason, finished = conn.execute(
            "SELECT status_reason, finished_at FROM run WHERE id = ?", (run_id,)
        ).fetchone()
    finally:
        conn.close()
    assert f"pid {proc.pid}" in reason and finished is not None
    # classified episodes so far keep their labels; the next classify goes on from there
    again = run_curator(["--db", str(demo_db), "--json", "classify", "--limit", "2"])
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "done"


@slow
def test_kill_9_during_distill_abandoned_run_cannot_be_reviewed_or_committed(
    tmp_path: Path, classified_demo: Any
) -> None:
    db = classified_demo.copy_to(tmp_path)
    proc = _start(db, "distill", "--limit", "4")
    _wait_for(proc, "extract 0/")
    proc.kill()
    proc.communicate(timeout=30)
    run_id = _runs(db)[-1][0]
    for argv in (["review", str(run_id), "--accept-all"], ["commit", str(run_id)]):
        run_case(
            ["--db", str(db), *argv],
            Expect(code=2, message=rf"run {run_id} is abandoned, not staged", db=db),
        )
    assert _runs(db)[-1][2] == "abandoned"


# -- the rules, on real rows (no model needed) ------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("host", "pid", "heartbeat_age", "abandoned"),
    [
        ("this", "dead", timedelta(0), True),
        ("this", "self", ABANDON_AFTER * 10, False),  # our own run is never touched
        ("this", "parent", ABANDON_AFTER * 10, False),  # a live process on this host
        ("elsewhere", 12345, ABANDON_AFTER * 2, True),
        ("elsewhere", 12345, ABANDON_AFTER / 2, False),
        (None, None, ABANDON_AFTER * 2, True),  # written by an older version, long ago
        (None, None, timedelta(minutes=1), False),
    ],
)
def test_abandon_rules(
    tmp_path: Path, host: str | None, pid: Any, heartbeat_age: timedelta, abandoned: bool
) -> None:
    pids = {"dead": _dead_pid(), "self": os.getpid(), "parent": os.getppid()}
    store = Store(tmp_path / "r.sqlite")
    try:
        now = utcnow()
        run = Run.create(
            kind="classify",
            status="running",
            # a run never starts before its own process (an older start means a reused pid)
            started_at=now if host == "this" else now - heartbeat_age,
            pid=pids.get(pid, pid),
            host={"this": this_host()}.get(host, host) if host else None,
            heartbeat_at=now - heartbeat_age if host else None,
        )
        done = Run.create(kind="classify", status="done", pid=pids["dead"], host=this_host())
        marked = mark_abandoned_runs(store)
        assert marked == ([run.id] if abandoned else [])
        assert Run.get_by_id(run.id).status == ("abandoned" if abandoned else "running")
        assert Run.get_by_id(done.id).status == "done"
    finally:
        store.close()


def test_heartbeat_is_refreshed_from_the_progress_loop(tmp_path: Path) -> None:
    from curator.pipeline.progress import Progress, TaskState
    from curator.store.liveness import Heartbeat

    store = Store(tmp_path / "h.sqlite")
    try:
        old = utcnow() - timedelta(hours=1)
        run = Run.create(kind="distill", status="running", heartbeat_at=old)
        state = TaskState()
        state.tick = Heartbeat(store, run.id, every=0.0)
        state.report(Progress("extract", 0, 1))
        beat = Run.get_by_id(run.id).heartbeat_at
        assert beat is not None and beat > old
        Run.update(status="cancelled").where(Run.id == run.id).execute()
        state.check()  # a finished run's heartbeat is left alone
        assert Run.get_by_id(run.id).heartbeat_at == beat
    finally:
        store.close()

"""Two programs on one database: readers never block, writers wait, nothing is lost.

The second program is a real second process (as when the window is open and a command runs
in a terminal), each with its own connection, WAL and busy timeout as in production.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from curator.errors import ConflictError
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.models import Episode, LabelEvent, Pattern, Run
from curator.store.snapshot import logical_dump
from review.conftest import (
    REPO_ROOT,
    candidate_ids,
    make_episode,
    make_pattern,
    make_staged_run,
    python_env,
    run_python,
)

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)

WORKER = """
import json, sys, time
from pathlib import Path
from curator.store.db import Store
from curator.pipeline.commit import commit_run
from curator.pipeline.labels import relabel

path, run_id, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
episodes = json.loads(sys.argv[4])
labels = ["constitutional", "noise", "uncategorized"]
store = Store(path)
while not go.exists():
    time.sleep(0.005)
last = {}
changeset = None
for i, episode in enumerate(episodes):
    label = labels[i % 3]
    relabel(store, [episode], label, actor=f"worker-{run_id}")
    last[episode] = label
    if i == len(episodes) // 2:
        changeset = commit_run(store, run_id).id
print(json.dumps({"changeset": changeset, "last": last}))
"""


TAILS = {
    "alpha": "keep this detail of the work in mind.",
    "beta": "deploys wait for a green build on Fridays.",
}
"""Each run's own wording: a run's ADDs must not be near duplicates of the other's, or
the second commit would rightly find them stale (curator.pipeline.stale_adds)."""


def _run(store: Store, prefix: str, patterns: list[int]) -> Run:
    specs: list[dict[str, object]] = [
        {"text": f"{prefix} pattern {i}: {TAILS[prefix]}", "action": "ADD"} for i in range(300)
    ]
    specs += [
        {"text": f"{prefix} refinement {i}", "action": "UPDATE", "target": p, "importance": 0.9}
        for i, p in enumerate(patterns)
    ]
    run = make_staged_run(store, specs)
    review.accept_all(store, run.id)
    return run


@pytest.mark.slow
def test_two_processes_commit_and_relabel_at_once(store: Store, tmp_path: Path) -> None:
    patterns = [
        make_pattern(store, f"Existing pattern {i} about the agent's work.") for i in range(20)
    ]
    run_a = _run(store, "alpha", patterns[:10])
    run_b = _run(store, "beta", patterns[10:])
    # Each process relabels episodes the other run's commit marks distilled.
    sources_a = sorted(
        {e for v in review.list_candidates(store, run_a.id) for e in v.source_episode_ids}
    )
    sources_b = sorted(
        {e for v in review.list_candidates(store, run_b.id) for e in v.source_episode_ids}
    )
    work = {run_a.id: sources_b[:60], run_b.id: sources_a[:60]}
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, store.location, str(run_id), str(go), json.dumps(eps)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=python_env(),
            cwd=REPO_ROOT,
        )
        for run_id, eps in work.items()
    ]
    version = store.data_version()
    time.sleep(0.5)  # let both children open the database and wait for the start signal
    go.touch()
    # Meanwhile this process reads, as the window does: never blocked, never failing.
    reads = 0
    while any(c.poll() is None for c in children):
        review.list_candidates(store, run_a.id)
        review.review_progress(store, run_b.id)
        reads += 1
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0, err
        assert "locked" not in err and "busy" not in err
        results.append(json.loads(out))
    assert reads > 0
    assert store.data_version() != version  # the window learns of the outside changes

    assert Run.get_by_id(run_a.id).status == "committed"
    assert Run.get_by_id(run_b.id).status == "committed"
    assert all(r["changeset"] is not None for r in results)
    for result in results:  # no lost relabel
        for episode, label in result["last"].items():
            row = Episode.get_by_id(int(episode))
            assert (row.label, row.human_label, row.label_by) == (label, label, "human")
    assert LabelEvent.select().count() == 120
    for sources, run in ((sources_a, run_a), (sources_b, run_b)):
        distilled = Episode.select().where(Episode.id.in_(sources))
        assert {e.distilled_run_id for e in distilled} == {run.id}
    for pattern_id in patterns:
        assert Pattern.get_by_id(pattern_id).importance == pytest.approx(0.9)
    assert Pattern.select().count() == 20 + 600
    assert store.integrity_check() == "ok"


EDITOR = """
import sys
from curator.store.db import Store
from curator.store.models import Pattern
store = Store(sys.argv[1])
with store.write():
    Pattern.update(text=Pattern.text + " (edited)", revision=Pattern.revision + 1).where(
        Pattern.id == int(sys.argv[2])
    ).execute()
"""


def test_pattern_edited_by_another_process_is_a_conflict(store: Store) -> None:
    target = make_pattern(store, "Retry network calls to the billing API with backoff.")
    run = make_staged_run(
        store,
        [
            {"text": "A brand new pattern about release notes and changelogs.", "action": "ADD"},
            {"text": "Retry billing API calls with backoff", "action": "UPDATE", "target": target},
        ],
    )
    review.accept_all(store, run.id)
    version = store.data_version()
    done = run_python(EDITOR, store.location, str(target))
    assert done.returncode == 0, done.stderr
    assert store.data_version() != version
    before = logical_dump(store)
    with pytest.raises(ConflictError, match=f"candidate {candidate_ids(run)[1]} "):
        commit.commit_run(store, run.id)
    assert logical_dump(store) == before
    assert Pattern.get_by_id(target).text.endswith("(edited)")


HOLDER = """
import sys
from curator.store.db import Store
from curator.store.models import Setting
store = Store(sys.argv[1])
with store.write():
    Setting.insert(key="held", value=1).on_conflict(
        conflict_target=[Setting.key], preserve=[Setting.value]
    ).execute()
    print("LOCKED", flush=True)
    sys.stdin.readline()
print("RELEASED", flush=True)
"""


def test_readers_do_not_block_and_writers_wait_for_the_lock(store: Store) -> None:
    run = make_staged_run(
        store,
        [{"text": "A brand new pattern about release notes and changelogs.", "action": "ADD"}],
    )
    (cid,) = candidate_ids(run)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store.location],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=python_env(),
        cwd=REPO_ROOT,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        # Another process holds the write lock: reading still works, right away.
        assert review.list_candidates(store, run.id)[0].action is None
        assert review.review_progress(store, run.id).total == 1

        outcome: dict[str, object] = {}

        def write() -> None:
            try:
                outcome["view"] = review.decide(store, cid, "ACCEPT")
            except Exception as exc:
                outcome["error"] = exc
            finally:
                store.close()  # this thread's connection

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(0.5)
        assert writer.is_alive() and not outcome  # waiting for the lock, not failing
        holder.stdin.write("\n")
        holder.stdin.flush()
        writer.join(60)
        assert not writer.is_alive()
        assert "error" not in outcome, outcome.get("error")
        assert review.get_candidate(store, cid).action == "ADD"
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0
    make_episode(store)  # and this connection still writes normally

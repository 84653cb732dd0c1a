"""Several reviewers on one run, on both engines: who decided, and no unseen overwrite.

A decision, a relabel and a commit carry the reviewer's name (``$CURATOR_REVIEWER``, the
profile, the OS user); a reviewer who passes the revision they loaded is refused, in
one sentence and with nothing written, when someone else decided the candidate since.
The two reviewers are two real processes of the command line where it matters (one
Store per process), and a Hypothesis property drives any interleaving of two reviewers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.pipeline import commit, review
from curator.pipeline.fingerprint import DecisionsChangedError, describe_changes
from curator.pipeline.labels import relabel
from curator.pipeline.review_versions import DecisionConflict
from curator.store.db import Store
from curator.store.models import Candidate, Changeset, Episode, Run
from curator.store.profile import (
    MAX_REVIEWER_CHARS,
    os_user,
    profile_path,
    reviewer_name,
    save_reviewer,
    saved_reviewer,
)
from curator.store.snapshot import logical_dump
from review.conftest import cli, make_episode, make_staged_run, python_env

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)


def _run(store: Store, n: int = 3, prefix: str = "Keep") -> Run:
    return make_staged_run(
        store,
        [
            {
                "text": f"{prefix} the operator informed about long job number {i} every hour.",
                "action": "ADD",
            }
            for i in range(n)
        ],
    )


def _ids(run: Run) -> list[int]:
    return [c.id for c in Candidate.select().where(Candidate.run == run.id).order_by(Candidate.id)]


# -- the name -------------------------------------------------------------------------------


def test_the_name_comes_from_the_environment_the_profile_or_the_os(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("CURATOR_REVIEWER", raising=False)
    assert saved_reviewer() is None and reviewer_name() == os_user()
    save_reviewer("  Ana Lima ")
    assert profile_path().is_file() and reviewer_name() == "Ana Lima"
    monkeypatch.setenv("CURATOR_REVIEWER", "bob")
    assert reviewer_name() == "bob"  # the environment wins
    monkeypatch.setenv("CURATOR_REVIEWER", "   ")
    assert reviewer_name() == "Ana Lima"  # blank: not set
    for bad in ("a\x1b[8mb", "x" * (MAX_REVIEWER_CHARS + 1), "two\nlines"):
        monkeypatch.setenv("CURATOR_REVIEWER", bad)
        with pytest.raises(CuratorError, match=r"\$CURATOR_REVIEWER"):
            reviewer_name()
        with pytest.raises(CuratorError):
            save_reviewer(bad)
    assert saved_reviewer() == "Ana Lima"  # refused: nothing saved
    monkeypatch.delenv("CURATOR_REVIEWER")
    save_reviewer(None)
    assert reviewer_name() == os_user()
    profile_path().write_text("{not json", encoding="utf-8")  # a damaged profile
    assert reviewer_name() == os_user()  # never blocks a decision


def test_decisions_relabels_and_commits_carry_the_reviewer(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the command line, as two people at one database would (the API's
    ``reviewer=`` is the same field: the relabel below)."""
    run = _run(store)
    ids = _ids(run)
    db = store.location
    labelled, episode = make_episode(store), make_episode(store)
    relabel(store, [labelled], "noise", reviewer="cy")
    assert Episode.get_by_id(labelled).label_reviewer == "cy"
    monkeypatch.setenv("CURATOR_REVIEWER", "ana")
    code, doc, _ = cli(capsys, "--db", db, "decide", str(run.id), str(ids[0]), "ADD", "--json")
    assert code == 0 and (doc["decided_by"], doc["decided_via"]) == ("ana", "cli")
    monkeypatch.setenv("CURATOR_REVIEWER", "bob")
    code, doc, _ = cli(capsys, "--db", db, "review", str(run.id), "--accept-all", "--json")
    assert code == 0
    by = {c["id"]: (c["decided_by"], c["decided_via"], c["revision"]) for c in doc["candidates"]}
    assert by[ids[0]] == ("ana", "cli", 2)
    assert by[ids[1]] == by[ids[2]] == ("bob", "cli --accept-all", 2)
    code, _, err = cli(capsys, "--db", db, "label", str(episode), "noise", "--no-relearn")
    assert code == 0, err
    row = Episode.get_by_id(episode)
    assert (row.label, row.label_by, row.label_reviewer) == ("noise", "human", "bob")
    code, _, err = cli(capsys, "--db", db, "label", "--undo", "--no-relearn")
    assert code == 0, err
    assert Episode.get_by_id(episode).label_reviewer is None
    monkeypatch.setenv("CURATOR_REVIEWER", "ana")
    code, doc, err = cli(capsys, "--db", db, "commit", str(run.id), "--json")
    assert code == 0 and doc["reviewer"] == "ana", err
    assert Changeset.get_by_id(doc["id"]).reviewer == "ana"
    monkeypatch.setenv("CURATOR_REVIEWER", "bob")
    code, undone, err = cli(capsys, "--db", db, "undo", str(doc["id"]), "--json")
    assert code == 0, err
    assert Changeset.get_by_id(undone["id"]).reviewer == "bob"
    code, text, _ = cli(capsys, "--db", db, "history")
    assert code == 0 and "bob (cli)" in text and "ana (cli)" in text


def test_an_unusable_reviewer_name_decides_nothing(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store, 1)
    before = logical_dump(store)
    monkeypatch.setenv("CURATOR_REVIEWER", "ana\x1b[2K")
    for argv in (
        ("decide", str(run.id), str(_ids(run)[0]), "ADD"),
        ("review", str(run.id), "--accept-all"),
        ("commit", str(run.id), "--reviewed-only"),
    ):
        code, _, err = cli(capsys, "--db", store.location, *argv)
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert err.startswith("curator: error: $CURATOR_REVIEWER contains the control")
    assert logical_dump(store) == before


# -- conflicts ------------------------------------------------------------------------------


def test_a_decision_someone_else_made_since_is_a_conflict_in_one_sentence(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store)
    cid = _ids(run)[0]
    db = store.location
    review.decide(store, cid, "ADD", reviewer="bob", actor="cli")  # revision 1 -> 2
    before = logical_dump(store)
    monkeypatch.setenv("CURATOR_REVIEWER", "ana")
    args = ("--db", db, "decide", str(run.id), str(cid), "REJECT")
    code, out, err = cli(capsys, *args, "--revision", "1")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("curator: error: ")
    assert f"candidate {cid} was decided ADD by bob at " in err
    assert "revision 1, now 2" in err and "Traceback" not in err
    assert logical_dump(store) == before  # refused: nothing written
    code, doc, _ = cli(capsys, *args, "--revision", "2", "--json")
    assert code == 0 and (doc["action"], doc["decided_by"], doc["revision"]) == ("REJECT", "ana", 3)


def test_what_is_not_someone_elses_decision_is_no_conflict(store: Store) -> None:
    run = _run(store)
    a, b = _ids(run)[:2]
    # the reviewer's own later decision (queued keys, a second window of theirs)
    review.decide(store, a, "ADD", reviewer="ana")
    assert review.decide(store, a, "REJECT", reviewer="ana", expect_revision=1).action == "REJECT"
    # a candidate someone decided and undid again: no one's decision is lost
    review.decide(store, b, "ADD", reviewer="bob")
    review.undo_decision(store, b, reviewer="bob", expect_revision=2)
    assert review.decide(store, b, "REJECT", reviewer="ana", expect_revision=1).decided_by == "ana"


def test_an_undo_never_takes_back_a_decision_made_since_by_someone_else(store: Store) -> None:
    run = _run(store)
    cid = _ids(run)[0]
    review.decide(store, cid, "ADD", reviewer="ana")  # ana sees revision 2
    review.decide(store, cid, "REJECT", reviewer="bob", expect_revision=2)
    with pytest.raises(
        DecisionConflict, match=r"was decided REJECT by bob at .*\(revision 2, now 3\)"
    ):
        review.undo_decision(store, cid, reviewer="ana", expect_revision=2)
    row = Candidate.get_by_id(cid)
    assert (row.action, row.decided_by, row.revision) == ("REJECT", "bob", 3)


def test_undo_of_the_last_decision_takes_back_your_own_only(store: Store) -> None:
    """Ctrl+Z in ana's window: bob's newer decision on another candidate is passed over;
    a decision of hers that bob decided over since is a conflict, and nothing is undone."""
    run = _run(store)
    a, b, c = _ids(run)
    review.decide(store, a, "ADD", reviewer="ana")
    review.decide(store, b, "REJECT", reviewer="bob")
    undone = review.undo_last_decision(store, run.id, reviewer="ana")
    assert undone is not None and undone.id == a and undone.action is None
    assert Candidate.get_by_id(b).decided_by == "bob"  # bob's stands
    review.decide(store, c, "ADD", reviewer="ana")
    review.decide(store, c, "REJECT", reviewer="bob", expect_revision=2)
    before = logical_dump(store)
    with pytest.raises(DecisionConflict, match=f"candidate {c} was decided REJECT by bob at "):
        review.undo_last_decision(store, run.id, reviewer="ana")
    assert logical_dump(store) == before
    assert review.undo_last_decision(store, run.id, reviewer="cy") is None  # none of cy's


def test_a_commit_applies_the_previewed_decider_not_a_later_one(store: Store) -> None:
    """The same action decided again by someone else changes the fingerprint: the commit
    would record bob's judgement where the preview showed ana's."""
    run = _run(store, 2)
    ids = _ids(run)
    for cid in ids:
        review.decide(store, cid, "ADD", reviewer="ana")
    preview = commit.preview_commit(store, run.id)
    shown = preview.fingerprint
    review.decide(store, ids[1], "ADD", reviewer="bob", expect_revision=2)
    with pytest.raises(DecisionsChangedError) as refused:
        commit.commit_run(store, run.id, expect=shown)
    # what the window says in its place: the change, named
    changes = describe_changes(preview.decisions, refused.value.preview.decisions)
    assert changes == f"candidate {ids[1]} was decided again by bob"
    assert Run.get_by_id(run.id).status == "staged"
    fresh = commit.preview_commit(store, run.id).fingerprint
    assert fresh != shown
    review.decide(store, ids[1], "ADD", reviewer="ana", expect_revision=3)
    assert commit.preview_commit(store, run.id).fingerprint == shown  # a function of the state


# -- two processes --------------------------------------------------------------------------

REVIEWER = """
import json, sys, time
from pathlib import Path
from curator.cli import main
import contextlib, io

db, run, action, go = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert main(["--db", db, "review", run, "--json"]) == 0
seen = {c["id"]: c["revision"] for c in json.loads(out.getvalue())["candidates"]}
Path(str(go) + "." + action).write_text("loaded")
while not go.exists():
    time.sleep(0.005)
codes = {}
for cid, revision in seen.items():
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes[cid] = main(["--db", db, "decide", run, str(cid), action, "--revision",
                           str(revision)])
print(json.dumps(codes))
"""


def test_two_reviewers_deciding_one_run_from_two_processes(store: Store, tmp_path: Path) -> None:
    """Both load the run, then decide every candidate at once: each candidate ends with
    exactly one of them, and the other was told so (exit 1), never overwritten unseen."""
    run = _run(store, 12)
    ids = _ids(run)
    go = tmp_path / "go"
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-c", REVIEWER, store.location, str(run.id), action, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**python_env(), "CURATOR_REVIEWER": name},
        )
        for name, action in (("ana", "ADD"), ("bob", "REJECT"))
    }
    for action in ("ADD", "REJECT"):
        marker = Path(f"{go}.{action}")
        for _ in range(60_000):
            if marker.exists() or any(p.poll() is not None for p in procs.values()):
                break
            subprocess.run(["sleep", "0.01"], check=False)
    go.write_text("go")
    codes: dict[str, dict[int, int]] = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        codes[name] = {int(k): v for k, v in json.loads(out).items()}
    action_of = {"ana": "ADD", "bob": "REJECT"}
    for cid in ids:
        row = Candidate.get_by_id(cid)
        winner = str(row.decided_by)
        loser = "bob" if winner == "ana" else "ana"
        assert row.action == action_of[winner] and row.revision == 2  # one write, no more
        assert (codes[winner][cid], codes[loser][cid]) == (0, 1)


COMMITTER = """
import sys, time
from pathlib import Path
from curator.errors import ConflictError, CuratorError
from curator.pipeline.commit import commit_run
from curator.store.db import Store

db, run, expect, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
store = Store(db)
Path(str(go) + ".ready").write_text("ready")
while not go.exists():
    time.sleep(0.001)
try:
    print("committed", commit_run(store, run, expect=expect).id)
except ConflictError as exc:
    print("refused", exc)
"""


def test_a_commit_racing_a_decision_refuses_or_includes_it_never_half(
    store: Store, tmp_path: Path
) -> None:
    run = _run(store, 6)
    ids = _ids(run)
    for cid in ids:
        review.decide(store, cid, "ADD", reviewer="ana")
    shown = commit.preview_commit(store, run.id).fingerprint
    go = tmp_path / "go"
    committer = subprocess.Popen(
        [sys.executable, "-c", COMMITTER, store.location, str(run.id), shown, str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=python_env(),
    )
    ready = Path(f"{go}.ready")
    while not ready.exists() and committer.poll() is None:
        subprocess.run(["sleep", "0.01"], check=False)
    go.write_text("go")  # both start now: either may take the write lock first
    try:
        review.decide(store, ids[3], "REJECT", reviewer="bob", expect_revision=2)
        decided = True
    except CuratorError as exc:  # the commit got there first: the run is no longer staged
        assert "not staged" in str(exc) or "already committed" in str(exc)
        decided = False
    out, err = committer.communicate(timeout=300)
    assert committer.returncode == 0, err
    rows = {c.id: c for c in Candidate.select().where(Candidate.run == run.id)}
    if out.startswith("committed"):
        assert not decided  # the commit applied exactly the preview: ana's six ADDs
        assert all(r.state == "applied" and r.action == "ADD" for r in rows.values())
    else:
        assert decided and out.startswith("refused")
        assert f"changed since the preview with fingerprint {shown}" in out
        assert all(r.state == "reviewed" for r in rows.values())  # nothing of it applied
        assert Run.get_by_id(run.id).status == "staged"
        assert not list(Changeset.select().where(Changeset.run == run.id))


# -- any interleaving ---------------------------------------------------------------------

STEP = st.tuples(
    st.sampled_from(["ana", "bob"]),
    st.sampled_from(["load", "decide", "decide", "undo"]),
    st.integers(0, 1),
    st.sampled_from(["ADD", "REJECT"]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEP, min_size=1, max_size=14))
@example(
    steps=[("ana", "load", 0, "ADD"), ("bob", "decide", 0, "ADD"), ("ana", "decide", 0, "REJECT")]
)
@example(steps=[("bob", "decide", 0, "ADD"), ("ana", "undo", 0, "ADD")])
def test_any_interleaving_of_two_reviewers_overwrites_only_what_was_seen(
    store: Store, steps: list[tuple[str, str, int, str]]
) -> None:
    """Each reviewer acts on the revision they last loaded (or wrote). Every overwrite of
    another's decision happened on the revision its reviewer saw; every refusal was of a
    change by someone else and wrote nothing; the final decision is the last accepted
    one (undo walks back, as a stack)."""
    ids = _ids(_run(store, 2, prefix=f"Run {Run.select().count()}: keep"))
    seen = {(who, i): 1 for who in ("ana", "bob") for i in (0, 1)}
    stack: dict[int, list[tuple[str, str]]] = {0: [], 1: []}
    for who, kind, i, action in steps:
        cid = ids[i]
        now = Candidate.get_by_id(cid)
        if kind == "load":
            seen[who, i] = now.revision
            continue
        allowed = now.revision == seen[who, i] or now.action is None or now.decided_by == who
        try:
            if kind == "decide":
                result: Any = review.decide(
                    store, cid, action, reviewer=who, expect_revision=seen[who, i]
                )
            else:
                result = review.undo_decision(
                    store, cid, reviewer=who, expect_revision=seen[who, i]
                )
        except DecisionConflict as exc:
            assert not allowed
            assert f"by {now.decided_by} at" in str(exc)
            assert Candidate.get_by_id(cid).revision == now.revision  # nothing written
            continue
        assert allowed
        if now.action is not None and now.decided_by != who:
            assert now.revision == seen[who, i]  # another's decision, overwritten seen
        if kind == "decide":
            stack[i].append((who, action))
            assert (result.action, result.decided_by) == (action, who)
        elif result is not None:
            stack[i].pop()
        else:
            assert not stack[i]
        seen[who, i] = Candidate.get_by_id(cid).revision
    for i, cid in enumerate(ids):
        row = Candidate.get_by_id(cid)
        expected = (stack[i][-1][1], stack[i][-1][0]) if stack[i] else (None, None)
        assert (row.action, row.decided_by) == expected

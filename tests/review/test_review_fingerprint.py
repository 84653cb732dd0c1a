"""A commit applies exactly the decisions its preview showed, or refuses with nothing written.

The preview carries a fingerprint of the run's decision state; ``commit_run(expect=...)``
compares it under the write lock. Decisions written in between come from another thread,
which has its own SQLite connection to the same file (as ``curator decide`` in a shell
would have); the property test writes them on the same connection, as the refusal
depends on the state only.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import ConflictError, CuratorError
from curator.pipeline import commit, review
from curator.pipeline import fingerprint as fp
from curator.pipeline.commit_reads import run_fingerprint
from curator.store.db import Store
from curator.store.models import Candidate, Pattern
from curator.store.opening import StoreBusyError
from curator.store.snapshot import logical_dump
from review.conftest import candidate_ids, make_pattern, make_staged_run

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)

TEXTS = (
    "Summaries for the design team should include one screenshot per change.",
    "Database migrations are rehearsed on a copy of production before release.",
    "Incident reports name the first alert that fired and the time it fired.",
)
EDITS = (
    "Summaries for the design team include a single screenshot for every change.",
    "Migrations of the database are rehearsed on a production copy before a release.",
)


def elsewhere(store: Store, work: Callable[[], object]) -> None:
    """Run ``work`` on another thread: its own connection, the shell next to the window."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the test
            failures.append(exc)
        finally:
            store.db.close()  # this thread's connection

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    if failures:
        raise failures[0]


def _three(store: Store) -> tuple[int, list[int]]:
    run = make_staged_run(store, [{"text": t} for t in TEXTS])
    return run.id, candidate_ids(run)


def _added(run_id: int) -> list[str]:
    return sorted(p.text for p in Pattern.select().where(Pattern.created_run == run_id))


def test_decisions_written_after_the_preview_are_refused(store: Store) -> None:
    """The issue's case: the reviewer saw ADD, REJECT, REJECT; a shell made it three ADDs."""
    run_id, ids = _three(store)
    review.decide(store, ids[0], "ADD")
    review.decide(store, ids[1], "REJECT")
    review.decide(store, ids[2], "REJECT")
    shown = commit.preview_commit(store, run_id)
    assert len(shown.adds) == 1 and shown.fingerprint

    elsewhere(
        store, lambda: (review.decide(store, ids[1], "ADD"), review.decide(store, ids[2], "ADD"))
    )
    before = logical_dump(store)
    with pytest.raises(fp.DecisionsChangedError) as refused:
        commit.commit_run(store, run_id, expect=shown.fingerprint)
    assert isinstance(refused.value, ConflictError) and refused.value.exit_code == 1
    assert logical_dump(store) == before  # nothing written, the run still staged
    message = str(refused.value)
    assert "\n" not in message and shown.fingerprint in message
    fresh = refused.value.preview
    assert len(fresh.adds) == 3 and fresh.fingerprint != shown.fingerprint
    assert fp.describe_changes(shown.decisions, fresh.decisions) == (
        f"candidate {ids[1]} went from REJECT to ADD and candidate {ids[2]} went from REJECT to ADD"
    )

    commit.commit_run(store, run_id, expect=fresh.fingerprint)  # the fresh preview, accepted
    assert _added(run_id) == sorted(TEXTS)


def test_an_unchanged_state_commits_and_a_redecision_to_the_same_state_too(store: Store) -> None:
    run_id, ids = _three(store)
    review.decide(store, ids[0], "ADD")
    review.decide(store, ids[1], "REJECT")
    review.decide(store, ids[2], "REJECT")
    shown = commit.preview_commit(store, run_id)
    review.decide(store, ids[1], "ADD")
    review.undo_decision(store, ids[1])  # back to REJECT: the same state, another history
    assert commit.preview_commit(store, run_id).fingerprint == shown.fingerprint
    summary = commit.commit_run(store, run_id, expect=shown.fingerprint)
    assert summary.counts["ADD"] == 1 and _added(run_id) == [TEXTS[0]]


@pytest.mark.parametrize(
    "change",
    [
        "decide an undecided candidate",
        "edit the text",
        "change the importance",
        "undo a decision",
        "retarget the update",
        "change the target pattern",
        "keep the pattern's text",
        "commit part of the run elsewhere",
    ],
)
def test_every_change_of_what_a_commit_writes_is_refused(store: Store, change: str) -> None:
    """Cases of the same class as the issue's: each alters what the commit would write."""
    first = make_pattern(store, "Retry network calls to the billing API with backoff.", 0.3)
    second = make_pattern(store, "Never delete user files without an explicit confirmation.")
    run = make_staged_run(
        store,
        [
            {"text": TEXTS[0]},
            {"text": "Retry network calls to the billing API with a short backoff."},
            {"text": TEXTS[1]},
        ],
    )
    ids = candidate_ids(run)
    review.decide(store, ids[0], "ADD")
    review.decide(
        store,
        ids[1],
        "UPDATE",
        target_id=first,
        text="Retry calls to the billing API with exponential backoff.",
    )
    shown = commit.preview_commit(store, run.id)
    changes: dict[str, Callable[[], object]] = {
        "decide an undecided candidate": lambda: review.decide(store, ids[2], "ADD"),
        "edit the text": lambda: review.decide(store, ids[0], "ADD", text=EDITS[0]),
        "change the importance": lambda: review.decide(store, ids[0], "ADD", importance=0.91),
        "undo a decision": lambda: review.undo_decision(store, ids[0]),
        "retarget the update": lambda: review.decide(store, ids[1], "UPDATE", target_id=second),
        "change the target pattern": lambda: _touch_pattern(store, first),
        "keep the pattern's text": lambda: review.decide(
            store, ids[1], "UPDATE", target_id=first, keep_pattern_text=True
        ),
        "commit part of the run elsewhere": lambda: commit.commit_run(
            store, run.id, reviewed_only=True
        ),
    }
    elsewhere(store, changes[change])
    before = logical_dump(store)
    with pytest.raises(fp.DecisionsChangedError) as refused:
        commit.commit_run(store, run.id, reviewed_only=True, expect=shown.fingerprint)
    assert logical_dump(store) == before
    said = fp.describe_changes(shown.decisions, refused.value.preview.decisions)
    assert said and "\n" not in said


def test_a_decision_cannot_slip_in_between_the_check_and_the_writes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: another connection tries to decide right after the fingerprint
    check, inside the commit (no real interleaving can be forced at that instant). The
    check runs under the commit's write lock, so the decision waits and is refused."""
    run_id, ids = _three(store)
    for cid in ids:
        review.decide(store, cid, "REJECT")
    shown = commit.preview_commit(store, run_id)
    attempts: list[str] = []
    real_check = fp.refuse_if_changed

    def check_then_race(preview: commit.CommitPreview, expected: str | None) -> None:
        real_check(preview, expected)

        def race() -> None:
            with pytest.raises(StoreBusyError), store.waiting_at_most(0.2):
                review.decide(store, ids[0], "ADD")
            attempts.append("refused")

        elsewhere(store, race)

    monkeypatch.setattr(commit, "refuse_if_changed", check_then_race)
    summary = commit.commit_run(store, run_id, expect=shown.fingerprint)
    assert attempts == ["refused"] and summary.counts["REJECT"] == 3
    assert _added(run_id) == []
    with pytest.raises(CuratorError, match="already committed"):
        review.decide(store, ids[0], "ADD")


def _touch_pattern(store: Store, pattern_id: int) -> None:
    """An edit of the pattern in Knowledge (importance and revision, as the pane writes)."""
    with store.write():
        Pattern.update(importance=0.95, revision=Pattern.revision + 1).where(
            Pattern.id == pattern_id
        ).execute()


def test_parse_fingerprint_takes_what_a_preview_printed() -> None:
    assert fp.parse_fingerprint("  ABCDEF0123456789\n") == "abcdef0123456789"
    for bad in ("", "abc", "abcdef012345678g", "abcdef01234567890"):
        with pytest.raises(CuratorError) as refused:
            fp.parse_fingerprint(bad)
        assert refused.value.exit_code == 2


# -- the property: a commit applies exactly the state of its fingerprint, or refuses -------

CANDIDATES = 4
VERBS = ("ADD", "REJECT", "ACCEPT")
step = st.one_of(
    st.tuples(st.just("decide"), st.integers(0, CANDIDATES - 1), st.sampled_from(VERBS)),
    st.tuples(st.just("importance"), st.integers(0, CANDIDATES - 1), st.sampled_from((0.2, 0.8))),
    st.tuples(st.just("edit"), st.integers(0, CANDIDATES - 1), st.sampled_from((0, 1))),
    st.tuples(st.just("undo"), st.integers(0, CANDIDATES - 1), st.just(0)),
)


def _play(store: Store, ids: list[int], steps: list[tuple[str, int, object]]) -> None:
    for kind, index, value in steps:
        cid = ids[index]
        try:
            if kind == "decide":
                review.decide(store, cid, str(value))
            elif kind == "importance":
                current = Candidate.get_by_id(cid).action or "ADD"
                review.decide(store, cid, current, importance=float(str(value)))
            elif kind == "edit":
                review.decide(store, cid, "ADD", text=EDITS[int(str(value))])
            else:
                review.undo_decision(store, cid)
        except CuratorError:
            pass  # a refused decision changes nothing; the sequence goes on


def _applied_state(run_id: int) -> tuple[list[tuple[str, float]], list[int]]:
    added = sorted(
        (p.text, round(p.importance, 6))
        for p in Pattern.select().where(Pattern.created_run == run_id)
    )
    applied = sorted(
        c.id
        for c in Candidate.select().where(
            (Candidate.run == run_id) & (Candidate.state == "applied")
        )
    )
    return added, applied


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seen=st.lists(step, max_size=6),
    meanwhile=st.lists(step, max_size=4),
)
def test_commit_applies_exactly_the_previewed_state_or_refuses(
    seen: list[tuple[str, int, object]], meanwhile: list[tuple[str, int, object]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "curator.sqlite")
        try:
            run = make_staged_run(
                store, [{"text": t} for t in (*TEXTS, "Weekly reports go out on Friday.")]
            )
            ids = candidate_ids(run)
            _play(store, ids, seen)
            shown = commit.preview_commit(store, run.id)
            assert run_fingerprint(store, run.id) == shown.fingerprint  # what review prints
            _play(store, ids, meanwhile)
            now = commit.preview_commit(store, run.id)
            assert run_fingerprint(store, run.id) == now.fingerprint
            before = logical_dump(store)
            try:
                commit.commit_run(store, run.id, reviewed_only=True, expect=shown.fingerprint)
            except fp.DecisionsChangedError:
                assert now.decisions != shown.decisions  # refused only for a real change
                assert logical_dump(store) == before
                return
            except CuratorError:
                assert not [k for k in shown.decisions if k.action is not None]  # nothing decided
                assert logical_dump(store) == before
                return
            assert now.decisions == shown.decisions
            added, applied = _applied_state(run.id)
            assert added == sorted((a.text, round(a.importance, 6)) for a in shown.adds)
            assert applied == sorted(k.candidate_id for k in shown.decisions if k.action)
        finally:
            store.close()


keys = st.builds(
    fp.DecisionKey,
    candidate_id=st.integers(1, 6),
    action=st.sampled_from([None, "ADD", "REJECT", "UPDATE", "SKIP"]),
    target_id=st.sampled_from([None, 1, 2]),
    basis_revision=st.sampled_from([None, 1, 2]),
    text=st.sampled_from([None, EDITS[0]]),
    importance=st.sampled_from([None, 0.25, 0.75]),
    keep_pattern_text=st.booleans(),
    flags_seen=st.sampled_from(["[]", '[{"kind": "link"}]']),
    target_revision=st.sampled_from([None, 1, 2]),
    target_status=st.sampled_from([None, "active", "retired"]),
)
states = st.lists(keys, max_size=6, unique_by=lambda k: k.candidate_id)


@given(a=states, b=states)
def test_fingerprint_and_description_follow_the_state_only(
    a: list[fp.DecisionKey], b: list[fp.DecisionKey]
) -> None:
    """Equal states (in any order) have equal prints and nothing to describe; different
    states have different prints and a one-line description naming what changed."""
    same = sorted(a, key=lambda k: k.candidate_id) == sorted(b, key=lambda k: k.candidate_id)
    assert (fp.fingerprint(1, a) == fp.fingerprint(1, b)) == same
    assert fp.fingerprint(1, a) == fp.fingerprint(1, list(reversed(a)))
    said = fp.describe_changes(a, b)
    assert (said == "") == same and "\n" not in said
    if not same:
        assert fp.fingerprint(1, a) != fp.fingerprint(2, a)  # another run, another print
        changed = {k.candidate_id for k in set(a) ^ set(b)}
        if len(changed) <= 5:
            assert all(f"candidate {cid}" in said for cid in changed)

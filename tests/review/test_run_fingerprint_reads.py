"""What ``curator review --json`` prints is what ``curator commit --preview --json`` prints.

``review --json`` reads the fingerprint with :func:`run_fingerprint` instead of building
the whole commit preview; a script passes it to ``commit --expect``, so the two must agree
in every state a run can be in: UPDATE and SKIP decisions with targets, targets retired,
edited or deleted, edited texts, the decay-clock setting either way, and more targets than
one ``IN (...)`` query holds.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.pipeline import commit, review
from curator.pipeline.commit_reads import run_fingerprint
from curator.store.db import Store
from curator.store.engine import IN_LIST_SIZE
from curator.store.models import Pattern
from curator.store.settings import set_setting
from review.conftest import candidate_ids, make_pattern, make_staged_run

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)


def _agree(store: Store, run_id: int) -> str:
    shown = commit.preview_commit(store, run_id).fingerprint
    assert run_fingerprint(store, run_id) == shown
    return shown


def _staged(store: Store, count: int) -> tuple[int, list[int], list[int]]:
    """A run of ``count`` candidates, each proposing an UPDATE or SKIP of a pattern of its
    own (so the run has ``count`` targets)."""
    patterns = [
        make_pattern(store, f"pattern number {i} about topic {i * 7}") for i in range(count)
    ]
    specs = [
        {
            "text": f"candidate {i} on topic {i * 7}",
            "action": ("UPDATE", "SKIP")[i % 2],
            "target": p,
        }
        for i, p in enumerate(patterns)
    ]
    run = make_staged_run(store, specs)
    return run.id, candidate_ids(run), patterns


STEP = st.tuples(
    st.sampled_from(
        ["UPDATE", "SKIP", "ADD", "REJECT", "edit", "undo", "retire", "touch", "delete", "clock"]
    ),
    st.integers(0, 5),
)


@settings(
    deadline=None, max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_review_and_the_commit_preview_print_one_fingerprint(
    store: Store, steps: list[tuple[str, int]]
) -> None:
    run_id, ids, patterns = _staged(store, 6)
    clock = False
    _agree(store, run_id)
    for what, i in steps:
        cid, pid = ids[i], patterns[i]
        try:
            if what in ("UPDATE", "SKIP"):
                review.decide(store, cid, what, target_id=pid)
            elif what in ("ADD", "REJECT"):
                review.decide(store, cid, what)
            elif what == "edit":
                review.decide(store, cid, "UPDATE", target_id=pid, text=f"edited text {i}")
            elif what == "undo":
                review.undo_decision(store, cid)
            elif what == "retire":
                with store.write():
                    Pattern.update(status="retired").where(Pattern.id == pid).execute()
            elif what == "touch":
                with store.write():
                    Pattern.update(revision=Pattern.revision + 1).where(Pattern.id == pid).execute()
            elif what == "delete":
                with store.write():
                    Pattern.delete().where(Pattern.id == pid).execute()
            else:
                clock = not clock
                set_setting(store, "update_refreshes_decay", clock)
        except CuratorError:
            pass  # a decision the state refuses (a retired or deleted target): no change
        _agree(store, run_id)


def test_more_targets_than_one_query_holds(store: Store) -> None:
    count = IN_LIST_SIZE + 37
    run_id, ids, patterns = _staged(store, count)
    for i, (cid, pid) in enumerate(zip(ids, patterns, strict=True)):
        review.decide(store, cid, ("UPDATE", "SKIP")[i % 2], target_id=pid)
    first = _agree(store, run_id)
    with store.write():  # the last target, read by the second query, changes
        Pattern.update(revision=Pattern.revision + 1).where(Pattern.id == patterns[-1]).execute()
    assert _agree(store, run_id) != first


def test_a_run_that_does_not_exist_is_refused_alike(store: Store) -> None:
    with pytest.raises(CuratorError) as preview:
        commit.preview_commit(store, 424242)
    with pytest.raises(CuratorError) as fingerprint:
        run_fingerprint(store, 424242)
    assert str(fingerprint.value) == str(preview.value)

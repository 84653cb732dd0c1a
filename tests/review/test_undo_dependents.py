"""An undo never changes what other commits and decisions hold, whatever came between.

Undoing a commit removes the patterns it added; rows outside it that point at one (a
later commit's links and applied candidates, another run's decisions) would lose their
reference to the foreign keys' ON DELETE without a word. The property: any sequence of
staging, deciding, committing and undoing leaves every successful undo's effect inside
its own changeset, and every refused undo changes nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.errors import ConflictError, CuratorError
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.models import Candidate, ChangeRow, Changeset, Pattern, Run
from curator.store.snapshot import key_from_dict, logical_dump, read_rows
from review.conftest import candidate_ids, make_staged_run

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("stage"), st.sampled_from(["ADD", "SKIP", "UPDATE"]), st.integers(0, 3)),
        st.tuples(st.just("commit"), st.integers(0, 3)),
        st.tuples(st.just("undo"), st.integers(0, 3)),
        st.tuples(st.just("reject"), st.integers(0, 3)),
        st.tuples(st.just("add"), st.integers(0, 3)),
        st.tuples(st.just("back"), st.integers(0, 3)),
        st.tuples(st.just("edit"), st.integers(0, 3)),
    ),
    min_size=3,
    max_size=14,
)


def _held(store: Store, skip: int) -> dict[tuple[int, int], bool]:
    """For every row each other live commit recorded: does it still hold that state?"""
    held: dict[tuple[int, int], bool] = {}
    live = Changeset.select().where(
        (Changeset.kind == "commit") & Changeset.undone_by.is_null() & (Changeset.id != skip)
    )
    for cs in live:
        for row in ChangeRow.select().where(ChangeRow.changeset == cs.id):
            key = key_from_dict(row.table, row.key)
            now = read_rows(store, row.table, [key])[key]
            held[(cs.id, row.id)] = commit._comparable(row.table, now) == commit._comparable(
                row.table, row.after
            )
    return held


def _decisions(outside: set[int]) -> dict[int, tuple[Any, ...]]:
    rows = Candidate.select().where(Candidate.id.not_in(list(outside) or [0]))
    return {c.id: (c.action, c.target_id, c.state) for c in rows}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
# a decision into the ADDed pattern, changed to ADD so the commit's undo may go, then
# taken back: the decision before named a pattern removed by then
@example(
    ops=[
        ("stage", "ADD", 0),
        ("commit", 0),
        ("stage", "SKIP", 0),
        ("add", 1),
        ("undo", 0),
        ("back", 1),
    ]
)
def test_an_undo_changes_nothing_another_commit_or_decision_holds(
    ops: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "undo.sqlite", create=True)
        try:
            _play(store, ops)
        finally:
            store.close()


def _play(store: Store, ops: list[tuple[Any, ...]]) -> None:
    staged: list[int] = []
    made = 0
    for op in ops:
        if op[0] == "stage":
            active = [p.id for p in Pattern.select().where(Pattern.status == "active")]
            action = op[1] if active else "ADD"
            made += 1
            spec: dict[str, Any] = {"text": f"Pattern number {made} about the agent's work."}
            if action != "ADD":
                spec.update(action=action, target=active[op[2] % len(active)], ratio=0.9)
            run = make_staged_run(store, [spec])
            review.accept_all(store, run.id)
            staged.append(run.id)
        elif op[0] == "commit" and staged:
            run_id = staged[op[1] % len(staged)]
            try:
                commit.commit_run(store, run_id)
            except CuratorError:
                continue  # a conflict or nothing decided: refused as a whole
        elif op[0] in ("reject", "add") and staged:
            run = Run.get_by_id(staged[op[1] % len(staged)])
            for cid in candidate_ids(run):
                if Candidate.get_by_id(cid).state != "applied":
                    review.decide(store, cid, op[0].upper())
        elif op[0] == "back" and staged:
            # the decision before may name a pattern removed since: never a database error
            # (the window's undo takes an edit back first)
            run_id = staged[op[1] % len(staged)]
            review.undo_last_decision(store, run_id, edit_first=op[1] % 2 == 0)
        elif op[0] == "edit" and staged:
            # an edit that re-matches a pattern there is now (a REJECT keeps it a proposal)
            active = [p.text for p in Pattern.select().where(Pattern.status == "active")]
            run = Run.get_by_id(staged[op[1] % len(staged)])
            for cid in candidate_ids(run):
                if active and Candidate.get_by_id(cid).state != "applied":
                    review.decide(store, cid, "REJECT", text=active[-1] + " Indeed.")
        elif op[0] == "undo":
            commits = list(
                Changeset.select()
                .where((Changeset.kind == "commit") & Changeset.undone_by.is_null())
                .order_by(Changeset.id)
            )
            if not commits:
                continue
            target = commits[op[1] % len(commits)]
            own = {
                int(r.key["id"])
                for r in ChangeRow.select().where(
                    (ChangeRow.changeset == target.id) & (ChangeRow.table == "candidate")
                )
            }
            before_dump = logical_dump(store)
            held = _held(store, target.id)
            decisions = _decisions(own)
            try:
                commit.undo_changeset(store, target.id)
            except ConflictError:
                assert logical_dump(store) == before_dump  # refused: nothing changed
                continue
            after = _held(store, target.id)
            assert all(after[k] for k, was in held.items() if was), "a later commit was changed"
            assert _decisions(own) == decisions, "a decision outside the undone commit changed"

"""Restoring rows the way an undo does: many rows in a few statements, with the result of
one statement per row, on both engines."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.models import Episode, Pattern, Run, utcnow
from curator.store.snapshot import read_rows, write_rows

PAIRS = [(p, e) for p in (1, 2) for e in (1, 2, 3)]

State = dict[str, Any] | None


def prepared(db_url: str) -> Store:
    """Two patterns, three episodes, two runs: what the links may point at (made once)."""
    store = Store(db_url)
    if store.execute("SELECT count(*) FROM pattern")[0][0]:
        return store
    now = utcnow()
    with store.write():
        for n in (1, 2):
            Run.create(id=n, kind="distill", status="committed")
            Pattern.create(
                id=n, text=f"pattern {n}", importance=0.5, distilled_at=now, rank_key=0.5
            )
        for n in (1, 2, 3):
            Episode.create(id=n, content_hash=f"h{n}", text=f"episode {n}", timestamp=now)
    return store


def apply(
    store: Store, table: str, writes: list[tuple[tuple[Any, ...], State]], one_by_one: bool
) -> None:
    with store.write():
        if one_by_one:
            for write in writes:
                write_rows(store, table, [write])
        else:
            write_rows(store, table, writes)


def links(store: Store) -> list[tuple[Any, ...]]:
    return store.execute("SELECT pattern_id, episode_id, run_id FROM pattern_episode ORDER BY 1, 2")


@settings(
    deadline=None, max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.lists(st.booleans(), min_size=len(PAIRS), max_size=len(PAIRS)),
    writes=st.lists(
        st.tuples(st.sampled_from(PAIRS), st.sampled_from([0, 1, 2, None])), max_size=12
    ),
)
@example(start=[False] * 6, writes=[((1, 1), 1), ((1, 1), 2), ((1, 1), 0), ((1, 1), None)])
@example(start=[True] * 6, writes=[((1, 1), 0), ((1, 2), 0), ((2, 3), 1), ((2, 3), 0)])
def test_a_batch_leaves_what_one_write_per_row_leaves(
    db_url: str, start: list[bool], writes: list[tuple[tuple[int, int], int | None]]
) -> None:
    """Links deleted (0), updated or re-created (a run id, or no run), the same key
    several times in one batch included; one write per row is what undo did before."""
    results = []
    for one_by_one in (True, False):
        store = prepared(db_url)
        try:
            with store.write():
                store.execute("DELETE FROM pattern_episode")
                for (p, e), there in zip(PAIRS, start, strict=True):
                    if there:
                        store.execute(
                            "INSERT INTO pattern_episode (pattern_id, episode_id, run_id) "
                            "VALUES (?, ?, NULL)",
                            (p, e),
                        )
            batch: list[tuple[tuple[Any, ...], State]] = [
                (
                    key,
                    None
                    if run == 0
                    else {"pattern_id": key[0], "episode_id": key[1], "run_id": run},
                )
                for key, run in writes
            ]
            apply(store, "pattern_episode", batch, one_by_one)
            results.append(links(store))
        finally:
            store.close()
    assert results[0] == results[1]
    final: dict[tuple[int, int], int | None] = {}
    for (p, e), there in zip(PAIRS, start, strict=True):
        if there:
            final[(p, e)] = None
    for key, run in writes:
        if run == 0:
            final.pop(key, None)
        else:
            final[key] = run
    assert results[1] == [(p, e, r) for (p, e), r in sorted(final.items())]


def test_a_tracked_row_that_is_gone_is_refused_and_nothing_is_written(db_url: str) -> None:
    store = prepared(db_url)
    try:
        before = read_rows(store, "run", [(1,), (2,)])
        with pytest.raises(CuratorError, match="cannot restore run"), store.write():
            write_rows(
                store,
                "run",
                [
                    ((1,), {"id": 1, "status": "staged", "status_reason": ""}),
                    ((7,), {"id": 7, "status": "staged", "status_reason": ""}),
                ],
            )
        assert read_rows(store, "run", [(1,), (2,)]) == before
        with store.write():
            write_rows(
                store,
                "run",
                [((n,), {"id": n, "status": "staged", "status_reason": "x"}) for n in (1, 2)],
            )
        assert {
            k: (r or {}).get("status") for k, r in read_rows(store, "run", [(1,), (2,)]).items()
        } == {
            (1,): "staged",
            (2,): "staged",
        }
    finally:
        store.close()

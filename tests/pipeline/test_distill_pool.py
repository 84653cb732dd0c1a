"""The run's dedup pool and the candidate rows a batch's gate decisions become."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.dedup import Decision
from curator.pipeline.distill_pool import Pool, stage_rows


def _pool() -> Pool:
    return Pool([11, 12], ["always greet", "never swear"], [3, 1], ["earlier add"], [4])


def test_a_target_below_the_patterns_names_the_pattern_and_its_revision() -> None:
    staged = stage_rows(
        _pool(),
        run_id=7,
        category="uncategorized",
        first_ordinal=9,
        texts=["always greet people"],
        scored=[(0.5, Decision("UPDATE", 1, 0.9))],
    )
    (row,) = staged.rows
    assert (row["ordinal"], row["proposed_target"], row["target_revision"]) == (9, 12, 1)
    assert staged.dedup_trace[0]["matched_candidate_ordinal"] is None
    assert staged.added == []


def test_a_target_past_the_patterns_is_an_earlier_candidate_of_the_run() -> None:
    pool = _pool()
    staged = stage_rows(
        pool,
        run_id=7,
        category="constitutional",
        first_ordinal=5,
        texts=["new one", "earlier add again", "new one again"],
        scored=[
            (0.4, Decision("ADD", None, 0.1)),
            (0.3, Decision("SKIP", 2, 0.99)),  # the earlier batch's ADD (ordinal 4)
            (0.2, Decision("SKIP", 3, 0.97)),  # this batch's own ADD (ordinal 5)
        ],
    )
    assert [r["proposed_target"] for r in staged.rows] == [None, None, None]
    assert [t["matched_candidate_ordinal"] for t in staged.dedup_trace] == [None, 4, 5]
    assert staged.added == [(5, "new one")]
    assert pool.added_ordinals == [4]  # staging leaves the pool as it was
    pool.join(staged.added)
    assert pool.texts() == ["always greet", "never swear", "earlier add", "new one"]


@settings(deadline=None, max_examples=60)
@given(st.lists(st.sampled_from(["ADD", "SKIP", "UPDATE"]), max_size=12), st.integers(1, 50))
@example(["ADD", "ADD", "SKIP"], 1)
def test_ordinals_run_on_and_every_add_is_offered_to_the_pool(
    actions: list[str], first: int
) -> None:
    pool = _pool()
    decisions = [
        Decision(a, None if a == "ADD" else 0, 1.0 if a == "SKIP" else 0.9) for a in actions
    ]
    staged = stage_rows(
        pool,
        run_id=1,
        category="uncategorized",
        first_ordinal=first,
        texts=[f"text {i}" for i in range(len(actions))],
        scored=[(0.5, d) for d in decisions],
    )
    assert [r["ordinal"] for r in staged.rows] == list(range(first, first + len(actions)))
    assert [o for o, _ in staged.added] == [
        r["ordinal"] for r in staged.rows if r["proposed_action"] == "ADD"
    ]

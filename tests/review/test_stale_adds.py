"""An ADD proposed before a near-duplicate was committed elsewhere is never applied unseen."""

from __future__ import annotations

import pytest

from curator.errors import ConflictError, CuratorError
from curator.pipeline import commit, review
from curator.pipeline.commit_preview import preview_commit
from curator.store.db import Store
from curator.store.models import Pattern, Run
from review.conftest import candidate_ids, cli, make_pattern, make_staged_run

BOTH_ENGINES = True

TEXT = "Weekly reports go out on Friday afternoon in five short bullets."
OTHER = "Deploys wait for a green build and a second reviewer on Tuesdays."


def _two_runs(store: Store) -> tuple[int, int]:
    """Two runs staged before either is committed, both proposing to ADD ``TEXT``."""
    first = make_staged_run(store, [{"text": TEXT, "importance": 0.8}])
    second = make_staged_run(store, [{"text": TEXT, "importance": 0.7}, {"text": OTHER}])
    return first.id, second.id


def _same_text_count() -> int:
    return Pattern.select().where(Pattern.text == TEXT).count()


def test_accepting_an_add_that_a_later_commit_made_a_duplicate_is_refused(store: Store) -> None:
    first, second = _two_runs(store)
    review.accept_all(store, first)
    commit.commit_run(store, first)
    stale, fresh = candidate_ids(store_run(second))
    shown = {v.id: v for v in review.list_candidates(store, second)}
    written = Pattern.get(Pattern.text == TEXT).id
    assert (shown[stale].newer_target_id, shown[stale].newer_text) == (written, TEXT)
    assert shown[fresh].newer_target_id is None
    assert review.accept_all(store, second) == 1  # the fresh one; the stale one waits
    assert review.get_candidate(store, stale).action is None
    with pytest.raises(CuratorError, match=r"written since this run was staged.*ratio 1\.00"):
        review.decide(store, stale, "ACCEPT")
    review.decide(store, stale, "ADD")  # a person's explicit call, with the pattern there
    commit.commit_run(store, second)
    assert _same_text_count() == 2
    assert review.get_candidate(store, fresh).state == "applied"


def test_an_add_decided_before_the_duplicate_was_committed_is_a_conflict(store: Store) -> None:
    first, second = _two_runs(store)
    review.accept_all(store, first)
    review.accept_all(store, second)  # both decided while neither was committed
    commit.commit_run(store, first)
    stale, _ = candidate_ids(store_run(second))
    preview = preview_commit(store, second)
    assert [c.candidate_id for c in preview.conflicts] == [stale]
    with pytest.raises(ConflictError, match=f"candidate {stale} .*decide it again"):
        commit.commit_run(store, second)
    assert _same_text_count() == 1
    target = Pattern.get(Pattern.text == TEXT).id
    review.decide(store, stale, "SKIP", target_id=target)
    commit.commit_run(store, second)
    assert _same_text_count() == 1


def test_the_runs_own_earlier_commit_is_not_a_newer_pattern(store: Store) -> None:
    """A run committed in parts: its own ADDs were in its gate's view (batch duplicates)."""
    run = make_staged_run(store, [{"text": TEXT}, {"text": TEXT + " "}])
    first, second = candidate_ids(run)
    review.decide(store, first, "ACCEPT")
    commit.commit_run(store, run.id, reviewed_only=True)
    review.decide(store, second, "ACCEPT")
    assert review.get_candidate(store, second).action == "ADD"


def store_run(run_id: int) -> Run:
    return Run.get_by_id(run_id)


def test_the_command_line_says_which_it_left_and_why(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _two_runs(store)
    review.accept_all(store, first)
    commit.commit_run(store, first)
    stale, _ = candidate_ids(store_run(second))
    code, text, err = cli(capsys, "--db", store.location, "review", str(second), "--accept-all")
    assert code == 0, err
    assert "accepted 1 proposal" in text
    assert f"ADD, now #{Pattern.get(Pattern.text == TEXT).id} (1.00)" in text
    assert f"left 1 candidate undecided whose proposal no longer holds ({stale})" in text


def test_a_pattern_reworded_since_staging_into_the_same_text_is_newer_too(store: Store) -> None:
    """Another run's UPDATE gave an old pattern this ADD's wording after staging."""
    old = make_pattern(store, "Status reports are sent at the end of each week.", 0.4)
    run = make_staged_run(store, [{"text": TEXT, "importance": 0.7}])
    (cid,) = candidate_ids(run)
    rewording = make_staged_run(
        store, [{"text": "Status reports go out weekly.", "action": "UPDATE", "target": old}]
    )
    (rid,) = candidate_ids(rewording)
    review.decide(store, rid, "UPDATE", target_id=old, text=TEXT, keep_pattern_text=False)
    commit.commit_run(store, rewording.id)
    assert Pattern.get_by_id(old).text == TEXT
    with pytest.raises(CuratorError, match=f"pattern {old}, written since this run was staged"):
        review.decide(store, cid, "ACCEPT")

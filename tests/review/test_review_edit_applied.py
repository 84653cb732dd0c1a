"""An edited text accepted with UPDATE is the text the commit writes, and undo restores the old.

Before, ``decide … UPDATE --text …`` stored the reviewer's wording and the commit ignored it:
the pattern kept its old text. An edit accepted must be an edit applied.
"""

from __future__ import annotations

import pytest

from curator.core.scoring import rank_key
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.models import Pattern
from curator.store.snapshot import logical_dump
from review.conftest import PATTERN_TEXTS, candidate_ids, make_patterns, make_staged_run

MORNING = "The operator likes short status updates each morning before standup."
REWORDED = "The operator wants a three-line status update every morning before standup."


def test_update_with_edited_text_rewords_the_pattern_and_undo_restores_it(
    store: Store,
) -> None:
    patterns = make_patterns(store)
    old = Pattern.get_by_id(patterns[0])
    run = make_staged_run(store, [{"text": MORNING, "importance": 0.9}])
    (cid,) = candidate_ids(run)
    before = logical_dump(store)

    view = review.decide(store, cid, "UPDATE", target_id=patterns[0], text=REWORDED)
    assert view.action == "UPDATE" and view.final_text == REWORDED
    preview = commit.preview_commit(store, run.id)
    assert [u.new_text for u in preview.updates] == [REWORDED]

    summary = commit.commit_run(store, run.id)
    updated = Pattern.get_by_id(patterns[0])
    assert updated.text == REWORDED
    # the importance and rank-key rules are those of any UPDATE: max(old, new), same date
    assert updated.importance == pytest.approx(max(old.importance, 0.9))
    assert updated.distilled_at == old.distilled_at
    assert updated.rank_key == pytest.approx(rank_key(updated.importance, old.distilled_at))
    assert updated.revision == old.revision + 1

    commit.undo_changeset(store, summary.id)
    restored = Pattern.get_by_id(patterns[0])
    assert restored.text == PATTERN_TEXTS[0] and restored.importance == old.importance
    dump = logical_dump(store)
    assert dump["pattern"] == before["pattern"]


def test_update_without_an_edit_keeps_the_pattern_text(store: Store) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(store, [{"text": MORNING, "importance": 0.9}])
    (cid,) = candidate_ids(run)
    review.decide(store, cid, "UPDATE", target_id=patterns[0])
    commit.commit_run(store, run.id)
    assert Pattern.get_by_id(patterns[0]).text == PATTERN_TEXTS[0]


def test_two_different_rewordings_of_one_pattern_are_a_conflict(store: Store) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(
        store,
        [{"text": MORNING, "importance": 0.9}, {"text": MORNING + " Always.", "importance": 0.5}],
    )
    first, second = candidate_ids(run)
    review.decide(store, first, "UPDATE", target_id=patterns[0], text=REWORDED)
    review.decide(store, second, "UPDATE", target_id=patterns[0], text=REWORDED + " Really.")
    before = logical_dump(store)
    with pytest.raises(commit.ConflictError, match="rewords pattern"):
        commit.commit_run(store, run.id)
    assert logical_dump(store) == before

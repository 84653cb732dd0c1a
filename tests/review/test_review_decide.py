"""Reviewing candidates: proposals, overrides, edits with re-match, undo, accept-all."""

from __future__ import annotations

import pytest

from curator.errors import CuratorError
from curator.pipeline import review
from curator.store.db import Store
from curator.store.models import Candidate, DecisionEvent, Pattern
from curator.store.profile import reviewer_name
from review.conftest import PATTERN_TEXTS, candidate_ids, make_patterns, make_staged_run

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)

NEW_TEXT = "Summaries for the design team should include one screenshot per change."
NEAR_BACKOFF = "Retry network calls to the billing API with exponential backoff and a jitter."


def _run_with_three(store: Store) -> tuple[list[int], list[int]]:
    patterns = make_patterns(store)
    run = make_staged_run(
        store,
        [
            {"text": NEW_TEXT, "importance": 0.6},  # ADD
            {"text": NEAR_BACKOFF, "importance": 0.9},  # SKIP or UPDATE of pattern 2
            {
                "text": "The operator likes short status updates each morning before standup.",
                "importance": 0.7,
            },
        ],
    )
    return patterns, candidate_ids(run)


def test_list_candidates_shows_proposals_and_the_matched_pattern(store: Store) -> None:
    patterns, ids = _run_with_three(store)
    views = review.list_candidates(store, int(Candidate.get_by_id(ids[0]).run_id))
    assert [v.id for v in views] == ids
    add, near, morning = views
    assert add.proposed_action == "ADD" and add.proposed_target_id is None
    assert add.target_text is None and add.action is None and add.state == "pending"
    assert near.proposed_action in ("SKIP", "UPDATE")
    assert near.proposed_target_id == patterns[1]
    assert near.target_text == PATTERN_TEXTS[1]
    assert near.target_importance == pytest.approx(0.5)
    assert morning.proposed_action == "UPDATE" and morning.proposed_target_id == patterns[0]
    assert len(add.source_episode_ids) == 1


def test_accept_takes_the_proposal_and_records_an_event(store: Store) -> None:
    patterns, ids = _run_with_three(store)
    view = review.decide(store, ids[2], "accept", actor="cli", reviewer="alice")
    assert view.action == "UPDATE" and view.target_id == patterns[0]
    assert view.target_ratio == pytest.approx(view.proposed_ratio)
    assert view.decided_by == "alice" and view.decided_at is not None
    assert view.decided_via == "cli"  # the person and the channel, apart
    assert view.state == "reviewed"
    events = list(DecisionEvent.select().where(DecisionEvent.candidate == ids[2]))
    assert len(events) == 1
    event = events[0]
    assert event.actor == "cli" and event.kind == "decide"
    assert event.after["decided_by"] == "alice"
    assert event.before["action"] is None and event.after["action"] == "UPDATE"
    assert event.after["target_id"] == patterns[0]
    # The proposal's basis is the staging revision: no decision-time revision is kept.
    assert event.after["decision_target_revision"] is None


def test_overrides_with_targets(store: Store) -> None:
    patterns, ids = _run_with_three(store)
    view = review.decide(store, ids[0], "UPDATE", target_id=patterns[3])
    assert view.action == "UPDATE" and view.target_id == patterns[3]
    assert view.target_text == PATTERN_TEXTS[3]
    assert 0.0 <= (view.target_ratio or 0.0) < 0.7
    row = Candidate.get_by_id(ids[0])
    assert row.decision_target_revision == 1  # the reviewer's basis: the pattern now

    view = review.decide(store, ids[2], "SKIP")  # default: the proposed target
    assert view.action == "SKIP" and view.target_id == patterns[0]

    view = review.decide(store, ids[1], "ADD")
    assert view.action == "ADD" and view.target_id is None
    view = review.decide(store, ids[1], "reject")
    assert view.action == "REJECT" and view.target_id is None

    with pytest.raises(CuratorError, match="needs a target"):
        review.decide(store, ids[0], "UPDATE")  # proposal ADD: there is no target to default to
    with pytest.raises(CuratorError, match="takes no target"):
        review.decide(store, ids[0], "ADD", target_id=patterns[0])
    with pytest.raises(CuratorError, match="unknown action"):
        review.decide(store, ids[0], "MERGE")
    with pytest.raises(CuratorError, match="between 0 and 1"):
        review.decide(store, ids[0], "ADD", importance=1.5)
    Pattern.update(status="retired").where(Pattern.id == patterns[3]).execute()
    with pytest.raises(CuratorError, match="retired"):
        review.decide(store, ids[2], "UPDATE", target_id=patterns[3])
    assert review.get_candidate(store, ids[2]).action == "SKIP"  # refusals change nothing


def test_edited_text_is_rematched_and_quality_checked(store: Store) -> None:
    patterns, ids = _run_with_three(store)
    # Edit the new text so that it duplicates an existing pattern: the re-match says so.
    view = review.decide(store, ids[0], "ACCEPT", text=PATTERN_TEXTS[3], importance=0.8)
    assert view.final_text == PATTERN_TEXTS[3] and view.final_importance == 0.8
    assert view.rematch_action == "SKIP" and view.rematch_target_id == patterns[3]
    assert view.action == "SKIP" and view.target_id == patterns[3]
    assert view.current_proposal == "SKIP" and view.quality_reasons == ()
    assert view.effective_importance == 0.8
    # The re-match was made against the pattern as it is now: that revision is the basis.
    assert Candidate.get_by_id(ids[0]).decision_target_revision == 1

    # A text failing the quality gate cannot be added or used to update...
    before = review.get_candidate(store, ids[0])
    with pytest.raises(CuratorError, match="quality gate") as info:
        review.decide(store, ids[0], "ADD", text="too short")
    assert "fewer than 30" in str(info.value)
    assert review.get_candidate(store, ids[0]) == before
    # ...but it can be rejected, and the view shows why it fails.
    view = review.decide(store, ids[0], "REJECT", text="too short")
    assert view.action == "REJECT" and view.final_text == "too short"
    assert view.quality_reasons and "characters" in view.quality_reasons[0]

    # Setting the original text back clears the edit.
    view = review.decide(store, ids[0], "ACCEPT", text=NEW_TEXT)
    assert view.final_text is None and view.rematch_action is None
    assert view.action == "ADD"

    check = review.check_text(store, NEAR_BACKOFF)
    assert check.ok and check.action in ("SKIP", "UPDATE") and check.target_id == patterns[1]


def test_undo_last_decision_walks_back(store: Store) -> None:
    _, ids = _run_with_three(store)
    run_id = int(Candidate.get_by_id(ids[0]).run_id)
    review.decide(store, ids[0], "ACCEPT")
    review.decide(store, ids[1], "REJECT")
    review.decide(store, ids[1], "ADD", text=NEW_TEXT + " Also add the link.")

    restored = review.undo_last_decision(store, run_id)
    assert restored is not None and restored.id == ids[1]
    assert restored.action == "REJECT" and restored.final_text is None
    restored = review.undo_last_decision(store, run_id)
    assert restored is not None and restored.id == ids[1]
    assert restored.action is None and restored.state == "pending"
    assert restored.decided_by is None
    restored = review.undo_last_decision(store, run_id)
    assert restored is not None and restored.id == ids[0] and restored.action is None
    assert review.undo_last_decision(store, run_id) is None
    kinds = [e.kind for e in DecisionEvent.select().order_by(DecisionEvent.id)]
    assert kinds == ["decide"] * 3 + ["undo"] * 3
    assert review.review_progress(store, run_id).reviewed == 0


def test_accept_all_and_progress(store: Store) -> None:
    patterns, ids = _run_with_three(store)
    run_id = int(Candidate.get_by_id(ids[0]).run_id)
    review.decide(store, ids[0], "REJECT")
    # A proposal whose target was retired since staging is left for a person.
    Pattern.update(status="retired").where(Pattern.id == patterns[0]).execute()
    assert review.accept_all(store, run_id) == 1
    progress = review.review_progress(store, run_id)
    assert (progress.total, progress.reviewed, progress.unreviewed) == (3, 2, 1)
    assert sum(progress.by_action.values()) == 2 and progress.by_action["REJECT"] == 1
    accepted = review.get_candidate(store, ids[1])
    assert accepted.decided_via == "cli --accept-all"
    assert accepted.decided_by == reviewer_name()  # the profile's name, the OS user's here
    assert accepted.action == accepted.proposed_action
    assert review.get_candidate(store, ids[0]).action == "REJECT"  # decisions are kept
    assert review.get_candidate(store, ids[2]).action is None


def test_record_proposals_are_not_undone(store: Store) -> None:
    _, ids = _run_with_three(store)
    run_id = int(Candidate.get_by_id(ids[0]).run_id)
    assert review.record_proposals(store, run_id) == 3
    assert review.undo_last_decision(store, run_id) is None
    events = list(DecisionEvent.select())
    assert {e.actor for e in events} == {"model"} and {e.kind for e in events} == {"propose"}


def test_unknown_ids_are_clear_errors(store: Store) -> None:
    with pytest.raises(CuratorError, match="no candidate 99"):
        review.decide(store, 99, "ACCEPT")
    with pytest.raises(CuratorError, match="no run 7"):
        review.list_candidates(store, 7)


def test_duplicates_within_the_run_and_deleted_targets(store: Store) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(
        store,
        [
            {"text": NEW_TEXT, "action": "ADD"},
            # The pipeline's match with an earlier candidate of the same run: no pattern yet.
            {"text": NEW_TEXT + " Always.", "action": "UPDATE", "ratio": 0.9},
            {"text": NEW_TEXT + " Twice.", "action": "SKIP", "ratio": 0.97},
            {"text": PATTERN_TEXTS[2] + " Really.", "action": "UPDATE", "target": patterns[2]},
        ],
    )
    ids = candidate_ids(run)
    Pattern.delete().where(Pattern.id == patterns[2]).execute()  # its target is gone
    view = review.decide(store, ids[1], "ACCEPT")
    assert (view.action, view.target_id) == ("SKIP", None)  # nothing is added twice
    with pytest.raises(CuratorError, match="needs a target pattern"):
        review.decide(store, ids[1], "UPDATE")
    with pytest.raises(CuratorError, match="no longer exists"):
        review.decide(store, ids[3], "ACCEPT")
    assert review.accept_all(store, run.id) == 2  # the ADD and the SKIP; not the stale one
    assert review.get_candidate(store, ids[2]).action == "SKIP"
    assert review.get_candidate(store, ids[3]).action is None
    view = review.decide(store, ids[3], "UPDATE", target_id=patterns[1])
    assert view.target_id == patterns[1]

"""The reviewer's choices the window offers, at the pipeline level.

- An UPDATE of an edited candidate either writes the reviewer's wording or keeps the
  pattern's text (``keep_pattern_text``); the preview and the commit follow that choice,
  and undoing the decision restores the earlier choice.
- The target picker's list: the nearest active patterns by the gate's ratio, searchable.
- Undo of one candidate's decision (the selected row), not the run's newest decision.
"""

from __future__ import annotations

import json

import pytest

from curator.cli import main
from curator.core.dedup import nearest, pair_ratio
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.models import Pattern
from review.conftest import PATTERN_TEXTS, candidate_ids, make_patterns, make_staged_run

MORNING = "The operator likes short status updates each morning before standup."
REWORDED = "The operator wants a three-line status update every morning before standup."


def test_update_keeping_the_pattern_text_ignores_the_edit_at_commit(store: Store) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(store, [{"text": MORNING, "importance": 0.9}])
    (cid,) = candidate_ids(run)
    view = review.decide(
        store, cid, "UPDATE", target_id=patterns[0], text=REWORDED, keep_pattern_text=True
    )
    assert view.keep_pattern_text and not view.rewords
    (update,) = commit.preview_commit(store, run.id).updates
    assert update.new_text is None and update.kept_edit == REWORDED
    commit.commit_run(store, run.id)
    kept = Pattern.get_by_id(patterns[0])
    assert kept.text == PATTERN_TEXTS[0]
    assert kept.importance == 0.9  # the importance still merges


def test_switching_back_to_my_wording_rewords_and_undo_restores_the_choice(
    store: Store,
) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(store, [{"text": MORNING, "importance": 0.9}])
    (cid,) = candidate_ids(run)
    review.decide(
        store, cid, "UPDATE", target_id=patterns[0], text=REWORDED, keep_pattern_text=True
    )
    view = review.decide(store, cid, "UPDATE", target_id=patterns[0], keep_pattern_text=False)
    assert view.rewords and view.final_text == REWORDED
    restored = review.undo_decision(store, cid)
    assert restored is not None and restored.keep_pattern_text and not restored.rewords
    review.decide(store, cid, "UPDATE", target_id=patterns[0], keep_pattern_text=False)
    commit.commit_run(store, run.id)
    assert Pattern.get_by_id(patterns[0]).text == REWORDED


def test_nearest_patterns_rank_by_the_gate_ratio_and_search_narrows(store: Store) -> None:
    make_patterns(store)
    matches = review.nearest_patterns(store, MORNING)
    assert matches[0].text == PATTERN_TEXTS[0]
    assert len(matches) == len(PATTERN_TEXTS)
    ratios = [m.ratio for m in matches]
    assert ratios == sorted(ratios, reverse=True)
    assert ratios == [pair_ratio(MORNING, m.text) for m in matches]
    found = review.nearest_patterns(store, MORNING, search="BILLING")
    assert [m.text for m in found] == [PATTERN_TEXTS[1]]
    by_id = review.nearest_patterns(store, MORNING, search=f"#{found[0].id}")
    assert [m.id for m in by_id] == [found[0].id]


def test_nearest_equals_the_full_sort_on_a_larger_pool() -> None:
    pool = [
        f"{word} status update number {i} before standup {word}"
        for i, word in enumerate(["morning", "evening", "weekly", "daily", "short", "long"] * 40)
    ]
    text = "short status update every morning before standup"
    expected = sorted(
        ((i, pair_ratio(text, t)) for i, t in enumerate(pool)), key=lambda x: (-x[1], x[0])
    )[:7]
    assert nearest(text, pool, 7) == expected


def test_undo_decision_undoes_the_selected_candidate_not_the_newest(store: Store) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(
        store,
        [{"text": MORNING, "importance": 0.9}, {"text": REWORDED + " Ok.", "importance": 0.5}],
    )
    first, second = candidate_ids(run)
    review.decide(store, first, "ADD")
    review.decide(store, second, "UPDATE", target_id=patterns[0])
    undone = review.undo_decision(store, first)
    assert undone is not None and undone.action is None
    assert review.get_candidate(store, second).action == "UPDATE"
    assert review.undo_decision(store, first) is None  # nothing left on that row


def test_the_command_line_keeps_the_pattern_text_when_asked(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    patterns = make_patterns(store)
    run = make_staged_run(store, [{"text": MORNING, "importance": 0.9}])
    (cid,) = candidate_ids(run)
    store.close()  # the command opens its own connection, as a separate program would
    db = str(store.path)
    argv = ["--db", db, "decide", str(run.id), str(cid), "UPDATE", "--target", str(patterns[0])]
    assert main([*argv, "--text", REWORDED, "--keep-pattern-text", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["keep_pattern_text"] is True and doc["final_text"] == REWORDED
    assert main([*argv, "--use-my-wording"]) == 0
    assert "replaces pattern" in capsys.readouterr().out
    assert main([*argv, "--keep-pattern-text"]) == 0
    assert "keeps its text" in capsys.readouterr().out
    assert main(["--db", db, "commit", str(run.id)]) == 0
    assert Pattern.get_by_id(patterns[0]).text == PATTERN_TEXTS[0]

"""The commit preview is what the agent will get: stored and effective importance before →
after, each touched pattern's rank in the prompt before → after (in or out of the top K),
under the current "UPDATE refreshes the decay clock" setting, in words when an UPDATE will
not move a pattern; and the fingerprint covers that setting.

A real SQLite file with patterns at various ages; the after-state the preview announces is
compared with what the database holds after the real commit, at the same reference time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.pipeline import commit, review
from curator.pipeline.fingerprint import DecisionsChangedError, fingerprint
from curator.store.db import Store
from curator.store.knowledge import active_patterns
from curator.store.models import Candidate, Pattern, utcnow
from curator.store.settings import set_setting
from curator.store.snapshot import logical_dump
from tests.review.conftest import cli, database_dump, make_pattern, make_staged_run

K = 10


def _knowledge(store: Store, now: datetime) -> int:
    """Twelve fresh patterns (ranks 1-12) and the issue's #6-like pattern, 90 days old.

    Returns the old pattern's id: importance 0.38, effective 0.38 * 0.95**90 ≈ 0.004,
    the last of the thirteen.
    """
    for i in range(12):
        make_pattern(
            store,
            f"Fresh rule number {i} about deployment windows and their owners.",
            0.9 - 0.05 * i,
            distilled_at=now - timedelta(days=1),
        )
    return make_pattern(
        store,
        "Rotate the staging credentials every quarter.",
        0.38,
        distilled_at=now - timedelta(days=90),
    )


def _update_run(store: Store, pid: int, importance: float = 1.0) -> int:
    run = make_staged_run(
        store,
        [
            {
                "text": "Rotate the staging credentials each quarter.",
                "action": "UPDATE",
                "target": pid,
                "importance": importance,
            }
        ],
    )
    (cid,) = [c.id for c in run.candidates]
    review.decide(store, cid, "ACCEPT")
    return int(run.id)


def _standing(preview: commit.CommitPreview, pid: int) -> commit.Standing:
    assert preview.effect is not None
    return preview.effect.patterns[pid]


def test_issue_case_clock_kept_says_the_update_will_not_move_the_pattern(store: Store) -> None:
    """The issue: "#6: 0.38 → 1.00" was shown, yet after the commit #6 had effective
    importance 0.010 and rank 13. The preview now says exactly that, in words."""
    set_setting(store, "top_k", K)
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid)
    preview = commit.preview_commit(store, run_id, now=now)
    s = _standing(preview, pid)
    assert (s.importance_before, s.importance_after) == (0.38, 1.0)
    assert s.effective_before == pytest.approx(0.38 * 0.95**90)
    assert s.effective_after == pytest.approx(0.95**90)
    assert round(s.effective_after, 3) == 0.010
    assert (s.rank_before, s.rank_after) == (13, 13)
    assert not s.in_prompt_before and not s.in_prompt_after
    assert not s.moves
    assert "will not move" in s.words and "rank 13" in s.words
    assert "decay clock" in s.words and "outside the prompt" in s.words
    commit.commit_run(store, run_id, now=now, expect=preview.fingerprint)
    row = next(r for r in active_patterns(store, now=now) if r.id == pid)
    assert (row.rank, round(row.effective, 3), row.in_top_k) == (13, 0.010, False)


def test_clock_refreshed_the_same_update_enters_the_prompt_at_the_top(store: Store) -> None:
    set_setting(store, "top_k", K)
    set_setting(store, "update_refreshes_decay", True)
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid)
    preview = commit.preview_commit(store, run_id, now=now)
    s = _standing(preview, pid)
    assert s.effective_after == pytest.approx(1.0)
    assert (s.rank_before, s.rank_after) == (13, 1)
    assert s.in_prompt_after and not s.in_prompt_before and s.moves
    assert "enters the prompt" in s.words
    # the pattern at rank 10 is pushed out of the top K: the preview names it
    assert preview.effect is not None
    assert [(p.rank_before, p.rank_after) for p in preview.effect.leaving] == [(10, 11)]
    commit.commit_run(store, run_id, now=now, expect=preview.fingerprint)
    rows = {r.id: r for r in active_patterns(store, now=now)}
    assert rows[pid].rank == 1 and rows[pid].in_top_k
    (left,) = preview.effect.leaving
    assert left.pattern_id is not None
    assert rows[left.pattern_id].rank == 11 and not rows[left.pattern_id].in_top_k


def test_an_update_that_does_not_raise_the_importance_says_why(store: Store) -> None:
    set_setting(store, "top_k", K)
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid, importance=0.2)  # below the pattern's 0.38
    s = _standing(commit.preview_commit(store, run_id, now=now), pid)
    assert (s.importance_before, s.importance_after) == (0.38, 0.38)
    assert s.effective_after == s.effective_before and not s.moves
    assert "will not move" in s.words and "not above" in s.words


def test_an_update_that_moves_up_but_stays_outside_the_prompt_says_why(store: Store) -> None:
    set_setting(store, "top_k", K)
    now = utcnow()
    pid = _knowledge(store, now)
    weak = make_pattern(store, "A weak fresh rule.", 0.006, distilled_at=now)  # rank 13
    run_id = _update_run(store, pid)
    preview = commit.preview_commit(store, run_id, now=now)
    s = _standing(preview, pid)
    assert (s.rank_before, s.rank_after) == (14, 13) and s.moves and not s.in_prompt_after
    assert s.words.startswith("moves up: rank 14 → 13, outside the prompt (top 10): ")
    assert "the decay clock is not refreshed" in s.words
    commit.commit_run(store, run_id, now=now)
    ranks = {r.id: r.rank for r in active_patterns(store, now=now)}
    assert (ranks[pid], ranks[weak]) == (13, 14)


def test_a_refreshed_update_of_the_first_pattern_says_it_is_already_first(store: Store) -> None:
    set_setting(store, "update_refreshes_decay", True)
    now = utcnow()
    top = make_pattern(store, "The strongest rule there is.", 0.99, distilled_at=now)
    make_pattern(store, "A second rule.", 0.5, distilled_at=now)
    run_id = _update_run(store, top, importance=0.5)
    s = _standing(commit.preview_commit(store, run_id, now=now), top)
    assert (s.rank_before, s.rank_after, s.moves) == (1, 1, False)
    assert s.words == "will not move: stays at rank 1, in the prompt (it is already first)"


def test_an_add_shows_its_rank_and_the_patterns_it_pushes_out(store: Store) -> None:
    set_setting(store, "top_k", K)
    now = utcnow()
    _knowledge(store, now)
    run = make_staged_run(
        store,
        [
            {
                "text": "Always page the on-call owner before a failover.",
                "action": "ADD",
                "importance": 0.84,
            }
        ],
    )
    (cid,) = [c.id for c in run.candidates]
    review.decide(store, cid, "ACCEPT")
    preview = commit.preview_commit(store, run.id, now=now)
    assert preview.effect is not None
    added = preview.effect.adds[cid]
    assert added.rank_before is None and added.rank_after == 2 and added.in_prompt_after
    assert "enters the prompt at rank 2" in added.words
    assert [p.rank_before for p in preview.effect.leaving] == [10]
    commit.commit_run(store, run.id, now=now)
    rows = active_patterns(store, now=now, k=K)
    assert rows[1].text.startswith("Always page") and rows[1].effective == pytest.approx(
        added.effective_after
    )


def test_fingerprint_covers_the_decay_clock_setting(store: Store) -> None:
    """A preview taken under one setting is not committed under the other."""
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid)
    off = commit.preview_commit(store, run_id)
    set_setting(store, "update_refreshes_decay", True)
    on = commit.preview_commit(store, run_id)
    assert off.fingerprint != on.fingerprint
    before = logical_dump(store)
    with pytest.raises(DecisionsChangedError, match="decay clock") as refused:
        commit.commit_run(store, run_id, expect=off.fingerprint)
    assert "\n" not in str(refused.value)
    assert refused.value.preview.effect is not None  # the fresh preview shows the prompt
    assert logical_dump(store) == before
    set_setting(store, "update_refreshes_decay", False)
    assert commit.preview_commit(store, run_id).fingerprint == off.fingerprint
    commit.commit_run(store, run_id, expect=off.fingerprint)


def test_cli_preview_json_and_words(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    set_setting(store, "top_k", K)
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid)
    db = str(tmp_path / "curator.sqlite")
    code, doc, err = cli(capsys, "--db", db, "commit", str(run_id), "--preview", "--json")
    assert code == 0 and err == ""
    prompt = doc["prompt"]
    assert prompt["top_k"] == K and prompt["update_refreshes_decay"] is False
    assert prompt["decay_rate"] == 0.95 and datetime.fromisoformat(prompt["reference_time"])
    assert prompt["leaving"] == []
    (upd,) = doc["updates"]
    assert upd["pattern_id"] == pid
    assert (upd["old_importance"], upd["new_importance"]) == (0.38, 1.0)
    assert upd["rank_before"] == upd["rank_after"] == 13
    assert upd["in_prompt_before"] is False and upd["in_prompt_after"] is False
    assert upd["moves"] is False and "will not move" in upd["words"]
    assert round(upd["effective_after"], 3) == 0.010
    code, out, err = cli(capsys, "--db", db, "commit", str(run_id), "--preview")
    assert code == 0 and err == ""
    assert "UPDATE refreshes the decay clock: off" in out
    line = next(x for x in out.splitlines() if x.startswith(f"update #{pid}"))
    assert "0.38 → 1.00" in line and "rank 13 → 13" in line
    assert "will not move" in out


def test_cli_commit_expect_refuses_a_preview_taken_under_the_other_setting(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = utcnow()
    pid = _knowledge(store, now)
    run_id = _update_run(store, pid)
    store.close()  # the commands open their own connection, as separate programs would
    db = str(tmp_path / "curator.sqlite")
    code, shown, _ = cli(capsys, "--db", db, "commit", str(run_id), "--preview", "--json")
    assert code == 0 and shown["prompt"]["update_refreshes_decay"] is False
    assert cli(capsys, "--db", db, "settings", "update_refreshes_decay=true")[0] == 0
    before = database_dump(db)
    code, out, err = cli(
        capsys, "--db", db, "commit", str(run_id), "--expect", shown["fingerprint"], "--json"
    )
    assert code == 1 and out["exit"] == 1 and "decay clock" in out["error"]
    assert err.startswith("curator: error: ") and err.count("\n") == 1 and "is on now" in err
    assert database_dump(db) == before
    code, fresh, _ = cli(capsys, "--db", db, "commit", str(run_id), "--preview", "--json")
    assert fresh["fingerprint"] != shown["fingerprint"] and fresh["fingerprint"] in err
    (upd,) = fresh["updates"]
    assert upd["rank_after"] == 1 and upd["moves"] is True  # what the commit now does
    code, done, _ = cli(
        capsys, "--db", db, "commit", str(run_id), "--expect", fresh["fingerprint"], "--json"
    )
    assert code == 0 and done["counts"]["UPDATE"] == 1


# -- the property: the preview's after-state is the database's after the commit ------------

# Ages include the future (an older database's dates, ranked by their standing key) and a
# few shared values, importances a few shared ones: exact ties go to the newer date, then
# the lower id, in the preview as in the store.
AGES = st.one_of(
    st.floats(min_value=-30.0, max_value=400.0, allow_nan=False), st.sampled_from([0.0, 1.0, 30.0])
)
IMPORTANCE = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False).map(lambda v: round(v, 3)),
    st.sampled_from([0.0, 0.5, 1.0]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    patterns=st.lists(st.tuples(IMPORTANCE, AGES), min_size=1, max_size=14),
    decisions=st.lists(
        st.tuples(st.booleans(), st.integers(0, 13), IMPORTANCE, st.none() | AGES),
        min_size=1,
        max_size=5,
    ),
    refresh=st.booleans(),
    rate=st.sampled_from([0.95, 0.5, 1.0]) | st.floats(min_value=0.5, max_value=1.0),
    k=st.integers(1, 8),
)
def test_previewed_after_state_is_what_the_commit_writes(
    tmp_path_factory: pytest.TempPathFactory,
    patterns: list[tuple[float, float]],
    decisions: list[tuple[bool, int, float, float | None]],
    refresh: bool,
    rate: float,
    k: int,
) -> None:
    store = Store(tmp_path_factory.mktemp("prop") / "curator.sqlite")
    try:
        now = utcnow()
        ids = [
            make_pattern(
                store,
                f"Pattern {i} keeps its own wording.",
                imp,
                distilled_at=now - timedelta(days=age),
            )
            for i, (imp, age) in enumerate(patterns)
        ]
        make_pattern(store, "A retired rule ranks nowhere.", 1.0, status="retired")
        set_setting(store, "top_k", k)
        set_setting(store, "update_refreshes_decay", refresh)
        set_setting(store, "decay_rate", rate)  # re-keys the patterns, as the window does
        specs = []
        for i, (is_add, target, imp, _age) in enumerate(decisions):
            if is_add:
                specs.append(
                    {"text": f"New rule {i} for the agent.", "action": "ADD", "importance": imp}
                )
            else:
                specs.append(
                    {
                        "text": f"Update {i}.",
                        "action": "UPDATE",
                        "target": ids[target % len(ids)],
                        "importance": imp,
                    }
                )
        run = make_staged_run(store, specs)
        for c, (is_add, _t, _i, age) in zip(run.candidates, decisions, strict=True):
            if is_add and age is not None:  # imported knowledge keeps its own date
                with store.write():
                    Candidate.update(distilled_at=now - timedelta(days=age)).where(
                        Candidate.id == c.id
                    ).execute()
            review.decide(store, c.id, "ACCEPT")
        preview = commit.preview_commit(store, run.id, now=now)
        assert preview.effect is not None
        other = fingerprint(run.id, preview.decisions, refresh_clock=not refresh)
        assert other != preview.fingerprint  # the setting is part of what was shown
        before = {r.id: r for r in active_patterns(store, now=now)}
        for pid, s in preview.effect.patterns.items():
            assert s.rank_before == before[pid].rank
            assert s.effective_before == before[pid].effective
        commit.commit_run(store, run.id, now=now, expect=preview.fingerprint)
        after = {r.id: r for r in active_patterns(store, now=now)}
        for pid, s in preview.effect.patterns.items():
            row = after[pid]
            assert (s.rank_after, s.in_prompt_after) == (row.rank, row.in_top_k)
            assert s.effective_after == row.effective and s.importance_after == row.importance
        created = sorted(pid for pid in after if pid not in before)
        adds = [preview.effect.adds[a.candidate_id] for a in preview.adds]
        assert [after[pid].rank for pid in created] == [s.rank_after for s in adds]
        assert [after[pid].effective for pid in created] == [s.effective_after for s in adds]
        leaving = {s.pattern_id for s in preview.effect.leaving}
        pushed = {pid for pid, r in before.items() if r.in_top_k and not after[pid].in_top_k}
        assert leaving == pushed - set(preview.effect.patterns)
        assert Pattern.select().where(Pattern.status == "active").count() == len(after)
    finally:
        store.close()

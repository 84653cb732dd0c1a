"""Relabelling: the human label overrides the model's, both are kept, batches undo."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.pipeline import labels
from curator.store.db import Store
from curator.store.models import Episode, LabelEvent
from review.conftest import make_episode

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)


def _classified(store: Store, n: int) -> list[int]:
    return [
        make_episode(store, model_label="noise", label="noise", label_by="model") for _ in range(n)
    ]


def test_relabel_sets_the_human_label_and_keeps_the_model_one(store: Store) -> None:
    ids = _classified(store, 3)
    batch = labels.relabel(store, ids[:2], "constitutional", actor="dana")
    for episode_id in ids[:2]:
        e = Episode.get_by_id(episode_id)
        assert (e.human_label, e.label, e.label_by) == ("constitutional", "constitutional", "human")
        assert e.model_label == "noise" and e.label_at is not None
    assert Episode.get_by_id(ids[2]).label == "noise"
    events = list(LabelEvent.select().order_by(LabelEvent.id))
    assert [e.episode_id for e in events] == ids[:2]
    assert {e.batch for e in events} == {batch} and {e.actor for e in events} == {"dana"}
    assert events[0].before["label"] == "noise" and events[0].after["label"] == "constitutional"


def test_clear_falls_back_to_the_model_label(store: Store) -> None:
    ids = _classified(store, 2)
    unlabelled = make_episode(store)
    labels.relabel(store, [*ids, unlabelled], "uncategorized")
    labels.clear_human_label(store, [ids[0], unlabelled])
    e = Episode.get_by_id(ids[0])
    assert (e.human_label, e.label, e.label_by) == (None, "noise", "model")
    u = Episode.get_by_id(unlabelled)
    assert (u.human_label, u.label, u.label_by) == (None, None, None)
    assert Episode.get_by_id(ids[1]).label == "uncategorized"


def test_undo_last_relabel_undoes_whole_batches_newest_first(store: Store) -> None:
    ids = _classified(store, 3)
    labels.relabel(store, ids, "uncategorized")
    labels.relabel(store, ids[:1], "constitutional")
    assert labels.undo_last_relabel(store) == ids[:1]
    assert Episode.get_by_id(ids[0]).label == "uncategorized"
    assert labels.undo_last_relabel(store) == sorted(ids)
    for episode_id in ids:
        e = Episode.get_by_id(episode_id)
        assert (e.human_label, e.label, e.label_by) == (None, "noise", "model")
    assert labels.undo_last_relabel(store) == []


def test_undo_puts_the_current_model_label_in_force(store: Store) -> None:
    (episode_id,) = _classified(store, 1)
    labels.relabel(store, [episode_id], "constitutional")
    # A classification run after the relabel changes the model's label only.
    Episode.update(model_label="uncategorized").where(Episode.id == episode_id).execute()
    labels.undo_last_relabel(store)
    e = Episode.get_by_id(episode_id)
    assert (e.human_label, e.label, e.label_by) == (None, "uncategorized", "model")


def test_bad_input_is_refused_without_changes(store: Store) -> None:
    ids = _classified(store, 1)
    with pytest.raises(CuratorError, match="unknown label"):
        labels.relabel(store, ids, "important")
    with pytest.raises(CuratorError, match="no such episode: 404"):
        labels.relabel(store, [*ids, 404], "noise")
    with pytest.raises(CuratorError, match="no episodes"):
        labels.relabel(store, [], "noise")
    assert LabelEvent.select().count() == 0
    assert Episode.get_by_id(ids[0]).human_label is None


def test_a_large_relabel_reports_progress_and_undoes_in_one_step(store: Store) -> None:
    ids = _classified(store, 2500)
    seen: list[tuple[int, int]] = []
    labels.relabel(store, ids, "uncategorized", progress=lambda d, t: seen.append((d, t)))
    # one progress over the whole relabel (reading, updating, recording, saving): steps,
    # in order, the total only once and last, when saved
    total = 3 * 2500 + 1
    assert seen[-1] == (total, total) and [t for _, t in seen] == [total] * len(seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) >= 4
    assert Episode.select().where(Episode.human_label == "uncategorized").count() == 2500
    undone: list[tuple[int, int]] = []
    assert labels.undo_last_relabel(store, progress=lambda d, t: undone.append((d, t))) == ids
    assert undone[-1] == (total, total)
    assert Episode.select().where(Episode.human_label.is_null()).count() == 2500
    assert {e.label for e in Episode.select()} == {"noise"}


def test_a_large_relabel_and_its_undo_hold_no_per_row_objects_for_the_collector(
    store: Store,
) -> None:
    """Rows of a relabel are plain values: per-row model instances made Python's cyclic
    collector run full collections over them (hundreds of ms with the GIL held, a frozen
    window on 100,000 rows). Counted while the relabel is half done, after a collection."""
    import gc

    ids = _classified(store, 2500)
    gc.collect()
    baseline = len(gc.get_objects())
    growth: list[int] = []

    def progress(done: int, total: int) -> None:
        if done < total:
            gc.collect()
            growth.append(len(gc.get_objects()) - baseline)

    labels.relabel(store, ids, "uncategorized", progress=progress)
    labels.undo_last_relabel(store, progress=progress)

    assert len(growth) >= 2  # mid-relabel and mid-undo, in every phase
    assert all(g < 250 for g in growth), growth  # not one per row
    assert Episode.get_by_id(ids[0]).human_label is None


# -- several reviewers: each undoes their own --------------------------------------------


def _labels(ids: list[int]) -> list[tuple[str | None, str | None]]:
    rows = {e.id: e for e in Episode.select().where(Episode.id.in_(ids))}
    return [(rows[i].human_label, rows[i].label_reviewer) for i in ids]


def test_undo_takes_back_your_own_newest_relabel_passing_over_anothers(store: Store) -> None:
    ids = _classified(store, 2)
    labels.relabel(store, ids[:1], "noise", reviewer="ana")
    labels.relabel(store, ids[1:], "constitutional", reviewer="bob")
    assert labels.undo_last_relabel(store, reviewer="ana") == ids[:1]
    assert _labels(ids) == [(None, None), ("constitutional", "bob")]
    assert labels.undo_last_relabel(store, reviewer="ana") == []  # bob's is not hers
    assert labels.undo_last_relabel(store, reviewer="bob") == ids[1:]
    labels.relabel(store, ids, "noise", reviewer="ana")
    labels.clear_human_label(store, ids[:1], reviewer="bob")  # a clear is its person's too
    with pytest.raises(CuratorError, match="relabelled by bob"):
        labels.undo_last_relabel(store, reviewer="ana")
    assert labels.undo_last_relabel(store, reviewer="bob") == ids[:1]
    assert labels.undo_last_relabel(store, reviewer="ana") == sorted(ids)


def test_an_undo_over_someone_elses_later_relabel_is_refused_in_one_sentence(
    store: Store,
) -> None:
    ids = _classified(store, 2)
    labels.relabel(store, ids, "noise", reviewer="ana")
    labels.relabel(store, ids[1:], "constitutional", reviewer="bob")
    with pytest.raises(CuratorError) as refused:
        labels.undo_last_relabel(store, reviewer="ana")
    said = str(refused.value)
    assert said.startswith(f"episode {ids[1]} was relabelled by bob at ") and "\n" not in said
    assert "nothing was undone" in said
    assert _labels(ids) == [("noise", "ana"), ("constitutional", "bob")]
    assert labels.undo_last_relabel(store, reviewer="bob") == ids[1:]  # theirs first
    assert labels.undo_last_relabel(store, reviewer="ana") == sorted(ids)
    assert _labels(ids) == [(None, None), (None, None)]


def test_a_batch_from_before_reviewers_were_recorded_is_anyones(store: Store) -> None:
    ids = _classified(store, 1)
    labels.relabel(store, ids, "noise", reviewer="ana")
    for event in LabelEvent.select():
        event.after = {k: v for k, v in event.after.items() if k != labels.REVIEWER_KEY}
        event.save()
    assert labels.undo_last_relabel(store, reviewer="bob") == ids


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["ana", "bob"]),
            st.sampled_from(["relabel", "clear", "undo"]),
            st.sets(st.integers(0, 3), min_size=1),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_an_undo_never_changes_a_label_another_reviewer_set(
    store: Store, steps: list[tuple[str, str, set[int]]]
) -> None:
    """Any interleaving of two reviewers' relabels, clears and undos: an undo changes
    only episodes whose newest relabel not undone is the undoer's own, or refuses."""
    ids = _classified(store, 4)
    LabelEvent.delete().execute()
    with store.write():
        Episode.update(human_label=None, label="noise", label_by="model").where(
            Episode.id.in_(ids)
        ).execute()
    for who, action, chosen in steps:
        picked = [ids[i] for i in sorted(chosen)]
        if action == "relabel":
            labels.relabel(store, picked, "constitutional", reviewer=who)
        elif action == "clear":
            labels.clear_human_label(store, picked, reviewer=who)
        else:
            newest = _newest_relabeller(ids)
            before = _labels(ids)
            try:
                undone = labels.undo_last_relabel(store, reviewer=who)
            except CuratorError:
                assert _labels(ids) == before
                continue
            for episode_id, old, new in zip(ids, before, _labels(ids), strict=True):
                if old != new:
                    assert episode_id in undone and newest[episode_id] in (who, None)


def _newest_relabeller(ids: list[int]) -> dict[int, str | None]:
    """Per episode, who made its newest relabel not undone (None: nobody)."""
    found: dict[int, str | None] = dict.fromkeys(ids)
    query = LabelEvent.select().where(LabelEvent.undone == False).order_by(LabelEvent.id)  # noqa: E712
    for event in query:
        found[event.episode_id] = event.after.get(labels.REVIEWER_KEY)
    return found


def test_the_command_line_counts_an_episode_given_twice_once(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from curator.cli import main

    episode = make_episode(store)
    store.close()
    thrice = [str(episode)] * 3
    assert main(["--db", store.location, "label", *thrice, "noise", "--no-relearn"]) == 0
    assert capsys.readouterr().out.startswith("labelled 1 episode noise")
    assert main(["--db", store.location, "--json", "label", *thrice, "--clear"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == [episode]

"""The learner's summary counts what the person did, and says which labels it cannot use.

The classifier learns only from human labels whose episodes have features from the
current model; a label given before any classify run used to read "0 constitutional,
0 noise, 0 uncategorized" right after the person labelled. The summary now names every
human label given and why the unusable ones wait. No model is needed: the demo data
without a classify run is exactly that case.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.pipeline.labels import relabel, undo_last_relabel
from curator.pipeline.learn import MIN_PER_CLASS, LearnReport, relearn
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import LABELS, Episode


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("learn-summary") / "demo.sqlite"
    store = Store(path)
    create_demo(store)
    store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


def _copy(demo_file: Path, folder: Path) -> Store:
    target = folder / "demo.sqlite"
    target.write_bytes(demo_file.read_bytes())
    return Store(target)


@pytest.fixture
def store(demo_file: Path, tmp_path: Path) -> Iterator[Store]:
    db = _copy(demo_file, tmp_path)
    yield db
    db.close()


def _first_ids(n: int) -> list[int]:
    return [int(e.id) for e in Episode.select(Episode.id).order_by(Episode.id).limit(n)]


def test_four_labels_before_any_classify_run_are_counted_and_explained(store: Store) -> None:
    ids = _first_ids(4)
    relabel(store, ids[:2], "noise")
    relabel(store, ids[2:3], "constitutional")
    relabel(store, ids[3:], "uncategorized")
    report = relearn(store)
    text = report.summary()
    assert not report.trained
    assert "4 given (1 constitutional, 2 noise, 1 uncategorized)" in text
    assert "4 human labels not usable yet" in text
    assert "no classify run" in text  # why
    assert report.unusable == {"constitutional": 1, "noise": 2, "uncategorized": 1}


def test_after_an_undo_the_remaining_labels_are_counted(store: Store) -> None:
    ids = _first_ids(4)
    relabel(store, ids[:3], "noise")
    relabel(store, ids[3:], "constitutional")
    undo_last_relabel(store)
    text = relearn(store).summary()
    assert "3 given (0 constitutional, 3 noise, 0 uncategorized)" in text


def test_no_labels_at_all_says_so_without_an_unusable_part(store: Store) -> None:
    text = relearn(store).summary()
    assert "0 given" in text and "not usable" not in text
    assert f"{MIN_PER_CLASS} per label needed" in text


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    labels=st.lists(st.sampled_from(LABELS), min_size=0, max_size=12),
    undo=st.booleans(),
)
def test_the_summary_always_adds_up_to_what_the_person_did(
    demo_file: Path, tmp_path_factory: pytest.TempPathFactory, labels: list[str], undo: bool
) -> None:
    """Given = usable + unusable, per label and in total, and the given counts are the
    human labels in the database, whatever was labelled and undone."""
    db = _copy(demo_file, tmp_path_factory.mktemp("prop"))
    try:
        ids = _first_ids(len(labels))
        for episode_id, label in zip(ids, labels, strict=True):
            relabel(db, [episode_id], label)
        if undo and labels:
            undo_last_relabel(db)
        report = relearn(db)
        in_db = {k: Episode.select().where(Episode.human_label == k).count() for k in LABELS}
        assert {k: report.given.get(k, 0) for k in LABELS} == in_db
        for k in LABELS:
            assert report.given.get(k, 0) == report.human_labels.get(k, 0) + report.unusable.get(
                k, 0
            )
        text = report.summary()
        total = sum(in_db.values())
        assert re.search(rf"\b{total} given\b", text)
        if total and not report.trained:
            assert "not usable yet" in text
    finally:
        db.close()


def test_large_counts_are_written_as_every_other_count_in_the_window() -> None:
    """A relabel of 120,203 episodes was announced as "120,203" and then counted as
    "120203 given" in the same status line."""
    waiting = LearnReport(
        trained=False,
        human_labels={},
        predicted=0,
        changed=0,
        cv_accuracy=None,
        cv_labels=0,
        model_sha256="",
        given={"uncategorized": 120_203, "noise": 1_000},
    )
    assert waiting.summary().startswith(
        "not enough human labels to learn yet: 121,203 given "
        "(0 constitutional, 1,000 noise, 120,203 uncategorized), 0 usable"
    )
    assert "121,203 human labels not usable yet (1,000 noise, 120,203 uncategorized)" in (
        waiting.summary()
    )
    learned = LearnReport(
        trained=True,
        human_labels={"constitutional": 3_000, "noise": 4_000, "uncategorized": 5_000},
        predicted=250_000,
        changed=12_345,
        cv_accuracy=0.9,
        cv_labels=12_000,
        model_sha256="ab",
        given={"constitutional": 3_000, "noise": 4_000, "uncategorized": 5_000},
    )
    assert learned.summary() == (
        "learned from 12,000 human labels (3,000 constitutional, 4,000 noise, 5,000 "
        "uncategorized), cross-validated accuracy 0.90; 250,000 episodes predicted, "
        "12,345 changed"
    )

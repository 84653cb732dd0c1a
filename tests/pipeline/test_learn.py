"""Learning from the reviewer, on the real demo model: features are computed once and
kept, the classifier retrains deterministically, and relabels change its predictions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from curator.cli import main
from curator.pipeline.calibrate import CONTENT_FREE_INPUTS, label_bias
from curator.pipeline.classify import classify_episodes
from curator.pipeline.features import prepare_features
from curator.pipeline.labels import clear_human_label, relabel
from curator.pipeline.learn import (
    MIN_PER_CLASS,
    current_model_sha256,
    fit,
    human_learning_curve,
    load_features,
    relearn,
    uncertain_episode_ids,
)
from curator.pipeline.progress import TaskState
from curator.store.db import Store
from curator.store.models import LABELS, Episode, EpisodeEmbedding, LabelBias

# Human labels for six of the 20 classified demo episodes (3 per label; what a person
# pressing C/N/U would give them), by the demo's own ids.
FIRST = {
    "noise": ["ep-0002", "ep-0004", "ep-0005"],
    "uncategorized": ["ep-0007", "ep-0010", "ep-0014"],
    "constitutional": ["ep-0003", "ep-0015", "ep-0016"],
}


@pytest.fixture
def store(classified_demo, tmp_path: Path):
    db = Store(classified_demo.copy_to(tmp_path))
    yield db
    db.close()


def _ids(external: list[str]) -> list[int]:
    return [int(Episode.get(Episode.external_id == e).id) for e in external]


def _label(store: Store, labels: dict[str, list[str]]) -> None:
    for label, external in labels.items():
        relabel(store, _ids(external), label)


def _predictions(store: Store) -> dict[int, tuple[str, str, float]]:
    return {
        int(e.id): (e.predicted_label, e.predicted_by, e.predicted_confidence)
        for e in Episode.select().where(
            Episode.human_label.is_null() & Episode.predicted_label.is_null(False)
        )
    }


def test_classify_stores_raw_and_calibrated_scores_and_embeddings(store, classified_demo) -> None:
    sha = current_model_sha256(store)
    assert sha
    rows = list(Episode.select().where(Episode.model_label.is_null(False)))
    assert len(rows) == 20
    for row in rows:
        assert set(row.model_scores) == set(LABELS) == set(row.calibrated_scores)
        assert sum(row.calibrated_scores.values()) == pytest.approx(1.0)
        assert row.scores_model_sha256 == sha
        assert row.predicted_by == "model"  # calibration is off by default (README)
        assert row.label == row.predicted_label == row.model_label
    assert EpisodeEmbedding.select().where(EpisodeEmbedding.model_sha256 == sha).count() == 20
    bias = LabelBias.get(LabelBias.model_sha256 == sha)
    assert bias.inputs == list(CONTENT_FREE_INPUTS)
    assert sum(bias.probabilities.values()) == pytest.approx(1.0)


def test_embeddings_and_bias_are_computed_once_per_episode_and_model(store, demo_backend) -> None:
    sha = current_model_sha256(store)
    ids = [int(e.id) for e in Episode.select(Episode.id).where(Episode.model_label.is_null(False))]
    # The embedder is made on a backend's first embedding: here only if this worker built
    # the classified demo database (another pytest-xdist worker may have), so make it now.
    demo_backend.embed(["an embedding made before the count starts"])
    embedder = demo_backend._embedder
    before = embedder.evaluations
    bias_row = LabelBias.get(LabelBias.model_sha256 == sha)
    prefix_calls = []
    original = demo_backend.classify

    def counting_classify(*args, **kwargs):
        prefix_calls.append(args[1])
        return original(*args, **kwargs)

    demo_backend.classify = counting_classify  # records calls; the real model answers
    try:
        bias = label_bias(
            store,
            demo_backend,
            _prefix(store, demo_backend),
            answer_prefix=_answer(),
            model_sha256=sha,
        )
        counts = prepare_features(
            store,
            demo_backend,
            TaskState(),
            ids,
            prefix=_prefix(store, demo_backend),
            answer_prefix=_answer(),
            bias=bias,
            sha=sha,
        )
    finally:
        del demo_backend.classify
    assert bias == pytest.approx(bias_row.probabilities)
    assert prefix_calls == []  # neither the bias nor any episode was scored again
    assert counts == {"scored": 0, "embedded": 0}
    assert embedder.evaluations == before  # no second embedding of the same episode

    # resumable: a missing embedding (a run killed half-way) is the only one computed
    EpisodeEmbedding.delete().where(EpisodeEmbedding.episode == ids[3]).execute()
    counts = prepare_features(
        store,
        demo_backend,
        TaskState(),
        ids,
        prefix=_prefix(store, demo_backend),
        answer_prefix=_answer(),
        bias=bias,
        sha=sha,
    )
    assert counts == {"scored": 0, "embedded": 1}
    assert embedder.evaluations == before + 1


def _prefix(store: Store, backend) -> str:
    from curator.llm.prompts import load_prompt, numbered
    from curator.store.identity import current_identity

    identity = current_identity(store)
    system, user = load_prompt("classify").render(
        {"axioms": numbered(list(identity.axioms)), "identity": identity.identity_text}
    )
    return backend.chat_prefix(system, user)


def _answer() -> str:
    from curator.llm.prompts import load_prompt

    return load_prompt("classify").assistant


def test_no_learning_below_the_minimum_per_label(store) -> None:
    few = {k: v[: MIN_PER_CLASS - 1] for k, v in FIRST.items()}
    _label(store, few)
    report = relearn(store)
    assert not report.trained and report.predicted == 0
    assert "not enough human labels" in report.summary()
    assert all(by == "model" for _, by, _ in _predictions(store).values())


def test_retraining_is_deterministic(store) -> None:
    _label(store, FIRST)
    first = relearn(store)
    once = _predictions(store)
    second = relearn(store)
    assert first.trained and second.trained
    assert _predictions(store) == once
    assert second.changed == 0

    _, features, human = load_features(store, first.model_sha256)
    rows = [i for i, h in enumerate(human) if h is not None]
    y = [str(human[i]) for i in rows]
    a, b = fit(features[rows], y), fit(features[rows], y)
    assert np.array_equal(a[-1].coef_, b[-1].coef_)

    # the learning curve on the human labels: 2 per class drawn, the third one tested
    points = human_learning_curve(store, per_class=(2, 3), seeds=(0, 1))
    assert [(p.per_class, p.labels) for p in points] == [(2, 6)]  # 3/class leaves no test
    assert 0.0 <= points[0].accuracy <= 1.0
    assert points == human_learning_curve(store, per_class=(2, 3), seeds=(0, 1))


def test_relabel_retrain_changes_predictions_end_to_end(store, demo_backend) -> None:
    _label(store, FIRST)
    report = relearn(store)
    assert report.trained and report.predicted == 20 - 9
    assert report.cv_labels == 9 and report.cv_accuracy is not None
    learned = _predictions(store)
    assert {by for _, by, _ in learned.values()} == {"learned"}
    shown = {int(e.id): e.label for e in Episode.select().where(Episode.id.in_(list(learned)))}
    assert shown == {i: p[0] for i, p in learned.items()}  # the label shown is the learned one

    # the person changes their mind: what they called noise is uncategorized and back
    swapped = {
        "noise": FIRST["uncategorized"],
        "uncategorized": FIRST["noise"],
        "constitutional": FIRST["constitutional"],
    }
    _label(store, swapped)
    again = relearn(store)
    assert again.changed > 0
    after = _predictions(store)
    assert any(after[i][0] != learned[i][0] for i in learned)

    # a new classify run predicts with the learned classifier as well
    result = classify_episodes(store, demo_backend, TaskState(), limit=2)
    assert result.status == "done"
    assert result.counts["learned"] == 20 - 9 + 2

    # clearing a human label puts the predicted label back in force, not the raw one
    cleared = _ids(FIRST["noise"][:1])
    clear_human_label(store, cleared)
    episode = Episode.get_by_id(cleared[0])
    assert episode.label == episode.predicted_label and episode.label_by == "model"
    # two "uncategorized" labels are left: too few to learn, the scores decide again
    fallback = relearn(store)
    assert not fallback.trained
    assert {by for _, by, _ in _predictions(store).values()} == {"model"}
    episode = Episode.get_by_id(cleared[0])
    assert episode.label == episode.predicted_label == episode.model_label


def test_uncertain_queue_order_and_cli(store, tmp_path: Path, capsys) -> None:
    rows = list(Episode.select().where(Episode.predicted_margin.is_null(False)))
    expected = [int(e.id) for e in sorted(rows, key=lambda e: (e.predicted_margin, e.id))]
    assert uncertain_episode_ids(store) == expected
    relabel(store, [expected[0], expected[2]], "noise")  # labelled episodes leave the queue
    queue = [i for i in expected if i not in (expected[0], expected[2])]
    assert uncertain_episode_ids(store) == queue
    margins = [Episode.get_by_id(i).predicted_margin for i in queue]
    assert margins == sorted(margins)

    store.close()
    code = main(["--db", str(store.path), "label", "--next-uncertain", "3", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    listed = json.loads(out)["episodes"]
    assert [q["id"] for q in listed] == queue[:3]
    assert all(set(q) >= {"predicted_label", "predicted_by", "margin"} for q in listed)


def test_classify_relearn_cli(store, capsys) -> None:
    _label(store, FIRST)
    store.close()
    code = main(["--db", str(store.path), "classify", "--relearn", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["trained"] and doc["predicted"] == 11


def _cli_label(store: Store, capsys, *args: str) -> dict:
    assert main(["--db", str(store.path), "label", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_relabel_retrains_and_changes_predictions(store, capsys) -> None:
    """`curator label` retrains like the window does: relabel -> retrain -> new prediction."""
    store.close()
    docs = [
        _cli_label(store, capsys, *map(str, _ids(external)), label)
        for label, external in FIRST.items()
    ]
    assert [d["relearn"]["trained"] for d in docs] == [False, False, True]
    assert docs[-1]["relearn"]["predicted"] == 20 - 9
    learned = _predictions(store)
    assert {by for _, by, _ in learned.values()} == {"learned"}

    # the person changes their mind about noise and uncategorized, in two commands
    _cli_label(store, capsys, *map(str, _ids(FIRST["noise"])), "uncategorized")
    doc = _cli_label(store, capsys, *map(str, _ids(FIRST["uncategorized"])), "noise")
    assert doc["relearn"]["trained"] and doc["relearn"]["changed"] > 0
    after = _predictions(store)
    assert any(after[i][0] != learned[i][0] for i in learned)

    # --no-relearn leaves the predictions as they were; undo retrains again
    doc = _cli_label(store, capsys, *map(str, _ids(FIRST["noise"])), "noise", "--no-relearn")
    assert "relearn" not in doc
    assert _predictions(store) == after
    doc = _cli_label(store, capsys, "--undo")
    assert doc["undone"] and doc["relearn"]["trained"]
    assert _predictions(store) == after  # back to the labels `after` was learned from


def test_cli_relabel_stands_when_the_retrain_fails(store, capsys) -> None:
    """A damaged embedding (a truncated BLOB) breaks the retrain, not the relabel."""
    victim = _ids(["ep-0001"])[0]
    with store.write():
        row = EpisodeEmbedding.get(EpisodeEmbedding.episode == victim)
        EpisodeEmbedding.update(vector=bytes(row.vector)[:16]).where(
            EpisodeEmbedding.episode == victim
        ).execute()
    store.close()
    ids = _ids(FIRST["noise"])
    doc = _cli_label(store, capsys, *map(str, ids), "noise")
    assert "relearn" not in doc and doc["relearn_error"]
    assert {Episode.get_by_id(i).human_label for i in ids} == {"noise"}

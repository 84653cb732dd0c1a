"""The learning figures of Insights: the curve and the label sources, on a real database.

Checked against :mod:`curator.pipeline.learn` called directly on the same stored rows, so
the report shows what the classifier does, not a second implementation of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.cli import main
from curator.core.jsonsafe import dumps
from curator.pipeline import learn
from curator.pipeline.insights import CURVE_SEEDS, compute_insights
from curator.store.db import Store
from tests.insights.learning_data import SHA, build_learning

HUMANS = {"constitutional": 8, "noise": 9, "uncategorized": 7}


@pytest.fixture
def learning_store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "learning.sqlite")
    try:
        yield store
    finally:
        store.close()


def test_curve_and_sources_match_the_classifier(learning_store: Store) -> None:
    store = learning_store
    build_learning(store, HUMANS)
    ins = compute_insights(store)

    assert learn.current_model_sha256(store) == SHA
    _, features, human = learn.load_features(store, SHA)
    features = learn.center_embeddings(features)  # what the classifier in force sees
    rows = [i for i, h in enumerate(human) if h is not None]
    x, y = features[rows], [str(human[i]) for i in rows]
    pool = features[[i for i, h in enumerate(human) if h is None]]
    expected = learn.learning_curve(x, y, seeds=CURVE_SEEDS)
    assert [p.per_class for p in expected] == [3, 5]  # 10 and 20 leave a label no test row
    assert ins.learning_curve == [
        {
            "per_class": p.per_class,
            "labels": p.labels,
            "accuracy": pytest.approx(p.accuracy),
            "kappa": pytest.approx(p.kappa),
            "macro_f1": pytest.approx(p.macro_f1),
        }
        for p in expected
    ]
    assert ins.learning_curve[0]["labels"] == 9

    sources = ins.label_sources
    assert sources is not None
    assert sources.decided == {"human": 24, "learned": 5, "calibrated": 7, "model": 0}
    # a person's label wins over the prediction, which stays on record (here: calibrated)
    assert sources.predicted_by == {"learned": 5, "calibrated": 31, "model": 0}
    assert sources.human_labels == 24
    assert sources.per_class == HUMANS
    assert sources.needed_for_curve == {"constitutional": 0, "noise": 0, "uncategorized": 0}
    assert sources.cv_accuracy == pytest.approx(learn.cross_validated_accuracy(x, y, pool=pool))
    assert sources.cv_labels == 24
    assert sources.curve_hint() == ""
    assert sources.next_point_hint() == (
        "Label 3 more constitutional, 2 more noise and 4 more uncategorized episodes "
        "for the point at 10 per label."
    )

    doc = json.loads(dumps(ins.to_json()))
    assert doc["label_sources"]["decided"]["learned"] == 5
    assert doc["label_sources"]["cv_labels"] == 24
    assert [p["per_class"] for p in doc["learning_curve"]] == [3, 5]


def test_too_few_labels_say_how_many_more(learning_store: Store) -> None:
    build_learning(learning_store, {"constitutional": 1, "noise": 3, "uncategorized": 5})
    ins = compute_insights(learning_store)
    assert ins.learning_curve == []
    assert ins.label_sources is not None
    assert ins.label_sources.needed_for_curve == {
        "constitutional": 3,
        "noise": 1,
        "uncategorized": 0,
    }
    assert ins.label_sources.cv_accuracy is None and ins.label_sources.cv_labels == 0
    assert ins.label_sources.next_point_hint() == ""  # the first point is curve_hint's
    assert json.loads(dumps(ins.to_json()))["learning_curve"] == []


def test_without_embeddings_the_labels_count_but_nothing_is_learned(
    learning_store: Store,
) -> None:
    from curator.store.models import EpisodeEmbedding

    build_learning(learning_store, HUMANS)
    EpisodeEmbedding.delete().execute()
    ins = compute_insights(learning_store)
    assert ins.learning_curve == []
    assert ins.label_sources is not None
    assert ins.label_sources.human_labels == 24
    assert ins.label_sources.per_class == {"constitutional": 0, "noise": 0, "uncategorized": 0}


def test_cli_json_and_text(learning_store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    build_learning(learning_store, HUMANS)
    path = str(learning_store.path)
    assert main(["--db", path, "insights", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(dumps(compute_insights(learning_store).to_json()))
    assert printed["learning_curve"] == expected["learning_curve"]
    assert printed["label_sources"] == expected["label_sources"]
    assert len(printed["learning_curve"]) == 2

    assert main(["--db", path, "insights"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("Learning from the reviewer") :]
    first = expected["learning_curve"][0]
    assert f"{first['accuracy']:.3f}" in block
    assert "human 24, learned 5, calibrated 7, model 0" in block
    assert "on 24 human labels" in block
    assert "for the point at 10 per label" in block

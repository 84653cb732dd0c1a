"""Replay with the real demo model: no stored label changes; a replay run with its trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.cli import main
from curator.errors import CuratorError
from curator.pipeline.insights import compute_insights
from curator.pipeline.labels import relabel
from curator.pipeline.progress import TaskState
from curator.pipeline.replay import NO_GOLD, replay_labels
from curator.store.db import Store

pytestmark = pytest.mark.llm

EPISODE_COLUMNS = (
    "id, model_label, model_confidence, model_run_id, human_label, label, label_by, label_at"
)


def _labelled(classified_demo, tmp_path: Path) -> Store:
    store = Store(classified_demo.copy_to(tmp_path))
    ids = [
        int(r[0])
        for r in store.execute("SELECT id FROM episode WHERE model_label IS NOT NULL ORDER BY id")
    ]
    relabel(store, ids[:4], "noise")
    relabel(store, ids[4:8], "constitutional")
    return store


def test_replay_touches_no_label_and_matches_the_same_model(
    classified_demo, demo_backend, tmp_path: Path
) -> None:
    store = _labelled(classified_demo, tmp_path)
    try:
        before = store.execute(f"SELECT {EPISODE_COLUMNS} FROM episode ORDER BY id")
        result = replay_labels(store, demo_backend, TaskState())
        assert store.execute(f"SELECT {EPISODE_COLUMNS} FROM episode ORDER BY id") == before
        assert result.status == "done" and result.replay.total == 8
        # same model, same prompt, deterministic scoring: the replay reproduces the labels
        assert result.replay.counts.tolist() == result.current.counts.tolist()
        kind, status = store.execute("SELECT kind, status FROM run WHERE id = ?", (result.run_id,))[
            0
        ]
        assert (kind, status) == ("replay", "done")
        steps = store.execute("SELECT count(*) FROM trace_step WHERE run_id = ?", (result.run_id,))
        assert steps[0][0] == 8
        series = compute_insights(store).series
        assert [p.kind for p in series if p.run_id == result.run_id] == ["replay"]
    finally:
        store.close()


def test_replay_cli_json(
    classified_demo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _labelled(classified_demo, tmp_path)
    path = store.path
    store.close()
    code = main(
        ["--db", str(path), "replay", "--limit", "3", "--skip", "0.9", "--update", "0.6", "--json"]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["replay"]["total"] == 3 and doc["current_model"]["total"] == 3
    assert doc["gate"]["skip"] == 0.9 and doc["gate"]["candidates"] == 0


def test_replay_without_a_gold_set_is_refused_before_a_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No human label: exit 2 and no run, before the model (here: a file that is not
    there, which a load would have named instead); the gate's part needs none."""
    db = str(tmp_path / "c.sqlite")
    assert main(["--db", db, "demo"]) == 0
    capsys.readouterr()
    model = str(tmp_path / "no-such-model.gguf")
    assert main(["--db", db, "--json", "replay", "--model", model]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"] == NO_GOLD and "no-such-model" not in err
    assert main(["--db", db, "--json", "replay", "--model", model, "--skip", "0.9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["replay"] is None and doc["gate"]["skip"] == 0.9
    store = Store(Path(db))
    try:
        assert store.execute("SELECT count(*) FROM run WHERE kind = 'replay'")[0][0] == 0
        with pytest.raises(CuratorError, match="nothing to replay"):
            replay_labels(store, None, TaskState())  # type: ignore[arg-type]  # never reached
    finally:
        store.close()

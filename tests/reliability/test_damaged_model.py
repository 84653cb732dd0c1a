"""A damaged model never writes labels or candidates, and --json output is always JSON.

Before the fix, a model with NaN weights loaded fine, ``classify`` stored the first label
for every episode with confidence NULL, marked the run ``done`` and exited 0; and
``curator --json run N`` printed a bare ``NaN`` (invalid JSON).
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from curator.core.jsonsafe import finite_json
from curator.store.db import Store
from curator.store.demo import create_demo
from reliability.damaged_models import nan_weights_copy
from reliability.harness import Expect, row_counts, run_case, run_curator

NON_FINITE = r"non-finite .*damaged"


def _strict_loads(text: str) -> Any:
    """json.loads that rejects NaN/Infinity (Python's json accepts them by default)."""

    def refuse(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def nan_model(tmp_path_factory: pytest.TempPathFactory, demo_model: Path) -> Path:
    return nan_weights_copy(demo_model, tmp_path_factory.mktemp("nan") / "nan weights.gguf")


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    store = Store(path)
    try:
        create_demo(store)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return path


def _query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


def test_classify_with_nan_weights_fails_the_run_and_writes_no_label(
    tmp_path: Path, nan_model: Path, demo_template: Path
) -> None:
    db = tmp_path / "c.sqlite"
    shutil.copyfile(demo_template, db)
    labelled = _query(db, "SELECT count(*) FROM episode WHERE model_label IS NOT NULL")
    result = run_case(
        ["--db", str(db), "classify", "--model", str(nan_model), "--limit", "3"],
        Expect(code=2, message=NON_FINITE, db=db),
    )
    assert "nan%" not in result.stderr
    assert _query(db, "SELECT kind, status FROM run") == [("classify", "failed")]
    assert _query(db, "SELECT count(*) FROM episode WHERE model_label IS NOT NULL") == labelled
    assert _query(
        db, "SELECT count(*) FROM episode WHERE model_confidence IS NULL AND label_by = 'model'"
    ) == [(0,)]
    reason = _query(db, "SELECT status_reason FROM run")[0][0]
    assert "non-finite" in reason


def test_distill_with_nan_weights_fails_the_run_and_stages_nothing(
    tmp_path: Path, nan_model: Path, classified_demo: Any
) -> None:
    db = classified_demo.copy_to(tmp_path)
    before = row_counts(db)
    result = run_case(
        ["--db", str(db), "distill", "--model", str(nan_model), "--limit", "1"],
        Expect(code=2, message=NON_FINITE, db=db),
    )
    assert "Traceback" not in result.stderr
    after = row_counts(db)
    assert after["candidate"] == before["candidate"]
    assert after["run"] == before["run"] + 1
    assert _query(db, "SELECT status FROM run ORDER BY id DESC LIMIT 1") == [("failed",)]


def test_json_output_never_contains_nan(tmp_path: Path, demo_template: Path) -> None:
    """A run written by an older version (NaN confidences in its trace) prints valid JSON."""
    db = tmp_path / "old.sqlite"
    shutil.copyfile(demo_template, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO run (kind, status, status_reason, started_at, model_path, model_name,"
            " model_sha256, model_metadata, params, prompts, stats) VALUES ('classify', 'done',"
            " '', '2026-01-01 00:00:00', 'm.gguf', 'm', '', '{}', '{}', '{}',"
            ' \'{"classified": 1, "rate": NaN, "peak": Infinity}\')'
        )
        run_id = conn.execute("SELECT max(id) FROM run").fetchone()[0]
        conn.execute(
            "INSERT INTO trace_step (run_id, step, batch, category, prompt_name, prompt_sha256,"
            " raw_output, parsed, tokens_in, tokens_out, cached_tokens, seconds, attempt, error,"
            " created_at) VALUES (?, 'classify', 0, '', 'classify', '', 'constitutional',"
            " '{\"confidence\": NaN, \"probabilities\": [NaN, -Infinity]}', 1, 0, 0, 0.1, 1, '',"
            " '2026-01-01 00:00:00')",
            (run_id,),
        )
    conn.close()
    for argv in (["--json", "run", str(run_id)], ["--json", "runs"]):
        result = run_curator(["--db", str(db), *argv])
        assert result.code == 0, result.stderr
        doc = _strict_loads(result.stdout)
        assert doc is not None
    doc = _strict_loads(run_curator(["--db", str(db), "--json", "run", str(run_id)]).stdout)
    assert doc["stats"]["rate"] is None and doc["stats"]["peak"] is None
    assert doc["trace"][0]["parsed"] == {"confidence": None, "probabilities": [None, None]}


def test_finite_json_replaces_every_non_finite_float() -> None:
    doc = {"a": math.nan, "b": [math.inf, 1.5, (-math.inf, "x")], "c": {"d": 0.0}, "e": 3}
    assert finite_json(doc) == {"a": None, "b": [None, 1.5, [None, "x"]], "c": {"d": 0.0}, "e": 3}
    json.dumps(finite_json(doc), allow_nan=False)  # must not raise

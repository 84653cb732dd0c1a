"""`curator distill` end to end on a classified demo database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.cli import main


@pytest.mark.llm
def test_distill_command_stages_a_run(
    classified_demo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(classified_demo.copy_to(tmp_path))
    code = main(["--db", db, "distill", "--category", "constitutional", "--limit", "1", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)  # stdout holds exactly one JSON document
    assert result["status"] == "staged"
    assert result["counts"]["episodes"] >= 1 and result["counts"]["batches"] >= 1
    assert "extract" in err and "model:" in err

    assert main(["--db", db, "run", str(result["run_id"]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = [t["step"] for t in doc["trace"]]
    assert steps[:2] == ["extract", "refine"]
    assert doc["params"]["categories"] == ["constitutional"]
    assert doc["stats"]["episode_ids"]
    assert len(doc["candidates"]) == result["counts"]["candidates"]


def test_noise_is_not_a_distill_category(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["--db", str(tmp_path / "c.sqlite"), "distill", "--category", "noise"])
    assert caught.value.code == 2
    assert "invalid choice" in capsys.readouterr().err

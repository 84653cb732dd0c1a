"""``curator insights``: the same figures as compute_insights, strict JSON, clear errors."""

from __future__ import annotations

import json

import pytest

from curator.cli import main
from curator.core.jsonsafe import dumps
from curator.pipeline.insights import compute_insights
from curator.store.db import Store
from tests.insights.conftest import Reviewed


def test_json_is_the_pane_document(
    reviewed: tuple[Store, Reviewed], capsys: pytest.CaptureFixture[str]
) -> None:
    store, r = reviewed
    assert main(["--db", str(r.path), "insights", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = json.loads(dumps(compute_insights(store).to_json()))
    # the forecast is computed at "now", which moves between the two calls
    printed.pop("forecast")
    expected.pop("forecast")
    assert printed == expected
    assert printed["labels"]["counts"] == [[4, 1, 0], [0, 5, 2], [1, 0, 3]]


def test_run_filter_and_text_report(
    reviewed: tuple[Store, Reviewed], capsys: pytest.CaptureFixture[str]
) -> None:
    _, r = reviewed
    assert main(["--db", str(r.path), "insights", "--run", str(r.distill_run)]) == 0
    out = capsys.readouterr().out
    assert "Gate proposals vs review decisions (6 pairs" in out
    assert "Labels, model vs human (0 pairs" in out
    assert "UPDATE -> ADD" in out


def test_unknown_run_is_one_line(
    reviewed: tuple[Store, Reviewed], capsys: pytest.CaptureFixture[str]
) -> None:
    _, r = reviewed
    assert main(["--db", str(r.path), "insights", "--run", "999"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "curator: error: there is no run 999"


def test_replay_with_an_unknown_prompt_version_is_one_line(
    reviewed: tuple[Store, Reviewed], capsys: pytest.CaptureFixture[str]
) -> None:
    _, r = reviewed
    code = main(["--db", str(r.path), "replay", "--prompt-version", "99"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "curator: error: prompt 'classify' has no version 99"
    )


def test_replay_rejects_crossed_thresholds(
    reviewed: tuple[Store, Reviewed], capsys: pytest.CaptureFixture[str]
) -> None:
    _, r = reviewed
    assert main(["--db", str(r.path), "replay", "--skip", "0.5", "--update", "0.8"]) == 2
    assert "--update < --skip" in capsys.readouterr().err

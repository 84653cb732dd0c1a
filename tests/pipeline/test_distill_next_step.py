"""`curator distill` suggests the next step that fits what happened.

Before, a run that staged no candidate still ended with "review it with: curator review
2", a review with nothing in it. Now it says that nothing came out and what the commit of
that empty run is for (it marks the episodes distilled, so they are not tried again).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curator.cli import main
from curator.cli.pipeline import distill_outcome
from curator.pipeline.runlog import RunResult


@pytest.mark.llm
def test_a_run_without_candidates_is_not_sent_to_review(
    classified_demo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(classified_demo.copy_to(tmp_path))
    # The quality gate drops every text shorter than 10,000 characters: no candidate
    # (so the texts may be short).
    assert main(["--db", db, "settings", "min_chars=10000", "max_output_tokens=16"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "distill", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    first, *rest = out.splitlines()
    assert first.startswith("run ") and " staged: staged 0 candidates" in first, out
    assert "curator review" not in out
    run_id = int(first.split()[1])
    assert rest == [
        f"nothing to review: no candidate came out of 2 episodes; "
        f"`curator commit {run_id}` marks them distilled, not to be tried again"
    ]
    # The advice holds: the commit of the empty run marks both episodes distilled.
    assert main(["--db", db, "commit", str(run_id), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == run_id
    conn = sqlite3.connect(db)
    try:
        (distilled,) = conn.execute(
            "SELECT count(*) FROM episode WHERE distilled_run_id = ?", (run_id,)
        ).fetchone()
    finally:
        conn.close()
    assert distilled == 2


COUNTS = st.fixed_dictionaries(
    {
        "candidates": st.integers(0, 50),
        "episodes": st.integers(0, 50),
        "failed_batches": st.integers(0, 5),
    }
)


@given(
    status=st.sampled_from(["staged", "done", "cancelled", "failed"]),
    counts=COUNTS,
    run_id=st.integers(1, 10_000),
)
def test_the_suggestion_always_fits_the_outcome(
    status: str, counts: dict[str, int], run_id: int
) -> None:
    """Review only what has candidates; commit an empty run only to mark episodes that
    were read; otherwise point at the trace, never at an empty review."""
    text = distill_outcome(RunResult(run_id, status, counts, "msg"))
    first, *rest = text.splitlines()
    assert first == f"run {run_id} {status}: msg"
    suggests_review = f"curator review {run_id}" in text
    suggests_commit = f"curator commit {run_id}" in text
    assert suggests_review == (status == "staged" and counts["candidates"] > 0)
    assert suggests_commit == (
        status == "staged" and counts["candidates"] == 0 and counts["episodes"] > 0
    )
    if status == "staged" and counts["candidates"] == 0 and counts["episodes"] == 0:
        assert rest == [f"nothing to review; the trace says why: curator run {run_id}"]
    if status != "staged":
        assert rest == []

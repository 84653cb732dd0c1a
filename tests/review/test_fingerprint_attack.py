"""Attacks on ``commit --expect``: every way the state can move between preview and commit.

The preview's fingerprint promises "exactly this state, or nothing". These tests move the
state in ways the first round did not list (a target retired from Knowledge, the run
committed or cancelled meanwhile, two programs committing the same preview at once, a
fingerprint pasted with other case or blanks) and check the promise on a real SQLite file
through the real command line; the race uses two real processes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.pipeline.fingerprint import FINGERPRINT_CHARS, parse_fingerprint
from curator.store.db import Store
from curator.store.models import Pattern, Run
from review.conftest import (
    REPO_ROOT,
    candidate_ids,
    cli,
    database_dump,
    make_pattern,
    make_staged_run,
    python_env,
)

TEXTS = (
    "Summaries for the design team should include one screenshot per change.",
    "Database migrations are rehearsed on a copy of production before release.",
)


@pytest.fixture
def staged(store: Store) -> tuple[str, int, list[int], int]:
    """A run with one UPDATE of a stored pattern and one ADD (path, run, candidates, pattern)."""
    pattern = make_pattern(store, "Incident reports name the first alert that fired.", 0.6)
    run = make_staged_run(
        store,
        [
            {"text": TEXTS[0] + " Also the time.", "action": "UPDATE", "target": pattern},
            {"text": TEXTS[1], "action": "ADD"},
        ],
    )
    ids = candidate_ids(run)
    path = str(store.path)
    store.close()
    return path, run.id, ids, pattern


def _decide_all(capsys: pytest.CaptureFixture[str], db: str, run: int, ids: list[int]) -> str:
    for cid in ids:
        assert cli(capsys, "--db", db, "decide", str(run), str(cid), "ACCEPT")[0] == 0
    code, preview, _ = cli(capsys, "--db", db, "commit", str(run), "--preview", "--json")
    assert code == 0, preview
    return str(preview["fingerprint"])


def test_a_target_retired_after_the_preview_refuses_the_commit(
    staged: tuple[str, int, list[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run, ids, pattern = staged
    shown = _decide_all(capsys, db, run, ids)
    code, _, err = cli(capsys, "--db", db, "retire", str(pattern))
    assert code == 0, err
    before = database_dump(db)
    code, out, err = cli(capsys, "--db", db, "commit", str(run), "--expect", shown)
    assert code == 1 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "changed since the preview" in err
    assert database_dump(db) == before


@pytest.mark.parametrize("status", ["committed", "cancelled"])
def test_expect_on_a_run_that_is_no_longer_staged_is_a_conflict(
    staged: tuple[str, int, list[int], int],
    capsys: pytest.CaptureFixture[str],
    status: str,
) -> None:
    """The run left "staged" after its preview: a conflict (1), as any other change."""
    db, run, ids, _ = staged
    shown = _decide_all(capsys, db, run, ids)
    store = Store(db)
    try:
        with store.write():
            Run.update(status=status).where(Run.id == run).execute()
    finally:
        store.close()
    before = database_dump(db)
    code, out, err = cli(capsys, "--db", db, "commit", str(run), "--expect", shown)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"run {run} is {status}" in err and "nothing was committed" in err
    assert database_dump(db) == before


def test_a_pasted_fingerprint_with_other_case_and_blanks_commits(
    staged: tuple[str, int, list[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run, ids, _ = staged
    shown = _decide_all(capsys, db, run, ids)
    code, done, err = cli(
        capsys, "--db", db, "commit", str(run), "--expect", f" \t{shown.upper()}\n", "--json"
    )
    assert code == 0, err
    assert done["counts"]["ADD"] == 1 and done["counts"]["UPDATE"] == 1


def test_a_decision_changed_and_changed_back_keeps_the_fingerprint(
    staged: tuple[str, int, list[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run, ids, _ = staged
    shown = _decide_all(capsys, db, run, ids)
    assert cli(capsys, "--db", db, "decide", str(run), str(ids[1]), "REJECT")[0] == 0
    assert cli(capsys, "--db", db, "decide", str(run), str(ids[1]), "ACCEPT")[0] == 0
    code, _, err = cli(capsys, "--db", db, "commit", str(run), "--expect", shown)
    assert code == 0, err


_COMMIT = """
import sys
from curator.cli import main
sys.stdin.readline()  # both processes start together
sys.exit(main(["--db", sys.argv[1], "commit", sys.argv[2], "--expect", sys.argv[3], "--json"]))
"""


def test_two_programs_committing_the_same_preview_commit_it_once(
    staged: tuple[str, int, list[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run, ids, _ = staged
    shown = _decide_all(capsys, db, run, ids)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _COMMIT, db, str(run), shown],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=python_env(),
            cwd=REPO_ROOT,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, _, err in results if code == 1)
    assert loser.startswith("curator: error: ") and loser.count("\n") == 1
    assert "nothing was committed" in loser
    store = Store(db)
    try:
        assert Pattern.select().where(Pattern.created_run == run).count() == 1
    finally:
        store.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    digits=st.text(
        "0123456789abcdefABCDEF", min_size=FINGERPRINT_CHARS, max_size=FINGERPRINT_CHARS
    ),
    left=st.text(" \t\n\r", max_size=3),
    right=st.text(" \t\n\r", max_size=3),
    noise=st.text(min_size=1, max_size=3).filter(lambda s: not s.isspace()),
    where=st.integers(0, FINGERPRINT_CHARS),
)
def test_parse_fingerprint_accepts_exactly_the_printed_form(
    digits: str, left: str, right: str, noise: str, where: int
) -> None:
    """Case and surrounding blanks never matter; anything else inside is refused."""
    assert parse_fingerprint(left + digits + right) == digits.lower()
    spoiled = digits[:where] + noise + digits[where:]
    if spoiled.strip().lower() != digits.lower():
        with pytest.raises(CuratorError, match="fingerprint"):
            parse_fingerprint(spoiled)

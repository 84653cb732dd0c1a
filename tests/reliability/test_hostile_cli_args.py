"""Hostile command-line arguments, table-driven, through the real ``curator`` command.

Ids and counts beyond SQLite's 64-bit integers, text that is not UTF-8, unknown ids and an
unreadable model file are usage errors (exit 2, one line, nothing changed); an undo that
later changes block is a conflict (exit 1). The database is a copy of one template with
two committed runs, so every id in the table either exists or clearly does not.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from review.conftest import candidate_ids, make_episode, make_pattern, make_staged_run

from curator.pipeline import commit, review
from curator.store.db import Store
from reliability.harness import Expect, run_case

TOO_BIG = str(2**63)  # one past SQLite's largest integer
WAY_TOO_BIG = "9" * 40
NOT_UTF8 = os.fsdecode(b"caf\xe9 \xff reworded text long enough to pass the quality gate")
"""A Latin-1 argument as a shell passes it: bytes that are not UTF-8 (surrogate-escaped)."""


@dataclass(frozen=True)
class Template:
    path: Path
    run_id: int
    staged_run_id: int
    candidate_id: int
    first_changeset: int
    second_changeset: int


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """Two commits that update the same pattern (so undoing the first is blocked), and a
    third run still staged with one candidate."""
    path = tmp_path_factory.mktemp("cli-args") / "template.sqlite"
    store = Store(path)
    try:
        with store.write():
            pattern = make_pattern(store, "The operator prefers short status updates at nine.")
            make_episode(store)
        first = make_staged_run(store, [{"text": "The operator likes brief updates at nine."}])
        review.decide(store, candidate_ids(first)[0], "UPDATE", target_id=pattern)
        one = commit.commit_run(store, first.id)
        second = make_staged_run(store, [{"text": "The operator wants short updates at nine."}])
        review.decide(store, candidate_ids(second)[0], "UPDATE", target_id=pattern)
        two = commit.commit_run(store, second.id)
        staged = make_staged_run(store, [{"text": "Backups run every night at two."}])
        store.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return Template(path, first.id, staged.id, candidate_ids(staged)[0], one.id, two.id)
    finally:
        store.close()


@dataclass(frozen=True)
class Case:
    name: str
    argv: Callable[[Template], list[str]]
    code: int
    message: str


def _model_dir(t: Template) -> str:
    folder = t.path.parent / "a-model-folder"
    folder.mkdir(exist_ok=True)
    return str(folder)


CASES = [
    Case("review-id-2^63", lambda t: ["review", TOO_BIG], 2, r"argument RUN: .*out of range"),
    Case("commit-id-huge", lambda t: ["commit", WAY_TOO_BIG], 2, r"out of range"),
    Case("undo-id-2^63", lambda t: ["undo", TOO_BIG], 2, r"argument CHANGESET: .*out of range"),
    Case("run-id-2^63", lambda t: ["run", TOO_BIG], 2, r"out of range"),
    Case(
        "decide-candidate-2^63",
        lambda t: ["decide", str(t.staged_run_id), TOO_BIG, "ADD"],
        2,
        r"argument CANDIDATE: .*out of range",
    ),
    Case(
        "decide-target-2^63",
        lambda t: [
            "decide",
            str(t.staged_run_id),
            str(t.candidate_id),
            "UPDATE",
            "--target",
            TOO_BIG,
        ],
        2,
        r"--target: .*out of range",
    ),
    Case("top-2^63", lambda t: ["export", "--top", TOO_BIG], 2, r"--top: .*out of range"),
    Case("top-negative", lambda t: ["export", "--top", "-5"], 2, r"--top must be at least 1"),
    Case("top-zero", lambda t: ["export", "--top", "0"], 2, r"--top must be at least 1"),
    Case("top-word", lambda t: ["export", "--top", "many"], 2, r"not an integer"),
    Case("history-limit-huge", lambda t: ["history", "--limit", WAY_TOO_BIG], 2, r"out of range"),
    Case("classify-limit-2^63", lambda t: ["classify", "--limit", TOO_BIG], 2, r"out of range"),
    Case("label-id-2^63", lambda t: ["label", TOO_BIG, "noise"], 2, r"not an episode id"),
    Case(
        "decide-text-not-utf8",
        lambda t: ["decide", str(t.staged_run_id), str(t.candidate_id), "ADD", "--text", NOT_UTF8],
        2,
        r"--text: the text is not valid UTF-8",
    ),
    Case("review-unknown-run", lambda t: ["review", "424242"], 2, r"there is no run 424242"),
    Case("commit-unknown-run", lambda t: ["commit", "424242"], 2, r"there is no run 424242"),
    Case("undo-unknown", lambda t: ["undo", "424242"], 2, r"there is no changeset 424242"),
    Case(
        "decide-unknown-candidate",
        lambda t: ["decide", str(t.staged_run_id), "424242", "ADD"],
        2,
        r"has no candidate 424242",
    ),
    Case(
        "decide-unknown-action",
        lambda t: ["decide", str(t.staged_run_id), str(t.candidate_id), "MAYBE"],
        2,
        r"unknown action 'MAYBE'",
    ),
    Case(
        "model-unreadable",
        lambda t: ["classify", "--model", "/proc/self/mem"],
        2,
        r"/proc/self/mem: cannot read the model file",
    ),
    Case("model-directory", lambda t: ["distill", "--model", _model_dir(t)], 2, r"is not a file"),
    Case(
        "undo-blocked-by-a-later-commit",
        lambda t: ["undo", str(t.first_changeset)],
        1,
        r"cannot undo changeset .*changed since",
    ),
    Case(
        "commit-a-committed-run",
        lambda t: ["commit", str(t.run_id)],
        2,
        r"is committed, not staged",
    ),
]


@pytest.fixture
def db(template: Template, tmp_path: Path) -> Path:
    path = tmp_path / "curator.sqlite"
    shutil.copyfile(template.path, path)
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_argument(case: Case, template: Template, db: Path) -> None:
    argv = ["--db", str(db), *case.argv(template)]
    result = run_case(
        argv, Expect(code=case.code, message=case.message, db=db, unchanged_counts=True)
    )
    errors = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1, result.stderr  # one line, whatever the cause
    assert "unexpected" not in result.stderr


def test_undoing_twice_is_a_conflict(template: Template, db: Path) -> None:
    run_case(["--db", str(db), "undo", str(template.second_changeset)], Expect(code=0, db=db))
    run_case(
        ["--db", str(db), "undo", str(template.second_changeset)],
        Expect(code=1, message=r"already undone", db=db, unchanged_counts=True),
    )

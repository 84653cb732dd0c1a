"""The review commands: one JSON document with --json, exit codes, one-line errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from curator.cli import main
from curator.store.db import Store
from curator.store.models import Episode, Pattern, Run
from review.conftest import candidate_ids, make_episode, make_pattern, make_staged_run, run_python

BOTH_ENGINES = True  # each store test runs on SQLite and on PostgreSQL (conftest)

NEW = "Summaries for the design team should include one screenshot per change."


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    doc = json.loads(out) if "--json" in argv and out.strip() else out
    return code, doc, err


@pytest.fixture
def staged(store: Store) -> tuple[Store, Run, int]:
    target = make_pattern(store, "Retry network calls to the billing API with backoff.", 0.3)
    run = make_staged_run(
        store,
        [
            {"text": NEW, "importance": 0.6},
            {
                "text": "Retry network calls to the billing API with a short backoff.",
                "importance": 0.8,
            },
        ],
    )
    store.close()  # the commands open their own connection, as a separate program would
    return store, run, target


def test_review_lists_and_accepts_all(
    staged: tuple[Store, Run, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run, target = staged
    db = store.location
    code, doc, _ = cli(capsys, "--db", db, "review", str(run.id), "--json")
    assert code == 0
    assert doc["progress"] == {"total": 2, "reviewed": 0, "unreviewed": 2, "by_action": {}}
    assert [c["proposed_action"] for c in doc["candidates"]] == ["ADD", "UPDATE"]
    assert doc["candidates"][1]["proposed_target_id"] == target

    code, text, _ = cli(capsys, "--db", db, "review", str(run.id))
    assert code == 0 and "0/2 reviewed" in text and "UPDATE #" in text

    code, doc, _ = cli(capsys, "review", str(run.id), "--accept-all", "--db", db, "--json")
    assert code == 0 and doc["accepted"] == 2 and doc["progress"]["reviewed"] == 2
    assert {c["decided_via"] for c in doc["candidates"]} == {"cli --accept-all"}


def test_decide_commit_history_undo(
    staged: tuple[Store, Run, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run, target = staged
    db = store.location
    first, second = candidate_ids(run)
    code, doc, _ = cli(
        capsys, "--db", db, "decide", str(run.id), str(first), "add", "--importance", "0.7",
        "--json",
    )  # fmt: skip
    assert code == 0 and doc["action"] == "ADD" and doc["final_importance"] == 0.7

    code, _, err = cli(capsys, "--db", db, "commit", str(run.id), "--json")
    assert code == 1 and "1 unreviewed candidate" in err and err.count("\n") == 1

    code, doc, _ = cli(
        capsys, "--db", db, "decide", str(run.id), str(second), "UPDATE", "--target", str(target),
        "--json",
    )  # fmt: skip
    assert code == 0 and doc["target_id"] == target

    code, doc, _ = cli(capsys, "--db", db, "commit", str(run.id), "--preview", "--json")
    assert code == 0 and doc["counts"]["ADD"] == 1 and doc["counts"]["UPDATE"] == 1

    code, doc, _ = cli(capsys, "--db", db, "commit", str(run.id), "--json")
    assert code == 0 and doc["kind"] == "commit" and doc["counts"]["ADD"] == 1
    assert doc["backup"] is None and not (Path(db).parent / "backups").exists()
    changeset = doc["id"]

    code, doc, _ = cli(capsys, "--db", db, "history", "--json")
    assert code == 0 and [c["id"] for c in doc["changesets"]] == [changeset]

    code, doc, _ = cli(capsys, "--db", db, "undo", str(changeset), "--json")
    assert code == 0 and doc["kind"] == "undo" and doc["undoes_id"] == changeset
    code, _, err = cli(capsys, "--db", db, "undo", str(changeset))
    assert code == 1 and "already undone" in err

    code, text, _ = cli(capsys, "--db", db, "history")
    assert code == 0 and f"(undone by {changeset + 1})" in text


def test_conflict_exits_one_naming_the_candidate(
    staged: tuple[Store, Run, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run, target = staged
    db = store.location
    cli(capsys, "--db", db, "review", str(run.id), "--accept-all")
    edit = run_python(
        "import sys\n"
        "from curator.store.db import Store\n"
        "from curator.store.models import Pattern\n"
        "s = Store(sys.argv[1])\n"
        "with s.write():\n"
        "    Pattern.update(revision=Pattern.revision + 1).where(Pattern.id == int(sys.argv[2]))"
        ".execute()\n",
        db,
        str(target),
    )
    assert edit.returncode == 0, edit.stderr
    code, out, err = cli(capsys, "--db", db, "commit", str(run.id))
    assert code == 1 and out == ""
    assert err.startswith("curator: error: conflict:") and err.count("\n") == 1
    assert f"candidate {candidate_ids(run)[1]} " in err
    reopened = Store(store.location)
    assert Pattern.select().count() == 1 and Run.get_by_id(run.id).status == "staged"
    reopened.close()


def test_bad_decisions_are_one_line_errors(
    staged: tuple[Store, Run, int], capsys: pytest.CaptureFixture[str]
) -> None:
    store, run, _ = staged
    db = store.location
    first = candidate_ids(run)[0]
    code, _, err = cli(capsys, "--db", db, "decide", str(run.id), str(first), "MERGE")
    assert code == 2 and "unknown action" in err
    code, _, err = cli(capsys, "--db", db, "decide", str(run.id + 1), str(first), "ADD")
    assert code == 2 and "has no candidate" in err
    code, _, err = cli(capsys, "--db", db, "decide", str(run.id), str(first), "ADD", "--text", "hm")
    assert code == 2 and "quality gate" in err and err.count("\n") == 1


def test_label_commands(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [make_episode(store, model_label="noise", label="noise", label_by="model") for _ in "ab"]
    store.close()
    db = store.location
    code, doc, _ = cli(
        capsys, "--db", db, "label", str(ids[0]), str(ids[1]), "constitutional", "--json"
    )
    assert code == 0 and doc["episodes"] == ids and doc["label"] == "constitutional"
    code, doc, _ = cli(capsys, "--db", db, "label", "--clear", str(ids[0]), "--json")
    assert code == 0 and doc["label"] is None
    code, doc, _ = cli(capsys, "--db", db, "label", "--undo", "--json")
    assert code == 0 and doc["undone"] == [ids[0]]
    code, _, err = cli(capsys, "--db", db, "label", str(ids[0]), "important")
    assert code == 2 and "unknown label" in err
    code, _, err = cli(capsys, "--db", db, "label", "x", "noise")
    assert code == 2 and "not an episode id" in err
    reopened = Store(store.location)
    assert [Episode.get_by_id(i).label for i in ids] == ["constitutional"] * 2
    reopened.close()


def test_backup_command_rotates(
    store: Store, engine: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if engine != "sqlite":
        pytest.skip("a PostgreSQL database is backed up with pg_dump (tests/store/test_pg_engine)")
    make_pattern(store, "Retry network calls to the billing API with backoff.")
    store.close()
    db = store.location
    paths = []
    for _ in range(3):
        code, doc, _ = cli(capsys, "--db", db, "backup", "--keep", "2", "--json")
        assert code == 0
        paths.append(Path(doc["backup"]))
        assert doc["size"] == paths[-1].stat().st_size > 0 and doc["seconds"] >= 0
    assert [p.exists() for p in paths] == [False, True, True]
    code, text, _ = cli(capsys, "--db", db, "backup")
    assert code == 0 and re.fullmatch(r"backup: \S+\.sqlite \([\d.,]+ MB, [\d.]+ s\)\n", text)
    code, _, err = cli(capsys, "--db", db, "backup", "--keep", "0")
    assert code == 2 and "at least 1" in err


def test_the_text_an_update_writes_is_shown_before_the_commit(
    staged: tuple[Store, Run, int], capsys: pytest.CaptureFixture[str]
) -> None:
    """An edit kept aside and an edit that rewords the pattern read apart in the list and
    in the preview: the preview names the text the commit writes."""
    store, run, target = staged
    db = store.location
    _, second = candidate_ids(run)
    reworded = "Retry network calls to the billing API with exponential backoff."
    cases = (
        (
            "Retry billing calls with backoff; the wording here is only a note.",
            "--keep-pattern-text",
            "[text kept]",
            "its text stays",
        ),
        (reworded, "--use-my-wording", "[rewords the pattern]", f"its text becomes: {reworded}"),
    )
    for edited, choice, marker, written in cases:
        code, _, err = cli(
            capsys, "--db", db, "decide", str(run.id), str(second), "UPDATE",
            "--target", str(target), "--text", edited, choice,
        )  # fmt: skip
        assert code == 0, err
        code, listed, _ = cli(capsys, "--db", db, "review", str(run.id))
        assert marker in listed and listed.count("[") == 1
        code, preview, _ = cli(capsys, "--db", db, "commit", str(run.id), "--preview")
        assert f"update #{target} (candidate {second}): {written}" in preview


def test_a_relearning_that_fails_after_a_commit_is_one_line_and_the_commit_stands(
    staged: tuple[Store, Run, int],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The commit is done before the learned guard relearns; a relearning that fails
    (the connection lost at its own COMMIT, on PostgreSQL) printed four chained
    tracebacks after "committed", which read as a failed commit. Now one warning line.
    Fault injection (a test double, named as such): the relearning raises what such a
    cut raises, a message of several lines."""
    from curator.pipeline import guard_learn
    from curator.store.pg_connection import ConnectionLost

    def cut(_store: Store) -> None:
        raise ConnectionLost("the connection was lost: not known\nCONTEXT: the server's line")

    monkeypatch.setattr(guard_learn, "relearn_guard", cut)
    store, run, _ = staged
    db = store.location
    assert cli(capsys, "--db", db, "review", str(run.id), "--accept-all")[0] == 0
    with caplog.at_level("WARNING"):  # what reaches stderr (the last-resort handler)
        code, doc, err = cli(capsys, "--db", db, "commit", str(run.id), "--json")
    assert code == 0 and doc["kind"] == "commit", err
    said = [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.getMessage() for r in said] == [
        "the learned guard could not relearn after the commit: the connection was lost: not known"
    ]
    assert said[0].exc_info is None  # no traceback

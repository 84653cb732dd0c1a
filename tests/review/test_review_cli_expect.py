"""``curator commit RUN --expect FINGERPRINT``: a script commits exactly what it previewed."""

from __future__ import annotations

import pytest

from curator.store.db import Store
from curator.store.models import Pattern
from review.conftest import candidate_ids, cli, database_dump, make_staged_run

TEXTS = (
    "Summaries for the design team should include one screenshot per change.",
    "Database migrations are rehearsed on a copy of production before release.",
    "Incident reports name the first alert that fired and the time it fired.",
)


@pytest.fixture
def staged(store: Store) -> tuple[str, int, list[int]]:
    run = make_staged_run(store, [{"text": t} for t in TEXTS])
    ids = candidate_ids(run)
    path = str(store.path)
    store.close()  # the commands open their own connection, as separate programs would
    return path, run.id, ids


def test_commit_expect_refuses_decisions_made_after_the_preview(
    staged: tuple[str, int, list[int]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, run, ids = staged
    for cid, verb in zip(ids, ("ADD", "REJECT", "REJECT"), strict=True):
        assert cli(capsys, "--db", db, "decide", str(run), str(cid), verb)[0] == 0
    code, preview, _ = cli(capsys, "--db", db, "commit", str(run), "--preview", "--json")
    assert code == 0 and preview["counts"]["ADD"] == 1
    shown = preview["fingerprint"]
    code, listed, _ = cli(capsys, "--db", db, "review", str(run), "--json")
    assert code == 0 and listed["fingerprint"] == shown  # the same state, the same print
    code, text, _ = cli(capsys, "--db", db, "commit", str(run), "--preview")
    assert f"fingerprint {shown}" in text
    code, text, _ = cli(capsys, "--db", db, "review", str(run))
    assert f"fingerprint {shown}" in text

    for cid in ids[1:]:  # another shell, meanwhile
        assert cli(capsys, "--db", db, "decide", str(run), str(cid), "ADD")[0] == 0
    before = database_dump(db)
    code, out, err = cli(capsys, "--db", db, "commit", str(run), "--expect", shown, "--json")
    assert code == 1 and out["exit"] == 1 and "changed since the preview" in out["error"]
    assert err.startswith("curator: error: ") and err.count("\n") == 1
    assert "Traceback" not in err and shown in err and "changed since the preview" in err
    assert database_dump(db) == before

    code, fresh, _ = cli(capsys, "--db", db, "commit", str(run), "--preview", "--json")
    assert fresh["fingerprint"] != shown and fresh["counts"]["ADD"] == 3
    assert fresh["fingerprint"] in err  # the refusal names the print to commit instead
    code, done, _ = cli(
        capsys, "--db", db, "commit", str(run), "--expect", fresh["fingerprint"].upper(), "--json"
    )
    assert code == 0 and done["counts"]["ADD"] == 3
    store = Store(db)
    try:
        assert Pattern.select().where(Pattern.created_run == run).count() == 3
    finally:
        store.close()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--expect", "not-a-print"), "16-digit fingerprint"),
        (("--expect", "0123"), "16-digit fingerprint"),
        (("--expect", "0123456789abcdef", "--preview"), "--expect goes with a commit"),
    ],
)
def test_commit_expect_usage_errors_change_nothing(
    staged: tuple[str, int, list[int]],
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    says: str,
) -> None:
    db, run, ids = staged
    cli(capsys, "--db", db, "decide", str(run), str(ids[0]), "ADD")
    before = database_dump(db)
    code, out, err = cli(capsys, "--db", db, "commit", str(run), "--reviewed-only", *argv)
    assert code == 2 and out == "" and says in err and err.count("\n") == 1
    assert database_dump(db) == before

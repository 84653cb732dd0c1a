"""``curator watch --classify-every N``: the real CLI, the real demo model, real processes.

The batches run beside the follow: lines appended while a batch classifies are imported
before it ends, and a stop mid-batch leaves the positions, the episodes and the run in
agreement (the run recorded as cancelled with what it finished, never left running).
Each test runs on a SQLite file and on a PostgreSQL database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.cli.watch_cmd import _batch
from curator.store.db import Store
from tests.watch.conftest import append, line
from tests.watch.test_watch_cli import spawn

pytestmark = pytest.mark.llm


@dataclass
class Database:
    """The database a test's ``watch`` writes (a SQLite file or a PostgreSQL database),
    read through a connection of the test's own while the watcher runs."""

    location: str
    reader: Store

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self.reader.execute(sql, params)


def labelled(db: Database) -> int:
    return int(db.rows("SELECT count(*) FROM episode WHERE model_label IS NOT NULL")[0][0])


def episodes(db: Database) -> int:
    return int(db.rows("SELECT count(*) FROM episode")[0][0])


def running_runs(db: Database) -> list[int]:
    return [r[0] for r in db.rows("SELECT id FROM run WHERE status = 'running'")]


def wait_long(predicate: Callable[[], bool], what: str) -> None:
    """Wait for the other process; the model's batches are slow on a loaded machine."""
    deadline = time.monotonic() + 600
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    """Each test on a SQLite file, then on a PostgreSQL database."""
    reader = Store(db_url)
    try:
        yield Database(db_url, reader)
    finally:
        reader.close()


def test_once_classifies_every_pending_episode_in_batches(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("deployed the fix") + line("lunch was good") + line("rolled back"))
    code = main(
        ["--db", db.location, "--json", "watch", "--once", "--classify-every", "2", str(log)]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert document["imported"] == 3
    assert document["classify"]["classified"] == 3
    assert document["classify"]["statuses"] == ["done", "done"]  # 2, then the last 1
    assert labelled(db) == 3 and running_runs(db) == []


def test_a_bad_batch_size_is_a_usage_error(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("0", "-2", "two", "1.5"):
        with pytest.raises(SystemExit) as exc:
            main(["--db", db.location, "watch", "--classify-every", bad, str(tmp_path)])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--classify-every" in err and len(err.strip().splitlines()) == 1
    assert episodes(db) == 0


@settings(deadline=None)
@example(text="1")
@example(text="100000")
@example(text="100001")
@example(text=" 3 ")
@example(text="1e3")
@given(text=st.one_of(st.integers(-10, 200_000).map(str), st.text(max_size=8)))
def test_a_batch_size_is_a_whole_number_from_1_to_100000_or_refused(text: str) -> None:
    try:
        value = _batch(text)
    except argparse.ArgumentTypeError as exc:
        assert "\n" not in str(exc)
        with contextlib.suppress(ValueError):
            assert not 1 <= int(text) <= 100_000
        return
    assert value == int(text) and 1 <= value <= 100_000


def test_an_unusable_model_is_one_line_and_nothing_is_followed(
    db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    code = main(
        [
            "--db",
            db.location,
            "watch",
            "--once",
            "--classify-every",
            "2",
            "--model",
            str(broken),
            str(log),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("curator: error: ") and "Traceback" not in "\n".join(err)
    assert episodes(db) == 0  # refused before anything was read


@pytest.mark.parametrize("sig", [signal.SIGTERM])
def test_lines_are_read_during_a_batch_and_a_stop_mid_batch_keeps_all_consistent(
    db: Database, tmp_path: Path, sig: signal.Signals
) -> None:
    """One model load for both (a batch on this model takes a while): the first batch
    measures the model's label bias first (several full prompts), long enough to append
    a line during it and to stop the follow in the middle of it."""
    log = tmp_path / "agent.jsonl"
    proc = spawn(db.location, "--json", "--interval", "0.05", "--classify-every", "2", str(log))
    try:
        append(log, line("one: deployed the fix") + line("two: rolled it back"))
        wait_long(lambda: running_runs(db) != [], "the batch to start")
        # Appended while the batch runs: imported before it ends (the follow goes on).
        append(log, line("three, written during the batch"))
        wait_long(lambda: episodes(db) == 3, "the line written during the batch")
        assert running_runs(db) != [], "the batch ended before the line was read"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    document = json.loads(out)
    assert document["imported"] == 3
    # The run ended one way or the other, never left running; its labels are its own.
    statuses = db.rows("SELECT status FROM run ORDER BY id")
    assert statuses and all(s in {("cancelled",), ("done",)} for s in statuses)
    assert document["classify"]["statuses"] == [s[0] for s in statuses]
    orphans = db.rows(
        "SELECT count(*) FROM episode WHERE model_label IS NOT NULL AND (model_run_id IS NULL "
        "OR model_run_id NOT IN (SELECT id FROM run))",
    )
    assert orphans == [(0,)]
    # The follow position agrees with the episodes: a restart reads nothing twice.
    assert db.rows("SELECT line FROM follow_state") == [(3,)]
    assert main(["--db", db.location, "watch", "--once", str(log)]) == 0
    assert episodes(db) == 3

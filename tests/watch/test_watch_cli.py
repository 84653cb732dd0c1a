"""``curator watch`` as a person and a cron job run it: the real CLI, real processes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import curator
from curator.cli import main
from curator.store.db import Store
from tests.watch.conftest import append, line, texts

ROOT = str(Path(curator.__file__).resolve().parents[1])


def spawn(db: Path | str, *args: str, stderr: object = subprocess.PIPE) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.Popen(
        [sys.executable, "-m", "curator", "--db", str(db), "watch", *args],
        stdout=subprocess.PIPE,
        stderr=stderr,  # type: ignore[arg-type]
        text=True,
        env=env,
    )


def count(db: Path) -> int:
    with Store(db) as store:
        return sum(texts(store).values())


def wait_for(predicate: object, what: str) -> None:
    """Wait for a condition another process brings about (generous: a loaded machine)."""
    deadline = time.monotonic() + 60
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_once_imports_reports_bad_lines_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a") + b"[1]\n" + line("b") + line("half")[:5])
    db = tmp_path / "db.sqlite"
    code = main(["--db", str(db), "--create", "--json", "watch", "--once", str(log)])
    out, err = capsys.readouterr()
    assert code == 1
    document = json.loads(out)
    assert (document["imported"], document["rejected"]) == (2, 1)
    assert f"{log}:2: expected a JSON object" in err and "Traceback" not in err
    assert document["notes"] == [
        f"{log}: 5 bytes after its last complete line wait for a newline; not imported yet"
    ]
    append(log, line("half")[5:])
    assert main(["--db", str(db), "watch", "--once", str(log)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "1 imported, 0 already present, 0 rejected" and "wait" not in err


def test_once_says_why_lines_ending_in_a_bare_carriage_return_are_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a").replace(b"\n", b"\r") + line("b").replace(b"\n", b"\r"))
    db = tmp_path / "db.sqlite"
    assert main(["--db", str(db), "--create", "--json", "watch", "--once", str(log)]) == 0
    out, err = capsys.readouterr()
    [note] = json.loads(out)["notes"]
    assert note.startswith(f"{log}: {log.stat().st_size} bytes after its last complete line")
    assert "bare carriage return" in note and note in err
    # a CRLF log caught between the two bytes of its last line's end: no such advice
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(line("a").replace(b"\n", b"\r\n") + line("b")[:-1] + b"\r")
    assert main(["--db", str(db), "--json", "watch", "--once", str(crlf)]) == 0
    [note] = json.loads(capsys.readouterr().out)["notes"]
    assert note.endswith("not imported yet")


@pytest.mark.parametrize("interval", ["0", "-1", "soon", "nan"])
def test_a_bad_interval_is_a_usage_error(
    tmp_path: Path, interval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db.sqlite"
    Store(db).close()
    with pytest.raises(SystemExit) as exc:
        main(["--db", str(db), "watch", "--interval", interval, str(tmp_path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--interval" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_follow_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "db.sqlite"
    Store(db).close()
    log = tmp_path / "agent.jsonl"
    proc = spawn(db, "--interval", "0.05", str(log))
    try:
        append(log, line("one"))
        wait_for(lambda: count(db) == 1, "the line to be imported")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.strip() == "1 imported, 0 already present, 0 rejected"
    assert "Traceback" not in err


def test_a_follower_killed_at_random_moments_imports_every_line_once(tmp_path: Path) -> None:
    """A writer appends (often a line in two halves) while the follower is killed with
    SIGKILL again and again, mid-read or mid-commit; afterwards every line is there
    exactly once, and no half line was ever read as a line of its own."""
    db = tmp_path / "db.sqlite"
    Store(db).close()
    log = tmp_path / "agent.jsonl"
    log.write_bytes(b"")
    rng = random.Random(24)
    written = 0
    errors: list[str] = []
    for _round in range(8):
        err_file = open(tmp_path / f"err{_round}.txt", "w")  # noqa: SIM115
        before = count(db)
        append(log, b"".join(line(f"line {written + i}") for i in range(200)))
        written += 200
        proc = spawn(db, "--interval", "0.01", str(log), stderr=err_file)
        wait_for(lambda before=before: count(db) > before, "the follower to be at work")
        for _ in range(rng.randint(3, 12)):
            batch = b"".join(line(f"line {written + i}") for i in range(rng.randint(50, 400)))
            written += batch.count(b"\n")
            cut = rng.randrange(len(batch))
            append(log, batch[:cut])
            time.sleep(rng.random() * 0.05)  # a random moment, not an assertion
            append(log, batch[cut:])
        time.sleep(rng.random() * 0.1)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        err_file.close()
        errors += (tmp_path / f"err{_round}.txt").read_text().splitlines()
    final = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(db), "--json", "watch", "--once", str(log)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=120,
    )
    assert final.returncode == 0, final.stderr
    assert json.loads(final.stdout)["rejected"] == 0
    with Store(db) as store:
        seen = texts(store)
    assert seen == {f"line {i}": 1 for i in range(written)}
    assert not [e for e in errors if f"{log}:" in e], errors[:3]


def test_a_busy_database_is_tried_again_at_the_next_poll(tmp_path: Path) -> None:
    """Another process holds the write lock longer than the busy timeout: the follower
    says so, keeps following, and imports the line once the lock is released."""
    import sqlite3

    db = tmp_path / "db.sqlite"
    Store(db).close()
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("waited"))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    err_path = tmp_path / "err.txt"
    with open(err_path, "w") as err_file:
        env = {**os.environ, "PYTHONPATH": ROOT, "CURATOR_BUSY_TIMEOUT": "0.1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "curator", "--db", str(db), "watch", "--interval=0.05", log],
            stdout=subprocess.PIPE,
            stderr=err_file,
            text=True,
            env=env,
        )
        try:
            wait_for(lambda: "trying again" in err_path.read_text(), "the busy note")
            holder.execute("ROLLBACK")
            holder.close()
            wait_for(lambda: count(db) == 1, "the line after the lock")
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0 and out.strip().startswith("1 imported")
    assert "Traceback" not in err_path.read_text()

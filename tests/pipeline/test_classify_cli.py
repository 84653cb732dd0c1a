"""`curator classify/distill/runs/run` as a user runs them (subprocesses where it matters)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curator.cli import main
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Episode, Run


def make_demo_db(path: Path) -> Path:
    store = Store(path)
    try:
        create_demo(store)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return path


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        return [f"user_version={version}", *conn.iterdump()]
    finally:
        conn.close()


def curator(*args: str, **kwargs) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("CURATOR_MODEL", None)
    return subprocess.run(
        [sys.executable, "-m", "curator", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
        **kwargs,
    )


@pytest.fixture(scope="module")
def demo_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_demo_db(tmp_path_factory.mktemp("cli") / "template.sqlite")


@pytest.fixture
def demo_db(demo_db_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "curator.sqlite"
    target.write_bytes(demo_db_template.read_bytes())
    return target


@pytest.mark.parametrize("kind", ["random", "truncated", "text"])
@pytest.mark.parametrize("command", ["classify", "distill"])
def test_corrupt_model_is_a_one_line_error_and_changes_nothing(
    demo_db: Path, demo_model: Path, tmp_path: Path, kind: str, command: str
) -> None:
    bad = tmp_path / "bad.gguf"
    if kind == "random":
        bad.write_bytes(os.urandom(256 * 1024))
    elif kind == "truncated":
        bad.write_bytes(demo_model.read_bytes()[: 40 * 1024 * 1024])
    else:
        bad.write_text("# not a model\nThese are my notes about models.\n")
    before = dump(demo_db)
    proc = curator("--db", str(demo_db), command, "--model", str(bad), "--json")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("curator: error: ")
    assert str(bad) in lines[0]
    assert "Traceback" not in proc.stderr
    error = lines[0].removeprefix("curator: error: ")
    assert json.loads(proc.stdout) == {"error": error, "exit": 2}  # --json: one document
    assert dump(demo_db) == before


@pytest.mark.llm
def test_ctrl_c_cancels_cleanly(demo_db: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "curator",
            "--db",
            str(demo_db),
            "classify",
            "--limit",
            "60",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        seen = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith("classify 2/60"):
                proc.send_signal(signal.SIGINT)
                break
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + err
    result = json.loads(out)
    assert result["status"] == "cancelled"
    assert "cancelling" in err and "Traceback" not in err
    store = Store(demo_db)
    try:
        run = Run.get_by_id(result["run_id"])
        assert run.status == "cancelled" and run.finished_at is not None
        labelled = Episode.select().where(Episode.model_run == run.id).count()
        assert labelled == result["counts"]["classified"] >= 2
    finally:
        store.close()


@pytest.mark.llm
def test_runs_and_run_show_the_trace(demo_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--db", str(demo_db), "classify", "--limit", "2", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["status"] == "done" and result["counts"]["classified"] == 2
    assert "classify 2/2" in err  # plain progress lines when stderr is not a terminal

    assert main(["--db", str(demo_db), "runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs[0]["id"] == result["run_id"] and runs[0]["status"] == "done"
    assert runs[0]["model_sha256"] and runs[0]["prompts"]["classify"]["sha256"]

    assert main(["--db", str(demo_db), "run", str(result["run_id"]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["step"] for t in doc["trace"]] == ["classify", "classify"]
    assert all(t["prompt_sha256"] == doc["prompts"]["classify"]["sha256"] for t in doc["trace"])

    assert main(["--db", str(demo_db), "run", str(result["run_id"])]) == 0
    text = capsys.readouterr().out
    assert f"run {result['run_id']}: classify, done" in text and "classify v1" in text

    assert main(["--db", str(demo_db), "run", "999"]) == 2
    assert "no run 999" in capsys.readouterr().err

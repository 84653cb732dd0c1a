"""``curator models download`` against misbehaving loopback servers: exit codes 0, 1 or 2."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from curator.cli import main
from tests.llm.rogue_server import Reply, honest, rogue, tiny_gguf

DATA = tiny_gguf(200_000, seed=11)
ROOT = Path(__file__).resolve().parents[2]


def catalogue(path: Path, url: str, *, size: bool = True) -> Path:
    path.write_text(
        json.dumps(
            {
                "models": [
                    {
                        "name": "tiny",
                        "file": "tiny.gguf",
                        "url": url,
                        "sha256": hashlib.sha256(DATA).hexdigest(),
                        "size_bytes": len(DATA) if size else None,
                    }
                ]
            }
        )
    )
    return path


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv("CURATOR_MODELS_DIR", str(folder))
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_processes_downloading_one_model(tmp_path: Path, models: Path) -> None:
    """The second process is refused in one line (exit 1) and sends no request; the first
    saves the file whose SHA-256 it prints. The server holds the first answer until the
    second process has ended, so the two always overlap."""
    second_done = threading.Event()
    requests = threading.Event()

    def respond(start: int | None) -> Reply:
        if not requests.is_set():  # only the first answer waits
            requests.set()
            second_done.wait(60)
        return honest(DATA)(start)

    env = {**os.environ, "CURATOR_MODELS_DIR": str(models), "PYTHONPATH": str(ROOT)}
    with rogue(respond) as (url, log):
        cat = catalogue(tmp_path / "c.json", url)
        argv = [sys.executable, "-m", "curator", "models", "download", "tiny", "--json"]
        argv += ["--catalogue", str(cat)]
        first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert requests.wait(60), "the first download never asked the server"
            second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        finally:
            second_done.set()
        out, err = first.communicate(timeout=60)
    assert second.returncode == 1 and json.loads(second.stdout)["exit"] == 1  # one document
    errors = [line for line in second.stderr.splitlines() if line.startswith("curator: error")]
    assert errors == [second.stderr.splitlines()[-1]], second.stderr
    assert errors[0].startswith("curator: error: tiny is already being downloaded")
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, err
    printed = json.loads(out)
    saved = models / "tiny.gguf"
    assert printed["sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
    assert saved.read_bytes() == DATA and printed["verified"] is True
    assert log.ranges == [None]
    assert sorted(p.name for p in models.iterdir()) == ["tiny.gguf"]


def test_remove_during_a_download_is_refused(
    tmp_path: Path, models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from curator.llm.catalogue import load_catalogue
    from curator.llm.download import download_model

    answering = threading.Event()
    release = threading.Event()

    def respond(start: int | None) -> Reply:
        answering.set()
        release.wait(30)
        return honest(DATA)(start)

    with rogue(respond) as (url, _):
        cat = catalogue(tmp_path / "c.json", url)
        (models / "tiny.gguf.part").parent.mkdir(parents=True)
        (models / "tiny.gguf.part").write_bytes(DATA[:1000])
        (entry,) = load_catalogue(cat)
        worker = threading.Thread(target=download_model, args=(entry,))
        worker.start()
        try:
            assert answering.wait(30)
            code, out, err = run(capsys, "models", "remove", "tiny", "--catalogue", str(cat))
        finally:
            release.set()
            worker.join(30)
    assert code == 1 and out == "" and "being downloaded right now" in err
    assert (models / "tiny.gguf").read_bytes() == DATA


def test_credentials_never_reach_the_terminal(
    tmp_path: Path, models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with rogue(lambda _s: Reply(503, {"Content-Length": "0"})) as (url, log):
        secret = url.replace("http://", "http://user:hunter2@")
        cat = catalogue(tmp_path / "c.json", secret + "?token=s3cr3t")
        code, out, err = run(capsys, "models", "download", "tiny", "--catalogue", str(cat))
    assert code == 2 and out == ""
    assert "HTTP 503" in err and "http://***@127.0.0.1" in err
    assert "hunter2" not in err and "s3cr3t" not in err
    assert log.authorizations == ["Basic dXNlcjpodW50ZXIy"]  # the credentials were used


def test_a_trickle_stops_by_the_stall_rule(
    tmp_path: Path,
    models: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CURATOR_DOWNLOAD_STALL_S", "0.5")
    trickle = Reply(200, {"Content-Length": str(len(DATA))}, DATA, drip=4, pause_s=0.1)
    with rogue(lambda _s: trickle) as (url, _):
        cat = catalogue(tmp_path / "c.json", url)
        code, out, err = run(capsys, "models", "download", "tiny", "--catalogue", str(cat))
    assert code == 2 and out == ""
    assert "stalled: less than 1 KiB/s over 0.5 s" in err and "run it again to resume" in err
    kept = (models / "tiny.gguf.part").read_bytes()
    assert kept and DATA.startswith(kept)
    with rogue(honest(DATA)) as (url, log):
        cat = catalogue(tmp_path / "c.json", url)
        code, out, err = run(capsys, "models", "download", "tiny", "--catalogue", str(cat))
    assert code == 0, err
    assert log.ranges == [len(kept)] and (models / "tiny.gguf").read_bytes() == DATA


@pytest.mark.parametrize("value", ["0", "-3", "soon", "1e9"])
def test_a_bad_stall_setting_is_a_usage_error(
    tmp_path: Path,
    models: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    monkeypatch.setenv("CURATOR_DOWNLOAD_STALL_S", value)
    cat = catalogue(tmp_path / "c.json", "http://127.0.0.1:9/tiny.gguf")
    code, out, err = run(capsys, "models", "download", "tiny", "--catalogue", str(cat))
    assert code == 2 and out == ""
    assert "$CURATOR_DOWNLOAD_STALL_S must be a number of seconds" in err
    assert not (models / "tiny.gguf.part").exists()

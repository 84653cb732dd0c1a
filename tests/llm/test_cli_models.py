"""``curator models``: list, download, remove and local, end to end through main()."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from curator.cli import main
from tests.llm.model_server import serve


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def models_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURATOR_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("HF_HUB_CACHE", "HF_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _catalogue(path: Path, url: str, data: bytes, sha: str | None) -> Path:
    path.write_text(
        json.dumps(
            {
                "models": [
                    {
                        "name": "demo",
                        "file": "demo.gguf",
                        "url": url,
                        "sha256": sha,
                        "size_bytes": len(data),
                        "ram_gb": 0.5,
                        "context_length": 8192,
                    }
                ]
            }
        )
    )
    return path


def test_download_list_remove(
    models_home: Path, demo_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = demo_model.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    with serve(data) as (url, _):
        cat = _catalogue(models_home / "c.json", url + "/model.gguf", data, sha)
        code, out, _ = run(capsys, "models", "list", "--catalogue", str(cat), "--json")
        assert code == 0
        assert json.loads(out)["models"][0]["state"] == "not downloaded"
        code, out, err = run(capsys, "models", "download", "demo", "--catalogue", str(cat))
        assert code == 0, err
        target = models_home / "models" / "demo.gguf"
        assert "checksum verified" in out and f"model_path={target}" in out
        assert target.read_bytes() == data
        code, out, _ = run(capsys, "models", "list", "--catalogue", str(cat), "--json")
        assert json.loads(out)["models"][0]["state"] == "downloaded"
        code, out, _ = run(capsys, "models", "remove", "demo", "--catalogue", str(cat))
        assert code == 0 and not target.exists()
        code, _, err = run(capsys, "models", "remove", "demo", "--catalogue", str(cat))
        assert code != 0 and "not downloaded" in err


def test_download_errors_are_one_line(
    models_home: Path, demo_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = demo_model.read_bytes()
    with serve(data) as (url, _):
        cat = _catalogue(models_home / "c.json", url + "/gone.gguf", data, None)
        code, out, err = run(capsys, "models", "download", "demo", "--catalogue", str(cat))
        assert code == 2 and out == ""
        assert "HTTP 404" in err and "Traceback" not in err
        code, _, err = run(capsys, "models", "download", "nope", "--catalogue", str(cat))
        assert code == 2 and "no model named 'nope'" in err
        cat.write_text(json.dumps({"models": [{"name": "x"}]}))
        code, _, err = run(capsys, "models", "list", "--catalogue", str(cat))
        assert code == 2 and "'file' must be" in err
    assert not (models_home / "models" / "demo.gguf").exists()


def test_local_lists_models_of_other_tools(
    models_home: Path, demo_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lms = models_home / "home" / ".lmstudio" / "models" / "pub" / "repo" / "m.gguf"
    lms.parent.mkdir(parents=True)
    os.symlink(demo_model, lms)
    code, out, _ = run(capsys, "models", "local", "--json")
    assert code == 0
    (model,) = json.loads(out)["models"]
    assert model["source"] == "lmstudio" and model["label"] == "pub/repo/m.gguf"
    assert model["quantization"] == "Q4_1" and model["path"] == str(lms)
    code, out, _ = run(capsys, "models", "local")
    assert "pub/repo/m.gguf" in out and "Q4_1" in out

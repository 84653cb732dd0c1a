"""The model check's child is `curator --check-model PATH`, a program of its own.

Before, the child was `sys.executable -c "…"`: in a frozen build sys.executable is the
application, which took the code for a subcommand ("invalid choice"), so no model could be
checked there. tests/test_bundle.py runs the frozen side; these run the interpreter side.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curator.cli import main
from curator.llm.model_trial import CHECK_OPTION, child_check_command, validate_model_file

MARKER = "CURATOR-MODEL-CHECK "


def test_the_child_is_curator_with_the_hidden_option(demo_model: Path) -> None:
    command, env = child_check_command(demo_model)
    assert command == [sys.executable, "-P", "-m", "curator", CHECK_OPTION, str(demo_model)]
    import curator

    package_root = str(Path(curator.__file__).resolve().parents[1])
    assert env["PYTHONPATH"].split(os.pathsep)[0] == package_root


def test_check_model_option_loads_the_model_and_reports_json(
    demo_model: Path, tmp_path: Path
) -> None:
    command, env = child_check_command(demo_model)
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith(MARKER)]
    report = json.loads(line[len(MARKER) :])
    assert report["ok"] is True and report["n_layer"] == 30


def test_check_model_is_not_offered_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert CHECK_OPTION not in capsys.readouterr().out


def test_a_curator_folder_in_the_working_directory_is_not_imported(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child runs the parent's code, not whatever `curator/` the current folder holds."""
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path / "cache"))  # no kept verdict
    decoy = tmp_path / "curator"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy package was imported')\n")
    (decoy / "__main__.py").write_text("raise SystemExit('the decoy package was imported')\n")
    monkeypatch.chdir(tmp_path)
    info = validate_model_file(demo_model)
    assert info.metadata["llama.cpp"]["n_layer"] == 30


def test_the_child_loads_numpy_before_llama_cpp(demo_model: Path, tmp_path: Path) -> None:
    """The trial load meets the shared libraries in the parent's order.

    The parent always has NumPy loaded when it loads a model; on a machine where a CUDA
    build of llama.cpp crashed while loading any model after NumPy (and never without
    it), a child that loaded llama.cpp first passed its check and the parent then died.
    """
    command, env = child_check_command(demo_model)
    done = subprocess.run(
        command,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # one line per finished import, "import time: self | cumulative | name" (nested indented)
    names = [ln.rsplit("|", 1)[1].strip() for ln in done.stderr.splitlines() if "|" in ln]
    assert "numpy" in names and "llama_cpp.llama_cpp" in names
    assert names.index("numpy") < names.index("llama_cpp.llama_cpp")

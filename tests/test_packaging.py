"""The wheel ships the resources inside the package, where the code looks for them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_contains_resources_and_finds_them(tmp_path: Path) -> None:
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
    names = set(zipfile.ZipFile(wheel).namelist())
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

"""Guard against the PySide6 release that corrupts None's reference count.

PySide6 6.12.0 on Python 3.11 decrements ``None``'s refcount on every call of a method
returning ``void``; after some thousands of calls the interpreter aborts ("deallocating
None"). The window makes such calls constantly, so the whole application would crash
minutes after starting. The calls run in a subprocess so an abort fails this test instead
of killing the test run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

CALLS = 20_000

CHILD = f"""
import json, sys
from PySide6.QtCore import QObject, QPointF
from PySide6.QtWidgets import QApplication, QGraphicsRectItem, QWidget
app = QApplication([])
obj, widget, item = QObject(), QWidget(), QGraphicsRectItem(0, 0, 1, 1)
before = sys.getrefcount(None)
for i in range({CALLS}):
    obj.setObjectName("n")            # void
    widget.setVisible(False)          # void
    item.setPos(QPointF(i, 0))        # void
after = sys.getrefcount(None)
print(json.dumps({{"before": before, "after": after}}))
"""


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def test_void_calls_do_not_corrupt_none_refcount() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    # a few references come and go normally; the bug loses one per call (tens of thousands)
    assert counts["before"] - counts["after"] < 1000, counts


def test_installed_pyside6_is_in_the_supported_range() -> None:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    (spec,) = [d for d in deps if d.lower().startswith("pyside6")]
    low = re.search(r">=\s*([\d.]+)", spec)
    high = re.search(r"<\s*([\d.]+)", spec)
    assert low and high, spec
    installed = _version_tuple(metadata.version("PySide6-Essentials"))
    assert _version_tuple(low.group(1)) <= installed < _version_tuple(high.group(1)), (
        f"PySide6 {installed} outside {spec}"
    )

"""The status bar in a narrow window: every part readable, none clipped or overlapping.

At 800 pixels the followed log's state and the demo model's notice did not fit, and Qt
gave each less than its text needs: a plain label clipped its text mid-letter and the
two overlapped. Now each part keeps at least its minimum, and the long ones elide with
"…" (their whole text in ``text()`` and the tooltip).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QWidget

from curator.gui.widgets.eliding import ElidingButton, ElidingLabel
from curator.gui.window.main_window import MainWindow


def parts(window: MainWindow) -> list[QWidget]:
    names = ("follow_label", "demo_button", "db_label", "model_label", "offload_label")
    return [getattr(window, n) for n in (*names, "run_label") if getattr(window, n).isVisible()]


@pytest.mark.parametrize("width", [800, 1024, 1400])
def test_every_status_part_is_whole_or_elided_never_clipped(
    qtbot, main_window: MainWindow, tmp_path: Path, width: int
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_text("".join(json.dumps({"text": f"line {i}"}) + "\n" for i in range(5)))
    main_window.follow_logs([str(log)])
    qtbot.waitUntil(lambda: "5 lines" in main_window.follow_label.text(), timeout=10_000)
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=10_000)
    main_window.resize(width, 700)
    QApplication.processEvents()
    shown = parts(main_window)
    assert main_window.follow_label in shown and main_window.demo_button in shown
    for part in shown:
        assert part.width() >= part.minimumSizeHint().width(), part.objectName()
        if isinstance(part, ElidingLabel | ElidingButton):
            text = part.shown_text()
            assert text == part.text() or (text.endswith("…") and len(text) > 4), text
    right = [p.geometry() for p in sorted(shown, key=lambda p: p.x())]
    assert all(a.right() < b.left() for a, b in itertools.pairwise(right))
    assert main_window.follow_label.shown_text().startswith("following 1 log: 5 lines")
    if width >= 1400:  # room for everything: nothing elided
        assert all(p.shown_text() == p.text() for p in shown if hasattr(p, "shown_text"))

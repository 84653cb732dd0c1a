"""File ▸ Import knowledge… shows progress in the status bar and its Cancel stages nothing."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

WORDS = [
    "operator",
    "billing",
    "retries",
    "morning",
    "standup",
    "report",
    "summary",
    "deploy",
    "rollback",
    "weekly",
    "friday",
    "bullet",
    "status",
    "update",
    "confirm",
    "delete",
    "files",
    "backup",
    "restore",
    "alert",
]


def _distinct_file(tmp_path: Path, count: int) -> Path:
    """Different sentences from one vocabulary: each batch costs real gate work."""
    rng = random.Random(3)
    lines = [
        f"Pattern {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14)))
        for i in range(count)
    ]
    path = tmp_path / "large.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _runs(services) -> int:
    with sqlite3.connect(str(services.db_path)) as db:
        (count,) = db.execute("SELECT count(*) FROM run WHERE kind = 'import'").fetchone()
    return int(count)


def test_cancel_in_the_status_bar_stops_the_import_with_nothing_staged(
    qtbot, main_window, services, tmp_path: Path
) -> None:
    before = _runs(services)
    assert main_window.import_knowledge(_distinct_file(tmp_path, 6000))
    # the first report of patterns through the gate: the bar counts them
    qtbot.waitUntil(lambda: main_window.busy_bar.maximum() == 6000, timeout=60_000)
    qtbot.waitUntil(main_window.busy_cancel.isVisible, timeout=5_000)
    assert "/6,000" in main_window.busy_label.text()
    main_window.busy_cancel.click()
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=60_000)
    assert not main_window.busy_cancel.isVisible()
    assert "cancelled; nothing of it was staged" in main_window.statusBar().currentMessage()
    assert _runs(services) == before

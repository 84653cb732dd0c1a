"""File ▸ Export knowledge reads and writes off the GUI thread and says where it wrote."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from curator.gui.main_window import MainWindow
from curator.store.knowledge import top_k_patterns


def test_export_runs_in_the_background_and_writes_the_top_k(
    qtbot, main_window: MainWindow, tmp_path: Path
) -> None:
    services = main_window.services
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)
    target = tmp_path / "knowledge.json"
    services.dialogs.save_file_name = lambda *_args: str(target)  # the user's choice
    said: list[str] = []
    main_window.statusBar().messageChanged.connect(said.append)
    ran_before = len(services.ops.job_thread_ids)
    assert main_window.export_knowledge()
    assert said[-1] == f"Exporting the knowledge to {target}…"
    qtbot.waitUntil(lambda: said[-1].startswith("Exported"), timeout=30_000)
    expected = top_k_patterns(services.store)
    assert said[-1] == f"Exported {len(expected)} patterns to {target}."
    written = json.loads(target.read_text(encoding="utf-8"))
    assert [p["id"] for p in written] == [r.id for r in expected] and expected
    ran = services.ops.job_thread_ids[ran_before:]
    assert ran and threading.get_ident() not in ran


def test_an_unwritable_target_is_one_clear_error(
    qtbot, main_window: MainWindow, tmp_path: Path
) -> None:
    services = main_window.services
    target = tmp_path / "missing-folder" / "knowledge.md"
    services.dialogs.save_file_name = lambda *_args: str(target)
    assert main_window.export_knowledge()
    qtbot.waitUntil(lambda: bool(services.dialogs.shown), timeout=30_000)
    dialog = services.dialogs.shown[-1]
    assert f"cannot write {target}" in dialog.message  # type: ignore[attr-defined]
    assert not target.exists()

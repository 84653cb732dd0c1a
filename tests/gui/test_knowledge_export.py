"""File ▸ Export knowledge reads and writes off the GUI thread and says where it wrote.

Every format of ``curator export --format`` is offered (Markdown, JSON, a Mem0 list, a
Letta block within its character limit), and the file is what the command line prints.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from curator.cli import main
from curator.gui.knowledge.knowledge_export import ExportDialog
from curator.gui.window.main_window import MainWindow
from curator.store.knowledge import top_k_patterns


def export_as(qtbot, window: MainWindow, fmt: str, limit: int | None = None) -> ExportDialog:
    """Open File ▸ Export knowledge, pick ``fmt`` (and the limit) and press Export…"""
    dialog = window.export_knowledge()
    assert isinstance(dialog, ExportDialog) and dialog in window.services.dialogs.shown
    dialog.choose(fmt)
    assert dialog.limit.isEnabled() is (fmt == "letta-block")
    if limit is not None:
        dialog.limit.setValue(limit)
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    return dialog


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
    export_as(qtbot, main_window, "json")
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
    export_as(qtbot, main_window, "markdown")
    qtbot.waitUntil(lambda: bool(services.dialogs.shown), timeout=30_000)
    dialog = services.dialogs.shown[-1]
    assert f"cannot write {target}" in dialog.message  # type: ignore[attr-defined]
    assert not target.exists()


def _cli_export(db: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--db", str(db), "export", *args]) == 0
    return capsys.readouterr().out


def test_mem0_from_the_window_is_the_command_lines_list(
    qtbot, main_window: MainWindow, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    services = main_window.services
    target = tmp_path / "memories.json"
    asked: list[tuple[str, str]] = []

    def save_file_name(_parent: object, _caption: str, suggested: str, filters: str) -> str:
        asked.append((suggested, filters))
        return str(target)

    services.dialogs.save_file_name = save_file_name  # type: ignore[method-assign]
    said: list[str] = []
    main_window.statusBar().messageChanged.connect(said.append)
    ran_before = len(services.ops.job_thread_ids)
    export_as(qtbot, main_window, "mem0")
    assert asked == [("knowledge-mem0.json", "Mem0 list (*.json)")]
    qtbot.waitUntil(lambda: said[-1].startswith("Exported"), timeout=30_000)
    written = json.loads(target.read_text(encoding="utf-8"))
    assert (
        said[-1] == f"Exported {len(written)} patterns to {target} as a Mem0 list for Memory.add."
    )
    printed = json.loads(_cli_export(services.db_path, "--format", "mem0", capsys=capsys))
    for element in (*written, *printed):  # decays by the second: the rest is the same
        element["metadata"].pop("effective_importance")
    assert written == printed and written
    ran = services.ops.job_thread_ids[ran_before:]
    assert ran and threading.get_ident() not in ran


def test_a_letta_block_keeps_to_the_limit_chosen_in_the_dialog(
    qtbot, main_window: MainWindow, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    services = main_window.services
    target = tmp_path / "block.txt"
    services.dialogs.save_file_name = lambda *_args: str(target)
    said: list[str] = []
    main_window.statusBar().messageChanged.connect(said.append)
    dialog = export_as(qtbot, main_window, "letta-block", limit=300)
    shots = os.environ.get("CURATOR_SHOTS")
    if shots:  # a look at the dialog, on request
        dialog.show()
        dialog.grab().save(str(Path(shots) / "export-dialog.png"))
    qtbot.waitUntil(lambda: said[-1].startswith("Exported"), timeout=30_000)
    block = target.read_text(encoding="utf-8")
    assert len(block) <= 300
    assert block == _cli_export(
        services.db_path, "--format", "letta-block", "--limit", "300", capsys=capsys
    ).rstrip("\n")
    total = len(top_k_patterns(services.store))
    written = sum(line.startswith("- ") for line in block.splitlines())
    assert 0 < written < total  # the demo's patterns do not all fit in 300
    assert said[-1] == (
        f"Exported {written} of {total} patterns to {target} as a Letta block of "
        f"{len(block)} characters (limit 300); {total - written} did not fit."
    )


def test_cancelling_either_dialog_writes_nothing(
    qtbot, main_window: MainWindow, tmp_path: Path
) -> None:
    services = main_window.services
    asked: list[str] = []
    services.dialogs.save_file_name = lambda *_args: asked.append("asked") or ""
    dialog = main_window.export_knowledge()
    dialog.reject()
    assert asked == []  # Cancel on the format: no save dialog
    export_as(qtbot, main_window, "mem0")  # Cancel on the save dialog
    assert asked == ["asked"] and not any(tmp_path.glob("*.json"))

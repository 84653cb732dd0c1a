"""Closing the window mid-import, or Cancel in its status bar (a chat export too), cancels
the import cleanly, and the window's own writes are not mistaken for outside changes while
they run."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

from PySide6.QtCore import Qt

from curator.gui.runtime.operations import OpContext
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.importer import PROGRESS_EVERY
from tests.chat_formats.exports import chatgpt_export, write_json


def _count(store: Store) -> int:
    (count,) = store.execute("SELECT count(*) FROM episode")[0]
    return int(count)


def _hold_at_first_progress(window: MainWindow) -> threading.Event:
    """Keep the window's next write at its first progress report until it is asked to
    stop (runs on the write's thread, through a direct connection); the event is set
    once it is held there."""
    ops = window.services.ops
    reached = threading.Event()

    def hold(_label: str, done: int, total: int) -> None:
        if done < total and not reached.is_set():
            reached.set()
            job = ops._write
            assert job is not None and job.ctx is not None
            job.ctx._cancel.wait(30)

    ops.progressed.connect(hold, Qt.ConnectionType.DirectConnection)
    return reached


def test_closing_mid_import_cancels_it_and_writes_nothing(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    lines = 4 * PROGRESS_EVERY
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(
            json.dumps({"text": f"closing test {i}", "timestamp": "2031-02-01T00:00:00Z"}) + "\n"
            for i in range(lines)
        ),
        encoding="utf-8",
    )
    before = _count(store)
    ops = main_window.services.ops
    reached = _hold_at_first_progress(main_window)
    assert main_window.import_episodes(path)
    qtbot.waitUntil(reached.is_set, timeout=20_000)

    assert main_window.close()
    assert not main_window.isVisible()
    # The job ended with the close. The close's backup runs an event loop that may take
    # its result in, but a closed StoreOps drops it: no callback, nothing shown.
    assert ops.wait(0) and ops.pending <= 1
    assert "imported" not in main_window.statusBar().currentMessage()
    assert not main_window.services.dialogs.shown  # no failure shown either
    assert _count(store) == before  # nothing of the file was written


def test_the_poll_ignores_our_own_running_write(qtbot, main_window: MainWindow) -> None:
    """An import commits on its own connection before its result is delivered; the poll
    treated that as an outside change and reloaded the table on the GUI thread."""
    ops = main_window.services.ops
    committed = threading.Event()
    release = threading.Event()

    def write(ctx: OpContext) -> None:
        with ctx.store.write():
            ctx.store.execute("UPDATE episode SET source = source || '' WHERE id = 1")
        committed.set()
        release.wait(30)

    reloads: list[int] = []
    main_window.episodes_pane.model.loaded.connect(lambda: reloads.append(1))
    assert ops.write("Touching", write)
    qtbot.waitUntil(committed.is_set, timeout=10_000)
    try:
        assert not main_window.check_for_outside_changes()
        assert reloads == []
    finally:
        release.set()
    qtbot.waitUntil(lambda: ops.pending == 0, timeout=10_000)
    # afterwards the change is seen: by this call, or by the window's own poll if its
    # timer came first while the test waited
    qtbot.waitUntil(
        lambda: bool(reloads) or main_window.check_for_outside_changes(), timeout=10_000
    )


def test_cancel_in_the_status_bar_stops_a_chat_export_import(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    trip = chatgpt_export()[0]
    conversations = []
    for i in range(3000):  # a sizeable export: its write reports progress on the way
        conversation = copy.deepcopy(trip)
        conversation["id"] = conversation["conversation_id"] = f"conv-{i}"
        conversation["title"] = f"Trip {i}"
        conversations.append(conversation)
    path = write_json(tmp_path / "conversations.json", conversations)
    before = _count(store)
    ops = main_window.services.ops
    reached = _hold_at_first_progress(main_window)
    assert main_window.import_episodes(path)
    qtbot.waitUntil(reached.is_set, timeout=60_000)
    qtbot.waitUntil(main_window.busy_cancel.isVisible, timeout=10_000)
    qtbot.mouseClick(main_window.busy_cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not ops.busy, timeout=60_000)
    assert _count(store) == before  # all or nothing: nothing
    assert not main_window.services.dialogs.shown  # a Cancel asked for is no error
    assert main_window.statusBar().currentMessage() == (
        "Import of conversations.json cancelled; nothing of it was imported."
    )

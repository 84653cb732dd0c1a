"""File ▸ Import of a chat export, cancelled from the status bar: nothing of it is written.

The chat readers turn a whole export into episodes before the write; Cancel must stop the
import there as well as during the write, and the window must say so, not "imported"."""

from __future__ import annotations

import copy
import threading
from pathlib import Path

from PySide6.QtCore import Qt

from curator.gui.main_window import MainWindow
from curator.store.db import Store
from tests.chat_formats.exports import chatgpt_export, write_json


def _count(store: Store) -> int:
    (count,) = store.execute("SELECT count(*) FROM episode")[0]
    return int(count)


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
    reached = threading.Event()

    def hold(_label: str, done: int, total: int) -> None:
        # On the import's thread: stay at the first report until Cancel has been pressed.
        if not reached.is_set():
            reached.set()
            job = ops._write
            assert job is not None and job.ctx is not None
            job.ctx._cancel.wait(30)

    ops.progressed.connect(hold, Qt.ConnectionType.DirectConnection)
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

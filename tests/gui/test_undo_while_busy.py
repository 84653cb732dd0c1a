"""Ctrl+Z pressed while a long relabel is still being written says why nothing happens.

On 300,000 episodes a relabel runs for minutes; Ctrl+Z pressed meanwhile did nothing at
all, with no word (the action was disabled while any write ran, so its shortcut was
swallowed), and after the relabel the labels stayed. The write here is a real
background write of the window's own store operations that waits for the test's signal,
so the relabel is "still running" for as long as the test needs.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from curator.gui.runtime.operations import OpContext
from curator.gui.window.main_window import MainWindow


def test_ctrl_z_during_a_running_write_names_what_it_waits_for(
    qtbot, main_window: MainWindow
) -> None:
    release = threading.Event()

    def slow_relabel(ctx: OpContext) -> None:
        release.wait(30)

    ops = main_window.services.ops
    assert ops.write("Relabelling", slow_relabel)
    try:
        qtbot.waitUntil(lambda: ops.busy)
        main_window.activateWindow()
        main_window.episodes_pane.table.setFocus()
        qtbot.keyClick(main_window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        message = main_window.statusBar().currentMessage()
        assert "Undoing relabel" in message and "Relabelling" in message, message
    finally:
        release.set()
    qtbot.waitUntil(lambda: not ops.busy)

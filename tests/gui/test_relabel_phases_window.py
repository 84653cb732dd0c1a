"""The window's busy bar follows a relabel to the end and names the phase it is at.

Held at its "saving" phase (the job thread waits inside its own phase report, a direct
connection), the relabel must show the phase and a bar short of full: it used to read
100 % from the moment the labels were updated until the change was saved. The percentage
is the bar's own text, not repeated in the label beside it.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from curator.pipeline.labels import RELABEL_PHASES
from curator.store.models import Episode


def test_the_bar_names_saving_and_is_full_only_when_saved(qtbot, main_window) -> None:
    ops = main_window.services.ops
    pane = main_window.episodes_pane
    qtbot.waitUntil(lambda: ops.pending == 0, timeout=30_000)
    ids = [int(e.id) for e in Episode.select(Episode.id)]
    reached, release = threading.Event(), threading.Event()

    def hold(_label: str, phase: str) -> None:
        if phase == RELABEL_PHASES[-1]:
            reached.set()
            release.wait(30)

    ops.phased.connect(hold, Qt.ConnectionType.DirectConnection)
    assert pane.start_relabel(ids, "noise")
    try:
        qtbot.waitUntil(reached.is_set, timeout=30_000)
        qtbot.waitUntil(lambda: "saving" in main_window.busy_label.text(), timeout=10_000)
        assert main_window.busy_label.text() == "Relabelling: saving…"  # the bar: the %
        assert main_window.busy_bar.isTextVisible() and main_window.busy_bar.maximum() > 0
        assert main_window.busy_bar.value() < main_window.busy_bar.maximum()
        assert Episode.select().where(Episode.human_label == "noise").count() == 0  # unsaved
    finally:
        release.set()
    qtbot.waitUntil(lambda: ops.pending == 0, timeout=30_000)
    assert Episode.select().where(Episode.human_label == "noise").count() == len(ids)

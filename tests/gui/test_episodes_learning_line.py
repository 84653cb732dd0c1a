"""The Episodes pane's learning line after a relabel or its undo.

The retrain that follows a relabel reports in the status bar; it used to replace
"Undid the relabel…" within two seconds by "not enough human labels to learn yet
(0 constitutional, 0 noise, 0 uncategorized)", which counted only labels on classified
episodes. The line now keeps what the person did and counts every label given. The demo
data without a classify run (no model needed) is the case of the report.
"""

from __future__ import annotations

from curator.gui.window.main_window import MainWindow
from curator.store.models import Episode


def _settle(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.services.ops.pending == 0, timeout=30_000)


def _ids(n: int) -> list[int]:
    return [int(e.id) for e in Episode.select(Episode.id).order_by(Episode.id).limit(n)]


def test_the_line_keeps_the_undo_and_counts_the_labels_left(qtbot, main_window) -> None:
    pane = main_window.episodes_pane
    _settle(qtbot, main_window)
    ids = _ids(4)
    for label, chosen in (("noise", ids[:2]), ("constitutional", ids[2:3])):
        assert pane.start_relabel(chosen, label)
        _settle(qtbot, main_window)
    assert pane.start_relabel(ids[3:], "uncategorized")
    _settle(qtbot, main_window)
    # the retrain after the last relabel says it (one started after an earlier relabel,
    # on a machine slower than the retrain's pause, says fewer)
    given = "4 given (1 constitutional, 2 noise, 1 uncategorized)"
    qtbot.waitUntil(lambda: given in main_window.statusBar().currentMessage(), timeout=30_000)
    line = main_window.statusBar().currentMessage()
    assert line.startswith("Labelled 1 episode uncategorized.")
    assert "not usable yet" in line  # and why

    with qtbot.waitSignal(pane.relearner.finished, timeout=30_000):
        assert pane.undo_relabel()
        _settle(qtbot, main_window)
    line = main_window.statusBar().currentMessage()
    assert line.startswith("Undid the relabel of 1 episode.")
    assert "3 given (1 constitutional, 2 noise, 0 uncategorized)" in line

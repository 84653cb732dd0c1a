"""Nothing freezes the window: import, relabel and undo run through StoreOps off the GUI
thread, bulk relabels ask first with the exact count, large tables load in the background."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QPushButton

from curator.gui.episodes.episodes_pane import CONFIRM_ABOVE
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store


def _pane(main_window: MainWindow):
    main_window.tabs.setCurrentIndex(0)
    return main_window.episodes_pane


def _settle(qtbot, main_window: MainWindow) -> None:
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=20_000)


def _labels(store: Store) -> dict[int, tuple[object, ...]]:
    rows = store.execute("SELECT id, label, label_by, human_label FROM episode")
    return {int(r[0]): tuple(r[1:]) for r in rows}


def _off_gui_thread(main_window: MainWindow) -> bool:
    ids = main_window.services.ops.job_thread_ids
    return bool(ids) and threading.get_ident() not in ids


def test_import_runs_off_the_gui_thread_with_progress(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    lines = [
        json.dumps({"text": f"imported episode number {i}", "timestamp": "2031-05-01T10:00:00Z"})
        for i in range(4500)
    ]
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    main_window.services.ops.progressed.connect(lambda *args: seen.append(args))
    (before,) = store.execute("SELECT count(*) FROM episode")[0]

    assert main_window.import_episodes(path)
    assert not main_window.import_action.isEnabled()  # no second import meanwhile
    _settle(qtbot, main_window)

    (after,) = store.execute("SELECT count(*) FROM episode")[0]
    assert after == before + 4500
    assert _off_gui_thread(main_window)
    assert (f"Importing {path.name}", 4500, 4500) in seen  # every line read
    assert any(done < total for _label, done, total in seen)  # and reported on the way
    assert main_window.episodes_pane.model.rowCount() == after
    assert main_window.import_action.isEnabled()


def test_an_import_that_makes_the_database_large_reloads_in_the_background(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    """The table's size decides where its loads run; an import into a small database
    must not run the first reload of the now large one (ids, counts, sources) on the GUI
    thread because the size known before the import was small."""
    pane = _pane(main_window)
    (before,) = store.execute("SELECT count(*) FROM episode")[0]
    pane.model.async_above = before + 100  # small now, large after the import
    lines = [
        json.dumps({"text": f"grown episode {i}", "timestamp": "2031-05-02T10:00:00Z"})
        for i in range(300)
    ]
    path = tmp_path / "grow.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    jobs = main_window.services.ops.job_thread_ids
    ran = len(jobs)

    assert main_window.import_episodes(path)
    _settle(qtbot, main_window)
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)

    # the import itself, then the table's load and the filter facts: all jobs
    assert len(jobs) >= ran + 3
    assert threading.get_ident() not in jobs
    assert pane.model.rowCount() == before + 300
    assert pane.model.in_background


def test_relabel_and_undo_run_off_the_gui_thread(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    before = _labels(store)
    pane.table.selectRow(3)
    (episode_id,) = pane.selected_ids()
    qtbot.keyClick(pane.table, Qt.Key.Key_C)
    assert main_window.services.ops.busy or _labels(store) != before  # started, not done inline
    _settle(qtbot, main_window)
    assert _labels(store)[episode_id] == ("constitutional", "human", "constitutional")
    assert _off_gui_thread(main_window)

    threads_before = len(main_window.services.ops.job_thread_ids)
    qtbot.keyClick(pane.table, Qt.Key.Key_Backspace)
    _settle(qtbot, main_window)
    assert _labels(store) == before
    assert len(main_window.services.ops.job_thread_ids) > threads_before
    assert threading.get_ident() not in main_window.services.ops.job_thread_ids


def _select_all(pane) -> int:
    pane.table.setFocus()
    pane.table.selectAll()
    return len(pane.selected_ids())


def _confirm_box(main_window: MainWindow) -> QMessageBox:
    boxes = [d for d in main_window.services.dialogs.shown if d.objectName() == "confirmBox"]
    assert len(boxes) == 1
    box = boxes[0]
    assert isinstance(box, QMessageBox)
    return box


def test_a_bulk_relabel_asks_first_and_declining_changes_nothing(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    before = _labels(store)
    count = _select_all(pane)
    assert count == len(before) > CONFIRM_ABOVE
    qtbot.keyClick(pane.table, Qt.Key.Key_U)
    box = _confirm_box(main_window)
    assert box.text().startswith(f"Relabel {count:,} episodes as uncategorized?")
    assert not main_window.services.ops.busy  # nothing started before the answer
    box.reject()  # Cancel / Escape
    qtbot.wait(50)
    assert not main_window.services.ops.pending
    assert _labels(store) == before


def test_a_confirmed_bulk_relabel_changes_all_and_one_undo_restores_all(
    qtbot, main_window, store
) -> None:
    pane = _pane(main_window)
    before = _labels(store)
    count = _select_all(pane)
    qtbot.keyClick(pane.table, Qt.Key.Key_U)
    button = _confirm_box(main_window).findChild(QPushButton, "confirmButton")
    assert button is not None and button.text() == "Relabel"
    button.click()
    _settle(qtbot, main_window)
    after = _labels(store)
    assert len(after) == count
    assert all(v == ("uncategorized", "human", "uncategorized") for v in after.values())
    assert _off_gui_thread(main_window)

    main_window.undo_action.trigger()  # Ctrl+Z: one step for the whole selection
    _settle(qtbot, main_window)
    assert _labels(store) == before


def test_a_write_is_refused_while_another_runs(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    release = threading.Event()
    main_window.services.ops.write("Slow", lambda ctx: release.wait(10))
    before = _labels(store)
    pane.table.selectRow(0)
    with qtbot.waitSignal(main_window.statusBar().messageChanged) as blocker:
        qtbot.keyClick(pane.table, Qt.Key.Key_N)
    assert "Slow" in blocker.args[0]
    release.set()
    _settle(qtbot, main_window)
    assert _labels(store) == before


def test_large_tables_load_in_the_background_and_the_newest_search_wins(
    qtbot, main_window, store
) -> None:
    pane = _pane(main_window)
    pane.model.async_above = 0  # what a database of more than ASYNC_ABOVE episodes does
    threads = len(main_window.services.ops.job_thread_ids)
    pane.search_edit.setText("burnt")
    pane.apply_filter()
    assert pane.count_label.text() == "Searching…"
    pane.search_edit.setText("burnt out")
    pane.apply_filter()
    qtbot.waitUntil(lambda: not pane.model.loading, timeout=10_000)
    (expected,) = store.execute("SELECT count(*) FROM episode WHERE text LIKE '%burnt out%'")[0]
    (total,) = store.execute("SELECT count(*) FROM episode")[0]
    assert pane.model.rowCount() == expected > 0
    assert pane.count_label.text() == f"{total} episodes ({expected} shown)"
    assert len(main_window.services.ops.job_thread_ids) >= threads + 2
    assert threading.get_ident() not in main_window.services.ops.job_thread_ids
    _settle(qtbot, main_window)
    assert pane.model.rowCount() == expected  # the older search did not overwrite it

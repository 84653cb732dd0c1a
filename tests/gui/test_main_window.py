"""The main window: panes, state saved in QSettings, outside changes, import, errors, close."""

from __future__ import annotations

import sqlite3
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QSplitter

from curator.gui.widgets.errors import ErrorDialog, install_excepthook
from curator.gui.window.main_window import MainWindow

CTRL = Qt.KeyboardModifier.ControlModifier


def test_panes_in_order(main_window) -> None:
    names = [main_window.tabs.widget(i).objectName() for i in range(main_window.tabs.count())]
    assert names == [
        "episodesPane",
        "reviewPane",
        "knowledgePane",
        "identityPane",
        "runsPane",
        "settingsPane",
        "insightsPane",
    ]
    titles = [main_window.tabs.tabText(i) for i in range(main_window.tabs.count())]
    assert titles == ["Episodes", "Review", "Knowledge", "Identity", "Runs", "Settings", "Insights"]


def test_ctrl_page_down_and_up_step_through_the_panes_from_a_focused_table(
    qtbot, main_window
) -> None:
    """With the Episodes table focused, Ctrl+PgDown moved the table's cursor instead of
    going to the next pane, as it does in browsers and editors."""
    main_window.tabs.setCurrentIndex(0)
    table = main_window.episodes_pane.table
    table.setFocus()
    qtbot.waitUntil(table.hasFocus)
    cursor = table.currentIndex()
    qtbot.keyClick(table, Qt.Key.Key_PageDown, Qt.KeyboardModifier.ControlModifier)
    assert main_window.tabs.currentIndex() == 1
    assert main_window.episodes_pane.table.currentIndex() == cursor
    last = main_window.tabs.count() - 1
    main_window.tabs.setCurrentIndex(last)
    qtbot.keyClick(main_window.tabs.currentWidget(), Qt.Key.Key_PageDown, CTRL)
    assert main_window.tabs.currentIndex() == 0  # round the end
    qtbot.keyClick(main_window.tabs.currentWidget(), Qt.Key.Key_PageUp, CTRL)
    assert main_window.tabs.currentIndex() == last


def test_status_bar_shows_database_and_model(qtbot, main_window, services) -> None:
    qtbot.waitUntil(
        lambda: not main_window.status_loading, timeout=30_000
    )  # read in the background
    assert main_window.db_label.text() == services.db_path.name
    assert str(services.db_path) in main_window.db_label.toolTip()
    assert "demo model" in main_window.model_label.text()
    assert main_window.run_label.text() == "no model worker"
    assert not main_window.classify_action.isEnabled()


def test_state_is_saved_and_restored(qtbot, services, qsettings) -> None:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.resize(780, 560)  # inside the offscreen screen, so geometry restores exactly
    window.show()
    qtbot.waitExposed(window)
    splitter = window.findChild(QSplitter, "episodesSplitter")
    splitter.setSizes([300, 400])
    sizes = splitter.sizes()
    window.tabs.setCurrentIndex(3)
    window.close()
    assert qsettings.value("window/pane") in (3, "3")

    again = MainWindow(services, qsettings)
    qtbot.addWidget(again)
    again.show()
    assert again.tabs.currentIndex() == 3
    assert again.size() == window.size()
    again.tabs.setCurrentIndex(0)
    restored = again.findChild(QSplitter, "episodesSplitter")
    qtbot.waitExposed(again)
    qtbot.wait(50)
    assert restored.sizes() == sizes
    again.close()


def test_outside_change_reloads_visible_pane(qtbot, main_window, services) -> None:
    pane = main_window.episodes_pane
    before = pane.model.rowCount()
    assert not main_window.check_for_outside_changes()
    other = sqlite3.connect(str(services.db_path))  # another process/connection writes
    with other:
        other.execute(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at,"
            " classify_truncated) VALUES ('outside', 'written elsewhere', "
            "'2030-01-01T00:00:00.000000+00:00', 'cli', '{}', "
            "'2030-01-01T00:00:00.000000+00:00', 0)"
        )
    other.close()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 1, timeout=5000)
    assert pane.model.data(pane.model.index(0, 5)) == "written elsewhere"


def test_import_reports_bad_lines_with_numbers(qtbot, main_window, services, tmp_path: Path):
    good = '{"text": "a fresh episode about gardening", "timestamp": "2031-05-01T10:00:00Z"}'
    path = tmp_path / "new.jsonl"
    path.write_text(f"{good}\nnot json at all\n", encoding="utf-8")
    before = main_window.episodes_pane.model.rowCount()
    assert main_window.import_episodes(path)
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=10_000)
    assert main_window.episodes_pane.model.rowCount() == before + 1
    text = services.dialogs.shown[-1].text()
    assert "1 imported" in text and "line 2:" in text


def test_import_reads_a_chat_export_by_its_content(
    qtbot, main_window, services, tmp_path: Path
) -> None:
    """File ▸ Import takes a ChatGPT export as the command line does (one episode per
    conversation, the conversation's title as the source)."""
    from tests.chat_formats.exports import chatgpt_export, write_json

    path = write_json(tmp_path / "export-without-a-telling-name.json", chatgpt_export())
    before = main_window.episodes_pane.model.rowCount()
    assert main_window.import_episodes(path)
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=10_000)
    assert main_window.episodes_pane.model.rowCount() == before + 2
    assert "2 imported" in main_window.statusBar().currentMessage()
    # the detail panel says where an imported episode came from: file, conversation, messages
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentIndex(0)
    (lisbon,) = services.store.execute("SELECT id FROM episode WHERE source = 'Lisbon trip ✈️'")[0]
    pane.table.selectRow(pane.model.row_of(lisbon))
    qtbot.waitUntil(lambda: "Imported from" in pane.detail.toPlainText(), timeout=10_000)
    shown = " ".join(pane.detail.toPlainText().split())  # the table's cells wrap
    assert (
        f"ChatGPT export {path}, conversation conv-lisbon, "
        "4 messages (msg-u1, msg-a1b, msg-u2b, msg-a2)" in shown
    )


def test_backup_writes_a_usable_copy(qtbot, main_window, services, tmp_path: Path) -> None:
    with qtbot.waitSignal(main_window.auto_backup.finished, timeout=10_000) as done:
        main_window.backup_action.trigger()  # in the background, into <db dir>/backups
    target = done.args[0].path
    copy = sqlite3.connect(str(target))
    try:
        (count,) = copy.execute("SELECT count(*) FROM episode").fetchone()
    finally:
        copy.close()
    assert count == main_window.episodes_pane.model.rowCount()


def _fault_injecting_slot() -> None:
    """Fault injection: a slot that raises, as a bug in any pane would."""
    raise RuntimeError("injected fault in a slot")


@pytest.mark.qt_no_exception_capture
def test_exception_in_slot_shows_dialog_with_copyable_details(qtbot, main_window, services):
    previous = install_excepthook(services.dialogs, lambda: main_window)
    try:
        QTimer.singleShot(0, _fault_injecting_slot)
        qtbot.waitUntil(lambda: bool(services.dialogs.shown), timeout=3000)
    finally:
        sys.excepthook = previous
    dialog = services.dialogs.shown[-1]
    assert isinstance(dialog, ErrorDialog)
    assert dialog.message == "RuntimeError: injected fault in a slot"
    dialog.copy_button.click()
    copied = QGuiApplication.clipboard().text()
    assert "Traceback" in copied and "_fault_injecting_slot" in copied


def test_close_is_clean(qtbot, services, qsettings) -> None:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    assert window.close()
    assert not window.poll_timer.isActive()
    assert qsettings.contains("window/geometry")


def test_close_with_a_worker_joins_its_thread(qtbot, services, qsettings) -> None:
    from curator.gui.runtime.worker import LlmWorker

    services.worker = LlmWorker(services)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    assert window.classify_action.isEnabled() and window.run_label.text() == "idle"
    assert services.worker.running
    window.close()
    assert not services.worker.running


def test_every_pane_has_its_data_when_first_shown(qtbot, main_window) -> None:
    """No pane waits for a write elsewhere before loading (the demo has 20 patterns)."""
    from curator.gui.knowledge.knowledge_pane import KnowledgePane

    knowledge = main_window.pane("knowledgePane")
    assert isinstance(knowledge, KnowledgePane)
    main_window.tabs.setCurrentWidget(knowledge)
    qtbot.waitUntil(lambda: knowledge.patterns.rowCount() == 20)  # read in the background


def test_the_status_bar_reads_the_settings_off_the_gui_thread(qtbot, main_window, services) -> None:
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    ran_before = len(services.ops.job_thread_ids)
    main_window.update_status()
    assert main_window.status_loading  # shown when the background read is delivered
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    assert main_window.demo_button.isVisible()  # the demo model is in use
    ran = services.ops.job_thread_ids[ran_before:]
    assert ran and threading.get_ident() not in ran

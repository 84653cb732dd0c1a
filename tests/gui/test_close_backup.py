"""The backup on close: taken only when something changed, its progress shown while the
event loop runs, never given up after a fixed time, skippable by the person."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QPushButton, QWidget

from curator.gui.runtime.operations import StoreOps
from curator.gui.window.auto_backup import CLOSE_LABEL, AutoBackup
from curator.store.backup import BackupResult, list_backups
from curator.store.db import Store


def _fill(store: Store, rows: int) -> None:
    """About ``rows`` * 330 bytes of patterns: a copy and check that take a visible while."""
    with store.write():
        store.db.execute_sql(
            "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status,"
            " revision, created_at, updated_at) "
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)"
            " SELECT printf('%d ', i) || hex(randomblob(150)), 0.5, '2026-01-01', 0.5, 'x',"
            " 'active', 1, '2026-01-01', '2026-01-01' FROM seq",
            (rows,),
        )


def test_a_second_close_with_nothing_changed_takes_no_backup(qtbot, store: Store) -> None:
    """Two sessions: the first changed the database and backs up on close; the second
    only looked (its open and close checkpoint the WAL) and copies nothing."""
    AutoBackup(store.path, lambda: 30, StoreOps(store)).shutdown()
    first = list_backups(store.path)
    assert len(first) == 1
    store.close()  # the session ends: the last connection checkpoints the file
    again = Store(store.path)
    again.execute("SELECT count(*) FROM pattern")
    AutoBackup(again.path, lambda: 30, StoreOps(again)).shutdown()
    assert list_backups(store.path) == first
    with again.write():  # a third session changes something: its close backs up
        again.db.execute_sql("UPDATE pattern SET importance = 0.5 WHERE id = 1")
    AutoBackup(again.path, lambda: 30, StoreOps(again)).shutdown()
    assert len(list_backups(store.path)) == 2
    again.close()


@pytest.fixture
def big(tmp_path: Path):
    store = Store(tmp_path / "big.sqlite")
    _fill(store, 60_000)  # about 20 MB
    yield store
    store.close()


def test_the_close_shows_the_backups_progress_and_waits_for_the_whole_copy(
    qtbot, big: Store
) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    auto = AutoBackup(big.path, lambda: 30, StoreOps(big), window, max_total_mb=lambda: 0)
    auto.dialog_delay_ms = 0
    seen: list[int] = []
    finished: list[object] = []
    auto.finished.connect(finished.append)

    def look() -> None:
        dialog = auto.close_dialog
        if dialog is not None and dialog.isVisible() and dialog.labelText() == CLOSE_LABEL:
            seen.append(dialog.value())  # the copy's percent (its check shows no number)

    watch = QTimer()
    watch.timeout.connect(look)
    watch.start(5)
    auto.shutdown(window, wait_s=None)
    watch.stop()
    assert seen, "the progress dialog was never shown"
    assert seen == sorted(seen) and seen[-1] > 0
    assert auto.close_dialog is None and not auto.running
    backups = list_backups(big.path)
    assert len(backups) == 1 and backups[0].stat().st_size > 10_000_000
    assert finished == []  # the window is closing: nobody is told in the status bar


def test_skip_backup_stops_the_copy_and_deletes_the_partial_file(qtbot, big: Store, caplog) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    auto = AutoBackup(big.path, lambda: 30, StoreOps(big), window)
    auto.dialog_delay_ms = 0
    clicked: list[bool] = []

    def skip() -> None:
        dialog = auto.close_dialog
        if dialog is not None and dialog.isVisible() and not clicked:
            clicked.append(True)
            button = dialog.findChild(QPushButton)
            assert button.text() == "Skip backup"
            button.click()

    watch = QTimer()
    watch.timeout.connect(skip)
    watch.start(5)
    with caplog.at_level("WARNING", logger="curator.gui"):
        auto.shutdown(window)
    watch.stop()
    assert clicked and "backup on close skipped on request" in caplog.text
    assert not (big.path.parent / "backups").exists()  # nor the folder it made
    assert not auto.running and auto.close_dialog is None


def test_a_small_close_backup_shows_no_dialog(qtbot, store: Store) -> None:
    auto = AutoBackup(store.path, lambda: 30, StoreOps(store))
    auto.dialog_delay_ms = 60_000
    auto.shutdown()
    assert len(list_backups(store.path)) == 1
    assert not any(w.objectName() == "closeBackupDialog" for w in QApplication.topLevelWidgets())


def test_the_periodic_backup_honours_the_size_bound(qtbot, store: Store) -> None:
    taken: list[BackupResult] = []
    auto = AutoBackup(store.path, lambda: 1, StoreOps(store), tick_ms=20, max_total_mb=lambda: 1)
    auto.finished.connect(lambda r: r is not None and taken.append(r))
    for i in range(3):
        with store.write():
            store.db.execute_sql("UPDATE pattern SET importance = ?", (i / 10,))
        qtbot.waitUntil(lambda n=i: len(taken) == n + 1, timeout=10_000)
    auto.shutdown()
    sizes = [p.stat().st_size for p in list_backups(store.path)]
    assert sum(sizes) <= 1_000_000 and list_backups(store.path)[-1] == taken[-1].path


def test_closing_the_window_shows_the_dialog_until_its_backup_is_done(
    qtbot, main_window, store: Store
) -> None:
    """Through the main window's close: the window goes, the dialog stays in sight until
    the copy is complete, and close() returns only then."""
    _fill(store, 60_000)
    auto = main_window.auto_backup
    auto.dialog_delay_ms = 0
    seen: list[tuple[bool, bool]] = []

    def look() -> None:
        dialog = auto.close_dialog
        if dialog is not None and dialog.isVisible():
            seen.append((main_window.isVisible(), dialog.isModal()))

    watch = QTimer()
    watch.timeout.connect(look)
    watch.start(5)
    assert main_window.close()
    watch.stop()
    assert seen and seen[0] == (False, True)
    assert len(list_backups(store.path)) == 1 and auto.close_dialog is None


def test_a_close_backup_that_fails_says_so_in_the_log(qtbot, store: Store, caplog) -> None:
    """The backups folder cannot be made (a file has its name): the close still ends,
    the database is untouched and the log says why no backup was taken."""
    (store.path.parent / "backups").write_text("in the way", encoding="utf-8")
    with caplog.at_level("WARNING", logger="curator.gui"):
        AutoBackup(store.path, lambda: 30, StoreOps(store)).shutdown()
    assert "backup on close failed: cannot create the backup folder" in caplog.text
    assert (store.path.parent / "backups").read_text(encoding="utf-8") == "in the way"


def test_the_size_bound_is_set_in_the_settings_pane(qtbot, main_window, store: Store) -> None:
    from PySide6.QtWidgets import QSpinBox

    from curator.store.settings import load_settings

    pane = main_window.pane("settingsPane")
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    box = pane.findChild(QSpinBox, "backupMaxTotal")
    assert box.value() == 2000 and box.specialValueText() == "off"
    box.setValue(1500)
    pane.apply()
    qtbot.waitUntil(lambda: not pane.saving, timeout=30_000)
    assert load_settings(store).backup_max_total_mb == 1500
    assert main_window.auto_backup._max_total_bytes() == 1_500_000_000
    main_window.resize(1400, 900)
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(box.isVisible)


def test_the_copys_check_is_named_instead_of_a_bar_stuck_at_99(qtbot, big: Store) -> None:
    """On 300,000 episodes the close dialog sat at 99 % for about 14 s of a 17 s backup:
    the copy was done and its quick_check (no progress of its own) ran. The store says
    when the check begins, after the copy's last progress; the dialog then says so and
    turns busy."""
    from curator.gui.window.auto_backup import CLOSE_CHECK_LABEL
    from curator.store.backup import take_backup

    events: list[str] = []
    take_backup(
        big.path,
        progress=lambda done, total: events.append("copy" if done < total else "copied"),
        checking=lambda: events.append("checking"),
    )
    assert events[-2:] == ["copied", "checking"] and events.count("checking") == 1

    window = QWidget()
    qtbot.addWidget(window)
    auto = AutoBackup(big.path, lambda: 30, StoreOps(big), window)
    auto._show_close_dialog(window)
    dialog = auto.close_dialog
    assert dialog is not None
    auto._report_checking()  # what the backup thread calls, through the queued signal
    qtbot.waitUntil(lambda: dialog.labelText() == CLOSE_CHECK_LABEL)
    assert (dialog.minimum(), dialog.maximum()) == (0, 0)  # busy, not a number
    dialog.close()

"""Backups in the window: every N minutes of use and on close, never on the GUI thread."""

from __future__ import annotations

import threading

from PySide6.QtWidgets import QSpinBox

from curator.gui.runtime.operations import StoreOps
from curator.gui.window.auto_backup import AutoBackup
from curator.gui.window.main_window import MainWindow
from curator.store.backup import BackupResult, list_backups, take_backup
from curator.store.db import Store
from curator.store.models import Pattern
from curator.store.settings import load_settings


def test_the_timer_takes_a_backup_in_the_background(qtbot, store: Store) -> None:
    messages: list[str] = []
    auto = AutoBackup(store.path, lambda: 2, StoreOps(store), tick_ms=20)  # a "minute" of 20 ms
    auto.status_message.connect(messages.append)
    with qtbot.waitSignal(auto.finished, timeout=10_000) as done:
        pass
    result = done.args[0]
    assert isinstance(result, BackupResult) and list_backups(store.path) == [result.path]
    assert auto.job_thread_ids and threading.get_ident() not in auto.job_thread_ids
    assert any(m.startswith("Backing up the database… ") for m in messages)
    assert messages[-1].startswith(f"Backed up to {result.path}")

    # Nothing changed since: the next interval takes none.
    with qtbot.waitSignal(auto.finished, timeout=10_000) as again:
        pass
    assert again.args == [None] and list_backups(store.path) == [result.path]
    auto.shutdown()


def test_an_interval_of_zero_takes_no_backup(qtbot, store: Store) -> None:
    auto = AutoBackup(store.path, lambda: 0, StoreOps(store), tick_ms=10)
    qtbot.waitUntil(lambda: auto.minutes_used >= 10, timeout=10_000)
    assert not auto.running and list_backups(store.path) == []
    auto.shutdown()  # off means off on close too
    assert list_backups(store.path) == []


def test_backup_now_and_close_back_up_from_the_window(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    auto = main_window.auto_backup
    with qtbot.waitSignal(auto.finished, timeout=10_000) as done:
        main_window.backup_action.trigger()
    first = done.args[0]
    assert isinstance(first, BackupResult) and first.path.parent == store.path.parent / "backups"
    assert threading.get_ident() not in auto.job_thread_ids
    qtbot.waitUntil(lambda: "Backed up to" in main_window.statusBar().currentMessage())

    with store.write():  # a change after that backup: the close takes one more
        Pattern.update(importance=0.5).execute()
    main_window.close()
    backups = list_backups(store.path)
    assert len(backups) == 2 and backups[0] == first.path


def test_the_interval_is_set_in_the_settings_pane(qtbot, main_window, store: Store) -> None:
    pane = main_window.pane("settingsPane")
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    box = pane.findChild(QSpinBox, "backupInterval")
    assert box.value() == 30 and box.specialValueText() == "off"
    box.setValue(0)
    pane.apply()
    qtbot.waitUntil(lambda: not pane.saving, timeout=30_000)  # saved in the background
    assert load_settings(store).backup_interval_minutes == 0
    assert main_window.auto_backup._interval() == 0
    main_window.close()
    assert list_backups(store.path) == []  # off: none on close either


def test_no_backup_starts_while_a_write_runs(qtbot, store: Store) -> None:
    ops = StoreOps(store)
    release = threading.Event()
    assert ops.write("Import", lambda ctx: release.wait(10))
    messages: list[str] = []
    auto = AutoBackup(store.path, lambda: 1, ops, tick_ms=10)
    auto.status_message.connect(messages.append)
    assert not auto.backup_now()  # one write at a time: the user is told why
    assert messages == ["Not backed up: Import is running; try again after it."]
    qtbot.waitUntil(lambda: auto.minutes_used >= 5, timeout=10_000)
    assert not auto.running and list_backups(store.path) == []
    with qtbot.waitSignal(auto.finished, timeout=10_000) as done:
        release.set()  # the write ends: the next tick backs up
    assert isinstance(done.args[0], BackupResult)
    auto.shutdown()


def test_a_backup_on_close_that_takes_too_long_is_stopped_and_deleted(
    qtbot, tmp_path, caplog
) -> None:
    """The close waits at most ``wait_s``; then the copy stops at its next step."""
    big = Store(tmp_path / "big.sqlite")
    with big.write():  # about 30 MB: a copy and check that take far longer than no time
        big.db.execute_sql(
            "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status,"
            " revision, created_at, updated_at) "
            "WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < 50000)"
            " SELECT printf('%d ', i) || hex(randomblob(300)), 0.5, '2026-01-01', 0.5, 'x',"
            " 'active', 1, '2026-01-01', '2026-01-01' FROM seq"
        )
    auto = AutoBackup(big.path, lambda: 30, StoreOps(big))
    with caplog.at_level("WARNING", logger="curator.gui"):
        auto.shutdown(wait_s=0.0)
    big.close()
    assert "backup on close skipped after 0 s" in caplog.text
    assert not auto.running and not (tmp_path / "backups").exists()  # nor its folder


def test_another_databases_backup_neither_stops_nor_is_pruned_by_this_one(
    qtbot, store: Store
) -> None:
    """``curator.db`` beside the window's ``curator.sqlite`` shares its backup folder: its
    newer backup does not make the window's change look backed up, and it stays the
    other database's."""
    other = Store(store.path.with_name("curator.db"))  # binds the models to it ...
    other.close()
    with store.write():  # ... so the window's database is written through its own
        store.db.execute_sql("UPDATE pattern SET importance = 0.25")
    theirs = take_backup(other.path).path  # after the change, of the other database
    taken: list[BackupResult] = []
    auto = AutoBackup(store.path, lambda: 1, StoreOps(store), tick_ms=20)
    auto.finished.connect(lambda result: result is not None and taken.append(result))
    # due: its own newest backup (none) is older than the change
    qtbot.waitUntil(lambda: len(taken) == 1, timeout=10_000)
    with store.write():
        store.db.execute_sql("UPDATE pattern SET importance = 0.5")
    qtbot.waitUntil(lambda: len(taken) == 2, timeout=10_000)
    auto.shutdown()
    assert list_backups(store.path) == [r.path for r in taken]
    assert theirs.exists() and list_backups(other.path) == [theirs]

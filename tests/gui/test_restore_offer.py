"""The window's answer to a damaged database at start: Restore the newest good backup, or Quit."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.gui.window.recovery import RestoreOffer
from curator.store.backup import backup_database
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Episode
from curator.store.opening import DamagedDatabaseError


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def refused(tmp_path: Path) -> DamagedDatabaseError:
    """A demo database with one good backup, then truncated: opening it is refused."""
    path = tmp_path / "curator.sqlite"
    store = Store(path)
    create_demo(store)
    backup_database(store)
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DamagedDatabaseError) as info:
        Store(path)
    assert info.value.backup is not None
    return info.value


def _offer(qtbot, error: DamagedDatabaseError) -> RestoreOffer:
    offer = RestoreOffer(error)
    qtbot.addWidget(offer)
    offer.open()
    qtbot.waitExposed(offer)
    assert error.backup is not None and error.backup.name in offer.text()
    return offer


def test_restore_puts_the_backup_back_and_keeps_the_damaged_file(
    qtbot, refused: DamagedDatabaseError
) -> None:
    damaged = _digest(refused.path)
    offer = _offer(qtbot, refused)
    with qtbot.waitSignal(offer.restored, timeout=10_000) as blocker:
        qtbot.mouseClick(offer.restore_button, Qt.MouseButton.LeftButton)
    store = blocker.args[0]
    try:
        assert isinstance(store, Store) and store.integrity_check() == "ok"
        assert Episode.select().count() > 0
    finally:
        store.close()
    aside = list(refused.path.parent.glob("curator.sqlite.damaged-*"))
    assert len(aside) == 1 and _digest(aside[0]) == damaged


def test_quit_leaves_the_damaged_file_as_it_was(qtbot, refused: DamagedDatabaseError) -> None:
    before = _digest(refused.path)
    offer = _offer(qtbot, refused)
    with qtbot.waitSignal(offer.declined, timeout=5_000):
        qtbot.mouseClick(offer.quit_button, Qt.MouseButton.LeftButton)
    assert _digest(refused.path) == before
    assert not list(refused.path.parent.glob("curator.sqlite.damaged-*"))


def test_a_restore_that_cannot_happen_says_why_and_changes_nothing(
    qtbot, refused: DamagedDatabaseError
) -> None:
    before = _digest(refused.path)
    offer = _offer(qtbot, refused)
    assert refused.backup is not None
    shutil.copyfile(refused.path, refused.backup)  # the backup is damaged since the offer
    with qtbot.waitSignal(offer.failed, timeout=10_000) as blocker:
        qtbot.mouseClick(offer.restore_button, Qt.MouseButton.LeftButton)
    assert "cannot be restored" in blocker.args[0]
    assert _digest(refused.path) == before
    assert not list(refused.path.parent.glob("curator.sqlite.damaged-*"))


def test_every_pane_reads_a_read_only_database(qtbot, tmp_path: Path, qsettings) -> None:
    """The window on a database opened read-only: every pane loads, nothing is written."""
    from curator.gui.runtime.services import AppServices
    from curator.gui.widgets.errors import Dialogs
    from curator.gui.window.main_window import MainWindow

    path = tmp_path / "curator.sqlite"
    with Store(path) as store:
        create_demo(store)
    before = _digest(path)
    store = Store(path, read_only=True)
    dialogs = Dialogs()
    window = MainWindow(
        AppServices(store=store, db_path=path, worker=None, dialogs=dialogs), qsettings
    )
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        window.tabs.widget(index).refresh()
        qtbot.wait(20)
    assert window.findChild(type(window.tabs.widget(0)), "episodesPane") is not None
    assert not dialogs.shown, [d.windowTitle() for d in dialogs.shown]
    window.close()
    store.close()
    assert _digest(path) == before
    assert not path.with_name(path.name + "-wal").exists()
    assert not path.with_name(path.name + "-shm").exists()

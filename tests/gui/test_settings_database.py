"""Settings ▸ Database: the window's database, the one it opens next, and Check.

The choice is kept in the per-user profile (each test has its own, see tests/conftest.py),
never in the database's settings; Check opens the chosen database on a pool thread.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.gui.runtime.services import AppServices
from curator.gui.settings.database_box import DatabaseBox
from curator.gui.settings.settings_pane import SettingsPane
from curator.gui.widgets.errors import Dialogs
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.migrations import LATEST_VERSION
from curator.store.pg_url import PASSWORD_FIX
from curator.store.profile import profile_path, saved_database

CHECK_WAIT_MS = 30_000


@pytest.fixture
def pane(qtbot, services: AppServices) -> Iterator[SettingsPane]:
    widget = SettingsPane(services)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.waitUntil(lambda: not widget.loading, timeout=30_000)  # read in the background
    yield widget
    widget.shutdown()


def _box(pane: SettingsPane) -> DatabaseBox:
    return pane.database_box


def _check(qtbot, box: DatabaseBox, text: str) -> str:
    box.choice_edit.clear()
    qtbot.keyClicks(box.choice_edit, text)
    qtbot.mouseClick(box.check_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not box.checking, timeout=CHECK_WAIT_MS)
    return box.result.text()


def test_the_section_shows_this_windows_sqlite_database_and_what_chose_it(
    pane: SettingsPane, store: Store
) -> None:
    box = _box(pane)
    assert box.current.text() == f"SQLite file {store.path}, the default database."
    assert box.choice_edit.text() == ""  # nothing saved: the default opens next time
    assert "restart to switch now" in box.note.text()
    assert "not used" not in box.note.text()


def test_db_and_the_environment_say_the_saved_choice_is_not_used(
    qtbot, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = AppServices(store=store, db_path=store.path, dialogs=Dialogs(), db_source="--db")
    box = DatabaseBox(services)
    qtbot.addWidget(box)
    box.load()
    assert box.current.text().endswith(", chosen by --db.")
    assert "started with --db: the choice above is not used" in box.note.text()
    monkeypatch.setenv("CURATOR_DB", str(store.path))
    services.db_source = "$CURATOR_DB"
    box.load()
    assert box.current.text().endswith(", chosen by $CURATOR_DB.")
    assert "$CURATOR_DB is set: the choice above is not used" in box.note.text()


def test_a_chosen_file_is_checked_and_saved_to_the_profile_not_the_database(
    qtbot, pane: SettingsPane, services: AppServices, store: Store, tmp_path: Path
) -> None:
    other = tmp_path / "other.sqlite"
    with Store(other) as second:
        create_demo(second)
        episodes = second.execute("SELECT COUNT(*) FROM episode")[0][0]
    said: list[str] = []
    pane.status_message.connect(said.append)
    box = _box(pane)
    found = _check(qtbot, box, str(other))
    assert found == (
        f"SQLite file {other}, schema version {LATEST_VERSION}, {episodes:,} episodes."
    )
    assert box.check_threads and threading.get_ident() not in box.check_threads
    pane.apply()
    qtbot.waitUntil(lambda: services.ops.pending == 0 and not pane.saving, timeout=30_000)
    assert saved_database() == str(other)
    assert "opens the chosen database at its next start" in said[-1]
    settings_rows = store.execute("SELECT key, value FROM setting")
    assert not any(str(other) in str(row) for row in settings_rows)
    assert box.choice_edit.text() == str(other) and not box.edited()


def test_a_missing_file_is_described_as_what_the_window_will_do(
    qtbot, pane: SettingsPane, tmp_path: Path
) -> None:
    new = tmp_path / "new" / "memory.sqlite"
    found = _check(qtbot, _box(pane), str(new))
    assert found == f"No database at {new} yet: the window creates it there when it opens."
    assert not new.parent.exists()  # a check creates nothing


def test_a_url_with_a_password_is_refused_with_the_private_ways(
    qtbot, pane: SettingsPane, services: AppServices
) -> None:
    box = _box(pane)
    found = _check(qtbot, box, "postgresql://ana:hunter2@db.example/memory")
    assert found.startswith("Not usable: a password in the database URL")
    assert PASSWORD_FIX in found and "hunter2" not in found
    assert not box.check_threads  # refused before anything was opened
    pane.apply()
    shown = services.dialogs.shown[-1].text()
    assert shown.startswith("Not saved: a password") and PASSWORD_FIX in shown
    assert not profile_path().exists()


def test_the_check_waits_on_a_pool_thread_while_the_window_stays_usable(
    qtbot, pane: SettingsPane
) -> None:
    """A real server on loopback that accepts the connection and never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    port = silent.getsockname()[1]
    box = _box(pane)
    try:
        qtbot.keyClicks(box.choice_edit, f"postgresql://ana@127.0.0.1:{port}/memory")
        box.check()
        assert box.checking and box.busy.isVisible() and not box.check_button.isEnabled()
        assert box.result.text().startswith("Checking PostgreSQL at 127.0.0.1:")
        qtbot.waitUntil(lambda: bool(box.check_threads), timeout=CHECK_WAIT_MS)
        qtbot.keyClicks(pane.reviewer_box.name_edit, "Ana")  # the GUI thread is free
        assert pane.reviewer_box.name() == "Ana" and box.checking
    finally:
        silent.close()  # the server goes: the check ends with its reason
    qtbot.waitUntil(lambda: not box.checking, timeout=CHECK_WAIT_MS)
    assert threading.get_ident() not in box.check_threads
    assert box.result.text().startswith(
        f"Not usable: cannot connect to PostgreSQL at 127.0.0.1:{port}"
    )
    assert box.check_button.isEnabled() and not box.busy.isVisible()


def test_a_postgresql_check_reads_the_servers_version_schema_and_episodes(
    qtbot, pane: SettingsPane, pg_url: str
) -> None:
    with Store(pg_url) as server_store:
        create_demo(server_store)
        episodes = server_store.execute("SELECT COUNT(*) FROM episode")[0][0]
        major = server_store.execute("SHOW server_version_num")[0][0]
    found = _check(qtbot, _box(pane), pg_url)
    name = pg_url.rsplit("/", 1)[1]
    assert found.startswith(f"PostgreSQL {int(major) // 10000} at ")
    assert f"/{name} as " in found
    assert found.endswith(f", schema version {LATEST_VERSION}, {episodes:,} episodes.")

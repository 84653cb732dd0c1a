"""A window whose PostgreSQL server goes away says so once, and reads again when it is back.

Before, every pane's read failed with a dialog of its own ("OperationalError: connection
failed: ..."), a pane whose read failed stayed empty until some other change reloaded
it, and nothing said when the server answered again. The server here is really
unreachable for the window's database: it refuses new connections to it and its
sessions are ended (the session's other databases are untouched).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pg_server import PostgresServer

from curator.gui.knowledge.knowledge_export import export_to
from curator.gui.widgets.errors import ErrorDialog
from curator.gui.window.main_window import MainWindow


@pytest.fixture
def engine() -> str:
    return "postgresql"


def _reachable(server: PostgresServer, url: str, allowed: bool) -> None:
    name = urlsplit(url).path.lstrip("/")
    server.admin(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
    if not allowed:
        server.admin(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
        )


def _errors(window: MainWindow) -> list[ErrorDialog]:
    return [d for d in window.services.dialogs.shown if isinstance(d, ErrorDialog)]


def test_an_unreachable_server_is_one_banner_and_the_panes_are_read_again_when_it_is_back(
    qtbot, main_window: MainWindow, pg_server: PostgresServer, pg_url: str, tmp_path: Path
) -> None:
    window, ops = main_window, main_window.services.ops
    banner = window.server_banner
    assert not banner.away
    _reachable(pg_server, pg_url, allowed=False)
    try:
        window.refresh_all()
        qtbot.waitUntil(lambda: banner.away, timeout=30_000)
        said = banner.message.text()
        assert "cannot connect to" in said and "OperationalError" not in said
        for index in range(len(window.panes)):  # each pane's read fails: no dialog
            window.tabs.setCurrentIndex(index)
            qtbot.waitUntil(lambda: ops.pending == 0, timeout=30_000)
        assert _errors(window) == []
        # a write that fails meanwhile is said: its work was not done
        assert ops.write("Save", lambda ctx: ctx.store.execute("SELECT 1"))
        qtbot.waitUntil(lambda: bool(_errors(window)), timeout=30_000)
        [dialog] = _errors(window)
        assert "cannot connect to" in dialog.message and "OperationalError" not in dialog.message
        dialog.close()
        # and so is an export the person asked for, though it is a read
        services = window.services
        services.dialogs.save_file_name = lambda *_args: str(tmp_path / "k.md")
        assert export_to(services, window, window.show_message, "markdown")
        qtbot.waitUntil(lambda: bool(_errors(window)), timeout=30_000)
        [dialog] = _errors(window)
        assert dialog.windowTitle() == "Export knowledge" and "cannot connect to" in dialog.message
        dialog.close()
        assert not (tmp_path / "k.md").exists()
    finally:
        _reachable(pg_server, pg_url, allowed=True)
    qtbot.waitUntil(lambda: not banner.away, timeout=30_000)  # its next try finds it
    knowledge = window.pane("knowledgePane")
    window.tabs.setCurrentWidget(knowledge)
    qtbot.waitUntil(lambda: knowledge.table.model().rowCount() == 20, timeout=30_000)
    assert _errors(window) == []

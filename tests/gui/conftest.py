"""Fixtures for the GUI tests: the real window on a real SQLite file with the demo data.

Window state goes to an ini file under ``tmp_path`` (and QSettings' default paths are
pointed there too), so no test reads or writes the user's own settings.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QWidget

from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.settings import set_setting
from tests.conftest import LLM_TEST_SETTINGS

OFFSCREEN_ONLY_WARNING = r"^This plugin does not support propagateSizeHints\(\)$"
"""The offscreen platform plugin lacks this window-manager call; Qt warns once per shown
top-level window. It says nothing about the application, so only this exact message is
ignored, and only on the offscreen platform."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("QT_QPA_PLATFORM") != "offscreen":
        return
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.qt_log_ignore(OFFSCREEN_ONLY_WARNING))


@pytest.fixture
def qsettings(tmp_path: Path) -> QSettings:
    for fmt in (QSettings.Format.IniFormat, QSettings.Format.NativeFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(tmp_path / "qsettings-user"))
        QSettings.setPath(fmt, QSettings.Scope.SystemScope, str(tmp_path / "qsettings-system"))
    return QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that sets ``BOTH_ENGINES = True`` runs each of its ``store`` tests (the
    window's too) on a SQLite file and on a PostgreSQL database: the same test."""
    if "store" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_ENGINES", False):
        metafunc.parametrize("engine", ["sqlite", "postgresql"])


@pytest.fixture
def engine() -> str:
    """The engine of the ``store`` fixture: SQLite unless the module asks for both."""
    return "sqlite"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database as ``create_demo`` builds it, once per worker: building it takes
    about 70 ms and copying the file 4, and most of the window's tests start from it."""
    path = tmp_path_factory.mktemp("demo-template") / "curator.sqlite"
    db = Store(path)
    create_demo(db)
    db.close()
    assert not path.with_name(path.name + "-wal").exists()  # all of it in the one file
    return path


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """The demo data, in a SQLite file (a copy of the built one) or (``engine``) a
    PostgreSQL database."""
    if engine == "sqlite":
        path = tmp_path / "curator.sqlite"
        shutil.copyfile(request.getfixturevalue("demo_template"), path)
        db = Store(path)
    else:
        db = Store(request.getfixturevalue("pg_url"))
        create_demo(db)
    yield db
    db.dispose()


@pytest.fixture
def services(store: Store) -> AppServices:
    return AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())


@pytest.fixture
def main_window(qtbot, services: AppServices, qsettings: QSettings) -> Iterator[MainWindow]:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    QApplication.processEvents()  # the first show's fit to the screen, before a test resizes
    # On a server the pane in view loads once the watcher listens (on a busy machine it may
    # load first, and the watcher's first report reload it): both begun before a test reads.
    qtbot.waitUntil(lambda: not window.first_load_pending and window.listening, timeout=30_000)
    yield window
    window.close()


@pytest.fixture
def show_pane(qtbot) -> Callable[[QWidget], None]:
    """Show a pane the way the window does (1400x900, exposed) and load its data."""

    def show(widget: QWidget) -> None:
        qtbot.addWidget(widget)
        widget.resize(1400, 900)
        widget.show()
        qtbot.waitExposed(widget)
        widget.refresh()  # type: ignore[attr-defined]

    return show


@pytest.fixture
def llm_services(tmp_path: Path, demo_model: Path, demo_template: Path) -> Iterator[AppServices]:
    """A demo database with short LLM outputs and a real worker on the demo model."""
    shutil.copyfile(demo_template, tmp_path / "runs.sqlite")
    store = Store(tmp_path / "runs.sqlite")
    for key, value in LLM_TEST_SETTINGS.items():
        set_setting(store, key, value)
    services = AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    services.worker = LlmWorker(services)
    yield services
    services.worker.shutdown()
    store.close()

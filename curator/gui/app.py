"""Starting the desktop application: the composition root.

``main`` builds everything once, in order: logging and error reporting, the
``QApplication`` (Fusion style, which follows the system's light/dark color scheme in Qt 6
without hard-coded colors), the store, the LLM worker and the window. Nothing else in the
GUI creates long-lived services, so tests build the same window from their own
``AppServices``.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import peewee
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QStyleFactory

from curator.errors import CuratorError
from curator.gui.errors import (
    Dialogs,
    install_excepthook,
    install_qt_message_handler,
    setup_logging,
)
from curator.resources_path import resource_path
from curator.store.backup import check_or_quarantine
from curator.store.db import Store, resolve_db_path

log = logging.getLogger("curator.gui")


def app_icon() -> QIcon:
    """The application icon: the SVG, with the PNG render as a fallback size."""
    icon = QIcon()
    for name in ("curator.svg", "curator-256.png"):
        path = resource_path("icons", name)
        if path.is_file():
            icon.addFile(str(path))
    return icon


def create_application(argv: list[str]) -> QApplication:
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(
        Qt.HighDpiScaleFactorRoundingPolicy.PassThrough
    )
    app = QApplication(argv)
    app.setOrganizationName("MemoryCurator")
    app.setApplicationName("curator")
    app.setApplicationDisplayName("Memory Curator")
    app.setDesktopFileName("io.github.memorycurator")
    if "Fusion" in list(QStyleFactory.keys()):
        app.setStyle("Fusion")  # palette follows styleHints().colorScheme() (light/dark)
    app.setWindowIcon(app_icon())
    return app


def check_display(environ: Mapping[str, str] = os.environ) -> None:
    """Refuse clearly where Qt would abort: Linux without a display and no platform chosen."""
    if not sys.platform.startswith("linux") or environ.get("QT_QPA_PLATFORM"):
        return
    if not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        raise CuratorError(
            "no display to open the window on: set DISPLAY (or WAYLAND_DISPLAY), or "
            "QT_QPA_PLATFORM=offscreen to run without a screen; the commands "
            "(curator --help) need no display"
        )


def _mark_abandoned_runs(store: Store) -> None:
    """At start, before the window exists: runs whose process died become ``abandoned``.

    Best effort: a database that cannot be written now keeps them until a later start.
    """
    from curator.store.liveness import mark_abandoned_runs

    try:
        marked = mark_abandoned_runs(store)
    except (peewee.OperationalError, CuratorError) as exc:
        log.warning("abandoned runs not checked: %s", exc)
        return
    if marked:
        log.warning("runs %s were abandoned by a process that is gone", marked)


def main(db_path: str | os.PathLike[str] | None = None) -> int:
    """Open the window on ``db_path`` (default: ``--db``/``CURATOR_DB``/user data dir)."""
    from curator.gui.main_window import MainWindow
    from curator.gui.services import AppServices
    from curator.gui.worker import LlmWorker

    check_display()
    setup_logging()
    app = create_application(sys.argv[:1])
    install_qt_message_handler()
    dialogs = Dialogs()
    path = resolve_db_path(db_path)
    quarantine = check_or_quarantine(path)
    if quarantine is not None:
        log.error("%s", quarantine.message)
    try:
        store = Store(path)
    except CuratorError as exc:
        log.error("%s", exc)
        dialogs.error(None, "Memory Curator", str(exc))
        app.exec()
        return exc.exit_code
    _mark_abandoned_runs(store)
    services = AppServices(store=store, db_path=Path(path), worker=None, dialogs=dialogs)
    services.worker = LlmWorker(services)
    window = MainWindow(services)
    install_excepthook(dialogs, lambda: window)
    window.show()
    if quarantine is not None:
        dialogs.warning(window, "Damaged database moved aside", quarantine.message)
    try:
        return int(app.exec())
    finally:
        store.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))

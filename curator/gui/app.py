"""Starting the desktop application: the composition root.

``main`` builds everything once, in order: logging and error reporting, the
``QApplication`` (Fusion style, which follows the system's light/dark color scheme in Qt 6
without hard-coded colors), the store, the LLM worker and the window. Nothing else in the
GUI creates long-lived services, so tests build the same window from their own
``AppServices``.
"""

from __future__ import annotations

import gc
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
from curator.gui.widgets.errors import (
    Dialogs,
    install_excepthook,
    install_qt_message_handler,
    setup_logging,
)
from curator.resources_path import resource_path
from curator.store.db import Store
from curator.store.db_choice import busy_timeout_from_env, db_path_source, resolve_db_path
from curator.store.opening import DamagedDatabaseError

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


def freeze_startup_heap() -> int:
    """Keep the objects of a started window out of every later garbage collection;
    returns how many were set aside.

    A full (generation 2) collection walks every tracked object with the GIL held. The
    window's modules and widgets are some 100,000 objects that live as long as the
    process, and each full collection over them cost ~50 ms (more on a loaded machine)
    on whichever thread triggered it: a background import or relabel allocating rows
    triggers several, and the window cannot paint meanwhile. ``gc.freeze`` moves them to
    the permanent generation (what it is for, after start-up); garbage is collected
    first so none of it is kept for good.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def chosen_database(
    db_path: str | os.PathLike[str] | None, source: str | None
) -> tuple[Path | str, str]:
    """The database to open and what chose it. With ``source``, ``db_path`` was resolved
    already (by the command line, under its source's rules) and is taken as it is:
    resolved again it would be judged as ``--db``, which refuses the password that
    ``$CURATOR_DB`` may hold."""
    if source is None or db_path is None:
        return resolve_db_path(db_path), source or db_path_source(db_path)
    return (db_path if isinstance(db_path, str) else Path(db_path)), source


def main(db_path: str | os.PathLike[str] | None = None, source: str | None = None) -> int:
    """Open the window on ``db_path`` (``--db``), else ``$CURATOR_DB``, the profile's
    database or the default (:func:`curator.store.db_choice.resolve_db_path`). ``source`` says
    what chose an already resolved ``db_path`` (the command line resolves it first);
    the Settings pane shows it.

    A database that cannot be opened is never replaced on its own: a damaged one with a
    good backup gets the Restore / Quit dialog (:class:`RestoreOffer`), anything else an
    error dialog; a read-only one opens for reading, with a note saying so.
    """
    from curator.gui.runtime.services import AppServices
    from curator.gui.runtime.worker import LlmWorker
    from curator.gui.window.main_window import MainWindow
    from curator.gui.window.recovery import RestoreOffer

    check_display()
    setup_logging()
    app = create_application(sys.argv[:1])
    install_qt_message_handler()
    dialogs = Dialogs()
    path, source = chosen_database(db_path, source)
    opened: list[Store] = []
    workers: list[LlmWorker] = []
    windows: list[MainWindow] = []
    failure: list[int] = []
    # The hook goes in before anything that reads data, so an exception while building
    # the window is a dialog too; its parent is the window once there is one.
    install_excepthook(dialogs, lambda: windows[-1] if windows else None)

    def refuse(message: str, exit_code: int) -> None:
        log.error("%s", message)
        failure.append(exit_code)
        dialogs.error(None, "Memory Curator", message)

    def show_window(store: Store) -> None:
        opened.append(store)
        _mark_abandoned_runs(store)
        # store.path: the file, or a PostgreSQL URL as shown (no password) for the title
        services = AppServices(
            store=store, db_path=store.path, worker=None, dialogs=dialogs, db_source=source
        )
        worker = LlmWorker(services)
        workers.append(worker)
        services.worker = worker
        try:
            window = MainWindow(services)
        except Exception as exc:
            # A window that cannot be built is one dialog and a clean exit, never an abort
            # ("QThread: Destroyed while thread is still running" if the worker were left).
            log.exception("the window could not be built")
            failure.append(3)
            dialogs.exception(None, exc)
            return
        windows.append(window)
        window.show_fitted()
        freeze_startup_heap()
        if store.read_only:
            dialogs.warning(
                window,
                "Opened read-only",
                f"{path} cannot be written (the file or its folder is read-only). You can "
                "browse it; changes will be refused.",
            )

    try:
        show_window(Store(path, busy_timeout_s=busy_timeout_from_env()))
    except DamagedDatabaseError as exc:
        if exc.backup is None:
            refuse(str(exc), exc.exit_code)
        else:
            log.error("%s", exc)
            offer = RestoreOffer(exc)
            offer.restored.connect(show_window)
            offer.failed.connect(lambda message: refuse(message, 2))
            refused_code = exc.exit_code
            offer.declined.connect(lambda: failure.append(refused_code))
            offer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            offer.open()
    except CuratorError as exc:
        refuse(str(exc), exc.exit_code)
    try:
        code = int(app.exec())
    finally:
        for worker in workers:
            worker.shutdown()  # joins the thread on every way out (idempotent)
        for store in opened:
            store.dispose()
    return failure[0] if failure and not windows else code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))

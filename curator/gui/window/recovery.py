"""At start, a database that cannot be opened: offer the newest good backup.

The store refuses a damaged database and leaves it as it is (see
:mod:`curator.store.opening`); here the user chooses: **Restore** puts the newest good
backup in its place with the same function as ``curator restore`` (the damaged file is
renamed aside, never deleted), **Quit** leaves everything as it was. The dialog is opened
non-blocking like every other dialog of the window, and reports the outcome by signals.

The restore is a file copy that runs on the GUI thread: it happens before the window
exists, so there is nothing for it to freeze, and a busy cursor says it is working.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QAbstractButton, QMessageBox, QWidget

from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.db_choice import busy_timeout_from_env
from curator.store.opening import DamagedDatabaseError
from curator.store.restore import restore_backup


class RestoreOffer(QMessageBox):
    """ "The database cannot be opened" with Restore (newest good backup) and Quit."""

    restored = Signal(object)  # the reopened Store
    failed = Signal(str)  # why the restore did not happen (nothing was changed)
    declined = Signal()

    def __init__(self, error: DamagedDatabaseError, parent: QWidget | None = None) -> None:
        if error.backup is None:
            raise ValueError("a restore can only be offered when a good backup exists")
        super().__init__(
            QMessageBox.Icon.Critical,
            "Database cannot be opened",
            f"{error}\n\nRestore the newest good backup ({error.backup.name})? "
            "The current file is kept, renamed aside.",
            QMessageBox.StandardButton.NoButton,
            parent,
        )
        self.setObjectName("restoreOffer")
        self.error = error
        self.restore_button = self.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
        self.restore_button.setObjectName("restoreButton")
        self.quit_button = self.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
        self.quit_button.setObjectName("quitButton")
        self.setDefaultButton(self.restore_button)
        self.buttonClicked.connect(self._clicked)

    def _clicked(self, button: QAbstractButton) -> None:
        if button is not self.restore_button:
            self.declined.emit()
            return
        QGuiApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            restore_backup(self.error.path, self.error.backup)
            store = Store(self.error.path, busy_timeout_s=busy_timeout_from_env())
        except CuratorError as exc:
            self.failed.emit(str(exc))
            return
        finally:
            QGuiApplication.restoreOverrideCursor()
        self.restored.emit(store)

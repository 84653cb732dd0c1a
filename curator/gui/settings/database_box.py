"""The Settings pane's Database section: the database of this window, and the next one.

It shows the database this window is on (the engine; the file, or the server, database
and user, never a password) and what chose it: ``--db``, ``$CURATOR_DB``, the profile or
the default (:func:`curator.store.db_choice.resolve_db_path`). Below, the database the window
opens next time: a SQLite file (typed, or chosen with Browse) or a ``postgresql://`` URL
without a password, kept in the per-user profile (:mod:`curator.store.profile`), never
in the database's own settings. The pane's Apply saves it; it takes effect at the next
start, and while ``--db`` or ``$CURATOR_DB`` is given it is not used, which the section
says.

Check opens the chosen database without writing and says what it holds
(:func:`curator.store.database_check.check_database`) on a thread pool of its own, with
a busy indicator; the GUI thread never waits for a server or a file.
"""

from __future__ import annotations

import os
import threading

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.runtime.services import AppServices
from curator.store.database_check import check_database, describe_location
from curator.store.db_choice import DB_ENV, default_db_path
from curator.store.pg_url import PASSWORD_FIX, PROFILE_SOURCE
from curator.store.profile import check_database as check_choice
from curator.store.profile import saved_database

ERROR_STYLE = "color: #b00020;"

CHOSEN_BY = {
    "--db": "chosen by --db",
    f"${DB_ENV}": f"chosen by ${DB_ENV}",
    PROFILE_SOURCE: "saved in your profile",
    "default": "the default database",
}


class _CheckSignals(QObject):
    """Lives on the GUI thread; the pool thread emits, the box receives (queued)."""

    done = Signal(int, str)  # ticket, what was found
    failed = Signal(int, str)  # ticket, one line


class _Check(QRunnable):
    def __init__(
        self, ticket: int, location: str, signals: _CheckSignals, threads: list[int]
    ) -> None:
        super().__init__()
        self.ticket = ticket
        self.location = location
        self.signals = signals
        self.threads = threads

    def run(self) -> None:
        self.threads.append(threading.get_ident())
        try:
            found = check_database(self.location)
        except CuratorError as exc:
            self.signals.failed.emit(self.ticket, str(exc))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(self.ticket, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.done.emit(self.ticket, found)


class DatabaseBox(QGroupBox):
    """The Database group (see the module doc)."""

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__("Database", parent)
        self.setObjectName("databaseBox")
        self.services = services
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _CheckSignals(self)
        self._signals.done.connect(self._checked)
        self._signals.failed.connect(self._check_failed)
        self._ticket = 0
        self._checking = False
        self._loaded = ""
        self.check_threads: list[int] = []
        """The threads the checks ran on (never the GUI thread)."""

        self.current = QLabel()
        self.current.setObjectName("databaseCurrent")
        self.current.setWordWrap(True)
        self.current.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.choice_edit = QLineEdit()
        self.choice_edit.setObjectName("databaseChoice")
        self.choice_edit.setPlaceholderText(f"Empty: the default database, {default_db_path()}")
        self.choice_edit.setToolTip(
            "The database the window (and the commands, without --db or "
            f"${DB_ENV}) opens: a SQLite file's path, or a PostgreSQL URL such as "
            "postgresql://ana@db.example:5432/memory?sslmode=verify-full. No password "
            f"in the URL: {PASSWORD_FIX}. Kept in your profile on this computer; empty: "
            "the default database."
        )
        self.choice_edit.textEdited.connect(self._edited)
        self.choice_edit.editingFinished.connect(self.show_problem)
        browse = QPushButton("Browse…")
        browse.setObjectName("browseDatabaseButton")
        browse.setToolTip("Choose a SQLite database file")
        browse.clicked.connect(self.browse)
        self.check_button = QPushButton("Check")
        self.check_button.setObjectName("checkDatabaseButton")
        self.check_button.setToolTip(
            "Open the chosen database without changing it and say what it holds"
        )
        self.check_button.clicked.connect(self.check)
        self.busy = QProgressBar()
        self.busy.setObjectName("databaseCheckBusy")
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(80)
        self.busy.setTextVisible(False)
        policy = self.busy.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # showing it must not shift the row
        self.busy.setSizePolicy(policy)
        self.busy.hide()
        row = QHBoxLayout()
        row.addWidget(self.choice_edit, 1)
        row.addWidget(browse)
        row.addWidget(self.check_button)
        row.addWidget(self.busy)
        self.result = QLabel()
        self.result.setObjectName("databaseCheckResult")
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.hide()
        self.note = QLabel()
        self.note.setObjectName("databaseNote")
        self.note.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("This window", self.current)
        form.addRow("Open next time", row)
        form.addRow(self.result)
        form.addRow(self.note)

    # -- what is shown --------------------------------------------------------------------

    def load(self) -> None:
        """The window's database and what chose it; the profile's choice in the field."""
        store = self.services.store
        source = self.services.db_source
        self.current.setText(f"{describe_location(store.location)}, {CHOSEN_BY[source]}.")
        try:
            saved = saved_database() or ""
        except CuratorError as exc:  # a broken profile: said, and kept until replaced
            saved = ""
            self._say(str(exc), error=True)
        else:
            self._say("")
        self._loaded = saved
        self.choice_edit.setText(saved)
        self._show_note()

    def _show_note(self) -> None:
        if self.services.db_source == "--db":
            overridden = "This window was started with --db: the choice above is not used "
            overridden += "while --db is given.\n"
        elif os.environ.get(DB_ENV):
            overridden = f"${DB_ENV} is set: the choice above is not used while it is.\n"
        else:
            overridden = ""
        self.note.setText(
            f"{overridden}Saved with Apply; the window opens this database next time "
            "(restart to switch now).\nThe commands open it too when neither --db nor "
            f"${DB_ENV} is given."
        )

    def _say(self, text: str, *, error: bool = False) -> None:
        self.result.setText(text)
        self.result.setStyleSheet(ERROR_STYLE if error else "")
        self.result.setVisible(bool(text))

    def _edited(self) -> None:
        self._ticket += 1  # a check of the previous text no longer answers for this one
        self._say("")

    # -- the choice -----------------------------------------------------------------------

    def choice(self) -> str:
        return self.choice_edit.text().strip()

    def edited(self) -> bool:
        """Whether the field differs from the profile's saved choice (Apply saves it)."""
        return self.choice() != self._loaded

    def problem(self) -> str | None:
        """Why the typed choice cannot be saved, or None (empty: the default database)."""
        try:
            check_choice(self.choice())
        except CuratorError as exc:
            return str(exc)
        return None

    def show_problem(self) -> bool:
        """Say why the typed choice cannot be saved, if it cannot; True when it can."""
        problem = self.problem()
        if problem is not None:
            self._say(f"Not usable: {problem}", error=True)
        return problem is None

    def browse(self) -> None:
        path = self.services.dialogs.open_file_name(
            self,
            "Choose a database file",
            "SQLite databases (*.sqlite *.sqlite3 *.db);;All files (*)",
        )
        if path:
            self.choice_edit.setText(path)
            self._edited()
            self.check()

    # -- check ----------------------------------------------------------------------------

    @property
    def checking(self) -> bool:
        return self._checking

    def check(self) -> None:
        """Check the chosen database in the background; the answer replaces the busy bar."""
        if self._checking or not self.show_problem():
            return
        location = check_choice(self.choice()) or str(default_db_path())
        self._ticket += 1
        self._checking = True
        self.check_button.setEnabled(False)
        self.busy.show()
        self._say(f"Checking {describe_location(location)}…")
        self._pool.start(_Check(self._ticket, location, self._signals, self.check_threads))

    def _finished(self) -> None:
        self._checking = False
        self.check_button.setEnabled(True)
        self.busy.hide()

    def _checked(self, ticket: int, found: str) -> None:
        self._finished()
        if ticket == self._ticket:
            self._say(found)

    def _check_failed(self, ticket: int, reason: str) -> None:
        self._finished()
        if ticket == self._ticket:
            self._say(f"Not usable: {reason}", error=True)

    def shutdown(self) -> None:
        """Wait for a running check (it gives up after its timeout)."""
        self._pool.waitForDone()

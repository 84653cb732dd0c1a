"""Error reporting for the window: dialogs, the exception hook, and Qt's own messages.

An unexpected exception in a slot must not silently vanish (PySide prints it and carries
on) nor kill the window: it is logged with its traceback and shown in a dialog whose
"Copy details" button puts the traceback on the clipboard for a bug report. Qt's own
warnings go to the same log so they are not lost on a console nobody watches.

Every message box goes through :class:`Dialogs`, which the composition root puts into
``AppServices``. Its dialogs are opened window-modal but non-blocking (``open()``, not
``exec()``), so no nested event loop runs inside a slot and tests can find the dialog
that was shown in ``Dialogs.shown`` and close it.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import Any

import platformdirs
from PySide6.QtCore import (
    QCoreApplication,
    QMessageLogContext,
    QObject,
    Qt,
    QThread,
    QtMsgType,
    Signal,
    qInstallMessageHandler,
)
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from curator.errors import CuratorError

log = logging.getLogger("curator.gui")

APP_LOG_NAME = "memory-curator"


class ErrorDialog(QDialog):
    """A one-line message, the technical details, and a button copying them."""

    def __init__(
        self, title: str, message: str, details: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("errorDialog")
        self.setWindowTitle(title)
        self.message = message
        self.details = details
        layout = QVBoxLayout(self)
        label = QLabel(message)
        label.setObjectName("errorMessage")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(label)
        if details:
            text = QPlainTextEdit(details)
            text.setReadOnly(True)
            text.setObjectName("errorDetails")
            text.setMinimumSize(520, 160)
            layout.addWidget(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy details")
        self.copy_button.setObjectName("copyDetailsButton")
        self.copy_button.clicked.connect(self.copy_details)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def copy_details(self) -> None:
        clipboard = QGuiApplication.clipboard()
        clipboard.setText(f"{self.message}\n\n{self.details}".strip())


def cancel_by_default(buttons: QDialogButtonBox) -> None:
    """Make Cancel the answer to Enter and Escape in a dialog that lets material in.

    For confirmations whose OK lets flagged or unseen material into Knowledge (accepting
    flagged candidates, committing a run): a reviewer pressing Enter after a run of
    decision keys must not take that step by accident (a phishing link went in that
    way). OK stays one click (or Tab and Space) away. QDialogButtonBox would make its
    first accepting button the default when shown, unless another one already is.
    """
    ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
    cancel = buttons.button(QDialogButtonBox.StandardButton.Cancel)
    ok.setAutoDefault(False)  # focused by Tab it still does not take Enter
    ok.setDefault(False)
    cancel.setAutoDefault(True)
    cancel.setDefault(True)


class Dialogs:
    """Shows message boxes without blocking the caller, and remembers the open ones.

    Replaceable through ``AppServices.dialogs``; file choosers are methods here for the
    same reason (a test supplies a path instead of driving a native dialog).
    """

    def __init__(self) -> None:
        self.shown: list[QDialog] = []
        self._quiet = 0

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Messages asked for within are logged, not opened (a pane's read that failed
        while the database server is away: the window's banner says that once)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def _open(self, dialog: QDialog, *, message: bool = False) -> QDialog:
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        if message and self._quiet:  # a question is always asked
            log.info("not shown (said elsewhere): %s", dialog.windowTitle())
            dialog.deleteLater()
            return dialog
        self.shown.append(dialog)
        dialog.finished.connect(lambda _result, d=dialog: self._forget(d))
        dialog.open()
        return dialog

    def show(self, dialog: QDialog) -> QDialog:
        """Open a dialog of our own the same way (non-blocking, listed in ``shown``)."""
        return self._open(dialog)

    def _forget(self, dialog: QDialog) -> None:
        if dialog in self.shown:
            self.shown.remove(dialog)

    def message(
        self,
        parent: QWidget | None,
        title: str,
        text: str,
        *,
        icon: QMessageBox.Icon = QMessageBox.Icon.Information,
        details: str = "",
    ) -> QDialog:
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, parent)
        box.setObjectName("messageBox")
        if details:
            box.setDetailedText(details)
        return self._open(box, message=True)

    def warning(self, parent: QWidget | None, title: str, text: str, details: str = "") -> QDialog:
        return self.message(parent, title, text, icon=QMessageBox.Icon.Warning, details=details)

    def error(self, parent: QWidget | None, title: str, message: str, details: str = "") -> QDialog:
        return self._open(ErrorDialog(title, message, details, parent), message=True)

    def exception(self, parent: QWidget | None, exc: BaseException) -> QDialog:
        """A user-facing error (``CuratorError``: its sentence) or an unexpected one."""
        details = "".join(traceback.format_exception(exc))
        if isinstance(exc, CuratorError):
            return self.error(parent, "Memory Curator", str(exc), details)
        return self.error(parent, "Unexpected error", f"{type(exc).__name__}: {exc}", details)

    def close_all(self) -> None:
        for dialog in list(self.shown):
            dialog.close()

    def confirm(
        self,
        parent: QWidget | None,
        title: str,
        text: str,
        on_yes: Callable[[], object],
        *,
        yes_text: str = "OK",
        no_text: str = "",
    ) -> QMessageBox:
        """Ask before an action that changes data; ``on_yes`` runs only on the yes button.

        Window-modal without a nested event loop (``open()``), like the other boxes; the
        default button is Cancel, so Enter never confirms by accident. A test finds the
        box in :attr:`shown` and clicks one of its real buttons.
        """
        box = QMessageBox(
            QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Cancel, parent
        )
        box.setObjectName("confirmBox")
        yes = box.addButton(yes_text, QMessageBox.ButtonRole.AcceptRole)
        yes.setObjectName("confirmButton")
        no = box.button(QMessageBox.StandardButton.Cancel)
        no.setObjectName("confirmNo")
        if no_text:  # where "Cancel" would be ambiguous ("Cancel run and quit" / "Cancel")
            no.setText(no_text)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        accept = QMessageBox.ButtonRole.AcceptRole

        def clicked(button: Any) -> None:
            if box.buttonRole(button) == accept:
                on_yes()

        box.buttonClicked.connect(clicked)
        self._open(box)
        return box

    def ask(
        self, parent: QWidget | None, title: str, text: str, *, yes: str, no: str = "Cancel"
    ) -> bool:
        """A question answered before the caller goes on (True: ``yes`` was pressed).

        Application-modal with its own event loop, unlike :meth:`confirm`: only for a
        caller that must return the answer (``Pane.confirm_discard`` while the window is
        closing, a reload about to replace unsaved edits). The safe
        answer is the default button; while open it is listed in ``shown`` so a test can
        press a button on it like a user.
        """
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
        box.setObjectName("questionBox")
        accept = box.addButton(yes, QMessageBox.ButtonRole.AcceptRole)
        refuse = box.addButton(no, QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(refuse)
        box.setEscapeButton(refuse)
        self.shown.append(box)
        try:
            box.exec()
        finally:
            self._forget(box)
        answer = box.clickedButton() is accept
        box.deleteLater()
        return answer

    def open_file_name(self, parent: QWidget | None, caption: str, filters: str) -> str:
        path, _ = QFileDialog.getOpenFileName(parent, caption, "", filters)
        return path

    def save_file_name(
        self, parent: QWidget | None, caption: str, suggested: str, filters: str
    ) -> str:
        path, _ = QFileDialog.getSaveFileName(parent, caption, suggested, filters)
        return path


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], None]


class _GuiThreadBridge(QObject):
    """Carries an exception raised on another thread to the GUI thread (a queued signal):
    widgets may only be created on the GUI thread, and a dialog made elsewhere aborts."""

    raised = Signal(object)


def _on_gui_thread() -> bool:
    app = QCoreApplication.instance()
    return app is not None and QThread.currentThread() is app.thread()


def make_excepthook(dialogs: Dialogs, parent: Callable[[], QWidget | None]) -> ExceptHook:
    """An exception hook that logs the traceback and shows it in a dialog.

    PySide reports exceptions raised in slots through ``sys.excepthook`` as well, so this
    one hook covers both the main code and every slot. It is safe on any thread: off the
    GUI thread (a slot of an object living on a worker ``QThread``) the exception is handed
    to the GUI thread, which shows the dialog; the process never aborts because of it.
    Must be made on the GUI thread.
    """

    def show(exc: BaseException) -> None:
        try:
            dialogs.exception(parent(), exc)
        except Exception:  # never raise from the hook itself
            log.exception("could not show the error dialog")

    bridge = _GuiThreadBridge()
    bridge.raised.connect(show)

    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        log.error("unhandled exception", exc_info=(exc_type, exc, tb))
        exc = exc.with_traceback(tb)
        if _on_gui_thread():
            show(exc)
        else:
            bridge.raised.emit(exc)

    hook.bridge = bridge  # type: ignore[attr-defined]  # kept alive as long as the hook
    return hook


ThreadingHook = Callable[[threading.ExceptHookArgs], Any]


def install_excepthook(dialogs: Dialogs, parent: Callable[[], QWidget | None]) -> ExceptHook:
    """Install the hook for Qt slots and for Python threads; returns the previous
    ``sys.excepthook`` so a caller can restore it (see :func:`restore_excepthook`)."""
    previous = sys.excepthook
    hook = make_excepthook(dialogs, parent)
    sys.excepthook = hook
    _previous_threading_hooks.append(threading.excepthook)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None or issubclass(args.exc_type, SystemExit):
            return
        hook(args.exc_type, args.exc_value, args.exc_traceback)

    threading.excepthook = thread_hook
    return previous


_previous_threading_hooks: list[ThreadingHook] = []


def restore_excepthook(previous: ExceptHook) -> None:
    """Undo :func:`install_excepthook` (tests install and remove it around one case)."""
    sys.excepthook = previous
    if _previous_threading_hooks:
        threading.excepthook = _previous_threading_hooks.pop()


_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


PLATFORM_LIMITATIONS = ("This plugin does not support propagateSizeHints()",)
"""Warnings the headless "offscreen" platform prints for every shown window: they say what
that platform cannot do, nothing about this application, so they are logged at debug level."""


def _qt_message_handler(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    level = _QT_LEVELS.get(mode, logging.WARNING)
    if message in PLATFORM_LIMITATIONS:
        level = logging.DEBUG
    logging.getLogger("qt").log(level, "%s", message)


def install_qt_message_handler() -> None:
    """Route Qt's qDebug/qWarning output into logging."""
    qInstallMessageHandler(_qt_message_handler)


def log_file_path() -> Path:
    return Path(platformdirs.user_log_dir(APP_LOG_NAME, appauthor=False)) / "curator.log"


def setup_logging(level: int = logging.INFO) -> Path | None:
    """Log to stderr and to a rotating file in the user log directory (if writable)."""
    root = logging.getLogger()
    root.setLevel(level)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    stderr = logging.StreamHandler()
    stderr.setFormatter(fmt)
    root.addHandler(stderr)
    path = log_file_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=1_000_000, backupCount=3, encoding="utf-8")
    except OSError as exc:
        log.warning("no log file (%s)", exc)
        return None
    handler.setFormatter(fmt)
    root.addHandler(handler)
    return path

"""Settings' backend selector: the model file in-process, or an OpenAI-compatible server.

The box only edits values; the Settings pane saves them with the rest on Apply. The URL
and model id go to the settings table; the API key never does: Apply hands it to
:func:`curator.llm.server_choice.save_api_key` (the system keyring). Where no keyring is
usable the key field is disabled and says to use ``$CURATOR_API_KEY``.

"Test connection" connects, runs one classification and a short generation, and reports
the server kind, its models, latency and tokens/s in one sentence. That takes from a
fraction of a second to the whole timeout, so it runs on a thread pool; the result comes
back through a queued signal and fills the model list.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.settings.settings_help import tooltip
from curator.llm.http_backend import API_KEY_ENV, SERVER_ENV
from curator.llm.server_choice import ServerProbe, choose_server, keyring_problem, probe_server
from curator.store.settings import Settings, server_url_problem


class _ProbeSignals(QObject):
    done = Signal(str, object)  # url, ServerProbe
    failed = Signal(str, str)  # url, one line


class _Probe(QRunnable):
    def __init__(self, url: str, model: str | None, key: str | None, signals: _ProbeSignals):
        super().__init__()
        self.url, self.model, self.key, self.signals = url, model, key, signals

    def run(self) -> None:
        try:
            # a typed key is tested before it is saved; else the environment's or keyring's
            choice = choose_server(
                "server", None, None, url=self.url, model=self.model, api_key=self.key
            )
            assert choice is not None  # a URL was given
            result = probe_server(choice)
        except CuratorError as exc:
            self.signals.failed.emit(self.url, str(exc))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(self.url, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.done.emit(self.url, result)


class BackendBox(QGroupBox):
    """Backend = model file | server (URL, model id, API key) with Test connection."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Where the model runs", parent)
        self.setObjectName("backendBox")
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _ProbeSignals(self)
        self._signals.done.connect(self._tested)
        self._signals.failed.connect(self._test_failed)
        self.last_probe: ServerProbe | None = None

        self.local_radio = QRadioButton("Model file on this computer (llama.cpp)")
        self.local_radio.setObjectName("backendLocal")
        self.server_radio = QRadioButton("OpenAI-compatible server")
        self.server_radio.setObjectName("backendServer")
        self.choice = QButtonGroup(self)
        self.choice.addButton(self.local_radio)
        self.choice.addButton(self.server_radio)
        for radio in (self.local_radio, self.server_radio):
            radio.setToolTip(tooltip("backend"))
        self.local_radio.setChecked(True)
        self.server_radio.toggled.connect(self._enable)
        self.server_radio.toggled.connect(lambda _on: self.edited.emit())
        radios = QHBoxLayout()
        radios.addWidget(self.local_radio)
        radios.addWidget(self.server_radio)
        radios.addStretch(1)

        self.url_edit = QLineEdit()
        self.url_edit.setObjectName("serverUrl")
        self.url_edit.setPlaceholderText("http://127.0.0.1:8080")
        self.url_edit.setToolTip(tooltip("server_url"))
        self.url_edit.textEdited.connect(lambda _t: self.edited.emit())
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("serverModel")
        self.model_combo.setEditable(True)
        self.model_combo.setMinimumWidth(220)
        line = self.model_combo.lineEdit()
        assert line is not None  # an editable combo box has one
        line.setPlaceholderText("the server's first model")
        line.textEdited.connect(lambda _t: self.edited.emit())
        self.model_combo.setToolTip(tooltip("server_model"))
        self.key_edit = QLineEdit()
        self.key_edit.setObjectName("serverApiKey")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setToolTip(tooltip("api_key"))
        self.key_edit.textEdited.connect(lambda _t: self.edited.emit())
        self.forget_key = False
        self.forget_key_button = QPushButton("Forget key")
        self.forget_key_button.setObjectName("forgetApiKey")
        self.forget_key_button.setToolTip(
            "Remove this server's saved key from the keyring on Apply"
        )
        self.forget_key_button.clicked.connect(self._forget_key)
        self.key_row = key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.forget_key_button)
        self.key_note = QLabel()
        self.key_note.setObjectName("apiKeyNote")
        self.key_note.setWordWrap(True)
        self.test_button = QPushButton("Test connection")
        self.test_button.setObjectName("testConnection")
        self.test_button.setToolTip(
            "Connect to the server, list its models, run one classification and a short "
            "answer, and report the latency and tokens per second"
        )
        self.test_button.clicked.connect(self.test_connection)
        self.test_result = QLabel()
        self.test_result.setObjectName("testResult")
        self.test_result.setWordWrap(True)
        self.env_note = QLabel()
        self.env_note.setObjectName("serverEnvNote")
        self.env_note.setWordWrap(True)

        self.form = form = QFormLayout(self)
        form.addRow("Backend", radios)
        form.addRow("", self.env_note)
        form.addRow("Server URL", self.url_edit)
        form.addRow("Model id", self.model_combo)
        form.addRow("API key", key_row)
        form.addRow("", self.key_note)
        form.addRow(self.test_button, self.test_result)
        for field, key in (
            (self.url_edit, "server_url"),
            (self.model_combo, "server_model"),
            (key_row, "api_key"),
        ):
            label = form.labelForField(field)
            if label is not None:
                label.setToolTip(tooltip(key))
        self._server_widgets: list[QWidget] = [
            self.url_edit,
            self.model_combo,
            self.key_edit,
            self.forget_key_button,
            self.test_button,
        ]
        self.keyring_problem = keyring_problem()
        self._enable()

    # -- values ---------------------------------------------------------------------------

    def load(self, settings: Settings) -> None:
        """Show the saved values (the key field starts empty: the key is never shown)."""
        self.server_radio.setChecked(settings.backend == "server")
        self.local_radio.setChecked(settings.backend != "server")
        self.url_edit.setText(settings.server_url or "")
        self.model_combo.setEditText(settings.server_model or "")
        self.key_edit.clear()
        self.forget_key = False
        self.keyring_problem = keyring_problem()
        env = os.environ.get(SERVER_ENV)
        self.env_note.setText(
            f"${SERVER_ENV} is set ({env}): runs use that server whatever is chosen here."
            if env
            else ""
        )
        self._enable()

    def values(self) -> dict[str, object]:
        """The settings-table values (``None``: the default)."""
        url = self.url_edit.text().strip()
        model = self.model_combo.currentText().strip()
        return {
            "backend": "server" if self.server_radio.isChecked() else None,
            "server_url": url or None,
            "server_model": model or None,
        }

    def key_change(self) -> str | None:
        """The key to save on Apply: typed text, "" to forget, None to leave it as is."""
        typed = self.key_edit.text().strip()
        if typed:
            return typed
        return "" if self.forget_key else None

    def key_saved(self) -> None:
        self.key_edit.clear()
        self.forget_key = False
        self._update_key_note()

    def _forget_key(self) -> None:
        self.key_edit.clear()
        self.forget_key = True
        self.key_note.setText("The saved key will be removed from the keyring on Apply.")
        self.edited.emit()

    def _enable(self) -> None:
        """The server's rows show only while the server is chosen (no greyed-out block)."""
        on = self.server_radio.isChecked()
        for widget in self._server_widgets:
            widget.setEnabled(on)
        for row in (self.url_edit, self.model_combo, self.key_row, self.key_note, self.test_button):
            self.form.setRowVisible(row, on)
        self.form.setRowVisible(self.env_note, bool(self.env_note.text()))
        if self.keyring_problem is not None:
            self.key_edit.setEnabled(False)
            self.forget_key_button.setEnabled(False)
        self._update_key_note()

    def _update_key_note(self) -> None:
        if self.keyring_problem is not None:
            self.key_edit.setPlaceholderText(f"from ${API_KEY_ENV}")
            have = "set" if os.environ.get(API_KEY_ENV) else "not set"
            self.key_note.setText(
                f"The API key is not saved here: {self.keyring_problem} "
                f"(${API_KEY_ENV} is {have} now)."
            )
        else:
            self.key_edit.setPlaceholderText("unchanged (kept in the system keyring)")
            self.key_note.setText(
                "The key is kept in the system keyring, never in the database; "
                f"${API_KEY_ENV}, when set, is used instead."
            )

    # -- Test connection ------------------------------------------------------------------

    @property
    def testing(self) -> bool:
        return self.server_radio.isChecked() and not self.test_button.isEnabled()

    def test_connection(self) -> None:
        url = self.url_edit.text().strip()
        problem = server_url_problem(url) if url else "enter the server's URL first"
        if problem:
            self.test_result.setText(f"Not tested: {problem}.")
            return
        model = self.model_combo.currentText().strip() or None
        self.test_button.setEnabled(False)
        self.test_result.setText(f"Connecting to {url}…")
        self._pool.start(_Probe(url, model, self.key_edit.text().strip() or None, self._signals))

    def _tested(self, _url: str, probe: ServerProbe) -> None:
        self.test_button.setEnabled(self.server_radio.isChecked())
        self.last_probe = probe
        self.test_result.setText(probe.describe())
        typed = self.model_combo.currentText()
        self.model_combo.clear()
        self.model_combo.addItems(list(probe.models))
        self.model_combo.setEditText(typed)

    def _test_failed(self, _url: str, reason: str) -> None:
        self.test_button.setEnabled(self.server_radio.isChecked())
        self.last_probe = None
        self.test_result.setText(f"Connection failed: {reason}")

    def shutdown(self) -> None:
        self._pool.waitForDone()

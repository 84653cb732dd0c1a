"""Settings' backend selector: a model server (URL, model id, API key) and Test connection.

Test connection runs against llama-cpp-python's real server on loopback with the demo
model (the fixture of the HTTP backend's tests), and against a port nobody listens on.
The API key never reaches the database: with a keyring it goes there, without one the
pane says to use ``$CURATOR_API_KEY``. No Secret Service or Keychain runs on CI, so the
keyring case uses an in-memory keyring backend: a test double, named as such.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail
from PySide6.QtCore import Qt

from curator.llm.http_backend import API_KEY_ENV, SERVER_ENV, HttpBackend, public_url
from curator.llm.server_choice import KEYRING_SERVICE, choose_server
from curator.store.settings import load_settings, set_setting
from tests.llm.llama_server import API_KEY

SECRET = "sk-curator-test-0123456789abcdef"


class MemoryKeyring(KeyringBackend):
    """Test double: a keyring kept in memory (no system keyring service runs on CI)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


@pytest.fixture(autouse=True)
def _no_server_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SERVER_ENV, raising=False)
    monkeypatch.delenv(API_KEY_ENV, raising=False)


@pytest.fixture
def no_keyring() -> Iterator[None]:
    """The usual case on CI and headless machines: keyring's "fail" backend."""
    old = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(old)


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    old = keyring.get_keyring()
    ring = MemoryKeyring()
    keyring.set_keyring(ring)
    yield ring
    keyring.set_keyring(old)


@pytest.fixture
def server_url(request: pytest.FixtureRequest) -> str:
    """The loopback ``llama_cpp.server`` of the HTTP backend's tests (one per session)."""
    return str(request.getfixturevalue("llama_server"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pane(main_window, qtbot):
    pane = main_window.pane("settingsPane")
    main_window.tabs.setCurrentWidget(pane)
    pane.refresh()
    _read(qtbot, pane)
    _read(qtbot, pane)
    return pane


def _read(qtbot, pane) -> None:
    """The saved values are read in the background: the form is filled once they came."""
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)


def _choose_server(qtbot, pane, url: str, model: str = "") -> None:
    qtbot.mouseClick(pane.backend_box.server_radio, Qt.MouseButton.LeftButton)
    box = pane.backend_box
    box.url_edit.setText(url)
    box.model_combo.setEditText(model)


def _apply(qtbot, pane, services) -> None:
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: services.ops.pending == 0 and not pane.saving, timeout=30_000)


def _database_bytes(path: Path) -> bytes:
    return b"".join(
        p.read_bytes() for p in (path, Path(f"{path}-wal"), Path(f"{path}-journal")) if p.exists()
    )


def test_the_selector_saves_the_server_settings(no_keyring, qtbot, main_window, services, store):
    pane = _pane(main_window, qtbot)
    box = pane.backend_box
    assert box.local_radio.isChecked() and not box.url_edit.isEnabled()
    _choose_server(qtbot, pane, "http://127.0.0.1:8080", "smollm")
    assert box.url_edit.isEnabled() and box.test_button.isEnabled()
    _apply(qtbot, pane, services)
    saved = load_settings(store)
    assert (saved.backend, saved.server_url, saved.server_model) == (
        "server",
        "http://127.0.0.1:8080",
        "smollm",
    )
    assert not pane.demo_notice.isVisible()  # the demo model is not in use any more
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    assert "smollm on http://127.0.0.1:8080" in main_window.model_label.text()
    assert not main_window.demo_button.isVisible()  # no "demo model" guidance for a server

    qtbot.mouseClick(box.local_radio, Qt.MouseButton.LeftButton)
    _apply(qtbot, pane, services)
    assert load_settings(store).backend == "local"
    assert load_settings(store).server_url == "http://127.0.0.1:8080"  # kept for next time


def test_without_a_keyring_the_key_field_points_to_the_environment(
    no_keyring, qtbot, main_window
) -> None:
    pane = _pane(main_window, qtbot)
    _choose_server(qtbot, pane, "http://127.0.0.1:8080")
    box = pane.backend_box
    assert not box.key_edit.isEnabled()
    assert f"${API_KEY_ENV}" in box.key_note.text() and "no system keyring" in box.key_note.text()


def test_the_key_goes_to_the_keyring_never_to_the_database(
    memory_keyring, qtbot, main_window, services, store
) -> None:
    pane = _pane(main_window, qtbot)
    _choose_server(qtbot, pane, "http://127.0.0.1:8080")
    box = pane.backend_box
    assert box.key_edit.isEnabled()
    box.key_edit.setText(SECRET)
    _apply(qtbot, pane, services)
    assert memory_keyring.items == {(KEYRING_SERVICE, "http://127.0.0.1:8080"): SECRET}
    assert box.key_edit.text() == ""  # never shown again
    store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert SECRET.encode() not in _database_bytes(store.path)
    saved = load_settings(store)
    choice = choose_server(saved.backend, saved.server_url, saved.server_model)
    assert choice is not None and choice.api_key == SECRET and choice.key_source == "keyring"

    qtbot.mouseClick(box.forget_key_button, Qt.MouseButton.LeftButton)
    _apply(qtbot, pane, services)
    assert memory_keyring.items == {}


def test_a_url_with_a_password_is_refused(no_keyring, qtbot, main_window, services, store):
    pane = _pane(main_window, qtbot)
    _choose_server(qtbot, pane, "http://me:hunter2@127.0.0.1:8080")
    pane.apply()
    assert "must not contain a user name or password" in services.dialogs.shown[-1].text()
    assert b"hunter2" not in _database_bytes(store.path)
    assert load_settings(store).backend == "local"


@pytest.mark.llm
def test_test_connection_reports_the_server_its_models_and_speed(
    no_keyring, server_url: str, qtbot, main_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)  # no keyring here: the environment's key
    pane = _pane(main_window, qtbot)
    _choose_server(qtbot, pane, server_url)
    box = pane.backend_box
    qtbot.mouseClick(box.test_button, Qt.MouseButton.LeftButton)
    assert box.testing  # returned at once: the test runs off the GUI thread
    qtbot.waitUntil(lambda: not box.testing, timeout=120_000)
    text = box.test_result.text()
    assert text.startswith(f"Connected to llama_cpp.server at {public_url(server_url)}"), text
    assert "tokens/s" in text and "classification took" in text
    assert box.model_combo.count() >= 1 and box.last_probe is not None


def test_test_connection_to_a_dead_port_is_a_plain_error(no_keyring, qtbot, main_window):
    url = f"http://127.0.0.1:{_free_port()}"
    pane = _pane(main_window, qtbot)
    _choose_server(qtbot, pane, url)
    box = pane.backend_box
    qtbot.mouseClick(box.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not box.testing, timeout=60_000)
    assert box.test_result.text() == (
        f"Connection failed: cannot reach the model server at {url}/v1/models: connection refused"
    )


@pytest.mark.llm
def test_the_worker_runs_on_the_saved_server(
    no_keyring, server_url: str, store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curator.gui.runtime.worker import _Engine

    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    set_setting(store, "server_url", server_url)
    set_setting(store, "backend", "server")
    engine = _Engine(store)
    try:
        backend = engine._ensure_backend()
        assert isinstance(backend, HttpBackend) and backend.url == public_url(server_url)
        assert engine._ensure_backend() is backend  # kept while the settings stay
    finally:
        engine._release_backend()


def test_the_cli_runs_on_the_saved_server(no_keyring, store, capsys) -> None:
    from curator.cli import main

    url = f"http://127.0.0.1:{_free_port()}"
    set_setting(store, "server_url", url)
    set_setting(store, "backend", "server")
    assert main(["--db", str(store.path), "classify", "--limit", "1"]) == 2
    assert f"cannot reach the model server at {url}" in capsys.readouterr().err

"""The Identity and Settings panes while their background reads are on their way.

Both panes read what they show in the background (on a database server every read is a
round trip). Each test holds a read or a write back with a *gate*, a fault injection
that makes the real function wait for an event (a slow server, a slow other writer), and
checks what a user would call a bug: an edit lost, a question asked about one's own save,
a button that acts on a form not read yet, values left stale after a save.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from PySide6.QtCore import Qt

from curator.gui.identity import identity_pane
from curator.gui.identity.identity_pane import IdentityPane
from curator.gui.runtime.services import AppServices
from curator.gui.settings import settings_pane
from curator.gui.settings.settings_pane import SettingsPane
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.identity import current_identity
from curator.store.settings import load_settings, set_setting
from tests.gui.questions import answer_question


def gate(monkeypatch: pytest.MonkeyPatch, module: object, name: str, *, after: bool = False):
    """Fault injection: ``module.name`` waits for the returned event (before running, or
    ``after`` it ran) and is otherwise the real function."""
    opened = threading.Event()
    real: Callable[..., Any] = getattr(module, name)

    def held(*args: Any, **kwargs: Any) -> Any:
        if not after:
            assert opened.wait(30)
            return real(*args, **kwargs)
        result = real(*args, **kwargs)
        assert opened.wait(30)
        return result

    monkeypatch.setattr(module, name, held)
    return opened


def shown(qtbot, main_window: MainWindow, name: str) -> Any:
    pane = main_window.pane(name)
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    return pane


def settled(qtbot, services: AppServices) -> None:
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)


# -- Identity --------------------------------------------------------------------------------


def test_nothing_can_be_saved_or_reverted_before_the_first_read(
    qtbot, services: AppServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = gate(monkeypatch, identity_pane, "read_history")
    try:
        pane = IdentityPane(services)
        qtbot.addWidget(pane)
        pane.show()
        assert pane.loading and pane.identity_edit.isReadOnly()
        assert not pane.save_button.isEnabled() and not pane.revert_button.isEnabled()
        assert pane.unsaved_label.isHidden()
    finally:
        opened.set()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert not pane.identity_edit.isReadOnly() and not services.dialogs.shown


@pytest.mark.parametrize("read", ["slow", "failing"])
def test_revert_after_a_save_shows_the_saved_version_whatever_the_read_after_it(
    qtbot,
    main_window: MainWindow,
    services: AppServices,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    read: str,
) -> None:
    pane = shown(qtbot, main_window, "identityPane")
    before = current_identity(store)
    opened = threading.Event()
    if read == "slow":
        opened = gate(monkeypatch, identity_pane, "read_history")
    else:

        def unreadable(ctx: object) -> object:  # fault injection: the server went away
            raise OSError("connection reset")

        monkeypatch.setattr(identity_pane, "read_history", unreadable)
    asked: list[str] = []
    try:
        pane.identity_edit.setPlainText("Version saved by me.")
        qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not pane.dirty and not services.ops.busy, timeout=30_000)
        pane.identity_edit.setPlainText("scratch")
        qtbot.mouseClick(pane.revert_button, Qt.MouseButton.LeftButton)
        assert pane.identity_edit.toPlainText() == "Version saved by me." and not pane.dirty
        asked = answer_question(services, "Keep my edits")
        pane.identity_edit.setPlainText("typed after the revert")
    finally:
        opened.set()
    settled(qtbot, services)
    assert current_identity(store).version == before.version + 1
    assert not asked  # the read after it brings the same version: nothing to ask about
    for dialog in list(services.dialogs.shown):
        dialog.close()
    pane.revert()


def test_a_read_on_its_way_when_save_is_pressed_asks_nothing_about_that_save(
    qtbot,
    main_window: MainWindow,
    services: AppServices,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read runs after the save committed and arrives before the save's end: it
    holds this pane's own new version, which is no "saved elsewhere"."""
    pane = shown(qtbot, main_window, "identityPane")
    before = current_identity(store)
    read = gate(monkeypatch, identity_pane, "read_history")
    saved = gate(monkeypatch, identity_pane, "save_identity", after=True)
    asked: list[str] = []
    try:
        pane.identity_edit.setPlainText("My own new wording.")
        pane.refresh()  # the window reloading for someone else's commit
        qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: current_identity(store).version == before.version + 1)
        asked = answer_question(services, "Keep my edits")
        read.set()
        qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    finally:
        read.set()
        saved.set()
    settled(qtbot, services)
    assert not asked
    assert pane.identity_edit.toPlainText() == "My own new wording." and not pane.dirty


# -- Settings --------------------------------------------------------------------------------


def test_a_reload_keeps_what_the_user_is_typing_and_revert_drops_it(
    qtbot, main_window: MainWindow, services: AppServices, store: Store
) -> None:
    """Another process's commit reloads the pane in view: the form's edits stay, the
    user is told when the saved values changed, and Revert shows them."""
    pane = shown(qtbot, main_window, "settingsPane")
    said: list[str] = []
    pane.status_message.connect(said.append)
    pane.top_k.setValue(42)
    set_setting(store, "min_words", 7)  # saved elsewhere meanwhile
    pane.refresh()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert pane.top_k.value() == 42 and pane.min_words.value() != 7
    assert any("edits are kept" in line for line in said)
    qtbot.mouseClick(pane.revert_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert pane.top_k.value() == load_settings(store).top_k and pane.min_words.value() == 7


def test_apply_waits_for_the_first_read(
    qtbot, services: AppServices, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_setting(store, "top_k", 7)
    before = load_settings(store)
    opened = gate(monkeypatch, settings_pane, "load_settings")
    try:
        pane = SettingsPane(services)
        qtbot.addWidget(pane)
        pane.show()
        assert pane.loading
        assert not pane.apply_button.isEnabled() and not pane.defaults_button.isEnabled()
        pane.skip_threshold.setValue(0.9)  # an edit of a form not read yet
        pane.apply()  # (a shortcut would reach it with the button off)
    finally:
        opened.set()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    settled(qtbot, services)
    assert load_settings(store) == before
    assert pane.apply_button.isEnabled() and pane.top_k.value() == 7
    pane.shutdown()


def test_after_apply_the_pane_uses_what_was_saved(
    qtbot,
    main_window: MainWindow,
    services: AppServices,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path,
) -> None:
    """Edits made while the save waits keep the form as it is; Re-tune and the thread
    line still use the model just saved, not the one read before."""
    set_setting(store, "model_path", str(tmp_path / "old.gguf"))
    pane = shown(qtbot, main_window, "settingsPane")
    opened = gate(monkeypatch, settings_pane, "update_settings")
    try:
        pane.model_edit.setText("")  # the demo model: no file check
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
        assert services.ops.busy
        pane.top_k.setValue(33)
    finally:
        opened.set()
    qtbot.waitUntil(lambda: services.ops.pending == 0 and not pane.saving, timeout=30_000)
    assert load_settings(store).model_path is None
    assert pane._model_path() == settings_pane.demo_model_path()


def test_a_broken_saved_value_is_said_and_apply_still_repairs_it(
    qtbot, services: AppServices, store: Store
) -> None:
    """The first read fails on a value that is not JSON: the dialog names it, and Apply
    saves a good one over it, as ``curator settings top_k=…`` does."""
    with store.write():
        store.execute("""DELETE FROM "setting" WHERE "key" = 'top_k'""")
        store.execute("""INSERT INTO "setting" ("key", "value") VALUES ('top_k', '{')""")
    pane = SettingsPane(services)
    qtbot.addWidget(pane)
    pane.show()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert "top_k" in getattr(services.dialogs.shown[-1], "message", "")
    assert pane.apply_button.isEnabled()
    pane.top_k.setValue(12)
    pane.apply()
    qtbot.waitUntil(lambda: not pane.saving and services.ops.pending == 0, timeout=30_000)
    assert load_settings(store).top_k == 12
    pane.shutdown()

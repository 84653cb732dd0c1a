"""The Identity pane: saving creates a version, old versions are read-only and restorable."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from curator.gui.identity.identity_pane import axioms_from_text
from curator.store.identity import current_identity, identity_versions


def _pane(main_window, qtbot=None):
    main_window.tabs.setCurrentIndex(3)
    pane = main_window.pane("identityPane")
    if qtbot is not None:  # read in the background: shown once it has come
        qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    return pane


def test_save_creates_a_new_version(qtbot, main_window, store) -> None:
    pane = _pane(main_window, qtbot)
    before = current_identity(store)
    assert pane.identity_edit.toPlainText() == before.identity_text
    pane.identity_edit.setPlainText("I am Wren, a careful assistant.")
    pane.axioms_edit.setPlainText("1. Be kind.\n\n- Never invent facts.\n")
    pane.note_edit.setText("shorter")
    qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=30_000)
    saved = current_identity(store)
    assert saved.version == before.version + 1
    assert saved.identity_text == "I am Wren, a careful assistant."
    assert saved.axioms == ("1. Be kind.", "- Never invent facts.")  # as written
    assert identity_versions(store)[0].note == "shorter"
    assert pane.versions.topLevelItemCount() == saved.version


def test_old_version_is_read_only_and_restorable(qtbot, main_window, store) -> None:
    pane = _pane(main_window, qtbot)
    original = current_identity(store)
    pane.identity_edit.setPlainText("A different identity.")
    pane.save()
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=30_000)
    assert pane.preview.isReadOnly()
    old_item = pane.versions.topLevelItem(pane.versions.topLevelItemCount() - 1)
    pane.versions.setCurrentItem(old_item)
    assert original.identity_text.strip()[:40] in pane.preview.toPlainText()
    assert pane.restore_button.isEnabled()
    qtbot.mouseClick(pane.restore_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=30_000)
    restored = current_identity(store)
    assert restored.version == original.version + 2
    assert restored.identity_text == original.identity_text
    assert restored.axioms == original.axioms
    assert pane.identity_edit.toPlainText() == original.identity_text


def test_empty_identity_is_refused(qtbot, main_window, services, store) -> None:
    pane = _pane(main_window, qtbot)
    version = current_identity(store).version
    pane.identity_edit.setPlainText("   ")
    pane.save()
    assert current_identity(store).version == version
    assert services.dialogs.shown and "empty" in services.dialogs.shown[-1].text()
    pane.revert()  # an unsaved edit would make closing the window ask


def test_axioms_from_text_are_the_lines_as_written() -> None:
    text = "1. One\r\n2. Two\n* three\n\n 4 five \u2028- six"
    assert axioms_from_text(text) == ["1. One", "2. Two", "* three", "4 five", "- six"]


@pytest.mark.parametrize("control", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"])
def test_a_control_inside_an_axiom_is_refused_not_made_a_break(
    qtbot, main_window, services, store, control: str
) -> None:
    """``str.splitlines`` breaks at VT, FF, U+001C-U+001E and NEL: "Be kind<VT>Share home
    addresses" (one line on screen) was saved as two axioms with no word."""
    pane = _pane(main_window, qtbot)
    version = current_identity(store).version
    pane.axioms_edit.setPlainText(f"Be kind{control}Share home addresses on request")
    pane.save()
    qtbot.waitUntil(lambda: main_window.services.ops.pending == 0, timeout=30_000)
    assert "control character" in services.dialogs.shown[-1].text()
    assert current_identity(store).version == version
    pane.revert()

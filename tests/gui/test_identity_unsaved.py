"""Identity edits show that they are unsaved and are never discarded without asking."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, QTimer

from curator.store.identity import current_identity, save_identity
from tests.gui.questions import answer_question


def _pane(main_window, qtbot):
    pane = main_window.pane("identityPane")
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    return pane


def _tab_text(main_window, pane) -> str:
    return main_window.tabs.tabText(main_window.tabs.indexOf(pane))


def _wait_for_ops(qtbot, services) -> None:
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)


def test_an_edit_shows_the_unsaved_marker_until_saved(qtbot, main_window, services, store):
    pane = _pane(main_window, qtbot)
    assert not pane.dirty and not pane.unsaved_label.isVisible()
    assert not pane.save_button.isEnabled() and _tab_text(main_window, pane) == "Identity"
    before = current_identity(store)

    qtbot.keyClicks(pane.identity_edit, " And I like tea.")
    assert pane.dirty and pane.unsaved_label.isVisible()
    assert pane.save_button.isEnabled() and pane.revert_button.isEnabled()
    assert _tab_text(main_window, pane) == "Identity •"

    qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)
    _wait_for_ops(qtbot, services)
    saved = current_identity(store)
    assert saved.version == before.version + 1
    assert saved.identity_text.startswith(" And I like tea.")
    assert threading.get_ident() not in services.ops.job_thread_ids  # saved off the GUI
    assert not pane.dirty and not pane.unsaved_label.isVisible()
    assert _tab_text(main_window, pane) == "Identity"


def test_revert_drops_the_edit(qtbot, main_window, store) -> None:
    pane = _pane(main_window, qtbot)
    original = pane.identity_edit.toPlainText()
    pane.identity_edit.setPlainText("scratch")
    qtbot.mouseClick(pane.revert_button, Qt.MouseButton.LeftButton)
    assert pane.identity_edit.toPlainText() == original and not pane.dirty


def test_discarding_asks_and_declining_keeps_the_edit(qtbot, main_window, services) -> None:
    pane = _pane(main_window, qtbot)
    assert pane.confirm_discard()  # nothing to lose: no question
    pane.identity_edit.setPlainText("An edit worth keeping.")

    asked = answer_question(services, "Keep editing")
    assert not pane.confirm_discard()
    assert asked and "unsaved" in asked[0]
    assert pane.identity_edit.toPlainText() == "An edit worth keeping." and pane.dirty

    answer_question(services, "Discard edits")
    assert pane.confirm_discard()
    pane.revert()  # the window closes without a question at teardown


def test_closing_the_window_over_an_edit_asks(qtbot, main_window, services) -> None:
    pane = _pane(main_window, qtbot)
    pane.identity_edit.setPlainText("Not saved yet.")
    asked = answer_question(services, "Keep editing")
    main_window.close()
    assert asked, "closing did not ask"
    assert main_window.isVisible() and pane.identity_edit.toPlainText() == "Not saved yet."
    answer_question(services, "Discard edits")  # let the fixture close it


def test_a_version_saved_elsewhere_asks_before_replacing_the_edit(
    qtbot, main_window, services, store
) -> None:
    pane = _pane(main_window, qtbot)
    pane.identity_edit.setPlainText("My unsaved wording.")
    elsewhere = save_identity(store, "Saved by the CLI meanwhile.", ["Be brief."])

    asked = answer_question(services, "Keep my edits")
    pane.refresh()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert asked and f"version {elsewhere.version}" in asked[0]
    assert pane.identity_edit.toPlainText() == "My unsaved wording." and pane.dirty

    pane.identity_edit.setPlainText("My unsaved wording, again.")
    answer_question(services, f"Show version {elsewhere.version + 1}")
    save_identity(store, "A second outside save.", ["Be brief."])
    pane.refresh()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert pane.identity_edit.toPlainText() == "A second outside save." and not pane.dirty


def test_typing_while_a_save_waits_is_kept(qtbot, main_window, services, store) -> None:
    """A save held up by another writer (the CLI) must not wipe what was typed meanwhile."""
    import sqlite3

    pane = _pane(main_window, qtbot)
    before = current_identity(store)
    pane.identity_edit.setPlainText("Saved part.")
    outside = sqlite3.connect(str(store.path))  # another process holding the write lock
    outside.execute("BEGIN IMMEDIATE")
    try:
        qtbot.mouseClick(pane.save_button, Qt.MouseButton.LeftButton)
        assert services.ops.busy
        pane.identity_edit.moveCursor(pane.identity_edit.textCursor().MoveOperation.End)
        qtbot.keyClicks(pane.identity_edit, " Typed while saving.")
    finally:
        outside.rollback()
        outside.close()
    _wait_for_ops(qtbot, services)

    assert current_identity(store).version == before.version + 1
    assert current_identity(store).identity_text == "Saved part."
    assert pane.identity_edit.toPlainText() == "Saved part. Typed while saving."
    assert pane.dirty and pane.unsaved_label.isVisible()
    assert _tab_text(main_window, pane) == "Identity •"
    pane.revert()  # the window closes without a question at teardown


def test_a_version_saved_while_the_question_is_open_is_asked_about_after_it(
    qtbot, main_window, services, store
) -> None:
    """The question runs its own event loop: a read of a newer version delivered inside it
    is shown once the question is answered (asked about in turn), never applied under it
    and then overwritten by the older read that asked."""
    pane = _pane(main_window, qtbot)
    pane.identity_edit.setPlainText("My unsaved wording.")
    second = save_identity(store, "Saved elsewhere first.", ["A."])
    asked: list[str] = []
    third: list[object] = []

    def open_question() -> object | None:
        boxes = [d for d in services.dialogs.shown if d.objectName() == "questionBox"]
        shown = [box for box in boxes if box.isVisible()]
        return shown[-1] if shown else None

    def click(box: object, text: str) -> None:
        """Press ``text``; a question without it is closed unanswered (the test fails)."""
        buttons = [b for b in box.buttons() if b.text() == text]  # type: ignore[attr-defined]
        if buttons:
            buttons[0].click()
        else:
            box.reject()  # type: ignore[attr-defined]

    polls = [2000]  # 20 s of looks, then any open question is closed: a failure, no hang

    def answer() -> None:
        box = open_question()
        polls[0] -= 1
        if polls[0] < 0:
            if box is not None:
                box.reject()  # type: ignore[attr-defined]
            return
        if box is None or (third and pane.loading):  # not asked yet, or its read not here
            QTimer.singleShot(10, answer)
            return
        if not third:
            asked.append(box.text())  # type: ignore[attr-defined]
            third.append(save_identity(store, "Saved elsewhere again.", ["B."]))
            pane.refresh()  # delivered inside the open question's event loop
            QTimer.singleShot(10, answer)
        elif len(asked) == 1:
            click(box, "Keep my edits")
            asked.append("")
            QTimer.singleShot(10, answer)
        else:
            asked[1] = box.text()  # type: ignore[attr-defined]
            click(box, f"Show version {third[0].version}")  # type: ignore[attr-defined]

    QTimer.singleShot(0, answer)
    pane.refresh()
    qtbot.waitUntil(
        lambda: len(asked) == 2 and asked[1] != "" and not pane.loading and not open_question(),
        timeout=30_000,
    )
    latest = third[0]
    try:
        assert f"version {second.version}" in asked[0]
        assert f"version {latest.version}" in asked[1]  # type: ignore[attr-defined]
        assert pane.identity_edit.toPlainText() == "Saved elsewhere again." and not pane.dirty
        assert pane.version_label.text() == f"Current version: {latest.version}"  # type: ignore[attr-defined]
    finally:
        pane.revert()  # the window closes without a question at teardown

"""Answering the window's modal questions (``Dialogs.ask``) the way a user does: a click.

``Dialogs.ask`` runs the question's own event loop, so the answer is scheduled before
the call that asks: a timer finds the open question box and clicks the named button.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer

from curator.gui.runtime.services import AppServices


def answer_question(services: AppServices, button: str, tries: int = 500) -> list[str]:
    """Click ``button`` on the next question; returns the questions' texts as asked."""
    asked: list[str] = []

    def press(left: int) -> None:
        boxes = [
            d for d in services.dialogs.shown if d.objectName() == "questionBox" and d.isVisible()
        ]
        if not boxes:
            if left > 0:
                QTimer.singleShot(10, lambda: press(left - 1))
            return
        box = boxes[-1]
        asked.append(box.text())  # type: ignore[attr-defined]
        names = [b.text() for b in box.buttons()]  # type: ignore[attr-defined]
        for candidate in box.buttons():  # type: ignore[attr-defined]
            if candidate.text() == button:
                candidate.click()
                return
        box.reject()
        raise AssertionError(f"no button {button!r} on the question (it has {names})")

    QTimer.singleShot(0, lambda: press(tries))
    return asked

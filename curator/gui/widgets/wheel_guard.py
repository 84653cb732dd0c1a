"""Scrolling a form never changes one of its values.

Qt gives a wheel event to whatever input is under the pointer: a spin box steps, a combo
box picks the next entry. In a scrolling form (Settings) the pointer passes over many of
them while the person scrolls the page, and the values change unseen. The guard makes such
inputs take the wheel only once they have the keyboard focus (clicked or tabbed into, as
their focus policy says); until then the wheel scrolls the page as it does everywhere else.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QComboBox, QWidget

GUARDED = (QAbstractSpinBox, QComboBox)


class WheelGuard(QObject):
    """An event filter on every spin box and combo box of ``scroll``'s page."""

    def __init__(self, scroll: QAbstractScrollArea) -> None:
        super().__init__(scroll)
        self._scroll = scroll
        self.guarded: list[QWidget] = []

    def watch(self, page: QWidget) -> None:
        """Guard the inputs now on ``page`` (call again after adding more)."""
        for kind in GUARDED:
            for widget in page.findChildren(kind):
                if widget in self.guarded:
                    continue
                widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # not by the wheel
                widget.installEventFilter(self)
                self.guarded.append(widget)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Wheel
            and isinstance(watched, QWidget)
            and not watched.hasFocus()
        ):
            # the page scrolls instead, exactly as over a label
            QCoreApplication.sendEvent(self._scroll.viewport(), event)
            return True
        return super().eventFilter(watched, event)


def guard_wheel(scroll: QAbstractScrollArea, page: QWidget) -> WheelGuard:
    """Install a :class:`WheelGuard` for ``page``'s inputs; kept alive by ``scroll``."""
    guard = WheelGuard(scroll)
    guard.watch(page)
    return guard

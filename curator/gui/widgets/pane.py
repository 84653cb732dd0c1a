"""The contract every pane of the main window keeps.

The window treats its panes alike: it connects ``status_message`` to the status bar and
``data_changed`` to "the other panes reload when next shown", calls ``refresh()`` when a
pane is shown after a change elsewhere, ``confirm_discard()`` before the window closes
(a pane with unsaved edits asks the user), and ``shutdown()`` once on close (wait for the
pane's own background work). Database work goes through ``self.ops``
(:class:`curator.gui.runtime.operations.StoreOps`), never straight from a slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

if TYPE_CHECKING:
    from curator.gui.runtime.operations import StoreOps
    from curator.gui.runtime.services import AppServices


class Pane(QWidget):
    """Base class of the six panes (and any pane added later)."""

    status_message = Signal(str)
    data_changed = Signal()

    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services

    @property
    def ops(self) -> StoreOps:
        return self.services.ops

    def refresh(self) -> None:
        """Reload what the pane shows from the database (keep selection where possible)."""
        raise NotImplementedError

    def confirm_discard(self) -> bool:
        """True when the pane may be left or closed: no unsaved edits, or the user agreed."""
        return True

    def shutdown(self) -> None:
        """Window close: stop or wait for the pane's own background work."""

"""Active knowledge patterns, provenance and decay (placeholder, filled in next)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget


class KnowledgePane(QWidget):
    """Active knowledge patterns, provenance and decay."""

    status_message = Signal(str)
    data_changed = Signal()

    def __init__(self, services: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.services = services

    def refresh(self) -> None:
        """Reload from the database."""

"""The LLM worker: one long-lived thread that owns the model (placeholder, filled in next)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal


class LlmWorker(QObject):
    """Runs classification and distillation off the GUI thread."""

    progress = Signal(object)
    token = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    model_loaded = Signal(str)

    def __init__(self, services: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._services = services

    @property
    def busy(self) -> bool:
        return False

    def start_classify(self, limit: int | None = None) -> None:
        """Start a classification run (not yet wired)."""

    def start_distill(self, limit: int | None = None) -> None:
        """Start a distillation run (not yet wired)."""

    def cancel(self) -> None:
        """Ask the current run to stop."""

    def shutdown(self) -> None:
        """Cancel and join the worker thread."""

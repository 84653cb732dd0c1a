"""File ▸ Import knowledge…: stage a knowledge file off the GUI thread.

Reading a large file and running the dedup gate against every active pattern can take
seconds, so :func:`curator.pipeline.import_knowledge.import_knowledge` runs on a
one-thread pool with its own database connection (closed when it is done); the window
only receives the report (queued signals) and shows the staged run in Review.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from curator.errors import CuratorError
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store


class ImportSignals(QObject):
    """Lives on the GUI thread; the pool thread emits, the window receives (queued)."""

    finished = Signal(object)  # KnowledgeImportReport
    failed = Signal(str)


class _ImportTask(QRunnable):
    def __init__(self, store: Store, path: Path, signals: ImportSignals) -> None:
        super().__init__()
        self.store = store
        self.path = path
        self.signals = signals

    def run(self) -> None:
        try:
            report = import_knowledge(self.store, self.path)
        except CuratorError as exc:
            self.signals.failed.emit(str(exc))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.signals.finished.emit(report)
        finally:
            self.store.close()  # this pool thread's connection only


class KnowledgeImporter(QObject):
    """Runs one knowledge import at a time on its own thread."""

    def __init__(self, store: Store, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.signals = ImportSignals(self)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self.busy = False
        self.signals.finished.connect(self._done)
        self.signals.failed.connect(self._done)

    def start(self, path: Path) -> bool:
        """Start importing ``path``; False (nothing started) while one is running."""
        if self.busy:
            return False
        self.busy = True
        self._pool.start(_ImportTask(self.store, path, self.signals))
        return True

    def _done(self, *_: object) -> None:
        self.busy = False

    def shutdown(self) -> None:
        """Wait for a running import (it is one transaction; it is never cut half-way)."""
        self._pool.waitForDone()

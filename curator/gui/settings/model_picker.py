"""Settings' model helpers: models already on this computer, the catalogue, the demo notice.

Both lists end the same way: the chosen file's path goes into the Settings pane's model
field (``model_chosen``), where Apply checks and saves it as any other file; nothing is
copied. Scanning reads GGUF headers and downloading moves gigabytes and hashes them, so
both run on a thread pool and report back through queued signals; the GUI thread only
fills tables. A download can be cancelled (its ``.part`` file stays for a later resume);
closing the window cancels it and waits.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from curator.core.wording import plural
from curator.errors import CuratorError
from curator.gui.widgets.qt_models import FIT_ROWS
from curator.llm.catalogue import CatalogueEntry, entry_state, load_catalogue
from curator.llm.discovery import LocalModel, find_local_models
from curator.llm.download import DownloadCancelled, DownloadResult, Progress, download_model
from curator.pipeline.guard_opinion import demo_model_configured
from curator.store.settings import Settings

DEMO_NOTICE = (
    "demo model: fine for trying the workflow, too small for real curation — "
    "pick or download a model"
)
DEMO_SHORT = "Demo model: too small for real curation — pick a model…"
"""The status bar's form of :data:`DEMO_NOTICE` (the whole sentence is its tooltip): the
status bar must fit a 1024-pixel window."""


def demo_model_in_use(settings: Settings) -> bool:
    """Whether runs would use the bundled demo model (no file chosen, or the demo file).

    Not when a model server is chosen (in Settings or through ``$CURATOR_SERVER``); the
    guard's second opinion uses the same test (:mod:`curator.pipeline.guard_opinion`)."""
    return demo_model_configured(settings)


def _size(n: int | None) -> str:
    return "?" if n is None else f"{n / 1_073_741_824:.2f} GB"


class _Signals(QObject):
    scanned = Signal(object)
    progress = Signal(object)
    downloaded = Signal(object)
    failed = Signal(str)
    cancelled = Signal(str)


class _Scan(QRunnable):
    def __init__(self, roots: Mapping[str, Iterable[Path]] | None, signals: _Signals) -> None:
        super().__init__()
        self.roots = roots
        self.signals = signals

    def run(self) -> None:
        try:
            self.signals.scanned.emit(find_local_models(self.roots))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")


class _Download(QRunnable):
    def __init__(self, entry: CatalogueEntry, directory: Path | None, signals: _Signals) -> None:
        super().__init__()
        self.entry = entry
        self.directory = directory
        self.signals = signals
        self.cancel = threading.Event()

    def run(self) -> None:
        try:
            result = download_model(
                self.entry, self.directory, progress=self.signals.progress.emit, cancel=self.cancel
            )
        except DownloadCancelled as exc:
            self.signals.cancelled.emit(str(exc))
        except CuratorError as exc:
            self.signals.failed.emit(str(exc))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.signals.downloaded.emit(result)


def _table(columns: list[str], name: str) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setObjectName(name)
    table.setHorizontalHeaderLabels(columns)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.horizontalHeader().setStretchLastSection(True)
    table.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
    table.verticalHeader().setVisible(False)
    # One line a row: a wrapped cell ("not / downloaded") was clipped at the row's height.
    table.setWordWrap(False)
    table.setMaximumHeight(160)
    return table


def _fill(table: QTableWidget, rows: list[list[str]], tooltips: list[str]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            item = QTableWidgetItem(text)
            item.setToolTip(tooltips[r])
            table.setItem(r, c, item)
    table.resizeColumnsToContents()


class LocalModelsBox(QGroupBox):
    """GGUF files of LM Studio, Ollama, GPT4All and the Hugging Face cache."""

    model_chosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Models on this computer", parent)
        self.roots: Mapping[str, Iterable[Path]] | None = None
        """None: each tool's usual folders; the tests point this at trees they build."""
        self.models: list[LocalModel] = []
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.scanned.connect(self._scanned)
        self._signals.failed.connect(self._failed)
        self.table = _table(["Source", "Model", "Quant", "Architecture", "Size"], "localModels")
        self.table.itemDoubleClicked.connect(lambda _item: self.use_selected())
        self.status = QLabel("Not scanned yet.")
        self.status.setObjectName("localModelsStatus")
        self.scan_button = QPushButton("Scan")
        self.scan_button.setObjectName("scanLocalModels")
        self.scan_button.clicked.connect(self.scan)
        self.use_button = QPushButton("Use selected")
        self.use_button.setObjectName("useLocalModel")
        self.use_button.clicked.connect(self.use_selected)
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        row.addWidget(self.scan_button)
        row.addWidget(self.use_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(row)

    @property
    def scanning(self) -> bool:
        return not self.scan_button.isEnabled()

    def scan(self) -> None:
        self.scan_button.setEnabled(False)
        self.status.setText("Looking in the LM Studio, Ollama, GPT4All and Hugging Face folders…")
        self._pool.start(_Scan(self.roots, self._signals))

    def _scanned(self, models: list[LocalModel]) -> None:
        self.scan_button.setEnabled(True)
        self.models = models
        _fill(
            self.table,
            [
                [m.source, m.label, m.quantization, m.architecture, _size(m.size_bytes)]
                for m in models
            ],
            [str(m.path) for m in models],
        )
        self.status.setText(
            f"{plural(len(models), 'GGUF model')} found." if models else "No GGUF models found."
        )

    def _failed(self, reason: str) -> None:
        self.scan_button.setEnabled(True)
        self.status.setText(f"Scan failed: {reason}")

    def use_selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.models):
            self.status.setText("Select a model first.")
            return
        self.model_chosen.emit(str(self.models[rows[0].row()].path))

    def shutdown(self) -> None:
        self._pool.waitForDone()


class CatalogueBox(QGroupBox):
    """The shipped catalogue with a download button, progress, speed, ETA and cancel."""

    model_chosen = Signal(str)
    message = Signal(str)
    download_failed = Signal(str)
    """A failure the user must see (checksum mismatch, full disk, HTTP error); not a cancel."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Download a model", parent)
        self.catalogue_path: Path | None = None
        """None: the shipped catalogue; the tests point this at their own."""
        self.directory: Path | None = None
        """None: the user data folder (or $CURATOR_MODELS_DIR)."""
        self.entries: list[CatalogueEntry] = []
        self.last_result: DownloadResult | None = None
        self._job: _Download | None = None
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.progress.connect(self._progress)
        self._signals.downloaded.connect(self._downloaded)
        self._signals.failed.connect(self._failed)
        self._signals.cancelled.connect(self._cancelled)
        # The state beside the name: last, behind a long licence, it was cut off.
        self.table = _table(["Model", "State", "RAM", "Context", "Licence"], "catalogueModels")
        self.progress = QProgressBar()
        self.progress.setObjectName("downloadProgress")
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.status = QLabel()
        self.status.setObjectName("downloadStatus")
        self.status.setWordWrap(True)
        self.download_button = QPushButton("Download")
        self.download_button.setObjectName("downloadModel")
        self.download_button.clicked.connect(self.download_selected)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancelDownload")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row = QHBoxLayout()
        row.addWidget(self.progress, 1)
        row.addWidget(self.download_button)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addLayout(row)
        layout.addWidget(self.status)
        self.reload()

    @property
    def downloading(self) -> bool:
        return self._job is not None

    def reload(self) -> None:
        try:
            self.entries = load_catalogue(self.catalogue_path)
        except CuratorError as exc:
            self.entries = []
            self.status.setText(f"Catalogue not usable: {exc}")
        _fill(
            self.table,
            [
                [
                    e.title,
                    entry_state(e, self.directory),
                    f"{e.ram_gb:g} GB",
                    f"{e.context_length:,}",
                    e.licence,
                ]
                for e in self.entries
            ],
            [e.note for e in self.entries],
        )

    def download_selected(self) -> None:
        if self._job is not None:
            return
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.entries):
            self.status.setText("Select a model to download first.")
            return
        entry = self.entries[rows[0].row()]
        self._job = _Download(entry, self.directory, self._signals)
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setValue(0)
        self.progress.show()
        self.status.setText(f"Downloading {entry.title}…")
        self._pool.start(self._job)

    def cancel(self) -> None:
        if self._job is not None:
            self._job.cancel.set()

    def _progress(self, progress: Progress) -> None:
        if progress.total:
            self.progress.setValue(int(1000 * progress.done / progress.total))
        self.status.setText(progress.describe())

    def _end(self) -> None:
        self._job = None
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.hide()
        self.reload()

    def _downloaded(self, result: DownloadResult) -> None:
        self.last_result = result
        self._end()
        self.status.setText(result.describe().capitalize() + ". Press Apply to use it.")
        self.message.emit(f"Downloaded {result.path.name}.")
        self.model_chosen.emit(str(result.path))

    def _failed(self, reason: str) -> None:
        self._end()
        self.status.setText(reason)
        self.message.emit(reason)
        self.download_failed.emit(reason)

    def _cancelled(self, reason: str) -> None:
        self._end()
        self.status.setText(reason)
        self.message.emit("Download cancelled.")

    def shutdown(self) -> None:
        self.cancel()
        self._pool.waitForDone()

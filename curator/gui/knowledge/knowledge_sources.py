"""The Knowledge pane's Provenance panel: the source episodes of the current pattern.

A pattern confirmed by many runs collects many source episodes: at 300,000 episodes a
pattern with 20,000 of them takes a second to read, so the list is read with
``ops.query`` (latest wins: moving through the patterns with the arrow keys shows only
the last one's sources) and the title says "Reading…" meanwhile. Double-clicking a
source asks the window to open that episode (:mod:`curator.gui.knowledge.provenance_nav`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QLabel, QVBoxLayout, QWidget

from curator.core.flag_type import Flag
from curator.core.wording import agree, plural
from curator.gui.runtime.operations import StoreOps
from curator.gui.widgets.flag_view import FLAG_MARK
from curator.gui.widgets.qt_models import FIT_ROWS, Column, RowTableModel
from curator.gui.widgets.row_table import RowTableView
from curator.store.knowledge import SourceRow, pattern_sources
from curator.store.models import format_local

NOTHING_SELECTED = "Select a pattern to see where it came from."


def short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _date(moment: datetime | None) -> str:
    return "" if moment is None else format_local(moment)


SOURCE_COLUMNS: list[Column[SourceRow]] = [
    Column("Episode", lambda s: s.episode_id, align_right=True),
    Column("When", lambda s: s.timestamp.timestamp(), display=lambda s: _date(s.timestamp)),
    Column("Source", lambda s: s.source),
    Column(
        "Run",
        lambda s: s.run_id,
        display=lambda s: f"#{s.run_id} {s.run_kind}" if s.run_id is not None else "—",
    ),
    Column("Preview", lambda s: s.preview, tooltip=lambda s: s.preview),
]


class ProvenancePanel(QWidget):
    """Title + table of one pattern's source episodes, read in the background."""

    episode_activated = Signal(int)
    """A source episode was double-clicked (its id)."""

    def __init__(self, ops: StoreOps, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = ops
        self.pattern_id: int | None = None
        self.loading = False
        """A read of the sources is running (the title says so)."""
        self.model = RowTableModel(SOURCE_COLUMNS, self)
        self.view = RowTableView()
        self.view.setObjectName("sourcesTable")
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().setVisible(False)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
        for col, width in enumerate((64, 124, 70, 90)):
            self.view.setColumnWidth(col, width)
        self.view.doubleClicked.connect(self._activated)
        self.title = QLabel(NOTHING_SELECTED)
        self.title.setObjectName("sourceTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # a pattern's "<b>" as written
        self.title.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("<b>Provenance</b>"))
        layout.addWidget(self.title)
        layout.addWidget(self.view)

    def show_pattern(self, pattern_id: int | None, text: str, flags: Sequence[Flag]) -> None:
        """Read and show ``pattern_id``'s sources (None: nothing selected)."""
        self.pattern_id = pattern_id
        if pattern_id is None:
            self.loading = False
            self.model.set_rows([])
            self.title.setText(NOTHING_SELECTED)
            return
        heading = f"#{pattern_id}: {short(text, 300)}" if text else f"#{pattern_id}"
        heading += "".join(f"\n{FLAG_MARK} {f.describe()}" for f in flags)
        self.loading = True
        self.model.set_rows([])
        self.title.setText(f"{heading}\nReading its source episodes…")
        self._ops.query(
            "knowledge.sources",
            lambda ctx: pattern_sources(ctx.store, pattern_id),
            lambda rows: self._loaded(pattern_id, heading, rows),
            lambda message: self._failed(pattern_id, message),
        )

    def _loaded(self, pattern_id: int, heading: str, rows: list[SourceRow]) -> None:
        if pattern_id != self.pattern_id:  # the selection was cleared while it was read
            return
        self.loading = False
        self.model.set_rows(rows)
        runs = sorted({s.run_id for s in rows if s.run_id is not None})
        numbers = ", ".join(f"#{r}" for r in runs)
        self.title.setText(
            f"{heading}\n{plural(len(rows), 'source episode')}"
            + (f" from {agree(len(runs), 'run', 'runs')} {numbers}" if runs else "")
            + ". Double-click an episode to open it."
        )

    def _failed(self, pattern_id: int, message: str) -> None:
        if pattern_id != self.pattern_id:
            return
        self.loading = False
        self.title.setText(f"The source episodes could not be read: {message}")

    def _activated(self, index: QModelIndex) -> None:
        source = self.model.row_at(index.row())
        if source is not None:
            self.episode_activated.emit(source.episode_id)

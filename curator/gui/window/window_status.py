"""The main window's status bar: database, model, where the model runs, the run, and the
busy state of a background store operation.

A mixin of :class:`curator.gui.window.main_window.MainWindow`, apart so the window module stays
about wiring panes. The model's name comes from the saved settings, read through
``ops.query`` (off the GUI thread: a read on it could wait on the database like any
other) after every pane write; ``status_loading`` is True until it is shown. A write
running in the background shows its label, progress and Cancel only once it has taken
longer than :data:`BUSY_DELAY_MS`, so quick writes do not flicker.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton

from curator.gui.settings.model_picker import DEMO_NOTICE, DEMO_SHORT, demo_model_in_use
from curator.gui.widgets.eliding import ElidingButton, ElidingLabel
from curator.gui.window.status_room import StatusRoom
from curator.store.location import DatabaseLocation
from curator.store.settings import Settings, load_settings

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMainWindow

    from curator.gui.runtime.services import AppServices

    _WindowBase = QMainWindow
else:
    _WindowBase = object

BUSY_DELAY_MS = 300
"""A background write shows its busy state only when it takes longer than this."""


def model_display_name(settings: Settings) -> str:
    """The model as the status bar names it: the server's model, the file, or the demo."""
    if settings.backend == "server" and settings.server_url:
        return f"{settings.server_model or 'first model'} on {settings.server_url}"
    path = settings.model_path
    return Path(path).name if path else "demo model (SmolLM2-135M)"


class StatusBarMixin(_WindowBase):
    """Builds and updates the main window's status bar (see the module doc)."""

    services: AppServices
    status_loading: bool

    if TYPE_CHECKING:

        def show_settings(self) -> None: ...

        def show_message(self, text: str) -> None: ...

        import_action: QAction
        import_knowledge_action: QAction
        undo_action: QAction

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        # the name only: a full path would set the window's minimum width
        where = DatabaseLocation.of(self.services.store)
        self.db_label = ElidingLabel(where.display_name)
        self.db_label.setObjectName("dbLabel")
        self.db_label.setToolTip(where.description)  # never a password
        self.model_label = ElidingLabel("Model: …")  # named once the settings are read
        self.model_label.setObjectName("modelLabel")
        self.offload_label = QLabel("model not loaded")
        self.offload_label.setObjectName("offloadLabel")
        self.offload_label.setToolTip(
            "Where the model runs. “GPU: 30/30 layers”: that many layers on the GPU "
            "(Settings ▸ GPU layers). “CPU only”: this llama.cpp build has no GPU support, so "
            "every layer runs on the CPU and the GPU layers setting has no effect. "
            "“server …”: a model server does the work."
        )
        self.run_label = QLabel("idle")
        self.run_label.setObjectName("runLabel")
        self.demo_button = ElidingButton(DEMO_SHORT, keep=len("Demo model"))
        self.demo_button.setObjectName("demoNoticeButton")
        self.demo_button.setFlat(True)
        self.demo_button.setToolTip(
            f"{DEMO_NOTICE[0].upper()}{DEMO_NOTICE[1:]}: click to open Settings and pick a "
            "model file, a model server, or download a model"
        )
        self.demo_button.clicked.connect(self.show_settings)
        bar.addPermanentWidget(self.demo_button)
        for label in (self.db_label, self.model_label, self.offload_label, self.run_label):
            label.setContentsMargins(8, 0, 8, 0)
            bar.addPermanentWidget(label)
        self.busy_label = QLabel()
        self._busy_phase = ""  # the running write's phase, if it names one
        self.busy_label.setObjectName("busyLabel")
        self.busy_bar = QProgressBar()
        self.busy_bar.setObjectName("busyProgress")
        self.busy_bar.setMaximumWidth(160)
        self.busy_bar.setMaximumHeight(14)
        # Cancel of the running write (an import): it stops at its next check, and
        # nothing of it is written (see StoreOps.cancel).
        self.busy_cancel = QPushButton("Cancel")
        self.busy_cancel.setObjectName("busyCancel")
        self.busy_cancel.setFlat(True)
        self.busy_cancel.clicked.connect(self.services.ops.cancel)
        bar.addWidget(self.busy_label)
        bar.addWidget(self.busy_bar)
        bar.addWidget(self.busy_cancel)
        for widget in (self.busy_label, self.busy_bar, self.busy_cancel):
            widget.hide()
        # A message or a running write gets its room from the eliding parts, the least
        # urgent first (the followed logs' part is built later: looked up when fitting).
        self.status_room = StatusRoom(
            bar,
            lambda: [
                getattr(self, name)
                for name in ("follow_label", "demo_button", "model_label", "db_label")
                if hasattr(self, name)
            ],
            (self.busy_label, self.busy_bar, self.busy_cancel),
        )
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(BUSY_DELAY_MS)
        self._busy_timer.timeout.connect(self._show_busy)
        ops = self.services.ops
        ops.busy_changed.connect(self._ops_busy_changed)
        ops.progressed.connect(self._ops_progress)
        ops.phased.connect(self._ops_phase)
        ops.failed.connect(self._ops_failed)
        ops.refused.connect(self._ops_refused)
        self.update_status()

    # -- background store operations ------------------------------------------------------

    def _ops_busy_changed(self, busy: bool) -> None:
        """A background write started or ended: block conflicting writes meanwhile.

        Undo stays enabled: a disabled action swallows its shortcut, and Ctrl+Z pressed
        during a minutes-long relabel then did nothing without a word. Enabled, it is
        refused by the store operations, which names what it waits for.
        """
        for action in (self.import_action, self.import_knowledge_action):
            action.setEnabled(not busy)
        self._busy_phase = ""
        if busy:
            self.busy_bar.setRange(0, 0)  # indeterminate until the first progress report
            self.busy_label.setText(f"{self.services.ops.busy_label}…")
            self._busy_timer.start()
        else:
            self._busy_timer.stop()
            for widget in (self.busy_label, self.busy_bar, self.busy_cancel):
                widget.hide()

    def _show_busy(self) -> None:
        if self.services.ops.busy:
            for widget in (self.busy_label, self.busy_bar, self.busy_cancel):
                widget.show()

    def _ops_progress(self, label: str, done: int, total: int) -> None:
        if label != self.services.ops.busy_label:
            return
        if total > 0:
            self.busy_bar.setRange(0, total)
            self.busy_bar.setValue(min(done, total))
        if self._busy_phase:  # steps of phases, not items: the phase (its bar: the percentage)
            self.busy_label.setText(f"{label}: {self._busy_phase}…")
        else:
            self.busy_label.setText(f"{label}… {done:,}/{total:,}" if total else f"{label}…")

    def _ops_phase(self, label: str, phase: str) -> None:
        """A long write names its phase (a relabel's "saving"): shown with its progress."""
        if label == self.services.ops.busy_label:
            self._busy_phase = phase
            self._ops_progress(label, self.busy_bar.value(), max(self.busy_bar.maximum(), 0))

    def _ops_refused(self, wanted: str, running: str) -> None:
        """One write at a time: say which one waits for which."""
        self.show_message(f"{wanted}: wait until “{running}” has finished.")

    def _ops_failed(self, label: str, message: str) -> None:
        self.services.dialogs.error(self, label, message)

    def update_status(self) -> None:
        """Name the model in the status bar; the settings are read off the GUI thread
        (a read on it could wait on the database like any other)."""
        self.status_loading = True
        self.services.ops.query(
            "window.status",
            lambda ctx: load_settings(ctx.store),
            self._show_status,
            self._no_status,
        )

    def _show_status(self, settings: Settings) -> None:
        self.status_loading = False
        self.model_label.setText(f"Model: {model_display_name(settings)}")
        demo = demo_model_in_use(settings)
        self.demo_button.setVisible(demo)
        self.model_label.setVisible(not demo)  # the notice names the demo model already

    def _no_status(self, message: str) -> None:
        self.status_loading = False
        self.model_label.setText("Model: settings unreadable")
        self.model_label.setToolTip(message)
        self.model_label.setVisible(True)

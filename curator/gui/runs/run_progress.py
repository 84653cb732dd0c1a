"""The Runs pane's progress row: bar, what is being done, speed, and the time left.

Split from :mod:`curator.gui.runs.runs_pane` along the seam between starting runs and showing
one: this row only turns the worker's progress reports (queued signals, GUI thread) into
text and never waits for anything. The arithmetic is Qt-free in
:mod:`curator.pipeline.eta`: the time left is :class:`~curator.pipeline.eta.RemainingTime`
fed with each report and re-read once a second (a distill batch can take minutes between
reports), and a stopped run's bar is :func:`~curator.pipeline.eta.stopped_share` of the
figures its text names, so bar and text never disagree.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QSizePolicy, QWidget

from curator.gui.runs.run_start import RunEstimate
from curator.pipeline.eta import RemainingTime, remaining_text, stopped_share
from curator.pipeline.progress import Progress, speed_text

BAR_STEPS = 1000
"""The progress bar's resolution: a fraction, so a long item moves it per step and token."""

TICK_MS = 1000
"""How often the time left counts down between progress reports."""

WIDEST_REMAINING = "about 59 min left"
"""The remaining-time label keeps this width, so the row does not shift as it counts down."""


def elastic(label: QLabel) -> QLabel:
    """A label that never widens the window: long text is cut, and shown whole as a tooltip."""
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    label.setMinimumWidth(80)
    return label


class RunProgress(QWidget):
    """Bar, progress text, generation speed and "about N min left" of the current run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar()
        self.bar.setObjectName("runProgress")
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.label = elastic(QLabel("Idle"))
        self.label.setObjectName("progressLabel")
        self.speed_label = QLabel("")
        self.speed_label.setObjectName("speedLabel")
        self.remaining_label = QLabel("")
        self.remaining_label.setObjectName("remainingLabel")
        self.remaining_label.setMinimumWidth(
            self.remaining_label.fontMetrics().horizontalAdvance(WIDEST_REMAINING) + 8
        )
        self.last: Progress | None = None
        self._remaining: RemainingTime | None = None
        self._basis = ""
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.bar, 2)
        row.addWidget(self.label, 3)
        row.addWidget(self.speed_label)
        row.addWidget(self.remaining_label)

    def set_text(self, text: str) -> None:
        self.label.setText(text)
        self.label.setToolTip(text)

    def starting(self, kind: str, estimate: RunEstimate) -> None:
        """A run was handed to the worker: a busy bar until its first report, and the
        estimate made before it started as the first time left."""
        self.last = None
        self._remaining = RemainingTime(estimate.seconds, estimate.plan.later_seconds)
        source = estimate.plan.rates.source()
        self._basis = (
            f"Estimated before the run: {estimate.summary()}. {source} "
            "As items finish it follows the measured pace."
        )
        self.bar.setRange(0, 0)  # busy indicator until the first progress report
        self.set_text(f"Starting {kind} (loading the model if needed)…")
        self.speed_label.setText("")
        self._show_remaining(self._remaining.remaining(time.monotonic()))
        self._timer.start()

    def show_progress(self, progress: Progress) -> None:
        self.last = progress
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setValue(round(progress.fraction * BAR_STEPS))
        text = f"{progress.step}: {progress.done}/{progress.total}"
        if progress.message:
            text += f" — {progress.message}"
        self.set_text(text)
        # Blank while a call evaluates its prompt: no figure from zero generated tokens.
        self.speed_label.setText(speed_text(progress))
        if self._remaining is None:
            self._remaining = RemainingTime(None)
        self._show_remaining(self._remaining.update(progress, time.monotonic()))

    def _tick(self) -> None:
        if self._remaining is not None:
            self._show_remaining(self._remaining.remaining(time.monotonic()))

    def _show_remaining(self, seconds: float | None) -> None:
        self.remaining_label.setText(remaining_text(seconds))
        self.remaining_label.setToolTip(self._basis)

    def _stop(self) -> None:
        self._timer.stop()
        self._remaining = None
        self.remaining_label.setText("")
        self.remaining_label.setToolTip("")
        self.speed_label.setText("")

    def finished(self, status: str, text: str) -> None:
        """The run ended: a cancelled one keeps the share its text names ("after 1 of 5"
        is 20 %), any other end fills the bar."""
        self._stop()
        if status == "cancelled":
            self.bar.setRange(0, BAR_STEPS)
            self.bar.setValue(round(stopped_share(text, self.last) * BAR_STEPS))
        else:
            self.bar.setRange(0, 1)
            self.bar.setValue(1)
        self.set_text(text)

    def failed(self, message: str) -> None:
        self._stop()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.set_text(f"Failed: {message}")

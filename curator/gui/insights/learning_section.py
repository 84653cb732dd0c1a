"""The Insights pane's "Learning" tab: the learned classifier as the reviewer sees it.

A learning curve (accuracy and Cohen's kappa of the classifier trained on k human labels
per label and tested on the rest) tells when more labelling stops paying; a line under
it says which source decided the labels shown. Both come computed in
:class:`curator.pipeline.insights.Insights` (on the pane's pool thread: the curve fits
models); this widget only draws them, its plot items created once and updated with
``setData``. Until every label has enough human labels the plot gives way to a text that
says how many more of which label are needed.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

from curator.core.wording import plural
from curator.gui.insights.insights_charts import _style, series_item
from curator.gui.insights.insights_parts import num
from curator.pipeline.insights import Insights
from curator.pipeline.learn import MIN_PER_CLASS

X_RANGE = (0.0, 21.0)
"""Labels per label on the x axis: the curve's sizes are 3, 5, 10 and 20."""

SOURCE_NAMES = {
    "human": "a person",
    "learned": "the learned classifier",
    "calibrated": "the calibrated scores",
    "model": "the model's raw scores",
}


class LearningCurveChart(pg.PlotWidget):
    """Accuracy and kappa against the number of human labels per label."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent=parent)
        _style(self, "score on the held-out human labels", "human labels per label (trained on)")
        item = self.getPlotItem()
        fg = self.palette().color(QPalette.ColorRole.WindowText)
        # bottom right: the curves rise towards the top
        item.addLegend(offset=(-10, -10), labelTextColor=fg)
        item.setYRange(0.0, 1.0, padding=0.05)
        item.setXRange(*X_RANGE, padding=0)
        item.getViewBox().setMouseEnabled(x=False, y=False)
        self.accuracy = series_item(0, "accuracy")
        self.kappa = series_item(1, "Cohen's κ")
        item.addItem(self.accuracy)
        item.addItem(self.kappa)

    def set_curve(self, points: list[dict[str, float]]) -> None:
        x = [float(p["per_class"]) for p in points]
        self.accuracy.setData(x, [float(p["accuracy"]) for p in points])
        # kappa can be negative (worse than chance); the axis follows it down
        kappas = [float(p["kappa"]) for p in points]
        self.kappa.setData(x, kappas)
        item = self.getPlotItem()
        item.setYRange(min([0.0, *kappas]), 1.0, padding=0.05)
        # ticks at the drawn sizes only, on a fixed range: a lone first point sits where
        # the next ones will join it instead of filling the plot with fractional ticks
        item.getAxis("bottom").setTicks([[(v, f"{v:g}") for v in x]] if x else None)
        item.setXRange(X_RANGE[0], max([X_RANGE[1], *[v + 1 for v in x]]), padding=0)


class LearningSection(QWidget):
    """The tab: curve (or what it still needs), cross-validated accuracy, label sources."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("learningSection")
        self.chart = LearningCurveChart()
        self.chart.setObjectName("learningCurveChart")
        self.empty_label = QLabel()
        self.empty_label.setObjectName("learningEmpty")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty_label)
        self.stack.addWidget(self.chart)
        self.accuracy_label = QLabel()
        self.accuracy_label.setObjectName("learningAccuracy")
        self.accuracy_label.setWordWrap(True)
        self.sources_label = QLabel()
        self.sources_label.setObjectName("learningSources")
        self.sources_label.setWordWrap(True)
        self.sources_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.addWidget(self.accuracy_label)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.sources_label)

    def set_insights(self, ins: Insights) -> None:
        sources = ins.label_sources
        curve = ins.learning_curve or []
        self.chart.set_curve(curve)
        if sources is None:
            self.empty_label.setText("No learning figures for this view.")
            self.stack.setCurrentWidget(self.empty_label)
            self.accuracy_label.setText("")
            self.sources_label.setText("")
            return
        if curve:
            self.stack.setCurrentWidget(self.chart)
        else:
            self.empty_label.setText(
                sources.curve_hint() or "Not enough human labels for a learning curve yet."
            )
            self.stack.setCurrentWidget(self.empty_label)
        per_class = ", ".join(f"{n} {label}" for label, n in sources.per_class.items())
        if sources.cv_accuracy is None:
            self.accuracy_label.setText(
                f"Human labels the classifier can learn from: {per_class}. "
                f"It predicts once every label has at least {MIN_PER_CLASS}."
            )
        else:
            self.accuracy_label.setText(
                f"Cross-validated accuracy <b>{num(sources.cv_accuracy)}</b> on "
                f"{sources.cv_labels:,} human labels ({per_class}). The curve: the classifier "
                f"trained on k labels per label, tested on the rest, mean of a few draws. "
                + sources.next_point_hint()
            )
        total = sum(sources.decided.values())
        parts = [
            f"{SOURCE_NAMES.get(name, name)} <b>{count:,}</b>"
            for name, count in sources.decided.items()
        ]
        self.sources_label.setText(
            f"Who decided the {plural(total, 'label')} shown: " + " · ".join(parts)
        )

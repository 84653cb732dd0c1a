"""Scrolling the Settings page with the wheel never changes a value under the pointer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QWidget,
)

from curator.gui.runtime.services import AppServices
from curator.gui.settings.settings_pane import SettingsPane


@pytest.fixture
def pane(qtbot, services: AppServices) -> Iterator[SettingsPane]:
    widget = SettingsPane(services)
    qtbot.addWidget(widget)
    widget.resize(800, 420)  # short: the page scrolls
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.waitUntil(lambda: not widget.loading, timeout=30_000)  # read in the background
    yield widget
    widget.shutdown()


def _wheel_down(widget: QWidget) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, -120),  # one notch down
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def _value(widget: QWidget) -> object:
    if isinstance(widget, QComboBox):
        return widget.currentIndex()
    assert isinstance(widget, QAbstractSpinBox)
    return widget.text()


def test_the_wheel_over_an_unfocused_input_scrolls_the_page_and_changes_nothing(
    pane: SettingsPane,
) -> None:
    inputs = pane.wheel_guard.guarded
    assert len(inputs) >= 8  # the thresholds, top K, backups, the second opinion...
    bar = pane.form_scroll.verticalScrollBar()
    assert bar.maximum() > 0
    before = [_value(w) for w in inputs]
    start = bar.value()
    for widget in inputs:
        _wheel_down(widget)
    assert [_value(w) for w in inputs] == before
    assert bar.value() > start  # the page moved instead


def test_a_focused_input_still_takes_the_wheel(qtbot, pane: SettingsPane) -> None:
    spin = next(
        w
        for w in pane.wheel_guard.guarded
        if isinstance(w, QDoubleSpinBox) and w.minimum() < w.value() < w.maximum()
    )
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    before = spin.text()
    _wheel_down(spin)
    assert spin.text() != before

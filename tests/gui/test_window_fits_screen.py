"""The window fits the screen's free area, frame and status bar included: on the first
start (the default size is larger than a small screen), and when the saved geometry comes
from a bigger or another monitor (off to the side, larger than this screen)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QRect, QSettings
from PySide6.QtWidgets import QApplication

from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.gui.window.window_fit import FRAME_ALLOWANCE, fitted_frame


def _status_bar_on_screen(window: MainWindow, free: QRect) -> bool:
    bar = window.statusBar()
    corners = (bar.mapToGlobal(bar.rect().topLeft()), bar.mapToGlobal(bar.rect().bottomRight()))
    return all(free.contains(point) for point in corners)


def _open(qtbot, services: AppServices, qsettings: QSettings) -> MainWindow:
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show_fitted()  # as the application shows it
    qtbot.waitExposed(window)
    QApplication.processEvents()  # the frame is known after the first show: fitted again
    return window


def test_the_first_start_fits_the_free_area(qtbot, services: AppServices, qsettings) -> None:
    window = _open(qtbot, services, qsettings)
    free = window.screen().availableGeometry()
    assert free.contains(window.frameGeometry()), (free, window.frameGeometry())
    assert not window.isMaximized()  # a window of its own size, not the whole screen
    assert _status_bar_on_screen(window, free)
    window.close()


@pytest.mark.parametrize(
    "saved",
    [
        QRect(0, 0, 3000, 2000),  # a big monitor's window
        QRect(4000, 3000, 900, 600),  # on a monitor that is gone
        QRect(-2500, -40, 900, 600),  # left of this one
        QRect(300, 500, 700, 600),  # hanging over the bottom edge
    ],
)
def test_a_saved_geometry_is_clamped_to_the_free_area(
    qtbot, services: AppServices, qsettings: QSettings, saved: QRect
) -> None:
    first = _open(qtbot, services, qsettings)
    first.resize(saved.size())
    first.move(saved.topLeft())
    first.save_state()
    first.close()
    window = _open(qtbot, services, qsettings)
    free = window.screen().availableGeometry()
    assert free.contains(window.frameGeometry()), (free, window.frameGeometry())
    assert _status_bar_on_screen(window, free)
    window.close()


rects = st.builds(
    QRect,
    st.integers(-5000, 5000),
    st.integers(-5000, 5000),
    st.integers(1, 6000),
    st.integers(1, 6000),
)
frees = st.builds(
    QRect,
    st.integers(-2000, 2000),
    st.integers(-2000, 2000),
    st.integers(300, 4000),
    st.integers(300, 3000),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=rects, free=frees)
def test_a_fitted_frame_lies_in_the_free_area(frame: QRect, free: QRect) -> None:
    """Any frame, any free area: the fitted frame lies inside it, keeps the size when
    that fits, and is never larger than it was."""
    result = fitted_frame(frame, free)
    assert free.contains(result), (frame, free, result)
    assert result.width() <= frame.width() and result.height() <= frame.height()
    if frame.width() <= free.width() and frame.height() <= free.height():
        assert result.size() == frame.size()
    if free.contains(frame):
        assert result == frame  # a window that fits is left where the user put it


def test_the_allowance_covers_the_offscreen_frame(qtbot, services, qsettings) -> None:
    window = _open(qtbot, services, qsettings)
    frame, inner = window.frameGeometry(), window.geometry()
    assert frame.width() - inner.width() <= FRAME_ALLOWANCE.width()
    assert frame.height() - inner.height() <= FRAME_ALLOWANCE.height()
    window.close()

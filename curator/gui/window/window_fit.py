"""Where the main window may be: inside the screen's free area, frame included.

A window sized to the screen's free area is still too tall by its title bar, and one
restored from a bigger monitor (or from one that is no longer connected) may be partly or
wholly off-screen: the status bar and the panes' bottom rows were below the screen's edge,
out of reach. Qt only knows the frame once the window is shown, so until then the window
assumes :data:`FRAME_ALLOWANCE` and is fitted again with the real frame after its first
show.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QWidget

FRAME_ALLOWANCE = QSize(16, 48)
"""Borders and title bar assumed before the window manager has drawn the frame."""


def fitted_frame(frame: QRect, free: QRect) -> QRect:
    """``frame`` shrunk to fit ``free`` where it is larger, then moved just enough to lie
    inside it (a frame that already fits is returned unchanged)."""
    width = min(frame.width(), free.width())
    height = min(frame.height(), free.height())
    left = min(max(frame.left(), free.left()), free.left() + free.width() - width)
    top = min(max(frame.top(), free.top()), free.top() + free.height() - height)
    return QRect(left, top, width, height)


def centred(size: QSize, free: QRect) -> QRect:
    """A frame of ``size`` (at most ``free``'s) in the middle of ``free``."""
    width = min(size.width(), free.width())
    height = min(size.height(), free.height())
    return QRect(
        free.left() + (free.width() - width) // 2,
        free.top() + (free.height() - height) // 2,
        width,
        height,
    )


def fit_window(window: QWidget, centre: bool) -> bool:
    """Resize and move the top-level ``window`` so its frame lies in its screen's free
    area (``centre``: in the middle of it, for a first start). A maximized or full-screen
    window is the window manager's to place. Returns whether it had to shrink."""
    screen = window.screen()
    if screen is None or window.isMaximized() or window.isFullScreen():
        return False
    free = screen.availableGeometry()
    inner, outer = window.geometry(), window.frameGeometry()
    margins = outer.size() - inner.size()
    if not window.isVisible() or outer == inner:
        margins = FRAME_ALLOWANCE
    frame = QRect(window.pos(), inner.size() + margins)
    if centre:
        frame = centred(frame.size(), free)
    fitted = fitted_frame(frame, free)
    if fitted != frame or centre:
        window.resize(fitted.size() - margins)
        window.move(fitted.topLeft())  # a window's position is its frame's
    return fitted.size() != frame.size()

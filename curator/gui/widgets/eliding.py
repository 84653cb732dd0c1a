"""A label and a flat button that, when squeezed, show their text cut with "…".

The status bar holds the database's name, the model, where it runs, the run, the
followed logs and the demo model's notice. At 800 pixels they do not all fit, and Qt
then gives each less than its text needs: a plain ``QLabel`` clips its text mid-letter
and two neighbours overlap ("…last 3 s a‹l: too small…"). These widgets instead ask for
only a short start of their text as their minimum and paint the rest elided, so a
narrow window shows "following 1 log: 5 li…" beside "Demo model: too sm…", each
readable, with the whole text in its tooltip. ``text()`` stays the whole text:
everything that reads the widget (tests, accessibility) sees what it says, not what fits.
They are one line: a line break in a text (a database file may be named with one) reads
as a space, where it painted two lines into one line's height and made the bar taller.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QHelpEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QSizeGrip,
    QSizePolicy,
    QStatusBar,
    QStyle,
    QStyleOption,
    QStyleOptionButton,
    QStylePainter,
    QToolTip,
    QWidget,
)

ELLIPSIS = "…"
KEEP = 12
"""How much of its text a squeezed widget still shows before the "…", by default."""


def _elided(metrics: QFontMetrics, text: str, width: int) -> str:
    """``text`` cut with "…" to ``width`` pixels; whole where it fits (elidedText alone
    cuts a text measured at exactly its own width, its widths being fractional)."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)


LINE_BREAKS = str.maketrans(dict.fromkeys("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", " "))
"""What ``str.splitlines`` breaks at: each reads as a space on the one line."""


def one_line(text: str) -> str:
    return text.translate(LINE_BREAKS)


def _short_start(text: str, keep: int) -> str:
    return text if len(text) <= keep else text[:keep].rstrip() + ELLIPSIS


class ElidingLabel(QLabel):
    """A one-line, plain-text label that elides at the right instead of clipping.

    ``keep`` characters stay readable however narrow the window: the status bar gives
    way first where the text says least per character.
    """

    def __init__(self, text: str = "", keep: int = KEEP) -> None:
        super().__init__(one_line(text))
        self.keep = keep
        self.setTextFormat(Qt.TextFormat.PlainText)

    def setText(self, text: str) -> None:
        super().setText(one_line(text))

    def minimumSizeHint(self) -> QSize:
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(_short_start(self.text(), self.keep))
        full = super().minimumSizeHint()
        return QSize(min(full.width(), width + margins.left() + margins.right()), full.height())

    def shown_text(self) -> str:
        """The text as painted at the label's present width."""
        return _elided(self.fontMetrics(), self.text(), self.contentsRect().width())

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment()), self.shown_text())


class ElidingButton(QPushButton):
    """A push button whose label elides at the right when the button is squeezed
    (``keep`` characters stay readable)."""

    def __init__(self, text: str = "", keep: int = KEEP) -> None:
        super().__init__(one_line(text))
        self.keep = keep

    def setText(self, text: str) -> None:
        super().setText(one_line(text))

    def _padding(self) -> int:
        """What the style adds around the text (frame, margins)."""
        return max(0, self.sizeHint().width() - self.fontMetrics().horizontalAdvance(self.text()))

    def minimumSizeHint(self) -> QSize:
        start = _short_start(self.text(), self.keep)
        width = self.fontMetrics().horizontalAdvance(start) + self._padding()
        full = super().minimumSizeHint()
        return QSize(min(self.sizeHint().width(), width), full.height())

    def shown_text(self) -> str:
        """The label as painted at the button's present width."""
        return _elided(self.fontMetrics(), self.text(), self.width() - self._padding())

    def paintEvent(self, _event: QPaintEvent) -> None:
        option = QStyleOptionButton()
        self.initStyleOption(option)
        option.text = self.shown_text()
        QStylePainter(self).drawControl(QStyle.ControlElement.CE_PushButton, option)


MESSAGE_CAP = 2_000
"""The most of a status-bar message measured or put in its tooltip: wider than any
screen, and a megabyte-long message measured whole held every paint for a quarter of a
second."""


class ElidingStatusBar(QStatusBar):
    """A status bar whose temporary message ends in "…" where it does not fit.

    ``QStatusBar`` draws a message in the room its permanent parts leave and clips the
    rest mid-letter ("…; 3 per label neede"). Here a message that does not fit is drawn
    elided, with the whole message as the tooltip over it (gone with the message); one
    that fits is left to ``QStatusBar``, and ``currentMessage()`` is always the whole text.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # as QMainWindow sets on the bar it makes itself: the bar never widens the window
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._permanent: list[QWidget] = []
        self._tip_shown = False
        self.messageChanged.connect(self._message_changed)

    def addPermanentWidget(self, widget: QWidget, stretch: int | None = 0) -> None:
        super().addPermanentWidget(widget, stretch)
        self._permanent.append(widget)

    def insertPermanentWidget(self, index: int, widget: QWidget, stretch: int | None = 0) -> int:
        found = super().insertPermanentWidget(index, widget, stretch)
        self._permanent.append(widget)
        return found

    def removeWidget(self, widget: QWidget) -> None:
        super().removeWidget(widget)
        self._permanent = [w for w in self._permanent if w is not widget]

    def _parts(self) -> list[QWidget]:
        """The permanent parts still on this bar (one deleted or moved elsewhere is
        forgotten)."""
        self._permanent = [
            w for w in self._permanent if shiboken6.isValid(w) and w.parentWidget() is self
        ]
        return self._permanent

    def message_rect(self) -> QRect:
        """Where the message is drawn: QStatusBar's own rectangle, up to the first
        permanent part (or the size grip)."""
        left, right = 6, self.width() - 12
        rtl = self.layoutDirection() == Qt.LayoutDirection.RightToLeft
        grip = self.findChild(QSizeGrip)
        if grip is not None and grip.isVisible():
            left, right = (grip.x() + grip.width(), right) if rtl else (left, grip.x())
        shown = [w for w in self._parts() if w.isVisible()]
        if shown and rtl:
            left = max(left, max(w.x() + w.width() for w in shown) + 2)
        elif shown:
            right = min(right, min(w.x() for w in shown) - 2)
        return QRect(left, 0, max(0, right - left), self.height())

    def shown_message(self) -> str:
        """The message as painted at the bar's present width ("" when there is none)."""
        message = self.currentMessage()
        if not message:
            return ""
        head = one_line(message[:MESSAGE_CAP])
        shown = _elided(self.fontMetrics(), head, self.message_rect().width())
        if len(message) > MESSAGE_CAP and shown == head:  # a wall-wide screen
            shown = head[:-1] + ELLIPSIS
        return shown

    def _elided_message(self) -> str | None:
        """The message as painted when it does not fit whole; None when there is none or
        it fits (measured once a paint: a message is measured up to its first 2,000
        characters)."""
        message = self.currentMessage()
        if not message:
            return None
        shown = self.shown_message()
        return None if shown == one_line(message[: MESSAGE_CAP + 1]) else shown

    def paintEvent(self, event: QPaintEvent) -> None:
        text = self._elided_message()
        if text is None:
            super().paintEvent(event)  # no message, or one that fits: QStatusBar's own
            return
        # QStatusBar's paint (the panel, the permanent parts' frames), with the message
        # elided: the normal parts are hidden while a message shows.
        painter = QPainter(self)
        style = self.style()
        panel = QStyleOption()
        panel.initFrom(self)
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, panel, painter, self)
        for widget in self._parts():
            if widget.isVisible():
                frame = QStyleOption()
                frame.rect = widget.geometry().adjusted(-2, -1, 2, 1)
                frame.palette = self.palette()
                frame.state = QStyle.StateFlag.State_None
                style.drawPrimitive(
                    QStyle.PrimitiveElement.PE_FrameStatusBarItem, frame, painter, widget
                )
        painter.setPen(self.palette().windowText().color())
        flags = Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(self.message_rect(), int(flags) | int(Qt.TextFlag.TextSingleLine), text)

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ToolTip
            and isinstance(event, QHelpEvent)
            and self._elided_message() is not None
            and self.message_rect().contains(event.pos())
        ):
            message = self.currentMessage()
            if len(message) > MESSAGE_CAP:
                message = message[:MESSAGE_CAP] + ELLIPSIS
            QToolTip.showText(event.globalPos(), message, self, self.message_rect())
            self._tip_shown = True
            return True
        return super().event(event)

    def _message_changed(self, _text: str) -> None:
        if self._tip_shown:  # the tooltip said the message that is gone
            self._tip_shown = False
            QToolTip.hideText()

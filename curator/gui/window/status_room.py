"""Room on the status bar's left for a temporary message or a running write.

The status bar's permanent parts (the followed logs, the demo model's notice, the
model, the database, where the model runs, the run) fill an 800-pixel window on their
own, each elided to its minimum. ``QStatusBar`` draws a temporary message ("Undid the
last commit…") and lays out a running write's label, bar and Cancel only in what is
left of them: nothing, so the message the person's action just earned was invisible,
and the write's widgets squeezed every part below its minimum ("model not lo").

While a message shows or a write's widgets are visible, :class:`StatusRoom` caps the
eliding parts' widths, the least urgent first, until the left side has the room it
needs; a part left narrower than a few letters gives way entirely (its width 0, still
"visible" for the code that shows and hides it). When the message or the write is gone
the caps are lifted and every part is as before. The parts keep their whole text and
tooltip throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QStatusBar, QWidget

UNCAPPED = 16_777_215
"""Qt's largest widget size (QWIDGETSIZE_MAX): no cap."""

SPACING = 6
"""The gap QStatusBar's layout leaves between its items."""

EDGES = 32
"""What the bar keeps for itself: its margins, the message's insets and the size grip."""

MIN_SHOWN = 56
"""A part capped narrower than this shows a letter or two and "…": it gives way entirely."""


class StatusRoom(QObject):
    """Keeps the status bar's left side wide enough for its message or running write.

    ``yielding`` returns the eliding permanent parts, the first to give way first;
    ``normal`` are the write's widgets QStatusBar lays out on the left.
    """

    def __init__(
        self,
        bar: QStatusBar,
        yielding: Callable[[], Sequence[QWidget]],
        normal: Sequence[QWidget],
    ) -> None:
        super().__init__(bar)
        self._bar = bar
        self._yielding = yielding
        self._normal = list(normal)
        bar.messageChanged.connect(lambda _text: self.fit())
        bar.installEventFilter(self)
        for widget in self._normal:
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # A resize, a write's widget shown or hidden, or a text that changed the layout
        # (the write's progress): fit again. Fitting is idempotent (it reads size hints,
        # not present widths), so the layout request it causes itself settles at once.
        if event.type() in (
            QEvent.Type.Resize,
            QEvent.Type.Show,
            QEvent.Type.Hide,
            QEvent.Type.LayoutRequest,
        ):
            self.fit()
        return False

    def needed(self) -> int:
        """The width the left side needs now (0: nothing there)."""
        message = self._bar.currentMessage()
        if message:
            return self._bar.fontMetrics().horizontalAdvance(message)
        shown = [w for w in self._normal if not w.isHidden()]
        return sum(w.sizeHint().width() + SPACING for w in shown)

    def fit(self) -> None:
        parts = [p for p in self._yielding() if not p.isHidden()]
        need = self.needed()
        excess = 0
        if need:
            others = [
                w
                for w in self._bar.findChildren(QWidget)
                if w.parent() is self._bar
                and not w.isHidden()
                and w not in self._normal
                and w not in parts
                and not w.isWindow()
            ]
            hints = sum(p.sizeHint().width() + SPACING for p in parts)
            fixed = sum(w.sizeHint().width() + SPACING for w in others)
            excess = hints + fixed + need + EDGES - self._bar.width()
        for part in parts:
            cap = UNCAPPED
            if excess > 0:
                hint = part.sizeHint().width()
                give = min(excess, hint)
                cap = hint - give
                if cap < MIN_SHOWN:
                    cap, give = 0, hint
                excess -= give
            if part.maximumWidth() != cap:
                part.setMaximumWidth(cap)

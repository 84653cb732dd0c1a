"""Down from a search field goes into its results.

A search field and the list it filters sit one above the other, but Tab walks through
every control between them (the Episodes pane has six filters in the way), so a person
at the keyboard could type a search and not reach its first result without the mouse.
Down, or Page Down, in the field moves the focus into the results and selects the
first one unless a result is already selected, as a browser's address bar or a mail client's quick
filter do. Every other key stays the field's: Up and Down have no meaning in a one-line
field, and Return keeps its meaning (a dialog's default button).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QAbstractItemView, QLineEdit

_INTO_RESULTS = (Qt.Key.Key_Down, Qt.Key.Key_PageDown)


class DownIntoResults(QObject):
    """Installed on ``edit``: Down or Page Down focuses ``view``.

    ``settle`` runs first: it applies a search still waiting for its typing pause and
    says whether the rows shown are about to be replaced (a search running in the
    background). Then only the focus moves, and the owner calls :meth:`enter` when the
    new rows are in, so the row made current is a result of the text typed, never one of
    the rows it is replacing.
    """

    def __init__(
        self,
        edit: QLineEdit,
        view: QAbstractItemView,
        settle: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(edit)
        self._view = view
        self._settle = settle
        edit.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.KeyPress or not isinstance(event, QKeyEvent):
            return False
        if event.key() not in _INTO_RESULTS or event.modifiers() not in (
            Qt.KeyboardModifier.NoModifier,
            Qt.KeyboardModifier.KeypadModifier,
        ):
            return False
        if self._settle is not None and self._settle():
            self._view.setFocus(Qt.FocusReason.TabFocusReason)
        else:
            self.enter()
        return True

    def enter(self) -> None:
        """Focus the results; the first row becomes current and selected when nothing is
        selected (a view given the focus may hold a current cell that is not selected:
        the detail beside it would still say "select an episode")."""
        view = self._view
        view.setFocus(Qt.FocusReason.TabFocusReason)
        model, selection = view.model(), view.selectionModel()
        if model is None or model.rowCount() == 0:
            return
        if selection is not None and selection.hasSelection():
            return
        view.setCurrentIndex(model.index(0, 0))

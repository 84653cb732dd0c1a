"""Choose the pattern an UPDATE rewrites: the nearest active patterns, searchable, with the diff.

Pressing UPDATE on a candidate the gate proposed to ADD used to end in a message
("UPDATE needs a target pattern; choose one") with no way to choose. This dialog is that
way: the active patterns ranked by the gate's own ratio to the candidate's text
(:func:`curator.pipeline.review_views.nearest_patterns`), a search field that narrows the pool
by text or "#id", and the character diff of the highlighted pattern against the
candidate. Ranking reads every active pattern, so it runs through ``ops.query`` (off the
GUI thread; typing quickly only shows the newest result).
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from curator.core.wording import plural
from curator.gui.review.review_list import flat
from curator.gui.runtime.operations import OpContext, StoreOps
from curator.gui.widgets.diff_view import DiffView
from curator.gui.widgets.search_keys import DownIntoResults
from curator.pipeline import review_views
from curator.pipeline.review_views import PatternMatch

SEARCH_DELAY_MS = 200
"""Search this long after the last keystroke (not on every key)."""


class TargetPicker(QDialog):
    """The nearest patterns to a candidate; OK records an UPDATE of the highlighted one."""

    def __init__(
        self, ops: StoreOps, candidate: Any, note: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("targetPicker")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per use: none piles up
        self._closed = False
        self.setWindowTitle(f"Update which pattern? — candidate #{candidate.ordinal}")
        self.resize(760, 560)
        self._ops = ops
        self._text: str = candidate.effective_text
        self._key = f"review-targets-{id(self)}"
        self.matches: list[PatternMatch] = []

        intro = QLabel(
            f"<p>{html.escape(note) + '<br>' if note else ''}"
            "Choose the existing pattern this candidate updates (nearest first by "
            f"similarity ratio):</p><p><i>{html.escape(flat(self._text, 300))}</i></p>"
        )
        intro.setWordWrap(True)
        self.search = QLineEdit()
        self.search.setObjectName("targetSearch")
        self.search.setPlaceholderText("Search the patterns by text or #id")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.setObjectName("targetList")
        self.list.setWordWrap(True)
        self.list.currentRowChanged.connect(self._show_diff)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept_if_chosen())
        self.status = QLabel("Finding the nearest patterns…")
        self.status.setObjectName("targetStatus")
        self.diff = DiffView()
        self.diff.setObjectName("targetDiff")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Update this pattern")
        self.ok.setEnabled(False)
        self.buttons.accepted.connect(self.accept_if_chosen)
        self.buttons.rejected.connect(self.reject)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.list)
        split.addWidget(self.diff)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.search)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)
        layout.addWidget(self.buttons)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.rank)
        self.search.textChanged.connect(self._timer.start)
        DownIntoResults(self.search, self.list, self._settle)  # Down: into the list
        self.search.setFocus()
        self.rank()

    def rank(self) -> None:
        """Rank the patterns (again) for the current search, off the GUI thread."""
        text, search = self._text, self.search.text()

        def ranked(ctx: OpContext) -> list[PatternMatch]:
            return review_views.nearest_patterns(ctx.store, text, search)

        self._ops.query(self._key, ranked, self._show_matches, self._failed)

    def _settle(self) -> bool:
        """Down in the search: a search waiting for the typing pause runs now (its
        ranking makes its first pattern current when it comes, as every ranking does)."""
        if self._timer.isActive():
            self._timer.stop()
            self.rank()
        return False

    def done(self, result: int) -> None:
        self._closed = True  # a ranking delivered after this finds no widgets to fill
        super().done(result)

    def _failed(self, message: str) -> None:
        if self._closed:
            return
        self.status.setText(f"The patterns could not be read: {message}")

    def _show_matches(self, matches: list[PatternMatch]) -> None:
        if self._closed:
            return
        self.matches = list(matches)
        self.list.clear()
        for m in self.matches:
            item = QListWidgetItem(f"#{m.id} · ratio {m.ratio:.3f} · {flat(m.text, 160)}")
            item.setToolTip(f"{m.text}\n\nimportance {m.importance:.2f} · {m.category}")
            self.list.addItem(item)
        search = self.search.text().strip()
        if self.matches:
            self.status.setText(
                plural(len(self.matches), "nearest active pattern")
                + (f" matching “{search}”" if search else "")
            )
            self.list.setCurrentRow(0)
        else:
            self.status.setText(
                f"No active pattern matches “{search}”." if search else "There are no patterns yet."
            )
            self.diff.clear_diff("Nothing to compare.")
        self.ok.setEnabled(bool(self.matches))

    def _show_diff(self, row: int) -> None:
        if 0 <= row < len(self.matches):
            self.diff.set_texts(self.matches[row].text, self._text)

    def chosen(self) -> PatternMatch | None:
        row = self.list.currentRow()
        return self.matches[row] if 0 <= row < len(self.matches) else None

    def choose(self, pattern_id: int) -> bool:
        """Highlight the pattern with this id when it is listed (tests, keyboard users)."""
        for row, m in enumerate(self.matches):
            if m.id == pattern_id:
                self.list.setCurrentRow(row)
                return True
        return False

    def accept_if_chosen(self) -> None:
        if self.chosen() is not None:
            self.accept()

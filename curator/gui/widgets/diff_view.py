"""Character-level diff of a candidate against the existing pattern it matched.

The reviewer decides SKIP/UPDATE by reading what actually differs, so the diff is shown
character by character (difflib opcodes, the same matcher family the dedup gate uses)
as HTML in a read-only text browser. The colours are derived from the widget palette so
the highlighting stays readable in dark themes too.
"""

from __future__ import annotations

import difflib
import html

from PySide6.QtCore import QEvent
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QTextBrowser, QWidget


def _blend(base: QColor, tint: QColor, amount: float) -> QColor:
    """Mix ``tint`` into ``base``: a tint that works on light and dark backgrounds."""
    return QColor(
        round(base.red() * (1 - amount) + tint.red() * amount),
        round(base.green() * (1 - amount) + tint.green() * amount),
        round(base.blue() * (1 - amount) + tint.blue() * amount),
    )


def diff_colors(palette: QPalette) -> tuple[str, str]:
    """(removed, inserted) background colours as ``#rrggbb`` for this palette."""
    base = palette.color(QPalette.ColorRole.Base)
    dark = base.lightness() < 128
    amount = 0.45 if dark else 0.35
    removed = _blend(base, QColor(220, 50, 47), amount)
    inserted = _blend(base, QColor(40, 170, 60), amount)
    return removed.name(), inserted.name()


def diff_html(
    old: str,
    new: str,
    *,
    removed_bg: str,
    inserted_bg: str,
    labels: tuple[str, str] = ("Existing", "Candidate"),
) -> str:
    """Two HTML paragraphs: the old text with deletions marked, the new with insertions.

    Equal runs are left plain; ``replace`` opcodes mark both sides. Every character is
    escaped, so patterns containing ``<`` or ``&`` render literally.
    """
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    old_parts: list[str] = []
    new_parts: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a = html.escape(old[i1:i2])
        b = html.escape(new[j1:j2])
        if tag == "equal":
            old_parts.append(a)
            new_parts.append(b)
            continue
        if a:
            old_parts.append(
                f'<span style="background-color:{removed_bg}; text-decoration:line-through">'
                f"{a}</span>"
            )
        if b:
            new_parts.append(f'<span style="background-color:{inserted_bg}">{b}</span>')
    return (
        f"<p><b>{html.escape(labels[0])}:</b> " + "".join(old_parts) + "</p>"
        f"<p><b>{html.escape(labels[1])}:</b> " + "".join(new_parts) + "</p>"
    )


class DiffView(QTextBrowser):
    """Read-only view of the character diff between an existing pattern and a candidate."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setOpenLinks(False)
        self._old = ""
        self._new = ""
        self._labels = ("Existing", "Candidate")

    def set_texts(
        self, old: str, new: str, labels: tuple[str, str] = ("Existing", "Candidate")
    ) -> None:
        """Show the diff of ``old`` (the existing pattern) against ``new`` (the candidate).

        ``labels`` name the two sides (what the commit does with each, for an UPDATE).
        """
        self._old, self._new, self._labels = old, new, labels
        self._render()

    def clear_diff(self, message: str = "") -> None:
        """No matched pattern: show ``message`` instead of a diff."""
        self._old = self._new = ""
        self.setHtml(f"<p><i>{html.escape(message)}</i></p>" if message else "")

    def _render(self) -> None:
        removed, inserted = diff_colors(self.palette())
        self.setHtml(
            diff_html(
                self._old, self._new, removed_bg=removed, inserted_bg=inserted, labels=self._labels
            )
        )

    def changeEvent(self, event: QEvent) -> None:
        """Re-colour when the palette changes (theme switch)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and (self._old or self._new):
            self._render()

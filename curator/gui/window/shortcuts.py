"""Help ▸ Keyboard shortcuts (F1): one page listing every key of the window and its panes.

The list is read from what the window really has, so it cannot go stale: the menu
actions with a shortcut (their text and key as Qt shows them), and each pane's key hint
line (the ``keyHint``/``keyHelp`` labels under the panes, written as ``<b>key</b> what``
pairs separated by "·"). A pane that adds keys to its hint line appears here too.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMainWindow,
    QMenu,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

HINT_NAMES = ("keyHint", "keyHelp")
"""Object names of the panes' key hint labels."""

_PAIR = re.compile(r"<b>(.+?)</b>\s*([^·<]+)")


def readme_path() -> Path | None:
    """The README next to the package (a source checkout or an sdist); None in a bundle."""
    candidate = Path(__file__).resolve().parents[3] / "README.md"
    return candidate if candidate.is_file() else None


def action_shortcuts(window: QMainWindow) -> list[tuple[str, str, str]]:
    """(menu, action, key) for every menu action with a shortcut, in menu order."""
    found: list[tuple[str, str, str]] = []
    for menu_action in window.menuBar().actions():
        menu = menu_action.menu()
        if not isinstance(menu, QMenu):
            continue
        menu_title = menu.title().replace("&", "")
        for action in menu.actions():
            if isinstance(action, QAction) and not action.shortcut().isEmpty():
                key = action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                found.append((menu_title, action.text().replace("&", ""), key))
    return found


def pane_keys(pane: QWidget) -> list[tuple[str, str]]:
    """(key, what it does) from a pane's key hint labels."""
    pairs: list[tuple[str, str]] = []
    for label in pane.findChildren(QLabel):
        if label.objectName() in HINT_NAMES:
            for key, what in _PAIR.findall(label.text()):
                pairs.append((html.unescape(key), html.unescape(what).strip(" ·")))
    return pairs


def shortcuts_html(window: QMainWindow) -> str:
    """The page: window shortcuts by menu, then each pane's keys, then the docs link."""
    parts = ["<h3>Window</h3><table cellspacing='0' cellpadding='3'>"]
    for menu, action, key in action_shortcuts(window):
        parts.append(
            f"<tr><td><b>{html.escape(key)}</b></td>"
            f"<td>{html.escape(action)}</td><td><i>{html.escape(menu)}</i></td></tr>"
        )
    parts.append("</table>")
    tabs = window.findChild(QTabWidget)
    if tabs is not None:
        for index in range(tabs.count()):
            pane = tabs.widget(index)
            keys = pane_keys(pane) if pane is not None else []
            if not keys:
                continue
            title = html.escape(tabs.tabText(index).replace("&", ""))
            parts.append(f"<h3>{title} pane</h3><table cellspacing='0' cellpadding='3'>")
            for key, what in keys:
                parts.append(
                    f"<tr><td><b>{html.escape(key)}</b></td><td>{html.escape(what)}</td></tr>"
                )
            parts.append("</table>")
    readme = readme_path()
    if readme is not None:
        url = QUrl.fromLocalFile(str(readme)).toString()
        parts.append(f"<p>More in the <a href='{url}'>README</a> (the user guide).</p>")
    else:
        parts.append("<p>More in the README that ships with the source.</p>")
    return "".join(parts)


class ShortcutsDialog(QDialog):
    """The one-page list; links open in the desktop's browser/viewer."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("shortcutsDialog")
        self.setWindowTitle("Keyboard shortcuts")
        self.view = QTextBrowser()
        self.view.setObjectName("shortcutsView")
        self.view.setOpenExternalLinks(True)
        self.view.setHtml(shortcuts_html(window))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        layout.addWidget(buttons)
        self.resize(520, 560)

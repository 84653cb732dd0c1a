"""Regenerate the README screenshots from the real window on the demo database.

Usage: ``QT_QPA_PLATFORM=offscreen python packaging/screenshots.py docs/screenshots``

A temporary database gets the demo data, a few episodes are relabelled the way a person
would (keys C/N on the Episodes table), and the main window is grabbed at 1400×900 with
each pane in front. Window state goes to a temporary ini file, never the user's settings.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtCore import QItemSelectionModel, QSettings, Qt
from PySide6.QtTest import QTest

from curator.gui.app import create_application
from curator.gui.errors import Dialogs
from curator.gui.main_window import PANES, MainWindow
from curator.gui.services import AppServices
from curator.store.db import Store
from curator.store.demo import create_demo

SIZE = (1400, 900)


def _label_some(window: MainWindow) -> None:
    """Relabel a few rows through the real key handling, as a user would."""
    pane = window.episodes_pane
    selection = pane.table.selectionModel()
    flags = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    plan = (((1, 4), Qt.Key.Key_N), ((0, 2, 6), Qt.Key.Key_C), ((3,), Qt.Key.Key_U))
    for rows, key in plan:
        selection.clearSelection()
        for row in rows:
            selection.select(pane.model.index(row, 0), flags)
        QTest.keyClick(pane.table, key)


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    app = create_application(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "demo.sqlite")
        create_demo(store)
        services = AppServices(store=store, db_path=Path("curator.sqlite"), dialogs=Dialogs())
        qsettings = QSettings(str(Path(tmp) / "window.ini"), QSettings.Format.IniFormat)
        window = MainWindow(services, qsettings)
        window.resize(*SIZE)
        window.show()
        QTest.qWait(100)
        _label_some(window)
        (chat_id,) = store.execute(
            "SELECT id FROM episode WHERE messages IS NOT NULL ORDER BY timestamp DESC LIMIT 1"
        )[0]
        row = window.episodes_pane.model.row_of(int(chat_id))
        if row is not None:
            window.episodes_pane.table.selectRow(row)
        for index, (_name, title, _cls) in enumerate(PANES):
            window.tabs.setCurrentIndex(index)
            QTest.qWait(150)
            path = out / f"{title.lower()}.png"
            window.grab().save(str(path))
            print(path)
        window.close()
        store.close()
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))

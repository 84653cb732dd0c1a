"""File ▸ Import knowledge… stages a Letta agent file and shows its run, as the CLI does."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from curator.gui.runtime.services import AppServices
from curator.gui.widgets.errors import Dialogs
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from memtools.test_readers import LETTA

pytestmark = pytest.mark.qt_log_ignore(r"^This plugin does not support propagateSizeHints\(\)$")


@pytest.fixture
def window(qtbot, store: Store, tmp_path: Path) -> Iterator[MainWindow]:
    for fmt in (QSettings.Format.IniFormat, QSettings.Format.NativeFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(tmp_path / "qsettings"))
    services = AppServices(store=store, db_path=store.path, worker=None, dialogs=Dialogs())
    main = MainWindow(services, QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(main)
    main.show()
    qtbot.waitExposed(main)
    QApplication.processEvents()
    yield main
    main.close()


def test_a_letta_agent_file_is_staged_from_the_window(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    path = tmp_path / "helper.af"
    path.write_text(json.dumps(LETTA, ensure_ascii=False), encoding="utf-8")
    with qtbot.waitSignal(window.knowledge_imported, timeout=60_000) as signal:
        assert window.import_knowledge(path)
    report = signal.args[0]
    assert report.shape == "letta" and report.staged == 3 and report.errors == []
    assert "helper.af (letta): 3 patterns read, 3 staged" in window.statusBar().currentMessage()
    review = window.pane("reviewPane")
    qtbot.waitUntil(lambda: len(review.model.rows()) == 3, timeout=30_000)  # type: ignore[attr-defined]
    assert [c.text for c in review.model.rows()][2].startswith("On-call")  # type: ignore[attr-defined]
    # the reviewer sees which block line or passage each candidate was, and its date
    review.list_view.setCurrentIndex(review.model.index(2, 0))  # type: ignore[attr-defined]
    detail = review.sources  # type: ignore[attr-defined]  # the provenance panel
    qtbot.waitUntil(lambda: "passage-9" in detail.toPlainText(), timeout=30_000)
    assert "From Letta archival passage passage-9, created 2025-02-10T09:00:00Z." in (
        detail.toPlainText()
    )
    review.list_view.setCurrentIndex(review.model.index(1, 0))  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: "line 3" in detail.toPlainText(), timeout=30_000)
    assert "From Letta core-memory block 'human' (block-1), line 3." in detail.toPlainText()
    review.list_view.setCurrentIndex(review.model.index(2, 0))  # type: ignore[attr-defined]
    shots = os.environ.get("CURATOR_SHOTS")
    if shots:  # a look at the result, on request
        window.grab().save(str(Path(shots) / "letta-import.png"))

"""Settings' model lists (this computer, the catalogue) and the demo-model notice."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.gui.settings.model_picker import DEMO_NOTICE
from curator.store.settings import load_settings, set_setting
from tests.llm.model_server import serve


@pytest.fixture(autouse=True)
def _no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CURATOR_MODEL", raising=False)


def _settings_pane(main_window, qtbot):
    main_window.show_settings()
    pane = main_window.pane("settingsPane")
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    return pane


def test_demo_model_notice_in_status_bar_and_settings(qtbot, main_window, store, tmp_path):
    qtbot.waitUntil(
        lambda: not main_window.status_loading, timeout=30_000
    )  # read in the background
    button = main_window.demo_button
    assert button.isVisible() and "too small for real curation" in button.text()
    assert DEMO_NOTICE[1:] in button.toolTip()
    main_window.tabs.setCurrentIndex(0)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    pane = main_window.pane("settingsPane")
    assert main_window.tabs.currentWidget() is pane
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)  # read in the background
    assert pane.demo_notice.isVisible()
    assert "pick or download a model" in pane.demo_notice.text()

    own = tmp_path / "own.gguf"
    set_setting(store, "model_path", str(own))
    main_window.update_status()
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    pane.refresh()
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)
    assert not button.isVisible()
    assert not pane.demo_notice.isVisible()


def test_local_model_is_picked_without_a_copy(qtbot, main_window, store, tmp_path, demo_model):
    pane = _settings_pane(main_window, qtbot)
    gguf = tmp_path / "lms" / "pub" / "repo" / "own.gguf"
    gguf.parent.mkdir(parents=True)
    shutil.copyfile(demo_model, gguf)
    box = pane.local_models
    box.roots = {"lmstudio": [tmp_path / "lms"]}
    qtbot.mouseClick(box.scan_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not box.scanning, timeout=20_000)
    assert box.table.rowCount() == 1
    assert box.table.item(0, 1).text() == "pub/repo/own.gguf"
    assert box.table.item(0, 2).text() == "Q4_1"
    box.table.selectRow(0)
    qtbot.mouseClick(box.use_button, Qt.MouseButton.LeftButton)
    assert pane.model_edit.text() == str(gguf)
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not pane.validating and not pane.saving, timeout=60_000)
    assert load_settings(store).model_path == str(gguf)
    assert sorted(p.name for p in tmp_path.rglob("*.gguf")) == ["own.gguf"]  # no copy made
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    assert not main_window.demo_button.isVisible()


def _catalogue(tmp_path: Path, url: str, data: bytes) -> Path:
    path = tmp_path / "catalogue.json"
    entry = {
        "name": "demo",
        "title": "Demo",
        "file": "demo.gguf",
        "url": url,
        "sha256": hashlib.sha256(data).hexdigest(),
        "ram_gb": 0.5,
        "context_length": 8192,
    }
    path.write_text(json.dumps({"models": [entry]}))
    return path


def test_catalogue_download_fills_the_model_field(qtbot, main_window, tmp_path, demo_model):
    pane = _settings_pane(main_window, qtbot)
    data = demo_model.read_bytes()
    box = pane.catalogue
    with serve(data) as (url, _):
        box.catalogue_path = _catalogue(tmp_path, url + "/model.gguf", data)
        box.directory = tmp_path / "models"
        box.reload()
        assert box.table.item(0, 1).text() == "not downloaded"
        box.table.selectRow(0)
        qtbot.mouseClick(box.download_button, Qt.MouseButton.LeftButton)
        assert box.downloading and box.cancel_button.isEnabled()
        qtbot.waitUntil(lambda: not box.downloading, timeout=60_000)
    target = tmp_path / "models" / "demo.gguf"
    assert box.last_result is not None and box.last_result.verified
    assert "checksum verified" in box.status.text()
    assert pane.model_edit.text() == str(target)
    assert target.read_bytes() == data
    assert box.table.item(0, 1).text() == "downloaded"


def test_catalogue_download_can_be_cancelled(qtbot, main_window, services, tmp_path, demo_model):
    pane = _settings_pane(main_window, qtbot)
    data = demo_model.read_bytes()
    box = pane.catalogue
    with serve(data) as (url, state):
        state.throttle_s = 0.01  # slow enough that the download is still running
        box.catalogue_path = _catalogue(tmp_path, url + "/model.gguf", data)
        box.directory = tmp_path / "models"
        box.reload()
        box.table.selectRow(0)
        box.download_selected()
        qtbot.waitUntil(lambda: box.progress.value() > 0, timeout=20_000)
        qtbot.mouseClick(box.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not box.downloading, timeout=20_000)
    assert "cancelled" in box.status.text()
    assert not services.dialogs.shown  # a cancel is not an error
    assert not (tmp_path / "models" / "demo.gguf").exists()
    assert box.table.item(0, 1).text().startswith("partial")
    assert pane.model_edit.text() == ""


def test_checksum_mismatch_is_a_dialog_and_leaves_nothing(
    qtbot, main_window, services, tmp_path, demo_model
):
    pane = _settings_pane(main_window, qtbot)
    data = demo_model.read_bytes()
    box = pane.catalogue
    with serve(data) as (url, _):
        catalogue = _catalogue(tmp_path, url + "/model.gguf", data)
        document = json.loads(catalogue.read_text())
        document["models"][0]["sha256"] = "f" * 64
        catalogue.write_text(json.dumps(document))
        box.catalogue_path = catalogue
        box.directory = tmp_path / "models"
        box.reload()
        box.table.selectRow(0)
        box.download_selected()
        qtbot.waitUntil(lambda: not box.downloading, timeout=60_000)
    assert "checksum mismatch" in services.dialogs.shown[-1].text()
    assert list((tmp_path / "models").iterdir()) == []
    assert pane.model_edit.text() == ""


def test_every_catalogue_models_state_shows_whole_beside_its_name(qtbot, main_window) -> None:
    """The state came last, behind long licence names, wrapped into two lines and cut at
    the row's height ("not" above a clipped "downloaded")."""
    pane = _settings_pane(main_window, qtbot)
    box = pane.catalogue
    box.reload()
    table = box.table
    assert table.rowCount() > 0 and not table.wordWrap()
    assert table.horizontalHeaderItem(1).text() == "State"
    metrics = table.fontMetrics()
    for row in range(table.rowCount()):
        state = table.item(row, 1).text()
        assert state and metrics.horizontalAdvance(state) < table.columnWidth(1)
    # the whole State column lies inside the visible part of the table
    assert table.columnViewportPosition(1) + table.columnWidth(1) <= table.viewport().width()

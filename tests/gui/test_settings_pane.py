"""The Settings pane: saving, threshold validation, and refusing unusable model files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from curator.store.settings import load_settings, set_setting


def _pane(main_window):
    main_window.tabs.setCurrentIndex(5)
    return main_window.pane("settingsPane")


def test_apply_saves_all_values(qtbot, main_window, store) -> None:
    pane = _pane(main_window)
    pane.top_k.setValue(25)
    pane.decay_rate.setValue(0.9)
    pane.n_threads.setValue(2)
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert load_settings(store).top_k == 25
    assert load_settings(store).decay_rate == pytest.approx(0.9)
    assert load_settings(store).n_threads == 2
    assert load_settings(store).model_path is None


def test_skip_threshold_must_exceed_update_threshold(qtbot, main_window, services, store):
    pane = _pane(main_window)
    pane.skip_threshold.setValue(0.6)
    pane.update_threshold.setValue(0.8)
    pane.top_k.setValue(7)
    pane.apply()
    assert "skip threshold" in services.dialogs.shown[-1].text()
    assert load_settings(store).top_k == 50  # nothing saved


@pytest.mark.parametrize(
    "content",
    [os.urandom(4096), b"this is a text file, not a model\n"],
    ids=["random-bytes", "text-file"],
)
def test_bad_model_file_is_refused_and_previous_kept(
    qtbot, main_window, services, store, tmp_path: Path, content: bytes
) -> None:
    pane = _pane(main_window)
    previous = str(tmp_path / "previous.gguf")
    set_setting(store, "model_path", previous)
    pane.refresh()
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(content)
    pane.model_edit.setText(str(bad))
    pane.show_model_info()
    assert pane.model_info.text().startswith("Not usable")
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert pane.busy.isVisible() or services.dialogs.shown
    qtbot.waitUntil(lambda: not pane.validating, timeout=30_000)
    dialog = services.dialogs.shown[-1]
    assert "broken.gguf cannot be used" in dialog.text()
    assert "previous model is kept" in dialog.text()
    assert load_settings(store).model_path == previous
    assert pane.model_edit.text() == previous
    assert pane.apply_button.isEnabled()


@pytest.mark.llm
def test_demo_model_file_validates_off_the_gui_thread(qtbot, main_window, store) -> None:
    from curator.llm.model_file import demo_model_path

    demo = demo_model_path()
    assert demo is not None
    pane = _pane(main_window)
    pane.model_edit.setText(str(demo))
    pane.show_model_info()
    assert "Quantisation" in pane.model_info.text()
    pane.apply()
    assert pane.validating and pane.busy.isVisible()  # returned at once, still checking
    qtbot.waitUntil(lambda: not pane.validating, timeout=120_000)
    assert load_settings(store).model_path == str(demo)


def test_window_and_cli_refuse_the_same_values_with_the_same_message(
    qtbot, main_window, services, store, tmp_path: Path, capsys
) -> None:
    from curator.cli import main

    pane = _pane(main_window)
    pane.skip_threshold.setValue(0.6)
    pane.update_threshold.setValue(0.8)
    pane.apply()
    shown = services.dialogs.shown[-1].text()
    code = main(
        [
            "--db",
            str(tmp_path / "cli.sqlite"),
            "settings",
            "skip_threshold=0.6",
            "update_threshold=0.8",
        ]
    )
    cli_line = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    message = cli_line.removeprefix("curator: error: ")
    assert message != cli_line and message in shown
    assert load_settings(store).skip_threshold == pytest.approx(0.95)  # nothing saved


def test_window_spin_boxes_enforce_the_same_bounds_as_the_cli(main_window) -> None:
    from curator.store.settings import RULES

    pane = _pane(main_window)
    boxes = {
        "n_gpu_layers": pane.gpu_layers,
        "n_ctx": pane.n_ctx,
        "skip_threshold": pane.skip_threshold,
        "update_threshold": pane.update_threshold,
        "decay_rate": pane.decay_rate,
        "top_k": pane.top_k,
        "min_chars": pane.min_chars,
        "min_words": pane.min_words,
        "backup_interval_minutes": pane.backup_interval,
    }
    for key, box in boxes.items():
        rule = RULES[key]
        assert (box.minimum(), box.maximum()) == (rule.low, rule.high), key
    # threads: 0 is "automatic" (None); otherwise the rule's range
    assert (pane.n_threads.minimum(), pane.n_threads.maximum()) == (0, RULES["n_threads"].high)


@pytest.mark.llm
def test_retune_measures_off_the_gui_thread_and_shows_the_counts(
    qtbot, main_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from curator.llm.model_file import demo_model_path
    from curator.llm.threads import cached_tuning

    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path))
    demo = demo_model_path()
    assert demo is not None
    pane = _pane(main_window)
    pane.refresh()
    assert "measured when the model is next loaded" in pane.threads_info.text()
    qtbot.mouseClick(pane.retune_button, Qt.MouseButton.LeftButton)
    assert not pane.retune_button.isEnabled()  # returned at once, still measuring
    assert "Measuring" in pane.threads_info.text()
    qtbot.waitUntil(pane.retune_button.isEnabled, timeout=120_000)
    tuning = cached_tuning(demo)
    assert tuning is not None
    assert f"{tuning.n_threads} for generation" in pane.threads_info.text()

"""The Settings pane: saving, threshold validation, and refusing unusable model files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QComboBox,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QWidget,
)

from curator.store.settings import DEFAULTS, load_settings, set_setting


def _pane(main_window, qtbot):
    pane = main_window.pane("settingsPane")
    main_window.tabs.setCurrentWidget(pane)
    _read(qtbot, pane)
    return pane


def _read(qtbot, pane) -> None:
    """The saved values are read in the background: the form is filled once they came."""
    qtbot.waitUntil(lambda: not pane.loading, timeout=30_000)


def _saved(qtbot, services) -> None:
    """Saving runs in the background (StoreOps): wait until its result was delivered."""
    qtbot.waitUntil(lambda: services.ops.pending == 0, timeout=30_000)


def test_apply_saves_all_values(qtbot, main_window, services, store) -> None:
    pane = _pane(main_window, qtbot)
    pane.top_k.setValue(25)
    pane.decay_rate.setValue(0.9)
    pane.n_threads.setValue(2)
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    _saved(qtbot, services)
    assert threading.get_ident() not in services.ops.job_thread_ids  # saved off the GUI
    assert load_settings(store).top_k == 25
    assert load_settings(store).decay_rate == pytest.approx(0.9)
    assert load_settings(store).n_threads == 2
    assert load_settings(store).model_path is None


def test_skip_threshold_must_exceed_update_threshold(qtbot, main_window, services, store):
    pane = _pane(main_window, qtbot)
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
    pane = _pane(main_window, qtbot)
    previous = str(tmp_path / "previous.gguf")
    set_setting(store, "model_path", previous)
    pane.refresh()
    _read(qtbot, pane)
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(content)
    pane.model_edit.setText(str(bad))
    pane.show_model_info()  # the header is read off the GUI thread
    qtbot.waitUntil(lambda: pane.model_info.text().startswith("Not usable"))
    qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    assert pane.busy.isVisible() or services.dialogs.shown
    qtbot.waitUntil(lambda: not pane.validating, timeout=30_000)
    dialog = services.dialogs.shown[-1]
    assert "broken.gguf cannot be used" in dialog.text()
    assert "previous model is kept" in dialog.text()
    assert "b'" not in dialog.text() and "GGUF" in dialog.text()  # plain words
    assert load_settings(store).model_path == previous
    assert pane.model_edit.text() == str(bad)  # kept in the field, to be corrected
    assert "b'" not in pane.model_info.text() and pane.model_info.text().startswith("Not usable")
    assert pane.apply_button.isEnabled()


def test_the_model_header_is_read_off_the_gui_thread(
    qtbot, main_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tokenizer's header is hundreds of thousands of strings: the pane describes the
    model from a read on another thread (the real reader, its threads noted)."""
    from curator.gui.settings import settings_pane

    threads: list[int] = []
    real = settings_pane.read_gguf_info

    def noted(path: Path) -> object:
        threads.append(threading.get_ident())
        return real(path)

    monkeypatch.setattr(settings_pane, "read_gguf_info", noted)
    pane = _pane(main_window, qtbot)
    pane.model_edit.clear()  # the bundled demo model
    pane.show_model_info()
    qtbot.waitUntil(lambda: pane.model_info.text().startswith("The bundled demo model."))
    assert threads and threading.get_ident() not in threads


@pytest.mark.llm
def test_demo_model_file_validates_off_the_gui_thread(qtbot, main_window, store) -> None:
    from curator.llm.model_file import demo_model_path

    demo = demo_model_path()
    assert demo is not None
    pane = _pane(main_window, qtbot)
    pane.model_edit.setText(str(demo))
    pane.show_model_info()
    qtbot.waitUntil(lambda: "Quantisation" in pane.model_info.text())
    pane.apply()
    assert pane.validating and pane.busy.isVisible()  # returned at once, still checking
    qtbot.waitUntil(lambda: not pane.validating, timeout=120_000)
    qtbot.waitUntil(lambda: not pane.saving, timeout=30_000)
    assert load_settings(store).model_path == str(demo)


def test_window_and_cli_refuse_the_same_values_with_the_same_message(
    qtbot, main_window, services, store, tmp_path: Path, capsys
) -> None:
    from curator.cli import main

    pane = _pane(main_window, qtbot)
    pane.skip_threshold.setValue(0.6)
    pane.update_threshold.setValue(0.8)
    pane.apply()
    shown = services.dialogs.shown[-1].text()
    code = main(
        [
            "--create",
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


def test_window_spin_boxes_enforce_the_same_bounds_as_the_cli(qtbot, main_window) -> None:
    from curator.store.settings import RULES

    pane = _pane(main_window, qtbot)
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
    pane = _pane(main_window, qtbot)
    pane.refresh()
    _read(qtbot, pane)
    assert "measured when the model is next loaded" in pane.threads_info.text()
    qtbot.mouseClick(pane.retune_button, Qt.MouseButton.LeftButton)
    assert not pane.retune_button.isEnabled()  # returned at once, still measuring
    assert "Measuring" in pane.threads_info.text()
    qtbot.waitUntil(pane.retune_button.isEnabled, timeout=120_000)
    tuning = cached_tuning(demo)
    assert tuning is not None
    assert f"{tuning.n_threads} for generation" in pane.threads_info.text()


def test_the_error_for_a_text_file_reads_as_words(qtbot, main_window, services, tmp_path):
    pane = _pane(main_window, qtbot)
    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"not a model, just notes\n" * 20)
    pane.model_edit.setText(str(bad))
    pane.apply()
    qtbot.waitUntil(lambda: not pane.validating, timeout=30_000)
    text = services.dialogs.shown[-1].text()
    assert 'this one begins with "not "' in text and "b'" not in text
    assert pane.model_edit.text() == str(bad)


def test_apply_stays_put_when_the_model_block_changes_height(qtbot, main_window) -> None:
    pane = _pane(main_window, qtbot)
    before = pane.apply_button.mapTo(pane, QPoint(0, 0))
    pane.model_info.setText("\n".join(f"line {i}" for i in range(12)))
    pane.demo_notice.setVisible(not pane.demo_notice.isVisible())
    pane.busy.show()
    pane.busy_label.show()
    qtbot.wait(50)  # layouts settle on the event loop
    assert pane.apply_button.mapTo(pane, QPoint(0, 0)) == before
    assert pane.apply_button.visibleRegion().boundingRect().height() > 0  # on screen


def _fields(pane: QWidget) -> list[QWidget]:
    """Every input a user can change on the pane (not the parts inside a composite)."""
    found: list[QWidget] = []
    for kind in (QLineEdit, QAbstractSpinBox, QComboBox):
        for widget in pane.findChildren(kind):
            parent = widget.parentWidget()
            if isinstance(parent, (QAbstractSpinBox, QComboBox)):
                continue  # the line edit inside a spin box or combo box
            found.append(widget)
    found += [
        b for b in pane.findChildren(QAbstractButton) if b.isCheckable()
    ]  # radio buttons and check boxes
    return found


def test_every_settings_field_has_a_tooltip_with_range_and_default(qtbot, main_window) -> None:
    pane = _pane(main_window, qtbot)
    fields = _fields(pane)
    assert len(fields) >= 15
    missing = [f.objectName() or type(f).__name__ for f in fields if not f.toolTip().strip()]
    assert not missing, f"fields without a tooltip: {missing}"
    assert "Default: 50" in pane.top_k.toolTip()
    assert "Range: 1 to 1000" in pane.top_k.toolTip()
    assert "Default: all layers" in pane.gpu_layers.toolTip()
    assert "Default: 0.95" in pane.decay_rate.toolTip()
    assert "Default: automatic" in pane.n_threads.toolTip()
    for button in (pane.apply_button, pane.revert_button, pane.defaults_button):
        assert button.toolTip()


def test_gpu_layers_all_is_explained_where_there_is_no_gpu(qtbot, main_window) -> None:
    import llama_cpp

    pane = _pane(main_window, qtbot)
    cpu_only = not llama_cpp.llama_supports_gpu_offload()
    assert pane.gpu_note.isVisibleTo(pane) == cpu_only
    if cpu_only:
        assert "CPU" in pane.gpu_note.text() and "no GPU support" in pane.gpu_note.text()
    assert "CPU only" in main_window.offload_label.toolTip()


def _question(services):
    boxes = [d for d in services.dialogs.shown if d.objectName() == "confirmBox"]
    assert boxes, "no question was asked"
    return boxes[-1]


def test_restore_defaults_asks_first(qtbot, main_window, services, store) -> None:
    set_setting(store, "top_k", 7)
    set_setting(store, "decay_rate", 0.8)
    pane = _pane(main_window, qtbot)
    pane.refresh()
    _read(qtbot, pane)

    qtbot.mouseClick(pane.defaults_button, Qt.MouseButton.LeftButton)
    box = _question(services)
    assert "default" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert load_settings(store).top_k == 7 and pane.top_k.value() == 7  # declined: nothing

    qtbot.mouseClick(pane.defaults_button, Qt.MouseButton.LeftButton)
    _question(services).findChild(QPushButton, "confirmButton").click()
    _saved(qtbot, services)
    assert load_settings(store) == DEFAULTS
    assert pane.top_k.value() == DEFAULTS.top_k
    assert pane.decay_rate.value() == pytest.approx(DEFAULTS.decay_rate)


def test_a_change_made_while_a_save_waits_is_kept_in_the_form(
    qtbot, main_window, services, store
) -> None:
    """A save held up by another writer (the CLI) must not reset what was changed meanwhile."""
    import sqlite3

    pane = _pane(main_window, qtbot)
    pane.top_k.setValue(25)
    outside = sqlite3.connect(str(store.path))  # another process holding the write lock
    outside.execute("BEGIN IMMEDIATE")
    try:
        qtbot.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
        assert services.ops.busy
        pane.decay_rate.setValue(0.9)  # the form stays editable while it saves
    finally:
        outside.rollback()
        outside.close()
    _saved(qtbot, services)
    assert load_settings(store).top_k == 25
    assert load_settings(store).decay_rate == pytest.approx(DEFAULTS.decay_rate)
    assert pane.decay_rate.value() == pytest.approx(0.9)  # before: reset to the saved value
    assert pane.top_k.value() == 25


def _held_reads(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Fault injection: the pane's header reads wait for the returned event (a slow disk),
    so that every read of a sequence of edits is still pending when the last is made."""
    from curator.gui.settings import settings_pane

    gate = threading.Event()
    real = settings_pane.read_gguf_info

    def held(path: Path) -> object:
        gate.wait(30)
        return real(path)

    monkeypatch.setattr(settings_pane, "read_gguf_info", held)
    return gate


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=st.lists(st.sampled_from(["model", "broken", "none", "unknown home"]), min_size=1))
def test_the_newest_model_path_is_described_whatever_was_pending(
    qtbot, main_window, services, demo_model: Path, tmp_path: Path, edits: list[str]
) -> None:
    """Edits made while reads of earlier paths are pending (held: fault injection, and the
    demo package reported missing: fault injection) end with the words for the last one,
    also when those are shown at once, without a read."""
    from curator.gui.settings import settings_pane

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    typed = {
        "model": str(demo_model),
        "broken": str(broken),
        "none": "",
        "unknown home": "~no-such-user-here/model.gguf",
    }
    pane = _pane(main_window, qtbot)
    with pytest.MonkeyPatch.context() as patch:
        gate = _held_reads(patch)
        patch.setattr(settings_pane, "demo_model_path", lambda: None)
        for edit in edits:
            pane.model_edit.setText(typed[edit])
            pane.show_model_info()
        gate.set()
        assert services.ops.wait()
        qtbot.waitUntil(lambda: services.ops.pending == 0)
    text = pane.model_info.text()
    expected = {
        "model": "Name: ",
        "broken": f"Not usable: {broken} is not a GGUF model file",
        "none": "The demo model is not installed",
        "unknown home": "Not usable: the model path '~no-such-user-here/model.gguf' starts",
    }[edits[-1]]
    assert text.startswith(expected), text
    assert not services.dialogs.shown


def test_a_model_path_in_the_home_of_an_unknown_user_is_refused_in_words(
    qtbot, main_window, services
) -> None:
    """``~name/...`` of a user the system does not know has no home: the pane says so
    (Python's expanduser raised RuntimeError in the slot, an internal error)."""
    pane = _pane(main_window, qtbot)
    pane.model_edit.setText("~no-such-user-here/model.gguf")
    pane.show_model_info()
    assert services.ops.wait()
    qtbot.wait(50)
    assert pane.model_info.text().startswith(
        "Not usable: the model path '~no-such-user-here/model.gguf' starts with"
    )
    assert not pane.demo_notice.isVisible()
    assert not services.dialogs.shown


def test_a_refused_model_stays_refused_when_an_older_header_read_ends_later(
    qtbot, main_window, services, demo_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Apply's check refuses the file (llama.cpp's refusal injected: fault injection) while
    the header read of the same edit is still pending (held: fault injection): the reason
    stays shown, not the header's facts, which would read as if the file were usable."""
    from curator.gui.settings import settings_parts
    from curator.llm.model_file import ModelFileError

    def refused(path: Path) -> object:
        raise ModelFileError(f"{path}: llama.cpp cannot load it (injected)")

    monkeypatch.setattr(settings_parts, "validate_model_file", refused)
    pane = _pane(main_window, qtbot)
    assert services.ops.wait()
    qtbot.waitUntil(lambda: services.ops.pending == 0)
    gate = _held_reads(monkeypatch)
    pane.model_edit.setText(str(demo_model))
    pane.show_model_info()
    pane.apply()
    qtbot.waitUntil(lambda: not pane.validating, timeout=30_000)
    assert "llama.cpp cannot load it" in pane.model_info.text()
    gate.set()
    assert services.ops.wait()
    qtbot.waitUntil(lambda: services.ops.pending == 0)
    assert pane.model_info.text().startswith("Not usable: "), pane.model_info.text()
    assert "llama.cpp cannot load it" in pane.model_info.text()

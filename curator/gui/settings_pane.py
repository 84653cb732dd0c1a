"""The Settings pane: the model file, llama.cpp parameters, and the pipeline thresholds.

A model file is checked before it is saved: its GGUF header is read at once (name, size,
quantisation, context length), and on Apply the file is loaded for real in a subprocess by
:func:`curator.llm.model_file.validate_model_file`. That takes seconds, so it runs on a
thread pool and the pane shows a busy indicator; the GUI thread never waits for it. A
file that fails keeps the previous setting and explains why in one sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.model_picker import DEMO_NOTICE, CatalogueBox, LocalModelsBox
from curator.gui.pane import Pane
from curator.gui.services import AppServices
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import (
    ModelInfo,
    demo_model_path,
    read_gguf_info,
    validate_model_file,
)
from curator.llm.threads import cached_tuning, forget_tuning
from curator.store.settings import (
    RULES,
    Settings,
    SettingsError,
    changed_settings,
    update_settings,
)

INFO_FIELDS = (
    ("name", "Name"),
    ("architecture", "Architecture"),
    ("size_bytes", "Size"),
    ("quantization", "Quantisation"),
    ("context_length", "Context length"),
)


def _human_size(value: Any) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


def describe_model_info(info: ModelInfo) -> str:
    """One readable line per GGUF fact the user chooses a model by."""
    lines: list[str] = []
    for key, title in INFO_FIELDS:
        value = getattr(info, key, None)
        if value is None or value == "":
            continue
        text = _human_size(value) if title == "Size" else str(value)
        lines.append(f"{title}: {text}")
    return "\n".join(lines)


class ValidationSignals(QObject):
    """Lives on the GUI thread; the pool thread emits, the pane receives (queued)."""

    succeeded = Signal(str, object)
    failed = Signal(str, str)
    tuned = Signal(str, object)
    tuning_failed = Signal(str, str)


class ModelValidation(QRunnable):
    """Loads the model file in a subprocess (via the pipeline's validator), off the GUI."""

    def __init__(self, path: str, signals: ValidationSignals) -> None:
        super().__init__()
        self.path = path
        self.signals = signals

    def run(self) -> None:
        try:
            result = validate_model_file(Path(self.path))
        except CuratorError as exc:
            self.signals.failed.emit(self.path, str(exc))
        except Exception as exc:  # reported to the user, never lost
            self.signals.failed.emit(self.path, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.succeeded.emit(self.path, result)


class ThreadTuning(QRunnable):
    """Re-tune: forget the saved thread counts and load the model, which measures them."""

    def __init__(self, settings: BackendSettings, signals: ValidationSignals) -> None:
        super().__init__()
        self.settings = settings
        self.signals = signals

    def run(self) -> None:
        path = str(self.settings.model_path)
        try:
            forget_tuning(self.settings.model_path)
            backend = load_backend(self.settings, validate=False)
            try:
                tuning = backend.tuning
            finally:
                backend.close()
        except Exception as exc:  # reported to the user, never lost
            self.signals.tuning_failed.emit(path, f"{type(exc).__name__}: {exc}")
        else:
            self.signals.tuned.emit(path, tuning)


def _spin(key: str, step: int = 1, special: str | None = None) -> QSpinBox:
    """A spin box with the bounds of ``key``'s rule (0 is "automatic" when optional)."""
    rule = RULES[key]
    assert rule.low is not None and rule.high is not None
    box = QSpinBox()
    box.setRange(0 if rule.optional else int(rule.low), int(rule.high))
    box.setSingleStep(step)
    if special:
        box.setSpecialValueText(special)
    box.setMinimumWidth(140)
    box.setMaximumWidth(200)
    return box


def _dspin(key: str, step: float, decimals: int) -> QDoubleSpinBox:
    rule = RULES[key]
    assert rule.low is not None and rule.high is not None
    box = QDoubleSpinBox()
    box.setRange(rule.low, rule.high)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    box.setMinimumWidth(140)
    box.setMaximumWidth(200)
    return box


class SettingsPane(Pane):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("settingsPane")
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = ValidationSignals(self)
        self._signals.succeeded.connect(self._validation_succeeded)
        self._signals.failed.connect(self._validation_failed)
        self._signals.tuned.connect(self._tuned)
        self._signals.tuning_failed.connect(self._tuning_failed)
        self._pending: dict[str, Any] | None = None

        # model
        self.model_edit = QLineEdit()
        self.model_edit.setObjectName("modelPathEdit")
        self.model_edit.setPlaceholderText("Empty: the bundled demo model")
        self.model_edit.editingFinished.connect(self.show_model_info)
        browse = QPushButton("Browse…")
        browse.setObjectName("browseModelButton")
        browse.clicked.connect(self.browse_model)
        demo = QPushButton("Use demo model")
        demo.clicked.connect(self._use_demo_model)
        path_row = QHBoxLayout()
        path_row.addWidget(self.model_edit, 1)
        path_row.addWidget(browse)
        path_row.addWidget(demo)
        self.model_info = QLabel()
        self.model_info.setObjectName("modelInfo")
        self.model_info.setWordWrap(True)
        self.gpu_layers = _spin("n_gpu_layers", special="all layers")
        self.gpu_layers.setObjectName("gpuLayers")
        self.n_ctx = _spin("n_ctx", 512)
        self.n_ctx.setObjectName("contextSize")
        self.n_threads = _spin("n_threads", special="automatic")
        self.n_threads.setObjectName("threads")
        model_box = QGroupBox("Model")
        model_form = QFormLayout(model_box)
        model_form.addRow("Model file", path_row)
        model_form.addRow("", self.model_info)
        self.demo_notice = QLabel(f"<b>{DEMO_NOTICE[0].upper()}{DEMO_NOTICE[1:]}</b> below.")
        self.demo_notice.setObjectName("demoNotice")
        self.demo_notice.setWordWrap(True)
        model_form.addRow("", self.demo_notice)
        model_form.addRow("GPU layers", self.gpu_layers)
        model_form.addRow("Context size", self.n_ctx)
        model_form.addRow("Threads", self.n_threads)
        self.threads_info = QLabel()
        self.threads_info.setObjectName("threadTuning")
        self.threads_info.setWordWrap(True)
        self.retune_button = QPushButton("Re-tune")
        self.retune_button.setObjectName("retuneButton")
        self.retune_button.setToolTip(
            "Time a short prompt and generation with each thread count and keep the fastest"
        )
        self.retune_button.clicked.connect(self.retune)
        tune_row = QHBoxLayout()
        tune_row.addWidget(self.threads_info, 1)
        tune_row.addWidget(self.retune_button)
        model_form.addRow("", tune_row)

        # pipeline
        self.skip_threshold = _dspin("skip_threshold", 0.01, 2)
        self.skip_threshold.setObjectName("skipThreshold")
        self.update_threshold = _dspin("update_threshold", 0.01, 2)
        self.update_threshold.setObjectName("updateThreshold")
        self.decay_rate = _dspin("decay_rate", 0.005, 3)
        self.decay_rate.setObjectName("decayRate")
        self.top_k = _spin("top_k")
        self.top_k.setObjectName("topK")
        self.min_chars = _spin("min_chars")
        self.min_chars.setObjectName("minChars")
        self.min_words = _spin("min_words")
        self.min_words.setObjectName("minWords")
        pipeline_box = QGroupBox("Distillation")
        pipeline_form = QFormLayout(pipeline_box)
        pipeline_form.addRow("Skip when similarity ≥", self.skip_threshold)
        pipeline_form.addRow("Update when similarity ≥", self.update_threshold)
        pipeline_form.addRow("Daily decay factor", self.decay_rate)
        pipeline_form.addRow("Patterns in the prompt (top K)", self.top_k)
        pipeline_form.addRow("Quality gate: minimum characters", self.min_chars)
        pipeline_form.addRow("Quality gate: minimum words", self.min_words)
        self.untrusted_sources = QLineEdit()
        self.untrusted_sources.setObjectName("untrustedSources")
        self.untrusted_sources.setPlaceholderText("none: every source is trusted")
        self.untrusted_sources.setToolTip(
            "Episode sources written by strangers (comma-separated). A candidate whose every "
            "source episode comes from one of them is flagged “untrusted sources only”."
        )
        pipeline_form.addRow("Untrusted sources", self.untrusted_sources)
        self.backup_interval = _spin("backup_interval_minutes", 5, special="off")
        self.backup_interval.setObjectName("backupInterval")
        backup_box = QGroupBox("Backups")
        QFormLayout(backup_box).addRow("Every N minutes of use, and on close", self.backup_interval)

        # buttons
        self.busy = QProgressBar()
        self.busy.setObjectName("validationBusy")
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(160)
        self.busy.setTextVisible(False)
        self.busy.hide()
        self.busy_label = QLabel("Checking the model file…")
        self.busy_label.hide()
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("applySettingsButton")
        self.apply_button.clicked.connect(self.apply)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setObjectName("revertSettingsButton")
        self.revert_button.clicked.connect(self.refresh)
        buttons = QHBoxLayout()
        buttons.addWidget(self.busy)
        buttons.addWidget(self.busy_label)
        buttons.addStretch(1)
        buttons.addWidget(self.revert_button)
        buttons.addWidget(self.apply_button)

        # models already on this computer, and the catalogue (they fill the model field)
        self.local_models = LocalModelsBox(self)
        self.local_models.model_chosen.connect(self.choose_model)
        self.catalogue = CatalogueBox(self)
        self.catalogue.model_chosen.connect(self.choose_model)
        self.catalogue.message.connect(self.status_message)
        self.catalogue.download_failed.connect(
            lambda reason: self.services.dialogs.warning(self, "Download failed", reason)
        )
        pickers = QHBoxLayout()
        pickers.addWidget(self.local_models, 1)
        pickers.addWidget(self.catalogue, 1)

        layout = QVBoxLayout(self)
        layout.addWidget(model_box)
        layout.addLayout(pickers)
        layout.addWidget(pipeline_box)
        layout.addWidget(backup_box)
        layout.addLayout(buttons)
        layout.addStretch(1)
        self.refresh()

    # -- model file -----------------------------------------------------------------------

    def browse_model(self) -> None:
        path = self.services.dialogs.open_file_name(
            self, "Choose a model file", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self.model_edit.setText(path)
            self.show_model_info()

    def choose_model(self, path: str) -> None:
        """A model picked from a list: shown at once, checked and saved on Apply."""
        self.model_edit.setText(path)
        self.show_model_info()
        self.status_message.emit(f"{Path(path).name} chosen: press Apply to check and use it.")

    def _use_demo_model(self) -> None:
        self.model_edit.clear()
        self.show_model_info()

    def show_model_info(self) -> None:
        """Read the GGUF header at once (fast) so the user sees what they picked."""
        path = self.model_edit.text().strip()
        demo_file = demo_model_path()
        self.demo_notice.setVisible(
            not path or (demo_file is not None and Path(path).expanduser() == demo_file)
        )
        if not path:
            demo = demo_file
            if demo is None:
                self.model_info.setText("The demo model is not installed: choose a GGUF file.")
                return
            try:
                details = describe_model_info(read_gguf_info(demo))
            except CuratorError as exc:
                details = f"Not usable: {exc}"
            self.model_info.setText(f"The bundled demo model.\n{details}")
            return
        try:
            info = read_gguf_info(Path(path))
        except CuratorError as exc:
            self.model_info.setText(f"Not usable: {exc}")
            return
        self.model_info.setText(describe_model_info(info) or "GGUF file")

    @property
    def validating(self) -> bool:
        return self._pending is not None

    def _set_busy(self, busy: bool) -> None:
        self.busy.setVisible(busy)
        self.busy_label.setVisible(busy)
        self.apply_button.setEnabled(not busy)
        self.revert_button.setEnabled(not busy)

    # -- apply ----------------------------------------------------------------------------

    def collect(self) -> dict[str, Any]:
        path = self.model_edit.text().strip()
        return {
            "model_path": path or None,
            "n_gpu_layers": self.gpu_layers.value(),
            "n_ctx": self.n_ctx.value(),
            "n_threads": self.n_threads.value() or None,
            "skip_threshold": round(self.skip_threshold.value(), 4),
            "update_threshold": round(self.update_threshold.value(), 4),
            "decay_rate": round(self.decay_rate.value(), 4),
            "top_k": self.top_k.value(),
            "min_chars": self.min_chars.value(),
            "min_words": self.min_words.value(),
            "backup_interval_minutes": self.backup_interval.value(),
            "untrusted_sources": sorted(
                {s.strip().lower() for s in self.untrusted_sources.text().split(",") if s.strip()}
            ),
        }

    def apply(self) -> None:
        values = self.collect()
        try:
            # the same rules and messages as the CLI; a broken saved value is replaced
            changed_settings(self.services.store, values)
        except SettingsError as exc:
            self.services.dialogs.warning(self, "Settings", f"Not saved: {exc}")
            return
        try:
            current_model = self.services.settings().model_path
        except SettingsError:
            current_model = None  # a broken saved value being replaced: check the file
        if values["model_path"] and values["model_path"] != current_model:
            self._pending = values
            self._set_busy(True)
            self.status_message.emit("Checking the model file…")
            self._pool.start(ModelValidation(values["model_path"], self._signals))
            return
        self._save(values)

    def _save(self, values: dict[str, Any]) -> None:
        try:
            update_settings(self.services.store, values)
        except SettingsError as exc:
            self.services.dialogs.warning(self, "Settings", f"Not saved: {exc}")
            return
        self.status_message.emit("Settings saved.")
        self.data_changed.emit()

    def _validation_succeeded(self, path: str, _result: object) -> None:
        values, self._pending = self._pending, None
        self._set_busy(False)
        if values is None or values["model_path"] != path:
            return
        self._save(values)

    def _validation_failed(self, path: str, reason: str) -> None:
        self._pending = None
        self._set_busy(False)
        previous = self.services.settings().model_path
        self.model_edit.setText(previous or "")
        self.show_model_info()
        self.status_message.emit("Model file rejected; the previous model is kept.")
        self.services.dialogs.warning(
            self,
            "Model file not usable",
            f"{Path(path).name} cannot be used: {reason}\nThe previous model is kept.",
        )

    # -- threads --------------------------------------------------------------------------

    def _model_path(self) -> Path | None:
        saved = self.services.settings().model_path
        return Path(str(saved)).expanduser() if saved else demo_model_path()

    def show_thread_tuning(self) -> None:
        """The measured thread counts of the saved model (read from the cache file)."""
        path = self._model_path()
        tuning = cached_tuning(path, hash_file=False) if path is not None else None
        if tuning is not None:
            self.threads_info.setText(f"Automatic threads {tuning.describe()}.")
        else:
            self.threads_info.setText("Automatic threads: measured when the model is next loaded.")

    def retune(self) -> None:
        """Measure again, off the GUI thread; the model's next load uses the new counts."""
        path = self._model_path()
        if path is None:
            self.status_message.emit("No model to tune: choose a model file first.")
            return
        worker = self.services.worker
        if worker is not None and worker.busy:  # it would compete for the same cores
            self.status_message.emit("Re-tune after the current run has finished.")
            return
        values = self.services.settings()
        settings = BackendSettings(
            model_path=path,
            n_gpu_layers=values.n_gpu_layers,
            n_ctx=512,  # the measurement needs a few dozen tokens
        )
        self.retune_button.setEnabled(False)
        self.threads_info.setText("Measuring thread counts…")
        self.status_message.emit("Measuring thread counts…")
        self._pool.start(ThreadTuning(settings, self._signals))

    def _tuned(self, _path: str, tuning: object) -> None:
        self.retune_button.setEnabled(True)
        self.show_thread_tuning()
        worker = self.services.worker
        if worker is not None:
            worker.release_model()  # loaded again, with the new counts, by the next run
        self.status_message.emit(f"Threads {getattr(tuning, 'describe', str)()}.")

    def _tuning_failed(self, path: str, reason: str) -> None:
        self.retune_button.setEnabled(True)
        self.show_thread_tuning()
        self.status_message.emit(f"Re-tune failed for {Path(path).name}: {reason}")

    # -- pane API -------------------------------------------------------------------------

    def refresh(self) -> None:
        if self.validating:
            return
        values: Settings = self.services.settings()
        self.model_edit.setText(values.model_path or "")
        self.gpu_layers.setValue(values.n_gpu_layers)
        self.n_ctx.setValue(values.n_ctx)
        self.n_threads.setValue(values.n_threads or 0)
        self.skip_threshold.setValue(values.skip_threshold)
        self.update_threshold.setValue(values.update_threshold)
        self.decay_rate.setValue(values.decay_rate)
        self.top_k.setValue(values.top_k)
        self.min_chars.setValue(values.min_chars)
        self.min_words.setValue(values.min_words)
        self.backup_interval.setValue(values.backup_interval_minutes)
        self.untrusted_sources.setText(", ".join(values.untrusted_sources))
        self.show_model_info()
        self.show_thread_tuning()

    def shutdown(self) -> None:
        """Wait for a running validation or re-tune (called when the window closes)."""
        self._pool.waitForDone()
        self.local_models.shutdown()
        self.catalogue.shutdown()  # cancels a download; its .part file stays for a resume

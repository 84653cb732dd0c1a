"""The Settings pane's parts: model facts, the background model check and re-tune,
spin boxes bound to the settings rules, the GPU note, and the reviewer's name.

Kept apart from :mod:`curator.gui.settings.settings_pane` so that module stays about the layout
and the save flow.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from curator.errors import CuratorError
from curator.gui.settings.settings_help import tooltip
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import ModelInfo
from curator.llm.model_trial import validate_model_file
from curator.llm.threads import forget_tuning
from curator.store.profile import (
    MAX_REVIEWER_CHARS,
    REVIEWER_ENV,
    check_reviewer,
    os_user,
    saved_reviewer,
)
from curator.store.settings import (
    RULES,
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


def rule_spin(key: str, step: int = 1, special: str | None = None) -> QSpinBox:
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


def rule_double_spin(key: str, step: float, decimals: int) -> QDoubleSpinBox:
    rule = RULES[key]
    assert rule.low is not None and rule.high is not None
    box = QDoubleSpinBox()
    box.setRange(rule.low, rule.high)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    box.setMinimumWidth(140)
    box.setMaximumWidth(200)
    return box


PANE_KEYS = (
    "model_path",
    "n_gpu_layers",
    "n_ctx",
    "n_threads",
    "skip_threshold",
    "update_threshold",
    "decay_rate",
    "top_k",
    "min_chars",
    "min_words",
    "untrusted_sources",
    "guard_model_opinion",
    "guard_opinion_threshold",
    "backup_interval_minutes",
    "backup_max_total_mb",
    "backend",
    "server_url",
    "server_model",
)
"""The settings this pane shows: what "Restore defaults" resets."""


def gpu_note() -> str:
    """Why "GPU layers" may do nothing here: a llama.cpp build without GPU support."""
    try:
        from curator.llm.llama_log import quiet_llama_cpp  # no llama.cpp log on stderr

        supported = bool(quiet_llama_cpp().llama_supports_gpu_offload())
    except Exception:  # no llama.cpp at all: the server backend still works
        supported = False
    if supported:
        return ""
    return (
        "This llama.cpp build has no GPU support: every layer runs on the CPU (the status "
        "bar says “CPU only”) whatever GPU layers says."
    )


def set_tip(form: QFormLayout, field: QWidget, key: str) -> None:
    """The same tooltip on a field and on its label in the form."""
    text = tooltip(key)
    field.setToolTip(text)
    label = form.labelForField(field)
    if label is not None:
        label.setToolTip(text)


class ReviewerBox(QGroupBox):
    """The reviewer's name: kept in the person's profile, not in the shared database.

    Several people may curate one database; the name on their decisions, labels and
    commits is each one's own (:mod:`curator.store.profile`). Empty: the OS user name.
    ``$CURATOR_REVIEWER``, when set, wins over the field, and the box says so.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Reviewer", parent)
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("reviewerName")
        self.name_edit.setMaxLength(MAX_REVIEWER_CHARS)
        self.name_edit.setPlaceholderText(os_user())
        self.name_edit.setToolTip(
            "The name your decisions, relabels and commits carry, so that several people "
            "curating one database see who decided what. Kept in your profile on this "
            f"computer; empty: your user name. ${REVIEWER_ENV} overrides it."
        )
        self.note = QLabel()
        self.note.setObjectName("reviewerNote")
        self.note.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Your name", self.name_edit)
        form.addRow("", self.note)

    def load(self) -> None:
        """Show the saved name and which name is in force."""
        self.name_edit.setText(saved_reviewer() or "")
        override = os.environ.get(REVIEWER_ENV, "").strip()
        self.note.setText(
            f"${REVIEWER_ENV} is set: your decisions carry “{override}”." if override else ""
        )
        self.note.setVisible(bool(override))

    def name(self) -> str:
        return self.name_edit.text().strip()

    def problem(self) -> str | None:
        """Why the typed name cannot be saved, or None (empty is fine: the OS user name)."""
        if not self.name():
            return None
        try:
            check_reviewer(self.name())
        except CuratorError as exc:
            return str(exc)
        return None

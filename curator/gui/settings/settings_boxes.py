"""The Settings pane's plain groups of fields (model, distillation, backups) and its button row.

Each field is a spin box, line or choice bound to its settings rule (bounds, step, the
rule's help as its tooltip); the pane reads and fills them (:meth:`SettingsPane.collect`,
``_fill``) and keeps the save flow. Apart from :mod:`curator.gui.settings.settings_pane`
so that module stays about the flow, not about building forms.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QWidget,
)

from curator.gui.settings.model_picker import DEMO_NOTICE
from curator.gui.settings.settings_help import shown_value, tooltip
from curator.gui.settings.settings_parts import gpu_note, rule_double_spin, rule_spin, set_tip
from curator.store.settings import RULES


class DistillationBox(QGroupBox):
    """The gates, the decay, the prompt's K, the poisoned-memory guard's settings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Distillation", parent)
        self.skip_threshold = rule_double_spin("skip_threshold", 0.01, 2)
        self.skip_threshold.setObjectName("skipThreshold")
        self.update_threshold = rule_double_spin("update_threshold", 0.01, 2)
        self.update_threshold.setObjectName("updateThreshold")
        self.decay_rate = rule_double_spin("decay_rate", 0.005, 3)
        self.decay_rate.setObjectName("decayRate")
        self.top_k = rule_spin("top_k")
        self.top_k.setObjectName("topK")
        self.min_chars = rule_spin("min_chars")
        self.min_chars.setObjectName("minChars")
        self.min_words = rule_spin("min_words")
        self.min_words.setObjectName("minWords")
        form = QFormLayout(self)
        form.addRow("Skip when similarity ≥", self.skip_threshold)
        form.addRow("Update when similarity ≥", self.update_threshold)
        form.addRow("Daily decay factor", self.decay_rate)
        form.addRow("Patterns in the prompt (top K)", self.top_k)
        form.addRow("Quality gate: minimum characters", self.min_chars)
        form.addRow("Quality gate: minimum words", self.min_words)
        self.untrusted_sources = QLineEdit()
        self.untrusted_sources.setObjectName("untrustedSources")
        self.untrusted_sources.setPlaceholderText("none: every source is trusted")
        form.addRow("Untrusted sources", self.untrusted_sources)
        self.guard_opinion = QComboBox()
        self.guard_opinion.setObjectName("guardModelOpinion")
        for choice in RULES["guard_model_opinion"].choices:
            self.guard_opinion.addItem(shown_value("guard_model_opinion", choice), choice)
        form.addRow("Model's second opinion", self.guard_opinion)
        self.guard_threshold = rule_double_spin("guard_opinion_threshold", 0.05, 2)
        self.guard_threshold.setObjectName("guardOpinionThreshold")
        form.addRow("Second opinion flags when p(yes) ≥", self.guard_threshold)
        for field, key in (
            (self.skip_threshold, "skip_threshold"),
            (self.update_threshold, "update_threshold"),
            (self.decay_rate, "decay_rate"),
            (self.top_k, "top_k"),
            (self.min_chars, "min_chars"),
            (self.min_words, "min_words"),
            (self.untrusted_sources, "untrusted_sources"),
            (self.guard_opinion, "guard_model_opinion"),
            (self.guard_threshold, "guard_opinion_threshold"),
        ):
            set_tip(form, field, key)


class ModelBox(QGroupBox):
    """The model file (path, browse, the demo model, its facts), GPU layers, context size,
    threads and their re-tune; the pane connects the buttons and fills the facts."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Model file", parent)
        self.model_edit = QLineEdit()
        self.model_edit.setObjectName("modelPathEdit")
        self.model_edit.setPlaceholderText("Empty: the bundled demo model")
        self.browse_button = QPushButton("Browse…")
        self.browse_button.setObjectName("browseModelButton")
        self.browse_button.setToolTip("Choose a GGUF model file")
        self.demo_button = QPushButton("Use demo model")
        self.demo_button.setToolTip("Empty the field: the bundled demo model (SmolLM2-135M)")
        path_row = QHBoxLayout()
        path_row.addWidget(self.model_edit, 1)
        path_row.addWidget(self.browse_button)
        path_row.addWidget(self.demo_button)
        self.model_info = QLabel()
        self.model_info.setObjectName("modelInfo")
        self.model_info.setWordWrap(True)
        self.model_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.gpu_layers = rule_spin("n_gpu_layers", special="all layers")
        self.gpu_layers.setObjectName("gpuLayers")
        self.gpu_note = QLabel(gpu_note())
        self.gpu_note.setObjectName("gpuNote")
        self.gpu_note.setWordWrap(True)
        self.gpu_note.setVisible(bool(self.gpu_note.text()))
        gpu_row = QHBoxLayout()
        gpu_row.addWidget(self.gpu_layers)
        gpu_row.addWidget(self.gpu_note, 1)
        self.n_ctx = rule_spin("n_ctx", 512)
        self.n_ctx.setObjectName("contextSize")
        self.n_threads = rule_spin("n_threads", special="automatic")
        self.n_threads.setObjectName("threads")
        model_form = QFormLayout(self)
        model_form.addRow("Model file", path_row)
        model_form.addRow("", self.model_info)
        self.demo_notice = QLabel(f"<b>{DEMO_NOTICE[0].upper()}{DEMO_NOTICE[1:]}</b> below.")
        self.demo_notice.setObjectName("demoNotice")
        self.demo_notice.setWordWrap(True)
        model_form.addRow("", self.demo_notice)
        model_form.addRow("GPU layers", gpu_row)
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
        tune_row = QHBoxLayout()
        tune_row.addWidget(self.threads_info, 1)
        tune_row.addWidget(self.retune_button)
        model_form.addRow("", tune_row)
        set_tip(model_form, self.model_edit, "model_path")
        label = model_form.labelForField(path_row)
        if label is not None:
            label.setToolTip(tooltip("model_path"))
        set_tip(model_form, self.gpu_layers, "n_gpu_layers")
        label = model_form.labelForField(gpu_row)
        if label is not None:
            label.setToolTip(tooltip("n_gpu_layers"))
        set_tip(model_form, self.n_ctx, "n_ctx")
        set_tip(model_form, self.n_threads, "n_threads")


class BackupsBox(QGroupBox):
    """How often the window backs the database up, and how much the backups may take."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Backups", parent)
        self.backup_interval = rule_spin("backup_interval_minutes", 5, special="off")
        self.backup_interval.setObjectName("backupInterval")
        form = QFormLayout(self)
        form.addRow("Every N minutes of use, and on close", self.backup_interval)
        set_tip(form, self.backup_interval, "backup_interval_minutes")
        self.backup_max_total = rule_spin("backup_max_total_mb", 500, special="off")
        self.backup_max_total.setObjectName("backupMaxTotal")
        self.backup_max_total.setSuffix(" MB")
        form.addRow("All backups together at most", self.backup_max_total)
        set_tip(form, self.backup_max_total, "backup_max_total_mb")


class ApplyRow(QHBoxLayout):
    """Restore defaults, the busy bar and its words, Revert and Apply: below the scrolling
    form, so they never move. The busy bar keeps its room while hidden, so showing it
    does not shift the row; the pane connects the buttons."""

    def __init__(self) -> None:
        super().__init__()
        self.busy = QProgressBar()
        self.busy.setObjectName("validationBusy")
        self.busy.setRange(0, 0)
        self.busy.setMaximumWidth(160)
        self.busy.setTextVisible(False)
        self.busy_label = QLabel("Checking the model file…")
        for widget in (self.busy, self.busy_label):
            policy = widget.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            widget.setSizePolicy(policy)
            widget.hide()
        self.defaults_button = QPushButton("Restore defaults")
        self.defaults_button.setObjectName("restoreDefaultsButton")
        self.defaults_button.setToolTip(
            "Set every setting on this page back to its default (asks first; the API key "
            "in the keyring is kept)"
        )
        self.apply_button = QPushButton("Apply")
        self.apply_button.setObjectName("applySettingsButton")
        self.apply_button.setToolTip(
            "Check and save the settings (a new model file is loaded once)"
        )
        self.apply_button.setDefault(True)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setObjectName("revertSettingsButton")
        self.revert_button.setToolTip("Show the saved settings again, dropping edits")
        self.setContentsMargins(9, 6, 9, 9)
        self.addWidget(self.defaults_button)
        self.addWidget(self.busy)
        self.addWidget(self.busy_label)
        self.addStretch(1)
        self.addWidget(self.revert_button)
        self.addWidget(self.apply_button)

"""The Settings pane: the model (file or server), llama.cpp parameters, the thresholds,
the database the window opens (:mod:`curator.gui.settings.database_box`) and the reviewer.

A model file is checked before it is saved: its GGUF header is read at once (name, size,
quantisation, context length), and on Apply the file is loaded for real in a subprocess by
:func:`curator.llm.model_trial.validate_model_file`. That takes seconds, so it runs on a
thread pool and the pane shows a busy indicator; the GUI thread never waits for it. A
file that fails keeps the previous setting, explains why in one sentence, and stays in
the field so the user can correct the path.

The form scrolls; the Apply / Revert / Restore defaults row sits below it, outside the
scroll area, so it never moves when a block above changes height (the demo notice, the
model facts, a download's progress). Saving goes through ``services.ops.write`` (a new
decay rate re-ranks every pattern); the server's API key goes to the system keyring in
the same background job, never to the database. Every field's tooltip says what the
setting does, its range and its default (:mod:`curator.gui.settings.settings_help`).

The saved values are read in the background whenever the pane is reloaded (shown, Revert,
another process's change while it is in view; :attr:`SettingsPane.loading` meanwhile), and
what needs them later (the thread tuning shown, Re-tune) uses that read or what a save
returned: on a database server every read is a round trip. Apply, Revert and Restore
defaults wait for the first read. A reload fills the form only while it holds no edits
(another process's change never overwrites what the user is typing; Revert does). Apply
alone checks the form against the saved values on the GUI thread, once, when pressed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QThreadPool
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from curator.core.userpath import user_path
from curator.errors import CuratorError
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.gui.settings.database_box import DatabaseBox
from curator.gui.settings.model_picker import CatalogueBox, LocalModelsBox
from curator.gui.settings.server_box import BackendBox
from curator.gui.settings.settings_boxes import ApplyRow, BackupsBox, DistillationBox, ModelBox
from curator.gui.settings.settings_parts import (
    PANE_KEYS,
    ModelValidation,
    ReviewerBox,
    ThreadTuning,
    ValidationSignals,
    describe_model_info,
)
from curator.gui.widgets.pane import Pane
from curator.gui.widgets.wheel_guard import guard_wheel
from curator.llm.backend import BackendSettings
from curator.llm.model_file import (
    demo_model_path,
    read_gguf_info,
)
from curator.llm.server_choice import save_api_key
from curator.llm.threads import cached_tuning
from curator.store.profile import save_database, save_reviewer
from curator.store.settings import (
    DEFAULTS,
    Settings,
    SettingsError,
    changed_settings,
    load_settings,
    settings_with,
    update_settings,
)

MODEL_INFO_QUERY = "settings.model_info"
VALUES_QUERY = "settings.values"
SAVED_CHECK_QUERY = "settings.saved_check"


def _describe_model(path: Path, *, bundled: bool) -> tuple[str, bool]:
    """What the Settings pane says about a model file, and whether it is usable (the words
    for a file that is not are a sentence). The bundled demo model is named as such."""
    try:
        details = describe_model_info(read_gguf_info(path)) or "GGUF file"
    except CuratorError as exc:
        if not bundled:
            return f"Not usable: {exc}", False
        details = f"Not usable: {exc}"
    return (f"The bundled demo model.\n{details}" if bundled else details), True


class SettingsPane(Pane):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("settingsPane")
        self._values: Settings | None = None
        """The saved settings as last read (None: not read yet)."""
        self._reading = 0  # token of the read of the saved values not delivered yet
        self._answered = False
        """A read has come back, with values or with an error (a broken saved value: the
        form keeps the defaults, and Apply saves over it, as the command line does)."""
        self._filled: tuple[Any, ...] | None = None
        """The form as the last read filled it: a form that differs holds the user's
        edits, which a reload (another process's change) never overwrites."""
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._signals = ValidationSignals(self)
        self._signals.succeeded.connect(self._validation_succeeded)
        self._signals.failed.connect(self._validation_failed)
        self._signals.tuned.connect(self._tuned)
        self._signals.tuning_failed.connect(self._tuning_failed)
        self._pending: dict[str, Any] | None = None
        self._saving = False

        # model: the file, where it runs, the threads (settings_boxes)
        model_box = ModelBox()
        self.model_edit = model_box.model_edit
        self.model_edit.editingFinished.connect(self.show_model_info)
        model_box.browse_button.clicked.connect(self.browse_model)
        model_box.demo_button.clicked.connect(self._use_demo_model)
        self.model_info, self.demo_notice = model_box.model_info, model_box.demo_notice
        self.gpu_layers, self.gpu_note = model_box.gpu_layers, model_box.gpu_note
        self.n_ctx, self.n_threads = model_box.n_ctx, model_box.n_threads
        self.threads_info = model_box.threads_info
        self.retune_button = model_box.retune_button
        self.retune_button.clicked.connect(self.retune)

        # backend: the model file, or a server
        self.backend_box = BackendBox(self)
        self.backend_box.edited.connect(self._backend_edited)

        # pipeline and backups: plain fields bound to their rules (settings_boxes)
        pipeline_box = DistillationBox()
        self.skip_threshold = pipeline_box.skip_threshold
        self.update_threshold = pipeline_box.update_threshold
        self.decay_rate = pipeline_box.decay_rate
        self.top_k = pipeline_box.top_k
        self.min_chars = pipeline_box.min_chars
        self.min_words = pipeline_box.min_words
        self.untrusted_sources = pipeline_box.untrusted_sources
        self.guard_opinion = pipeline_box.guard_opinion
        self.guard_threshold = pipeline_box.guard_threshold
        backup_box = BackupsBox()
        self.backup_interval = backup_box.backup_interval
        self.backup_max_total = backup_box.backup_max_total
        self.reviewer_box = ReviewerBox()
        self.database_box = DatabaseBox(services)

        # buttons: below the scrolling form, so they never move
        buttons = ApplyRow()
        self.busy, self.busy_label = buttons.busy, buttons.busy_label
        self.defaults_button = buttons.defaults_button
        self.defaults_button.clicked.connect(self.restore_defaults)
        self.apply_button = buttons.apply_button
        self.apply_button.clicked.connect(self.apply)
        self.revert_button = buttons.revert_button
        self.revert_button.clicked.connect(self.revert)

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

        form = QWidget()
        form.setObjectName("settingsForm")
        column = QVBoxLayout(form)
        column.addWidget(self.backend_box)
        column.addWidget(model_box)
        column.addLayout(pickers)
        column.addWidget(pipeline_box)
        column.addWidget(backup_box)
        column.addWidget(self.database_box)
        column.addWidget(self.reviewer_box)
        column.addStretch(1)
        self.form_scroll = QScrollArea()
        self.form_scroll.setObjectName("settingsScroll")
        self.form_scroll.setWidgetResizable(True)
        self.form_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.form_scroll.setWidget(form)
        self.wheel_guard = guard_wheel(self.form_scroll, form)
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        line.setFrameShadow(QFrame.Shadow.Sunken)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.form_scroll, 1)
        layout.addWidget(line)
        layout.addLayout(buttons)
        for button in (self.apply_button, self.revert_button, self.defaults_button):
            button.setEnabled(False)  # until the saved values have been read
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
        self.backend_box.local_radio.setChecked(True)  # a file is picked to be used
        self.show_model_info()
        self.status_message.emit(f"{Path(path).name} chosen: press Apply to check and use it.")

    def _use_demo_model(self) -> None:
        self.model_edit.clear()
        self.show_model_info()

    def _backend_edited(self) -> None:
        self.show_model_info()

    def show_model_info(self) -> None:
        """Describe the chosen model from its GGUF header, read off the GUI thread: a
        tokenizer of a few hundred thousand strings takes tens of milliseconds to walk
        past, and a file on a slow or network disk longer. Only the newest read is shown."""
        self.services.ops.forget(MODEL_INFO_QUERY)  # a read still pending is for an older path
        self.model_info.setStyleSheet("")
        self.model_info.setWordWrap(False)
        path = self.model_edit.text().strip()
        demo_file = demo_model_path()
        on_server = self.backend_box.server_radio.isChecked()
        try:
            chosen = user_path(path, "the model path") if path else None
        except CuratorError as exc:  # ~name of an unknown user
            self.demo_notice.setVisible(False)
            self._show_problem(f"Not usable: {exc}")
            return
        self.demo_notice.setVisible(not on_server and (chosen is None or chosen == demo_file))
        target = chosen or demo_file
        if target is None:
            self.model_info.setText("The demo model is not installed: choose a GGUF file.")
            return
        self.model_info.setText("Reading the model file…")
        self.services.ops.query(
            MODEL_INFO_QUERY,
            lambda ctx: _describe_model(target, bundled=not path),
            self._model_described,
            lambda message: self._show_problem(f"Not usable: {message}"),
        )

    def _model_described(self, described: tuple[str, bool]) -> None:
        text, usable = described
        if usable:
            self.model_info.setText(text)
        else:
            self._show_problem(text)

    def _show_problem(self, text: str) -> None:
        self.model_info.setWordWrap(True)  # a sentence; the facts are short lines
        self.model_info.setText(text)
        self.model_info.setStyleSheet("color: #b00020;")

    @property
    def validating(self) -> bool:
        return self._pending is not None

    @property
    def saving(self) -> bool:
        return self._saving

    def _set_busy(self, busy: bool, text: str = "Checking the model file…") -> None:
        self.busy_label.setText(text)
        self.busy.setVisible(busy)
        self.busy_label.setVisible(busy)
        for button in (self.apply_button, self.revert_button, self.defaults_button):
            button.setEnabled(not busy)

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
            "backup_max_total_mb": self.backup_max_total.value(),
            "guard_model_opinion": self.guard_opinion.currentData(),
            "guard_opinion_threshold": round(self.guard_threshold.value(), 4),
            "untrusted_sources": sorted(
                {s.strip().lower() for s in self.untrusted_sources.text().split(",") if s.strip()}
            ),
            **self.backend_box.values(),
        }

    def apply(self) -> None:
        if self.validating or self.saving or not self._answered:
            return  # (not read yet: the form holds no saved values to change)
        values = self.collect()
        problem = self.reviewer_box.problem() or self.database_box.problem()
        if problem is not None:
            self.services.dialogs.warning(self, "Settings", f"Not saved: {problem}")
            return
        # the same rules and messages as the CLI, against the values last read (none
        # read: a broken saved value being replaced): at once, with no round trip; the
        # saved values as they are now are checked in the background, before anything
        # is saved or the model file tried, as the CLI does
        saved = self._values.as_dict() if self._values is not None else {}
        try:
            settings_with(saved, values)
        except SettingsError as exc:
            self.services.dialogs.warning(self, "Settings", f"Not saved: {exc}")
            return
        # the model as last read (none read: a broken saved value being replaced)
        current_model = self._values.model_path if self._values is not None else None
        if values["model_path"] and values["model_path"] != current_model:
            self._pending = values
            self._set_busy(True, "Checking the settings…")
            self.ops.query(
                SAVED_CHECK_QUERY,
                lambda ctx: changed_settings(ctx.store, values),
                lambda _checked: self._check_model(values),
                self._refused,
            )
            return
        self._save(values)

    def _check_model(self, values: dict[str, Any]) -> None:
        if self._pending is not values:  # (nothing else can start while one is pending)
            return
        self._set_busy(True)
        self.status_message.emit("Checking the model file…")
        self._pool.start(ModelValidation(values["model_path"], self._signals))

    def _refused(self, reason: str) -> None:
        """The saved values refuse the change (or could not be read): nothing is saved."""
        self._pending = None
        self._set_busy(False)
        self.services.dialogs.warning(self, "Settings", f"Not saved: {reason}")

    def _save(self, values: dict[str, Any], done_text: str = "Settings saved.") -> None:
        """Save in the background: the API key to the keyring first, then the values."""
        key = self.backend_box.key_change() if values.get("backend") == "server" else None
        url = values.get("server_url")
        shown = self.collect()  # the form as sent: a change made while saving is kept
        reviewer = self.reviewer_box.name()
        database = self.database_box.choice() if self.database_box.edited() else None

        def work(ctx: OpContext) -> Settings:
            # refused by the saved values as they are now: before anything else is saved
            changed_settings(ctx.store, values)
            if key is not None and url:
                save_api_key(str(url), key)
            save_reviewer(reviewer or None)  # the profile's file, not the shared database
            if database is not None:  # unchanged: a saved choice is left as it is
                save_database(database)
            return update_settings(ctx.store, values)

        def done(saved: Settings) -> None:
            self._saving = False
            self._set_busy(False)
            self._values = saved  # what is in force now, whatever the form shows
            if key is not None:
                self.backend_box.key_saved()
            said = done_text
            if database is not None:
                said += " The window opens the chosen database at its next start."
            if self.collect() == shown:
                self._filled = None  # the form is what was saved: filled anew
                self.refresh()
            else:  # changed while the save waited (for another writer): not reset
                said += " The changes made since are not saved yet."
            self.status_message.emit(said)
            self.data_changed.emit()

        def failed(reason: str) -> None:
            self._saving = False
            self._set_busy(False)
            self.services.dialogs.warning(self, "Settings", f"Not saved: {reason}")

        if key is not None and not url:
            self.services.dialogs.warning(
                self, "Settings", "Not saved: the API key needs the server's URL."
            )
            return
        if not self.ops.write("Save settings", work, done, failed):
            return
        self._saving = True
        self._set_busy(True, "Saving…")

    def restore_defaults(self) -> None:
        """Every setting on this page back to its default, after asking (saved at once)."""
        if self.validating or self.saving:
            return
        self.services.dialogs.confirm(
            self,
            "Restore defaults",
            "Set every setting on this page back to its default and save?\n\n"
            "The model becomes the bundled demo model, the backend the model file, and the "
            "thresholds, decay, quality gates and backups their defaults (patterns are "
            "re-ranked). A saved API key stays in the keyring.",
            self._restore_defaults,
            yes_text="Restore defaults",
        )

    def _restore_defaults(self) -> None:
        if self.validating or self.saving:
            return
        self.backend_box.key_edit.clear()
        self.backend_box.forget_key = False
        self._save({key: None for key in PANE_KEYS}, "Settings restored to their defaults.")

    def _validation_succeeded(self, path: str, _result: object) -> None:
        values, self._pending = self._pending, None
        self._set_busy(False)
        if values is None or values["model_path"] != path:
            return
        self._save(values)

    def _validation_failed(self, path: str, reason: str) -> None:
        """Nothing is saved; the path stays in the field (to correct it), with the reason."""
        self._pending = None
        self._set_busy(False)
        self.services.ops.forget(MODEL_INFO_QUERY)  # the header's facts would read as usable
        self._show_problem(f"Not usable: {reason}")
        self.status_message.emit("Model file rejected; nothing was saved.")
        self.services.dialogs.warning(
            self,
            "Model file not usable",
            f"{Path(path).name} cannot be used: {reason}\n\nThe previous model is kept; "
            "correct the path, choose another file, or press Revert.",
        )

    # -- threads --------------------------------------------------------------------------

    def _model_path(self) -> Path | None:
        saved = self._values.model_path if self._values is not None else None
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
        values = self._values if self._values is not None else DEFAULTS
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

    @property
    def loading(self) -> bool:
        """A read of the saved values is on its way."""
        return self._reading != 0

    def refresh(self) -> None:
        """Read the saved values in the background; :meth:`_show_values` fills the form."""
        if self.validating or self.saving:
            return
        self._reading = self.ops.query(
            VALUES_QUERY, lambda ctx: load_settings(ctx.store), self._show_values, self._read_failed
        )

    def _read_failed(self, reason: str) -> None:
        self._reading = 0
        if not self._answered:  # a broken saved value: Apply saves the form over it
            self._fill(DEFAULTS)
        self.services.dialogs.error(self, "Settings", f"The settings could not be read: {reason}")

    def revert(self) -> None:
        """Drop the edits: the saved values, read again."""
        self._filled = None
        self.refresh()

    def _form(self) -> tuple[Any, ...]:
        return self.collect(), self.reviewer_box.name(), self.database_box.choice()

    def _show_values(self, values: Settings) -> None:
        self._reading = 0
        if self.validating or self.saving:
            return  # the form is being applied; it is read again once that is done
        changed = values != self._values
        self._values = values
        if self._filled is not None and self._form() != self._filled:
            if changed:
                self.status_message.emit(
                    "Settings were saved elsewhere; your edits are kept (Revert shows "
                    "the saved values)."
                )
            self.show_thread_tuning()
            return
        self._fill(values)

    def _fill(self, values: Settings) -> None:
        """The form shows ``values``; Apply, Revert and Restore defaults act on it."""
        self.backend_box.load(values)
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
        self.backup_max_total.setValue(values.backup_max_total_mb)
        self.untrusted_sources.setText(", ".join(values.untrusted_sources))
        self.guard_opinion.setCurrentIndex(self.guard_opinion.findData(values.guard_model_opinion))
        self.guard_threshold.setValue(values.guard_opinion_threshold)
        self.reviewer_box.load()
        self.database_box.load()
        self.show_model_info()
        self.show_thread_tuning()
        self._filled = self._form()
        self._answered = True
        self._set_busy(False)  # Apply, Revert and Restore defaults: there is a form now

    def shutdown(self) -> None:
        """Wait for a running validation or re-tune (called when the window closes)."""
        self._pool.waitForDone()
        self.backend_box.shutdown()
        self.database_box.shutdown()
        self.local_models.shutdown()
        self.catalogue.shutdown()  # cancels a download; its .part file stays for a resume

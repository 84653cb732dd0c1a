"""The Identity pane: the agent's identity text and constitutional axioms, versioned.

Saving never edits a version in place: it creates a new one (the distillation runs record
which version they used). Older versions are shown read-only and can be restored, which
again creates a new version, so the history only grows.

The current version and the history are read in the background (``services.ops.query``,
:attr:`IdentityPane.loading` while a read runs), never on the GUI thread: on a database
server every read is a round trip. Until the first read arrives the editors are read-only,
so nothing is typed over a text still on its way.

Edits are never lost silently: while the editor differs from the saved version the tab
reads "Identity •", an "Unsaved changes" label shows and Save / Revert are enabled; the
window asks before closing over them (:meth:`IdentityPane.confirm_discard`), and so does
a reload when another window or the CLI saved a new version meanwhile. Saving and
restoring run through ``services.ops.write``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from curator.core.textsafety import strip_blanks, visible
from curator.gui.episodes.episode_model import format_time
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.gui.widgets.pane import Pane
from curator.store.identity import (
    Identity,
    current_identity,
    identity_versions,
    save_identity,
)
from curator.store.models import IdentityVersion, format_utc

QUERY_KEY = "identity"
"""The pane's read of the current version and the history (the newest request wins)."""


@dataclass(frozen=True)
class IdentityHistory:
    """What the pane shows, read in one background job."""

    current: Identity
    versions: list[IdentityVersion]  # newest first


def read_history(ctx: OpContext) -> IdentityHistory:
    return IdentityHistory(current_identity(ctx.store), list(identity_versions(ctx.store)))


#: What ends an axiom's line: CRLF, CR, LF and the Unicode line and paragraph separators.
#: Not VT, FF, U+001C-U+001E or NEL (``str.splitlines`` splits there): a control inside a
#: line is refused by name when it is saved, never turned into an axiom break unseen.
_AXIOM_BREAKS = re.compile("\r\n|[\r\n\u2028\u2029]")


def axioms_from_text(text: str) -> list[str]:
    """One axiom per non-empty line, exactly as written (blanks around it aside).

    Nothing else is taken off: "1999. was the first year we kept logs" or "- Never guess"
    is the axiom the agent reads, the same the editor showed (a numbering taken off as
    decoration would rewrite axioms nobody touched at the next save).
    """
    lines = (strip_blanks(line) for line in _AXIOM_BREAKS.split(text))
    return [line for line in lines if line]


class IdentityPane(Pane):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("identityPane")
        self._loaded_version = -1
        self._baseline: Identity | None = None
        """The version the editor compares against (and Revert shows); None: none read."""
        self._history: IdentityHistory | None = None
        """The last read of the current version and the history (None: not read yet)."""
        self._reading = 0  # token of the read not delivered yet (0: none)
        self._saving = False  # a save of this pane is on its way
        self._asking = False  # the "saved elsewhere" question is open
        self._deferred: IdentityHistory | None = None  # a read that came while it was
        self._saved: tuple[str, str] = ("", "")
        """The editors' text as loaded from the current version (what "unsaved" compares to)."""
        self._dirty = False
        self._title = ""

        # editor (current version)
        self.identity_edit = QPlainTextEdit()
        self.identity_edit.setObjectName("identityEdit")
        self.identity_edit.setPlaceholderText("Who the agent is, in its own words…")
        self.axioms_edit = QPlainTextEdit()
        self.axioms_edit.setObjectName("axiomsEdit")
        self.axioms_edit.setPlaceholderText("One constitutional axiom per line")
        self.axioms_edit.setToolTip("One axiom per line; blank lines are ignored.")
        self.note_edit = QLineEdit()
        self.note_edit.setObjectName("noteEdit")
        self.note_edit.setPlaceholderText("What changed (optional)")
        self.save_button = QPushButton("Save as new version")
        self.save_button.setObjectName("saveIdentityButton")
        self.save_button.setToolTip("Save the identity and axioms as a new version (Ctrl+S)")
        self.save_button.setShortcut("Ctrl+S")
        self.save_button.clicked.connect(self.save)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setObjectName("revertIdentityButton")
        self.revert_button.setToolTip("Drop the unsaved edits and show the current version again")
        self.revert_button.clicked.connect(self.revert)
        self.unsaved_label = QLabel("<b>Unsaved changes</b>")
        self.unsaved_label.setObjectName("identityUnsaved")
        self.unsaved_label.setToolTip("The editor differs from the current saved version")
        self.identity_edit.textChanged.connect(self._update_dirty)
        self.axioms_edit.textChanged.connect(self._update_dirty)
        self.version_label = QLabel()
        self.version_label.setObjectName("identityVersionLabel")

        editor = QWidget()
        form = QVBoxLayout(editor)
        form.setContentsMargins(0, 0, 0, 0)
        form.addWidget(self.version_label)
        form.addWidget(QLabel("<b>Identity</b>"))
        form.addWidget(self.identity_edit, 3)
        form.addWidget(QLabel("<b>Constitutional axioms</b> (one per line, blank lines ignored)"))
        form.addWidget(self.axioms_edit, 2)
        row = QHBoxLayout()
        row.addWidget(self.note_edit, 1)
        row.addWidget(self.unsaved_label)
        row.addWidget(self.revert_button)
        row.addWidget(self.save_button)
        form.addLayout(row)

        # history
        self.versions = QTreeWidget()
        self.versions.setObjectName("identityVersions")
        self.versions.setHeaderLabels(["Version", "Saved", "Note"])
        self.versions.setRootIsDecorated(False)
        self.versions.setColumnWidth(0, 70)
        self.versions.setColumnWidth(1, 130)
        self.versions.currentItemChanged.connect(self._show_version)
        self.preview = QPlainTextEdit()
        self.preview.setObjectName("identityPreview")
        self.preview.setReadOnly(True)
        self.preview.setPlaceholderText("Select a version to read it.")
        font = QFont(self.preview.font())
        font.setItalic(False)
        self.preview.setFont(font)
        self.restore_button = QPushButton("Restore as new version")
        self.restore_button.setObjectName("restoreIdentityButton")
        self.restore_button.setEnabled(False)
        self.restore_button.clicked.connect(self.restore_selected)

        history = QWidget()
        side = QVBoxLayout(history)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(QLabel("<b>Versions</b>"))
        side.addWidget(self.versions, 2)
        side.addWidget(self.preview, 3)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.restore_button)
        side.addLayout(buttons)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("identitySplitter")
        self.splitter.addWidget(editor)
        self.splitter.addWidget(history)
        self.splitter.setSizes([800, 500])
        layout = QVBoxLayout(self)
        layout.addWidget(self.splitter)
        self._set_editable(False)  # until the first read arrives
        self._update_dirty()
        self.refresh()

    # -- actions --------------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        """The editor holds edits that are not saved."""
        return self._dirty

    def _editor_text(self) -> tuple[str, str]:
        return self.identity_edit.toPlainText(), self.axioms_edit.toPlainText()

    def _update_dirty(self) -> None:
        self._dirty = self._editor_text() != self._saved
        self.unsaved_label.setVisible(self._dirty)
        ready = self._baseline is not None  # nothing to save over or revert to before
        self.save_button.setEnabled(self._dirty and ready)
        self.revert_button.setEnabled(self._dirty and ready)
        self._mark_tab()

    def _mark_tab(self) -> None:
        """Mark the window's tab ("Identity •") while there are unsaved edits."""
        parent = self.parentWidget()
        tabs = parent.parentWidget() if parent is not None else None
        if not isinstance(tabs, QTabWidget):
            return
        index = tabs.indexOf(self)
        if index < 0:
            return
        if not self._title:
            self._title = tabs.tabText(index).removesuffix(" •")
        tabs.setTabText(index, f"{self._title} •" if self._dirty else self._title)

    def _load(self, current: Identity) -> None:
        self._compare_with(current)
        self.identity_edit.setPlainText(self._saved[0])
        self.axioms_edit.setPlainText(self._saved[1])
        self._update_dirty()

    def _compare_with(self, current: Identity) -> None:
        """Make ``current`` the version the editor's text is compared with (edits kept)."""
        self._baseline = current
        self._loaded_version = current.version
        # a blank line between axioms keeps wrapped long axioms readable
        self._saved = (current.identity_text, "\n\n".join(current.axioms))

    def _set_editable(self, editable: bool) -> None:
        for editor in (self.identity_edit, self.axioms_edit):
            editor.setReadOnly(not editable)

    @property
    def loading(self) -> bool:
        """A read of the current version and the history is on its way."""
        return self._reading != 0

    def revert(self) -> None:
        """Drop the edits: the version they were compared with (a newer one saved
        elsewhere meanwhile comes with the reload that change causes)."""
        if self._baseline is None:
            return  # nothing read yet, nothing typed (the editors are read-only)
        self._load(self._baseline)
        self.status_message.emit("Identity edits dropped.")

    def confirm_discard(self) -> bool:
        if not self.dirty:
            return True
        return self.services.dialogs.ask(
            self,
            "Unsaved identity",
            "The identity has unsaved edits. Discard them?",
            yes="Discard edits",
            no="Keep editing",
        )

    def save(self) -> None:
        text = self.identity_edit.toPlainText()
        if not visible(text):  # blanks or zero-width characters only: nothing to read
            self.services.dialogs.warning(self, "Identity", "The identity text is empty.")
            return
        axioms = axioms_from_text(self.axioms_edit.toPlainText())
        note = self.note_edit.text().strip()
        self._write(
            "Save identity",
            lambda ctx: save_identity(ctx.store, text, axioms, note),
            lambda saved: f"Saved identity version {saved.version}.",
        )

    def _write(
        self, label: str, fn: Callable[[OpContext], Identity], said: Callable[[Identity], str]
    ) -> None:
        """Save in the background; the editor shows the new version when it is done.

        A save can wait seconds for another writer (the CLI), and the editor stays open
        meanwhile: what was typed after the click is kept, unsaved and marked so, against
        the version just saved, rather than replaced by it.
        """
        sent, note = self._editor_text(), self.note_edit.text()

        def done(saved: Identity) -> None:
            self._saving = False
            if self.note_edit.text() == note:
                self.note_edit.clear()
            if self._editor_text() == sent:
                self._load(saved)
            else:  # typed while saving: keep it, now compared with the saved version
                self._compare_with(saved)
                self._update_dirty()
            self.refresh()  # the history, and any version saved elsewhere since
            self.status_message.emit(said(saved))
            self.data_changed.emit()

        def failed(reason: str) -> None:
            self._saving = False
            self.services.dialogs.warning(self, "Identity", f"Not saved: {reason}")
            self.refresh()

        self._saving = self.ops.write(label, fn, done, failed)

    def _selected_version(self) -> IdentityVersion | None:
        item = self.versions.currentItem()
        if item is None or self._history is None:
            return None
        version = item.data(0, Qt.ItemDataRole.UserRole)
        return next((row for row in self._history.versions if row.version == version), None)

    def _show_version(self) -> None:
        row = self._selected_version()
        if row is None:
            self.preview.clear()
            self.restore_button.setEnabled(False)
            return
        axioms = "\n".join(f"{i}. {a}" for i, a in enumerate(row.axioms, 1))
        self.preview.setPlainText(f"{row.identity_text.strip()}\n\nAxioms:\n{axioms}")
        self.restore_button.setEnabled(row.version != self._loaded_version)

    def restore_selected(self) -> None:
        row = self._selected_version()
        if row is None:
            return
        if not self.confirm_discard():
            return
        text, axioms, version = row.identity_text, list(row.axioms), row.version
        self._write(
            "Restore identity",
            lambda ctx: save_identity(ctx.store, text, axioms, f"restored from version {version}"),
            lambda saved: f"Restored version {version} as version {saved.version}.",
        )

    # -- pane API -------------------------------------------------------------------------

    def _ask_reload(self, version: int) -> bool:
        self._asking = True
        try:
            return self._ask(version)
        finally:
            self._asking = False

    def _ask(self, version: int) -> bool:
        return self.services.dialogs.ask(
            self,
            "Identity changed elsewhere",
            f"Identity version {version} was saved elsewhere while you were editing. "
            "Discard your unsaved edits and show it?",
            yes=f"Show version {version}",
            no="Keep my edits",
        )

    def refresh(self) -> None:
        """Read the current version and the history in the background; :meth:`_show_read`
        shows them."""
        self._reading = self.ops.query(QUERY_KEY, read_history, self._show_read, self._read_failed)

    def _read_failed(self, reason: str) -> None:
        self._reading = 0
        self.services.dialogs.error(self, "Identity", f"The identity could not be read: {reason}")

    def _show_read(self, history: IdentityHistory) -> None:
        """Show the history; the editor is reloaded only when the current version changed
        (so a refresh caused by another pane never discards unsaved typing)."""
        self._reading = 0
        if self._asking:  # delivered inside the question's own event loop: after it
            self._deferred = history
            return
        first = self._history is None
        self._history = history
        current = history.current
        if first:
            self._set_editable(True)
        # While this pane's own save is on its way the editor is left alone: the version
        # read may be that save's, and the save's end sets what the editor compares with.
        if current.version != self._loaded_version and not self._saving:
            # text set before the first read (read-only editors take it from code alone)
            # is kept without a question: nothing was saved elsewhere, it is the first look
            if not self.dirty or (not first and self._ask_reload(current.version)):
                self._load(current)
            else:  # keep the edits; they now compare against (and save over) the new one
                self._compare_with(current)
                self._update_dirty()
        self.version_label.setText(
            f"Current version: {current.version}" if current.version else "No identity saved yet."
        )
        selected = self.versions.currentItem()
        keep = selected.data(0, Qt.ItemDataRole.UserRole) if selected is not None else None
        self.versions.blockSignals(True)
        self.versions.clear()
        for row in history.versions:
            item = QTreeWidgetItem(
                [str(row.version), format_time(format_utc(row.created_at)), row.note]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, row.version)
            self.versions.addTopLevelItem(item)
            if row.version == (keep if keep is not None else current.version):
                self.versions.setCurrentItem(item)
        self.versions.blockSignals(False)
        self._show_version()
        deferred, self._deferred = self._deferred, None
        if deferred is not None:  # newer than what was just shown
            self._show_read(deferred)

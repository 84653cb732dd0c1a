"""The Identity pane: the agent's identity text and constitutional axioms, versioned.

Saving never edits a version in place: it creates a new one (the distillation runs record
which version they used). Older versions are shown read-only and can be restored, which
again creates a new version, so the history only grows.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from curator.gui.episode_model import format_time
from curator.gui.pane import Pane
from curator.gui.services import AppServices
from curator.store.identity import current_identity, identity_versions, save_identity
from curator.store.models import IdentityVersion, format_utc


def axioms_from_text(text: str) -> list[str]:
    """One axiom per non-empty line; a leading "1." or "-" is list decoration, dropped."""
    axioms = []
    for line in text.splitlines():
        stripped = line.strip()
        head, dot, rest = stripped.partition(". ")
        if dot and head.isdigit():
            stripped = rest.strip()
        elif stripped.startswith(("- ", "* ")):
            stripped = stripped[2:].strip()
        if stripped:
            axioms.append(stripped)
    return axioms


class IdentityPane(Pane):
    def __init__(self, services: AppServices, parent: QWidget | None = None) -> None:
        super().__init__(services, parent)
        self.setObjectName("identityPane")
        self._loaded_version = -1

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
        self.save_button.clicked.connect(self.save)
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
        self.refresh()

    # -- actions --------------------------------------------------------------------------

    def save(self) -> None:
        text = self.identity_edit.toPlainText()
        if not text.strip():
            self.services.dialogs.warning(self, "Identity", "The identity text is empty.")
            return
        saved = save_identity(
            self.services.store,
            text,
            axioms_from_text(self.axioms_edit.toPlainText()),
            self.note_edit.text().strip(),
        )
        self.note_edit.clear()
        self._loaded_version = -1
        self.refresh()
        self.status_message.emit(f"Saved identity version {saved.version}.")
        self.data_changed.emit()

    def _selected_version(self) -> IdentityVersion | None:
        item = self.versions.currentItem()
        if item is None:
            return None
        found: IdentityVersion | None = IdentityVersion.get_or_none(
            IdentityVersion.version == item.data(0, Qt.ItemDataRole.UserRole)
        )
        return found

    def _show_version(self) -> None:
        row = self._selected_version()
        if row is None:
            self.preview.clear()
            self.restore_button.setEnabled(False)
            return
        axioms = "\n".join(f"{i}. {a}" for i, a in enumerate(row.axioms, 1))
        self.preview.setPlainText(f"{row.identity_text.strip()}\n\nAxioms:\n{axioms}")
        self.restore_button.setEnabled(row.version != current_identity(self.services.store).version)

    def restore_selected(self) -> None:
        row = self._selected_version()
        if row is None:
            return
        saved = save_identity(
            self.services.store,
            row.identity_text,
            list(row.axioms),
            f"restored from version {row.version}",
        )
        self._loaded_version = -1
        self.refresh()
        self.status_message.emit(f"Restored version {row.version} as version {saved.version}.")
        self.data_changed.emit()

    # -- pane API -------------------------------------------------------------------------

    def refresh(self) -> None:
        """Reload the history; the editor is reloaded only when the current version changed
        (so a refresh caused by another pane never discards unsaved typing)."""
        current = current_identity(self.services.store)
        if current.version != self._loaded_version:
            self._loaded_version = current.version
            self.identity_edit.setPlainText(current.identity_text)
            # a blank line between axioms keeps wrapped long axioms readable
            self.axioms_edit.setPlainText("\n\n".join(current.axioms))
        self.version_label.setText(
            f"Current version: {current.version}" if current.version else "No identity saved yet."
        )
        selected = self.versions.currentItem()
        keep = selected.data(0, Qt.ItemDataRole.UserRole) if selected is not None else None
        self.versions.blockSignals(True)
        self.versions.clear()
        for row in identity_versions(self.services.store):
            item = QTreeWidgetItem(
                [str(row.version), format_time(format_utc(row.created_at)), row.note]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, row.version)
            self.versions.addTopLevelItem(item)
            if row.version == (keep if keep is not None else current.version):
                self.versions.setCurrentItem(item)
        self.versions.blockSignals(False)
        self._show_version()

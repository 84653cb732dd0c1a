"""File ▸ Export knowledge: the top-K patterns in any export format, written off the GUI thread.

A small dialog asks for the format (what ``curator export --format`` offers: Markdown,
JSON, a Mem0 list for ``Memory.add``, a Letta core-memory block) and, for the Letta
block, its character limit; then the save dialog asks where. The text is made by the
same function as the command line's (:func:`curator.store.memtool_export.export_text`),
so a file from either is the same. Ranking the active patterns reads all of them (17 ms
at 10,000 patterns) and the file may be on a slow disk or a network share, so both run
through ``ops.query``; the result (how many patterns, and for a Letta block how many
did not fit) or the one-line reason it failed comes back to the status bar or an error
dialog.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from curator.core.userpath import part_path
from curator.core.wording import plural
from curator.errors import CuratorError
from curator.gui.runtime.operations import OpContext
from curator.gui.runtime.services import AppServices
from curator.store.db import Store
from curator.store.knowledge import top_k_patterns
from curator.store.memtool_export import (
    DEFAULT_BLOCK_LIMIT,
    MIN_BLOCK_LIMIT,
    ExportText,
    export_text,
)

CHOICES = (
    ("markdown", "Markdown: the prompt block", "knowledge.md", "Markdown (*.md)"),
    ("json", "JSON: the patterns with their scores", "knowledge.json", "JSON (*.json)"),
    (
        "mem0",
        "Mem0: a JSON list for Memory.add",
        "knowledge-mem0.json",
        "Mem0 list (*.json)",
    ),
    (
        "letta-block",
        "Letta: one core-memory block",
        "knowledge-letta.txt",
        "Letta block (*.txt)",
    ),
)
"""Each format: its name (``export --format``), its label, suggested file and filter."""

MAX_BLOCK_LIMIT = 10_000_000
"""The spin box's top: far above any block a prompt holds."""


def write_export(
    store: Store,
    target: Path,
    *,
    database: Path | None = None,
    fmt: str | None = None,
    limit: int = DEFAULT_BLOCK_LIMIT,
) -> ExportText:
    """Write the top-K patterns to ``target`` in ``fmt`` (None: JSON for ``.json``, else
    Markdown); what was written (the text, how many patterns of how many).

    The save dialog accepts any name, the database's own included, and its "replace?"
    is one click: ``database`` (and its journal files) is refused as a target. The text
    goes to a new file beside the target first, which then replaces it, so a write that
    fails half way (a full disk, a share gone) leaves the file that was there whole.
    """
    try:
        real = target.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before 3.13)
        reason = getattr(exc, "strerror", None) or exc
        raise CuratorError(f"cannot write {target}: {reason}") from None
    if database is not None and _is_database(real, database):
        raise CuratorError(f"cannot write {target}: it is the database; choose another file")
    if real.is_dir():
        raise CuratorError(f"cannot write {target}: it is a folder; choose a file name")
    if fmt is None:
        fmt = "json" if target.suffix.lower() == ".json" else "markdown"
    try:
        made = export_text(store, top_k_patterns(store), fmt, limit)
    except ValueError as exc:  # a limit or format the dialog does not offer
        raise CuratorError(f"cannot export: {exc}") from None
    text = made.text
    part = part_path(real)
    try:
        # O_EXCL: a file of that name that is not ours is never opened, let alone written
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            with contextlib.suppress(FileNotFoundError):
                os.chmod(part, stat.S_IMODE(real.stat().st_mode))  # keep a replaced file's mode
            os.replace(part, real)
        except BaseException:
            part.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise CuratorError(f"cannot write {target}: {exc.strerror or exc}") from None
    return made


def _is_database(real: Path, database: Path) -> bool:
    """Whether ``real`` (resolved) is the database file or one of its journal files."""
    db = database.resolve()
    names = {db, *(db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal"))}
    if real in names:
        return True
    with contextlib.suppress(OSError):  # another name (a hard link) for the same file
        return real.exists() and os.path.samefile(real, db)
    return False


def describe_export(made: ExportText, target: Path) -> str:
    """The status bar's sentence on a finished export ("1 pattern", "20 patterns")."""
    if made.fmt == "mem0":
        return (
            f"Exported {plural(made.written, 'pattern')} to {target} as a Mem0 list for Memory.add."
        )
    if made.fmt == "letta-block":
        text = (
            f"Exported {made.written} of {plural(made.total, 'pattern')} to {target} as a "
            f"Letta block of {len(made.text):,} characters (limit {made.limit:,})"
        )
        left_out = made.total - made.written
        return text + (f"; {left_out} did not fit." if left_out else ".")
    return f"Exported {plural(made.written, 'pattern')} to {target}."


class ExportDialog(QDialog):
    """The format of File ▸ Export knowledge and, for a Letta block, its character limit.

    Accepting it does not write anything yet: the caller then asks where (the save
    dialog) and writes in the background.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("exportDialog")
        self.setWindowTitle("Export knowledge")
        self.format_box = QComboBox()
        self.format_box.setObjectName("exportFormat")
        for name, label, _suggested, _filter in CHOICES:
            self.format_box.addItem(label, name)
        self.limit = QSpinBox()
        self.limit.setObjectName("exportLimit")
        self.limit.setRange(MIN_BLOCK_LIMIT, MAX_BLOCK_LIMIT)
        self.limit.setValue(DEFAULT_BLOCK_LIMIT)
        self.limit.setSingleStep(500)
        self.limit.setSuffix(" characters")
        self.limit.setGroupSeparatorShown(True)
        self.limit.setToolTip(
            "The block's character limit in Letta (5,000 by default). The highest-ranked "
            "patterns that fit go in whole; the last line says how many did not."
        )
        self.note = QLabel()
        self.note.setObjectName("exportNote")
        self.note.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Format", self.format_box)
        form.addRow("Block limit", self.limit)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export…")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.buttons)
        self.format_box.currentIndexChanged.connect(self._format_changed)
        self._format_changed()

    @property
    def fmt(self) -> str:
        return str(self.format_box.currentData())

    def choose(self, fmt: str) -> None:
        """Select a format by its ``export --format`` name."""
        self.format_box.setCurrentIndex(self.format_box.findData(fmt))

    def _format_changed(self) -> None:
        letta = self.fmt == "letta-block"
        self.limit.setEnabled(letta)
        notes = {
            "markdown": "The top patterns as the agent receives them in its prompt.",
            "json": "The top patterns with importance, effective importance and dates.",
            "mem0": "Add each element with Memory.add(e['messages'], metadata=e['metadata'], "
            "infer=False); import-knowledge reads the list back.",
            "letta-block": "One block value, highest effective importance first, within the limit.",
        }
        self.note.setText(notes[self.fmt])


def export_knowledge(
    services: AppServices, parent: QWidget, show_message: Callable[[str], None]
) -> ExportDialog:
    """Ask for the format (non-blocking), then where, then export in the background."""
    dialog = ExportDialog(parent)
    dialog.accepted.connect(
        lambda: export_to(services, parent, show_message, dialog.fmt, dialog.limit.value())
    )
    services.dialogs.show(dialog)
    return dialog


def export_to(
    services: AppServices,
    parent: QWidget,
    show_message: Callable[[str], None],
    fmt: str,
    limit: int = DEFAULT_BLOCK_LIMIT,
) -> bool:
    """Ask where, then write ``fmt`` in the background; False when the user cancelled."""
    _name, _label, suggested, filters = next(c for c in CHOICES if c[0] == fmt)
    path = services.dialogs.save_file_name(parent, "Export knowledge", suggested, filters)
    if not path:
        return False
    target = Path(path)

    def work(ctx: OpContext) -> ExportText:
        return write_export(ctx.store, target, database=services.db_path, fmt=fmt, limit=limit)

    def failed(message: str) -> None:
        services.dialogs.error(parent, "Export knowledge", message)

    show_message(f"Exporting the knowledge to {target}…")
    services.ops.query(
        f"export-{target}",
        work,
        lambda made: show_message(describe_export(made, target)),
        failed,
        asked=True,  # its failure is a dialog even while the server is away
    )
    return True

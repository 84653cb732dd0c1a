"""The main window's File menu: importing episodes and knowledge, export and backup.

A mixin of :class:`curator.gui.window.main_window.MainWindow`, apart so the window module stays
about wiring panes. Every one of these writes or reads files and the database, so each
runs through ``ops.write`` (off the GUI thread, with progress and, for the imports, a
Cancel that keeps nothing); the callbacks say what happened and reload the panes the
write changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.chat_formats import ChatImport
from curator.core.wording import plural
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.importer import ImportCancelled, ImportReport, import_file

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QDialog, QMainWindow, QTabWidget, QWidget

    from curator.gui.episodes.episodes_pane import EpisodesPane
    from curator.gui.runtime.services import AppServices
    from curator.gui.window.auto_backup import AutoBackup

    _WindowBase = QMainWindow
else:
    _WindowBase = object


class FileMenuMixin(_WindowBase):
    """The File menu's imports, export and backup (see the module doc)."""

    services: AppServices
    tabs: QTabWidget
    auto_backup: AutoBackup

    if TYPE_CHECKING:
        knowledge_imported: SignalInstance

        @property
        def episodes_pane(self) -> EpisodesPane: ...

        def pane(self, name: str) -> QWidget: ...

        def show_message(self, text: str) -> None: ...

        def _pane_wrote(self, source: QWidget) -> None: ...

    def choose_import_file(self) -> None:
        path = self.services.dialogs.open_file_name(
            self,
            "Import episodes",
            "Episodes and chat exports (*.jsonl *.json *.csv *.zip);;All files (*)",
        )
        if path:
            self.import_episodes(Path(path))

    def import_episodes(self, path: Path) -> bool:
        """Import a file off the GUI thread, with progress; bad lines are listed with
        their line numbers afterwards, good ones kept. False while another write runs.

        Chat exports (ChatGPT, Claude, Telegram, Discord, Slack, CSV) are recognised by
        their content, as ``curator import`` does, with each format's default granularity.
        """

        def read_and_write(ctx: Any) -> ImportReport | ImportCancelled:
            try:
                return import_file(
                    ctx.store,
                    path,
                    progress=ctx.progress,
                    cancelled=lambda: ctx.cancelled,
                    chat=ChatImport(),
                )
            except ImportCancelled as exc:
                return exc  # not a failure: the person asked for it (Cancel)

        return self.services.ops.write(
            f"Importing {path.name}",
            read_and_write,
            lambda report: self._episodes_imported(path, report),
            lambda message: self._import_failed(message),
        )

    def _import_failed(self, message: str) -> None:
        self.services.dialogs.error(self, "Import", message)

    def _episodes_imported(self, path: Path, report: ImportReport | ImportCancelled) -> None:
        if isinstance(report, ImportCancelled):
            self.show_message(f"Import of {path.name} cancelled; nothing of it was imported.")
            return
        summary = (
            f"{report.imported:,} imported, {plural(report.duplicates, 'duplicate')}, "
            f"{len(report.errors):,} rejected from {path.name}."
        ) + "".join(f" Note: {note}." for note in report.notes)
        self.show_message(summary)
        self._list_rejected("Import", summary, report.errors)
        self._pane_wrote(self.episodes_pane)
        self.episodes_pane.model.note_added(report.imported)
        self.episodes_pane.refresh()

    def choose_knowledge_file(self) -> None:
        path = self.services.dialogs.open_file_name(
            self,
            "Import knowledge",
            "Knowledge (*.json *.md *.markdown *.txt *.af *.zip);;All files (*)",
        )
        if path:
            self.import_knowledge(Path(path))

    def import_knowledge(self, path: Path) -> bool:
        """Stage a knowledge file for review, off the GUI thread: reading a large file and
        running the dedup gate against every active pattern can take minutes, so it
        reports progress (patterns gated) and stops on Cancel with nothing staged. False
        while another write runs."""

        def stage(ctx: Any) -> Any:
            try:
                return import_knowledge(
                    ctx.store, path, progress=ctx.progress, cancelled=lambda: ctx.cancelled
                )
            except ImportCancelled as exc:
                return exc  # not a failure: the person asked for it

        return self.services.ops.write(
            f"Importing knowledge from {path.name}",
            stage,
            self._knowledge_imported,
            self._knowledge_import_failed,
        )

    def _list_rejected(self, title: str, summary: str, errors: Sequence[Any]) -> None:
        """The rejected lines of an import, the first 15 in the box and all in its details."""
        if not errors:
            return
        shown = errors[:15]
        lines = "\n".join(f"line {e.line}: {e.reason}" if e.line else e.reason for e in shown)
        if len(errors) > len(shown):
            lines += f"\n… and {len(errors) - len(shown)} more"
        self.services.dialogs.warning(
            self, title, f"{summary}\n\n{lines}", details="\n".join(str(e) for e in errors)
        )

    def _knowledge_imported(self, report: Any) -> None:
        if isinstance(report, ImportCancelled):
            self.show_message(str(report))
            return
        self.show_message(report.describe())
        self._list_rejected("Import knowledge", report.describe(), report.errors)
        if report.run_id is not None:
            review = self.pane("reviewPane")
            self._pane_wrote(review)
            self.tabs.setCurrentWidget(review)
            review.refresh()  # type: ignore[attr-defined]
            review.select_run(report.run_id)  # type: ignore[attr-defined]
        self.knowledge_imported.emit(report)

    def _knowledge_import_failed(self, message: str) -> None:
        self.services.dialogs.error(self, "Import knowledge", message)

    def export_knowledge(self) -> QDialog:
        """File ▸ Export knowledge: the format dialog (non-blocking); accepted, the save
        dialog, then the file written in the background (:mod:`knowledge_export`)."""
        from curator.gui.knowledge.knowledge_export import export_knowledge

        return export_knowledge(self.services, self, self.show_message)

    def backup_now(self) -> bool:
        """Into the backups folder, in the background; the status bar shows where. False
        when another write runs (the status bar says so)."""
        return self.auto_backup.backup_now()

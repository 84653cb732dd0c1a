"""File ▸ Export knowledge: the top-K patterns as Markdown or JSON, written off the GUI thread.

Ranking the active patterns reads all of them (17 ms at 10,000 patterns) and the file
may be on a slow disk or a network share, so both run through ``ops.query``; the result
(or the one-line reason it failed) comes back to the status bar or an error dialog.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QWidget

from curator.errors import CuratorError
from curator.gui.operations import OpContext
from curator.gui.services import AppServices
from curator.store.db import Store
from curator.store.knowledge import export_json, export_markdown, top_k_patterns


def write_export(store: Store, target: Path) -> int:
    """Write the top-K patterns to ``target`` (JSON for ``.json``, else Markdown); the count."""
    rows = top_k_patterns(store)
    if target.suffix.lower() == ".json":
        text = json.dumps(export_json(rows), ensure_ascii=False, indent=2) + "\n"
    else:
        text = export_markdown(rows)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CuratorError(f"cannot write {target}: {exc}") from None
    return len(rows)


def export_knowledge(
    services: AppServices, parent: QWidget, show_message: Callable[[str], None]
) -> bool:
    """Ask where, then export in the background; False when the user cancelled."""
    path = services.dialogs.save_file_name(
        parent, "Export knowledge", "knowledge.md", "Markdown (*.md);;JSON (*.json)"
    )
    if not path:
        return False
    target = Path(path)

    def work(ctx: OpContext) -> int:
        return write_export(ctx.store, target)

    def failed(message: str) -> None:
        services.dialogs.error(parent, "Export knowledge", message)

    show_message(f"Exporting the knowledge to {target}…")
    services.ops.query(
        f"export-{target}",
        work,
        lambda count: show_message(f"Exported {count} patterns to {target}."),
        failed,
    )
    return True

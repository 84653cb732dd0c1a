"""File ▸ Export knowledge: the top-K patterns as Markdown or JSON, written off the GUI thread.

Ranking the active patterns reads all of them (17 ms at 10,000 patterns) and the file
may be on a slow disk or a network share, so both run through ``ops.query``; the result
(or the one-line reason it failed) comes back to the status bar or an error dialog.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QWidget

from curator.errors import CuratorError
from curator.gui.operations import OpContext
from curator.gui.services import AppServices
from curator.store.db import Store
from curator.store.knowledge import export_json, export_markdown, top_k_patterns


def write_export(store: Store, target: Path, *, database: Path | None = None) -> int:
    """Write the top-K patterns to ``target`` (JSON for ``.json``, else Markdown); the count.

    The save dialog accepts any name, the database's own included, and its "replace?"
    is one click: ``database`` (and its journal files) is refused as a target. The text
    goes to a new file beside the target first, which then replaces it, so a write that
    fails half way (a full disk, a share gone) leaves the file that was there whole.
    """
    real = target.resolve()
    if database is not None and _is_database(real, database):
        raise CuratorError(f"cannot write {target}: it is the database; choose another file")
    if real.is_dir():
        raise CuratorError(f"cannot write {target}: it is a folder; choose a file name")
    rows = top_k_patterns(store)
    if target.suffix.lower() == ".json":
        text = json.dumps(export_json(rows), ensure_ascii=False, indent=2) + "\n"
    else:
        text = export_markdown(rows)
    part = real.with_name(f".{real.name}.{secrets.token_hex(4)}.part")
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
        raise CuratorError(f"cannot write {target}: {exc}") from None
    return len(rows)


def _is_database(real: Path, database: Path) -> bool:
    """Whether ``real`` (resolved) is the database file or one of its journal files."""
    db = database.resolve()
    names = {db, *(db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal"))}
    if real in names:
        return True
    with contextlib.suppress(OSError):  # another name (a hard link) for the same file
        return real.exists() and os.path.samefile(real, db)
    return False


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
        return write_export(ctx.store, target, database=services.db_path)

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

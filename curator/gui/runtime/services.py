"""The composition root's bundle: what every pane needs, built once in ``app.main``.

Panes receive this object instead of reaching for globals, so a test builds the same
window on a temporary database simply by building another ``AppServices``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from curator.gui.runtime.operations import StoreOps
from curator.gui.widgets.errors import Dialogs
from curator.store.db import Store
from curator.store.settings import Settings, load_settings

if TYPE_CHECKING:
    from curator.gui.runtime.worker import LlmWorker


@dataclass
class AppServices:
    store: Store
    db_path: Path
    worker: LlmWorker | None = None
    dialogs: Dialogs = field(default_factory=Dialogs)
    db_source: str = "default"
    """What chose the database: "--db", "$CURATOR_DB", "the profile" or "default"."""
    ops: StoreOps = field(init=False)
    """Background store operations (every GUI write and bulk read goes through it)."""

    def __post_init__(self) -> None:
        self.ops = StoreOps(self.store)

    def settings(self) -> Settings:
        """The saved settings, validated (the same values the CLI uses)."""
        return load_settings(self.store)

"""The strip above the panes that says, once, that the database server cannot be reached.

On PostgreSQL the server may go away under an open window (a restart, a network cut, a
laptop leaving the office). Every pane's read then failed with a dialog of its own,
"OperationalError: connection failed: ...", one per pane shown; a pane whose read failed
stayed empty until some other change reloaded it, and nothing said when the server was
back. Now the first read that finds the server away shows this banner instead (the
panes' read failures open no dialog meanwhile: :attr:`StoreOps.hush_read_failures`), a
quiet read tries the server every :data:`RETRY_MS`, and when any job reaches it the
banner goes and the panes are read again. A write that fails meanwhile is still a
dialog: its work was not done, and the person must know which.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from curator.gui.runtime.services import AppServices

RETRY_MS = 3000
"""How often the server is tried while it is away (one ``SELECT 1``, off the GUI thread)."""

PROBE_KEY = "server-reachable"


def _probe(ctx: Any) -> None:
    ctx.store.execute("SELECT 1")


class ServerBanner(QFrame):
    """Shown while the database server cannot be reached (see the module doc)."""

    def __init__(
        self, services: AppServices, reload: Callable[[], None], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("serverBanner")
        self.services = services
        self._reload = reload
        self.setFrameShape(QFrame.Shape.StyledPanel)
        # the palette's own colours (a dark theme stays dark): the tooltip's, which every
        # style draws as a note standing out from the window
        self.setAutoFillBackground(True)
        self.setBackgroundRole(self.palette().ColorRole.ToolTipBase)
        self.setForegroundRole(self.palette().ColorRole.ToolTipText)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.message = QLabel()
        self.message.setObjectName("serverBannerText")
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.RichText)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.retry_button = QPushButton("Try now")
        self.retry_button.setObjectName("serverRetry")
        self.retry_button.clicked.connect(self.try_now)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self._timer = QTimer(self)
        self._timer.setInterval(RETRY_MS)
        self._timer.timeout.connect(self.try_now)
        ops = services.ops
        ops.server_lost.connect(self._lost)
        ops.server_back.connect(self._back)
        ops.hush_read_failures = services.dialogs.quiet
        self.hide()

    @property
    def away(self) -> bool:
        """Whether the banner says the server is away."""
        return not self.isHidden()

    def _lost(self, why: str) -> None:
        self.message.setText(
            "<b>The database server cannot be reached.</b> "
            f"{html.escape(why)}<br>The panes show what they last read; they are read "
            f"again as soon as it answers (tried every {RETRY_MS // 1000} s)."
        )
        self.show()
        if not self._timer.isActive():
            self._timer.start()

    def _back(self) -> None:
        self._timer.stop()
        if self.away:
            self.hide()
            self._reload()

    def try_now(self) -> None:
        """One quiet read of the server; its result alone says whether it is back."""
        self.services.ops.query(PROBE_KEY, _probe, on_failed=lambda _why: None)

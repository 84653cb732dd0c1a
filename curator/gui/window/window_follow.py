"""The main window's follow of an agent's logs: File ▸ Follow a log…, and its status.

A mixin of :class:`curator.gui.window.main_window.MainWindow`. The follow itself is
:class:`curator.gui.window.follow_runner.FollowRunner` (``curator watch``'s code on a thread of
its own); this module only asks which file or folder, shows the state in the status bar
("following 2 logs: 1,204 lines, last 3 s ago", its tooltip listing the newest notes and
bad lines with their FILE:LINE), and offers Stop following. The logs followed when the
window last closed are read (off the GUI thread) and followed again at start.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog

from curator.core.textsafety import escape_controls
from curator.core.wording import plural
from curator.gui.widgets.eliding import ElidingLabel
from curator.gui.window.follow_runner import FollowRunner, FollowState, describe
from curator.store.follow_state import followed_paths

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QMenu

    from curator.gui.runtime.services import AppServices

    _WindowBase = QMainWindow
else:
    _WindowBase = object


def one_line(text: str) -> str:
    """A note as one line: controls shown escaped, a newline (a file name may hold one)
    written ``\\n``."""
    return escape_controls(text).replace("\n", "\\n").replace("\t", " ")


LOG_FILTER = "Agent logs (*.jsonl *.ndjson);;All files (*)"
FOLLOW_KEEP = len("following 12 logs: 12,345 lines")
"""What the follow's state keeps in a narrow window: how many logs and lines."""


class FollowMixin(_WindowBase):
    """File ▸ Follow a log…, Follow a folder of logs…, Stop following (see the module doc)."""

    services: AppServices

    if TYPE_CHECKING:

        def show_message(self, text: str) -> None: ...

    def _build_follow(self, menu: QMenu) -> None:
        self.follow_runner = FollowRunner(self.services.store, self)
        self.follow_runner.changed.connect(self._follow_changed)
        self.follow_runner.reported.connect(self._follow_reported)
        self.follow_action = QAction("&Follow a log…", self)
        self.follow_action.setObjectName("followLog")
        self.follow_action.setToolTip(
            "Import every new line an agent appends to a JSON Lines log, as it is written"
        )
        self.follow_action.triggered.connect(self.choose_log_to_follow)
        self.follow_folder_action = QAction("Follow a f&older of logs…", self)
        self.follow_folder_action.setObjectName("followFolder")
        self.follow_folder_action.triggered.connect(self.choose_folder_to_follow)
        self.stop_follow_action = QAction("S&top following", self)
        self.stop_follow_action.setObjectName("stopFollowing")
        self.stop_follow_action.setEnabled(False)
        self.stop_follow_action.triggered.connect(self.stop_following)
        menu.addActions([self.follow_action, self.follow_folder_action, self.stop_follow_action])
        self.follow_label = ElidingLabel(keep=FOLLOW_KEEP)
        self.follow_label.setObjectName("followLabel")
        self.follow_label.setContentsMargins(8, 0, 8, 0)
        self.follow_label.hide()
        self.statusBar().addPermanentWidget(self.follow_label)
        self._follow_clock = QTimer(self)  # "last 3 s ago" keeps counting between lines
        self._follow_clock.setInterval(1000)
        self._follow_clock.timeout.connect(self._show_follow_state)
        self.services.ops.query(
            "window.followed",
            lambda ctx: followed_paths(ctx.store),
            self._resume_follow,
            lambda message: self.show_message(f"Followed logs unreadable: {message}"),
        )

    def _resume_follow(self, paths: list[str]) -> None:
        if paths and not self.follow_runner.running:
            self.follow_logs(paths)

    def choose_log_to_follow(self) -> None:
        path = self.services.dialogs.open_file_name(self, "Follow a log", LOG_FILTER)
        if path:
            self.follow_logs([path])

    def choose_folder_to_follow(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Follow a folder of logs")
        if path:
            self.follow_logs([path])

    def follow_logs(self, paths: Sequence[str]) -> None:
        """Follow these files or folders too (off the GUI thread, see FollowRunner)."""
        self.follow_runner.follow(paths)
        self.stop_follow_action.setEnabled(True)
        self._follow_clock.start()
        self._show_follow_state()

    def stop_following(self) -> None:
        """Stop and forget the followed logs; what was imported stays."""
        self.follow_runner.stop()
        self.stop_follow_action.setEnabled(False)

    def follow_status_text(self) -> str:
        return self.follow_label.text()

    def _follow_changed(self, state: FollowState) -> None:
        if not state.running and not self.follow_runner.running:  # not a follow restarted
            self._follow_clock.stop()
            self.stop_follow_action.setEnabled(False)
        self._show_follow_state()

    def _follow_reported(self, text: str) -> None:
        """A note or a bad line: shown for a moment, and kept in the label's tooltip."""
        self.show_message(one_line(text))
        self._show_follow_state()

    def _show_follow_state(self) -> None:
        runner = self.follow_runner
        state = runner.state
        if runner.running and not state.running:  # started, its first report on its way
            text = f"following {plural(len(runner.paths), 'log')}…"  # no paths: too wide
        else:
            text = describe(state, time.monotonic())
        self.follow_label.setText(text)
        self.follow_label.setVisible(bool(text))
        tip = ["Followed: " + "; ".join(state.paths or runner.paths)]
        if runner.reports:
            tip += ["", "Latest notes and bad lines:", *runner.reports]
        # Plain text, one line per entry, whatever a file name holds ("<b>", a newline).
        lines = "<br>".join(html.escape(one_line(t)) for t in tip)
        self.follow_label.setToolTip(f"<qt>{lines}</qt>")

    def _shutdown_follow(self) -> None:
        self._follow_clock.stop()
        self.follow_runner.shutdown()

"""The main window: the panes, menus, toolbar, status bar, and watching the database.

The window owns no data logic; it wires panes to each other (a pane that wrote emits
``data_changed`` and the others reload when next shown) and to the LLM worker. Another
process (the CLI, a second window, an agent recording through ``curator mcp``, the
window's own follow of a log) may write the same database, so the window listens for
changes on a thread of its own (:class:`~curator.gui.window.change_listener.ChangeListener`,
either engine's watcher) and, told of one, reloads the visible pane when the store's
``data_version`` moved (its own writes leave it where ``_pane_wrote`` put it): an episode
recorded by an agent is shown within a second, without a reload by hand.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QByteArray, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QMainWindow,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from curator import __version__
from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.identity.identity_pane import IdentityPane
from curator.gui.insights.insights_pane import InsightsPane
from curator.gui.knowledge.knowledge_pane import KnowledgePane
from curator.gui.knowledge.provenance_nav import ProvenanceNavigator
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.settings.settings_pane import SettingsPane
from curator.gui.widgets.eliding import ElidingStatusBar
from curator.gui.widgets.pane import Pane
from curator.gui.window.auto_backup import AutoBackup
from curator.gui.window.server_banner import ServerBanner
from curator.gui.window.window_changes import OutsideChangesMixin
from curator.gui.window.window_files import FileMenuMixin
from curator.gui.window.window_fit import fit_window
from curator.gui.window.window_follow import FollowMixin
from curator.gui.window.window_status import StatusBarMixin
from curator.store.location import DatabaseLocation

log = logging.getLogger("curator.gui")

ORGANIZATION = "MemoryCurator"
APP_DISPLAY_NAME = "Memory Curator"
APPLICATION = "curator"
DEFAULT_SIZE = (1400, 900)
"""The first start's size, shrunk to the screen's free area when that is smaller."""


def app_version() -> str:
    """From the package itself: a frozen build carries no installed-distribution metadata."""
    return __version__


PANES: tuple[tuple[str, str, type[Pane]], ...] = (
    ("episodesPane", "Episodes", EpisodesPane),
    ("reviewPane", "Review", ReviewPane),
    ("knowledgePane", "Knowledge", KnowledgePane),
    ("identityPane", "Identity", IdentityPane),
    ("runsPane", "Runs", RunsPane),
    ("settingsPane", "Settings", SettingsPane),
    ("insightsPane", "Insights", InsightsPane),
)


def app_settings() -> QSettings:
    """The user's window state (geometry, splitters, current pane)."""
    return QSettings(ORGANIZATION, APPLICATION)


def window_title(name: str) -> str:
    """The document first, the application once ("demo.sqlite — Memory Curator").

    Qt appends the application display name (set in ``app.create_application``) only to
    titles that do not already end with it, so the name is never shown twice.
    """
    return f"{name} — {APP_DISPLAY_NAME}"


class MainWindow(StatusBarMixin, FileMenuMixin, FollowMixin, OutsideChangesMixin, QMainWindow):
    """The application window (see the module doc); the status bar, the File menu's
    imports, its follow of logs and its ear for other processes' commits live in
    :mod:`window_status`, :mod:`window_files`, :mod:`window_follow` and
    :mod:`window_changes`."""

    knowledge_imported = Signal(object)  # the KnowledgeImportReport, once it is shown

    def __init__(
        self,
        services: AppServices,
        qsettings: QSettings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.services = services
        self.qsettings = qsettings if qsettings is not None else app_settings()
        # Ends with the display name app.py sets: Qt then appends nothing more to it.
        self.setWindowTitle(window_title(DatabaseLocation.of(services.store).display_name))
        self._dirty: set[int] = set()
        self.too_big_for_screen = False
        self._geometry_restored = False
        self._closed = False
        self._quit_mid_run = False  # the user agreed to cancel the run and quit
        self._quit_box: QMessageBox | None = None

        self.tabs = QTabWidget()
        self.tabs.setObjectName("paneTabs")
        self.tabs.setDocumentMode(True)
        # The tab bar never holds the keyboard focus (Ctrl+1…7, Ctrl+Tab and Ctrl+PgUp/PgDn
        # switch panes): held there, the panes' keys did not reach their views.
        self.tabs.tabBar().setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.panes: list[Pane] = []
        for name, title, cls in PANES:
            pane = cls(services, self)
            pane.setObjectName(name)
            self.tabs.addTab(pane, title)
            self.panes.append(pane)
            pane.status_message.connect(self.show_message)
            pane.data_changed.connect(lambda p=pane: self._pane_wrote(p))
            if isinstance(pane, InsightsPane):
                pane.show_episodes.connect(self.show_episodes)
            if isinstance(pane, ReviewPane):
                pane.distill_requested.connect(lambda: self.start_distill())
            if isinstance(pane, EpisodesPane):
                pane.classify_requested.connect(lambda: self.classify_action.trigger())
        self.tabs.currentChanged.connect(self._pane_shown)
        self.tabs.currentChanged.connect(lambda _i: QTimer.singleShot(0, self.focus_current_pane))
        self.server_banner = ServerBanner(services, self.refresh_all)
        central = QWidget()
        central_layout = QVBoxLayout(central)
        central_layout.setContentsMargins(0, 0, 0, 0)
        central_layout.setSpacing(0)
        central_layout.addWidget(self.server_banner)
        central_layout.addWidget(self.tabs, 1)
        self.setCentralWidget(central)
        knowledge = self.pane("knowledgePane")
        assert isinstance(knowledge, KnowledgePane)
        self.provenance = ProvenanceNavigator(
            self, self.tabs, knowledge, self.episodes_pane, self.show_episodes
        )

        # Before anything asks for statusBar() (the follow menu adds its part to it), or Qt
        # makes one of its own: a long message ends in "…" here, not mid-letter.
        self.setStatusBar(ElidingStatusBar(self))
        self._build_actions()
        self._build_menus()
        self._build_toolbar()
        self._build_status_bar()
        self._connect_worker()
        self.episodes_pane.classify_button.setEnabled(self.classify_action.isEnabled())
        self.classify_action.enabledChanged.connect(self.episodes_pane.classify_button.setEnabled)

        self._listen_for_changes()
        self.auto_backup = AutoBackup.for_window(self)  # every N minutes of use, on close

        self.resize(*DEFAULT_SIZE)
        self.restore_state()
        self.fit_to_screen()
        # Every pane loads when first shown (the restored tab now, the others later).
        self._dirty = set(range(len(self.panes)))
        self._start_first_load()

    # -- panes ----------------------------------------------------------------------------

    def pane(self, name: str) -> QWidget:
        found = self.findChild(QWidget, name)
        if found is None:
            raise KeyError(name)
        return found

    @property
    def episodes_pane(self) -> EpisodesPane:
        pane = self.panes[0]
        assert isinstance(pane, EpisodesPane)
        return pane

    def show_episodes(self, ids: list[int], title: str) -> None:
        """Switch to the Episodes pane showing only ``ids`` (an Insights matrix cell, a
        pattern's source episode). Asking for ``ids`` reads the list anew, so a pane that
        a change elsewhere left to be reloaded when shown reloads only the facts of its
        filters beside it (it read the whole list twice, the reload after the jump)."""
        pane = self.episodes_pane
        index = self.panes.index(pane)
        stale = index in self._dirty
        self._dirty.discard(index)
        pane.show_ids(list(ids), title, facts=stale)
        self.tabs.setCurrentWidget(pane)

    def _pane_shown(self, index: int) -> None:
        if index in self._dirty:
            self._dirty.discard(index)
            self._refresh(index)

    def _refresh(self, index: int) -> None:
        """Reload one pane; a failure (data the pane cannot show) is a dialog, and the
        window and the other panes carry on."""
        pane = self.panes[index]
        try:
            pane.refresh()
        except Exception as exc:
            log.exception("reloading the %s pane failed", pane.objectName())
            self.services.dialogs.exception(self, exc)

    def refresh_all(self) -> None:
        """Reload the visible pane now and the others when they are shown."""
        current = self.tabs.currentIndex()
        self._dirty.update(i for i in range(len(self.panes)) if i != current)
        self._refresh(current)
        self.update_status()

    # -- actions --------------------------------------------------------------------------

    def _action(
        self,
        text: str,
        slot: Any,
        shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
        name: str = "",
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if name:
            action.setObjectName(name)
        action.triggered.connect(slot)
        return action

    def _build_actions(self) -> None:
        style = self.style()
        sp = style.StandardPixmap
        self.import_action = self._action(
            "&Import episodes…", self.choose_import_file, QKeySequence.StandardKey.Open, "import"
        )
        self.import_action.setIcon(style.standardIcon(sp.SP_DialogOpenButton))
        self.import_knowledge_action = self._action(
            "Import &knowledge…", self.choose_knowledge_file, None, "importKnowledge"
        )
        self.import_knowledge_action.setToolTip(
            "Stage existing memory (JSON list, text lines, Markdown bullets) for review"
        )
        self.export_action = self._action(
            "&Export knowledge…", self.export_knowledge, "Ctrl+E", "export"
        )
        self.backup_action = self._action("&Backup now", self.backup_now, None, "backup")
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit, "quit")
        self.undo_action = self._action(
            "&Undo relabel", self.undo_relabel, QKeySequence.StandardKey.Undo, "undoRelabel"
        )
        self.classify_action = self._action("&Classify", self.start_classify, "Ctrl+K", "classify")
        self.classify_action.setIcon(style.standardIcon(sp.SP_MediaPlay))
        self.classify_action.setToolTip("Label the unlabelled episodes with the local model")
        self.distill_action = self._action("&Distill", self.start_distill, "Ctrl+D", "distill")
        self.distill_action.setIcon(style.standardIcon(sp.SP_MediaSeekForward))
        self.distill_action.setToolTip("Distil patterns from labelled episodes for review")
        self.cancel_action = self._action("Ca&ncel run", self.cancel_run, "Esc", "cancel")
        self.cancel_action.setIcon(style.standardIcon(sp.SP_MediaStop))
        self.cancel_action.setEnabled(False)
        self.about_action = self._action("&About Memory Curator", self.show_about, None, "about")
        self.shortcuts_action = self._action(
            "&Keyboard shortcuts",
            self.show_shortcuts,
            QKeySequence.StandardKey.HelpContents,
            "keyboardShortcuts",
        )
        self.pane_actions: list[QAction] = []
        for index, (_name, title, _cls) in enumerate(PANES):
            action = self._action(
                f"&{title}",
                lambda _=False, i=index: self.tabs.setCurrentIndex(i),
                f"Ctrl+{index + 1}",
            )
            self.pane_actions.append(action)
        # Ctrl+PgDown/PgUp switch tabs in browsers and editors; QTabWidget takes them
        # only while the focus is on its tab bar, and a focused table moved its cursor
        # with them instead. As the window's own shortcuts they work from any pane.
        self.next_pane_action = self._action(
            "&Next pane", lambda: self._step_pane(1), "Ctrl+PgDown", "nextPane"
        )
        self.previous_pane_action = self._action(
            "&Previous pane", lambda: self._step_pane(-1), "Ctrl+PgUp", "previousPane"
        )

    def _step_pane(self, step: int) -> None:
        """The next or previous pane, round the end."""
        self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.import_action)
        file_menu.addAction(self.import_knowledge_action)
        file_menu.addAction(self.export_action)
        file_menu.addAction(self.backup_action)
        file_menu.addSeparator()
        self._build_follow(file_menu)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = bar.addMenu("&Edit")
        edit_menu.addAction(self.undo_action)
        run_menu = bar.addMenu("&Run")
        run_menu.addActions([self.classify_action, self.distill_action, self.cancel_action])
        view_menu = bar.addMenu("&View")
        view_menu.addActions(self.pane_actions)
        view_menu.addActions([self.next_pane_action, self.previous_pane_action])
        view_menu.addSeparator()
        view_menu.addAction(self.provenance.back_action)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.shortcuts_action)
        help_menu.addAction(self.about_action)

    def _build_toolbar(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        toolbar.addAction(self.import_action)
        toolbar.addSeparator()
        toolbar.addActions([self.classify_action, self.distill_action, self.cancel_action])
        self.addToolBar(toolbar)

    def show_settings(self) -> None:
        self.tabs.setCurrentWidget(self.pane("settingsPane"))

    def show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    # -- worker ---------------------------------------------------------------------------

    @property
    def runs_pane(self) -> RunsPane:
        pane = self.pane("runsPane")
        assert isinstance(pane, RunsPane)
        return pane

    def _connect_worker(self) -> None:
        # the run limit, remembered; the Episodes pane's Classify button names it
        self.runs_pane.limit_changed.connect(self.episodes_pane.set_run_limit)
        self.runs_pane.use_settings(self.qsettings)
        worker = self.services.worker
        available = worker is not None
        self.classify_action.setEnabled(available)
        self.distill_action.setEnabled(available)
        if worker is None:
            self.run_label.setText("no model worker")
            return
        worker.progress.connect(self._run_progress)
        worker.finished.connect(self._run_finished)
        worker.failed.connect(self._run_failed)
        worker.model_loaded.connect(self.offload_label.setText)
        worker.busy_changed.connect(self._busy_changed)

    def _busy_changed(self, busy: bool) -> None:
        self.classify_action.setEnabled(not busy)
        self.distill_action.setEnabled(not busy)
        self.cancel_action.setEnabled(busy)
        worker = self.services.worker
        if busy and worker is not None:
            self.run_label.setText(f"running {worker.kind}…")
        elif not busy and self.run_label.text().startswith("running"):
            self.run_label.setText("idle")

    def start_classify(self) -> bool:
        """The toolbar's Classify: the Runs pane's start (its limit, its long-run question)."""
        return self.runs_pane.start_classify()

    def start_distill(self) -> bool:
        """The toolbar's Distill: the Runs pane's start (its limit, its long-run question)."""
        return self.runs_pane.start_distill()

    def cancel_run(self) -> None:
        if self.services.worker is not None and self.services.worker.busy:
            self.services.worker.cancel()
            self.run_label.setText("cancelling…")

    def _run_progress(self, progress: Any) -> None:
        step = getattr(progress, "step", "")
        done = getattr(progress, "done", 0)
        total = getattr(progress, "total", 0)
        self.run_label.setText(f"running {step} {done}/{total}")

    def _run_finished(self, result: object) -> None:
        self.run_label.setText("idle")
        self.show_message(f"Run finished: {getattr(result, 'status', 'done')}")
        self.refresh_all()

    def _run_failed(self, message: str) -> None:
        self.statusBar().clearMessage()  # "Replaying the gold set…" is over: the dialog says why
        self.run_label.setText("idle (last run failed)")
        self.services.dialogs.error(self, "Run failed", message)
        self.refresh_all()

    def undo_relabel(self) -> None:
        """Edit ▸ Undo (Ctrl+Z). On the Review pane it undoes the run's last decision, as
        Ctrl+Z in its list does, wherever the focus is in the pane (the candidate's text,
        its sources): switching to Episodes to undo a relabel there surprised."""
        review = self.pane("reviewPane")
        if self.tabs.currentWidget() is review and isinstance(review, ReviewPane):
            review.undo_decision()
            return
        self.tabs.setCurrentIndex(0)
        self.episodes_pane.undo_relabel()

    def show_shortcuts(self) -> QWidget:
        """Help ▸ Keyboard shortcuts (F1): built from the actions and the panes' keys."""
        from curator.gui.window.shortcuts import ShortcutsDialog

        return self.services.dialogs.show(ShortcutsDialog(self))

    def show_about(self) -> None:
        self.services.dialogs.message(
            self,
            "About Memory Curator",
            f"Memory Curator {app_version()}\n\nCurate the long-term memory of an autonomous "
            "LLM agent: label episodes, review distilled knowledge, edit its identity.",
        )

    # -- state ----------------------------------------------------------------------------

    def _splitters(self) -> list[QSplitter]:
        return [s for s in self.findChildren(QSplitter) if s.objectName()]

    def save_state(self) -> None:
        s = self.qsettings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/pane", self.tabs.currentIndex())
        for splitter in self._splitters():
            s.setValue(f"splitters/{splitter.objectName()}", splitter.saveState())
        s.sync()

    def restore_state(self) -> None:
        s = self.qsettings
        geometry = s.value("window/geometry")
        self._geometry_restored = isinstance(geometry, QByteArray) and self.restoreGeometry(
            geometry
        )
        state = s.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        self._splitters_restored = False  # at the first show, once the panes have their size
        pane = s.value("window/pane")
        try:
            index = int(str(pane)) if pane is not None else 0
        except (TypeError, ValueError):
            index = 0
        if 0 <= index < self.tabs.count():
            self.tabs.setCurrentIndex(index)

    def fit_to_screen(self) -> None:
        """Lie inside the screen's free area, frame and status bar included (a 1024×700
        laptop, a window remembered from a bigger or a disconnected monitor): otherwise
        the status bar and the panes' bottom rows are off-screen, out of reach. The first
        start is centred; a remembered window stays where it was when that fits.
        Before the first show the frame is assumed (:mod:`window_fit`); after it the
        window is fitted again with the real one."""
        self.too_big_for_screen = fit_window(self, centre=not self._geometry_restored)
        self._geometry_restored = True  # fitted once: from now on the user's place

    def show_fitted(self) -> None:
        """Show the window inside the screen's free area (:meth:`fit_to_screen`)."""
        self.show()

    def restore_splitters(self) -> None:
        """Put back the remembered splitter sizes.

        Done when the window is first shown, not at construction: a splitter restored
        before its pane has its real size spreads the difference by stretch factor, so the
        proportions the user chose would drift at every start.
        """
        self._splitters_restored = True
        for splitter in self._splitters():
            saved = self.qsettings.value(f"splitters/{splitter.objectName()}")
            if isinstance(saved, QByteArray):
                splitter.restoreState(saved)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._splitters_restored:
            self._splitters_restored = True
            QTimer.singleShot(0, self.fit_to_screen)  # again, now that the frame is known
            QTimer.singleShot(0, self.restore_splitters)  # after the first layout pass
            QTimer.singleShot(0, self.focus_current_pane)

    def focus_current_pane(self) -> None:
        """Keyboard focus into the visible pane's main view (its focus proxy).

        Left to Qt, the first focus lands on the tab bar, and a click on another tab does
        not move it (a tab bar takes focus by Tab only): the Review pane's digit keys still
        worked there, but the arrows, Backspace and Ctrl+Z did not reach its list (Ctrl+Z
        undid a relabel in Episodes instead). QTabWidget itself gives a newly shown pane's
        first control the focus (Review's run selector, where Up and Down change the
        run), so this runs at first show and after every switch of pane.
        """
        pane = self.tabs.currentWidget()
        if pane is not None and pane.isVisible() and pane.focusProxy() is not None:
            pane.setFocus(Qt.FocusReason.OtherFocusReason)

    def _confirm_quit_mid_run(self) -> bool:
        """True when the window may close; while a run goes, ask first and say no for now.

        The question is window-modal without a nested event loop (``Dialogs.confirm``), so
        the close is refused here and made again by the yes button, after cancelling the
        run (it keeps what it finished, recorded as cancelled). No keeps the window and
        the run.
        """
        worker = self.services.worker
        if worker is None or not worker.busy or self._quit_mid_run:
            return True
        box = self._quit_box
        if box is not None and box.isVisible():
            return False  # already asking
        self._quit_box = box = self.services.dialogs.confirm(
            self,
            "Quit Memory Curator",
            f"A {worker.kind} run is in progress: cancel it and quit?",
            self._cancel_run_and_quit,
            yes_text="Cancel run and quit",
            no_text="Keep running",
        )
        # The box deletes itself once answered: forget it then, or the next close would
        # ask a deleted box whether it is visible (a crash, not an exception).
        box.finished.connect(self._forget_quit_box)
        return False

    def _forget_quit_box(self) -> None:
        self._quit_box = None

    def _cancel_run_and_quit(self) -> None:
        self._quit_mid_run = True
        if self.services.worker is not None:
            self.services.worker.cancel()
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._closed:
            if not self._confirm_quit_mid_run():
                event.ignore()
                return
            if not all(pane.confirm_discard() for pane in self.panes):
                # Kept open after all: the next close during a run asks about it again.
                self._quit_mid_run = False
                event.ignore()
                return
            self._closed = True
            self._stop_listening()
            self.save_state()
            # Gone from the screen before the waits below: a write held up by another
            # writer (the CLI) can take the busy timeout to end, and a painted window
            # that ignores every click meanwhile looks hung.
            self.hide()
            self._shutdown_follow()
            for pane in self.panes:
                pane.shutdown()
            self.services.ops.shutdown()
            if self.services.worker is not None:
                self.services.worker.shutdown()
            self.auto_backup.shutdown(self)
            self.services.dialogs.close_all()
        event.accept()

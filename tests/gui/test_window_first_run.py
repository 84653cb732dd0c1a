"""First start and small screens: the next action as a button, a detail panel that
follows the filter, Preview reachable at 1024x700, F1's shortcut list, the title."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence

from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.runtime.services import AppServices
from curator.gui.window.main_window import MainWindow
from curator.gui.window.shortcuts import ShortcutsDialog
from curator.store.db import Store

BOTH_ENGINES = True  # the window on a SQLite file and on a PostgreSQL database


def _pending(store: Store) -> int:
    sql = "SELECT count(*) FROM episode WHERE human_label IS NULL AND model_label IS NULL"
    return int(store.execute(sql)[0][0])


def loaded(qtbot, pane: EpisodesPane) -> None:
    """The pane's rows and counts read: on a server they always come from the background."""
    qtbot.waitUntil(lambda: not pane.model.loading and pane.ops.pending == 0, timeout=10_000)


def test_pending_episodes_offer_classify_as_a_button(qtbot, main_window: MainWindow, store):
    pane = main_window.episodes_pane
    loaded(qtbot, pane)
    pending = _pending(store)
    assert pending > 0
    button = pane.classify_button
    assert button.isVisible()
    assert button.text() == f"Classify {pending} pending episodes"
    assert not button.isEnabled()  # no model worker in this window: Classify is off too
    main_window.classify_action.setEnabled(True)
    assert button.isEnabled()
    with qtbot.waitSignal(main_window.classify_action.triggered, timeout=2000):
        button.click()


def test_no_button_once_everything_is_classified(qtbot, main_window: MainWindow, store):
    with store.write():
        store.execute("UPDATE episode SET model_label = 'noise' WHERE model_label IS NULL")
    main_window.episodes_pane.refresh()
    loaded(qtbot, main_window.episodes_pane)
    assert not main_window.episodes_pane.classify_button.isVisible()


def test_the_detail_panel_is_cleared_when_the_filter_removes_the_episode(
    qtbot, main_window: MainWindow, store
) -> None:
    pane = main_window.episodes_pane
    pane.search_edit.setText("burnt out")
    pane.apply_filter()
    loaded(qtbot, pane)
    pane.table.selectRow(0)
    (shown_id,) = pane.selected_ids()
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)  # read in the background
    assert "burnt out" in pane.detail.toPlainText().lower()

    pane.search_edit.setText("no episode contains this sentence")
    pane.apply_filter()
    loaded(qtbot, pane)
    assert pane.model.rowCount() == 0
    assert pane.detail.toPlainText().strip() == ""

    pane.search_edit.setText("burnt out")  # back: nothing is selected, nothing shown
    pane.apply_filter()
    loaded(qtbot, pane)
    assert pane.selected_ids() == [] and pane.detail.toPlainText().strip() == ""

    pane.select_ids([shown_id])
    pane.search_edit.setText("burnt")  # a wider filter keeps the episode: it follows
    pane.apply_filter()
    loaded(qtbot, pane)
    assert pane.selected_ids() == [shown_id]
    qtbot.waitUntil(lambda: not pane.detail_loading, timeout=10_000)
    assert "burnt out" in pane.detail.toPlainText().lower()


def test_preview_stays_on_screen_at_1024x700(qtbot, services: AppServices) -> None:
    pane = EpisodesPane(services)
    qtbot.addWidget(pane)
    assert pane.minimumSizeHint().width() <= 1000  # fits a 1024 px window with margins
    pane.resize(1000, 600)
    pane.show()
    qtbot.waitExposed(pane)
    pane.refresh()  # what the window does when the pane is first shown
    table = pane.table
    preview = pane.model.columnCount() - 1
    left = table.horizontalHeader().sectionViewportPosition(preview)
    assert left + 100 <= table.viewport().width()  # at least 100 px of Preview visible
    assert pane.splitter.objectName() == "episodesSplitter"  # the window saves its sizes
    assert not pane.splitter.childrenCollapsible()
    assert pane.detail.width() >= 200
    loaded(qtbot, pane)  # its rows' read delivered before the database goes


def test_f1_lists_every_shortcut(qtbot, main_window: MainWindow) -> None:
    action = main_window.shortcuts_action
    assert action.shortcut() == QKeySequence(QKeySequence.StandardKey.HelpContents)
    action.trigger()
    dialogs = [d for d in main_window.services.dialogs.shown if isinstance(d, ShortcutsDialog)]
    assert len(dialogs) == 1
    text = dialogs[0].view.toPlainText()
    for window_action in main_window.findChildren(type(action)):
        if not window_action.shortcut().isEmpty() and window_action.text():
            assert window_action.text().replace("&", "") in text
    assert "Ctrl+K" in text and "Classify" in text and "F1" in text
    assert "Episodes pane" in text and "constitutional" in text  # the panes' keys
    assert "Review pane" in text and "Accept proposal" in text
    assert "README" in text


def test_the_title_names_the_application_once(main_window: MainWindow, store: Store) -> None:
    assert main_window.windowTitle() == f"{store.path.name} — Memory Curator"


def test_the_whole_window_fits_1024_by_700(qtbot, main_window: MainWindow) -> None:
    """No pane, nor the status bar, forces the window past a small laptop screen."""
    main_window.resize(1024, 700)
    qtbot.waitUntil(lambda: main_window.width() == 1024 and main_window.height() == 700)
    hint = main_window.minimumSizeHint()
    assert hint.width() <= 1024 and hint.height() <= 700, hint
    assert main_window.statusBar().minimumSizeHint().width() <= 1024
    qtbot.waitUntil(lambda: not main_window.status_loading, timeout=30_000)
    assert main_window.demo_button.isVisible()  # the notice is still there, shorter


def test_a_window_larger_than_the_screen_is_fitted_not_maximized(
    qtbot, main_window: MainWindow
) -> None:
    free = main_window.screen().availableGeometry()
    main_window.resize(free.width() + 400, free.height() + 300)  # remembered from a big monitor
    main_window.fit_to_screen()
    assert main_window.too_big_for_screen
    assert free.contains(main_window.frameGeometry()), (free, main_window.frameGeometry())
    assert not main_window.isMaximized()

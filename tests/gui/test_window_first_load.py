"""The window reads the Episodes list once at its start, and once for a jump to some
episodes, on either engine.

The Episodes pane read its rows when it was built and again when the window first showed
it: the id list, the counts and the page in view twice at every start, and on a server
the first read came before the window listened for changes. A page that could not be read
was then said twice in the status bar.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from curator.gui.episodes import episode_filters, episode_model
from curator.gui.runtime.services import AppServices
from curator.gui.window import window_changes
from curator.gui.window.main_window import MainWindow
from curator.gui.window.window_changes import POLL_MS

READS = ("query_first_ids", "query_ids", "fetch_rows", "count_episodes")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def counted_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the Episodes table's reads (the real ones run)."""
    reads: Counter[str] = Counter()
    for name in READS:
        real = getattr(episode_model, name)

        def counting(*args: Any, _name: str = name, _real: Any = real) -> Any:
            reads[_name] += 1
            return _real(*args)

        monkeypatch.setattr(episode_model, name, counting)
    return reads


@pytest.fixture(autouse=True)
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first load waits for the watcher however busy the machine (past a second it
    loads without it, and the watcher's first report reloads: the fallback, by design)."""
    monkeypatch.setattr(window_changes, "FIRST_HEARD_MS", 30_000)


def open_window(qtbot, services: AppServices, qsettings: QSettings) -> MainWindow:
    qsettings.setValue("window/pane", 0)  # Episodes in view at the start
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    pane = window.episodes_pane
    qtbot.waitUntil(lambda: pane.model.complete and not pane.model.loading, timeout=10_000)
    qtbot.wait(2 * POLL_MS)  # a second load would have started by now
    ops = window.services.ops
    qtbot.waitUntil(lambda: not ops.busy and ops.pending == 0 and not pane.model.loading)
    return window


def test_the_pane_in_view_is_read_once_at_the_start(
    qtbot, services: AppServices, qsettings: QSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = counted_reads(monkeypatch)
    window = open_window(qtbot, services, qsettings)
    assert window.episodes_pane.model.rowCount() > 0
    ids = reads["query_ids"] + reads["query_first_ids"]
    assert ids in (1, 2)  # the whole list, or the first rows and then the rest
    assert reads["query_ids"] <= 1 and reads["query_first_ids"] <= 1
    assert reads["fetch_rows"] <= 1  # the page in view (a file's pages are read as painted)
    window.close()


@pytest.mark.parametrize("engine", ["postgresql"])  # a file's pages are read as painted
def test_a_page_that_cannot_be_read_at_the_start_is_said_once(
    qtbot, services: AppServices, qsettings: QSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []

    def unreadable(*args: Any) -> Any:  # fault injection: the server went away
        raise OSError("server closed the connection unexpectedly")

    monkeypatch.setattr(episode_model, "fetch_rows", unreadable)
    real_show = MainWindow.show_message

    def heard(window: MainWindow, text: str) -> None:
        said.append(text)
        real_show(window, text)

    monkeypatch.setattr(MainWindow, "show_message", heard)
    window = open_window(qtbot, services, qsettings)
    assert len([line for line in said if "closed the connection" in line]) == 1
    window.close()


@pytest.mark.parametrize("stale", [True, False], ids=["stale", "fresh"])
def test_a_jump_to_some_episodes_reads_the_list_once(
    qtbot,
    services: AppServices,
    qsettings: QSettings,
    monkeypatch: pytest.MonkeyPatch,
    stale: bool,
) -> None:
    """An Insights cell or a pattern's source opens the Episodes pane on some episodes.
    When a change elsewhere had left the pane to be reloaded when shown, the jump read
    the list twice: for the episodes asked for, then the reload. The filters' facts
    (sources, dates) are read again only then."""
    reads = counted_reads(monkeypatch)
    facts: list[int] = []
    real_facts = episode_filters._facts
    monkeypatch.setattr(
        episode_filters, "_facts", lambda store: (facts.append(1), real_facts(store))[1]
    )
    window = open_window(qtbot, services, qsettings)
    pane = window.episodes_pane
    window.tabs.setCurrentIndex(2)  # Knowledge
    if stale:
        window.refresh_all()  # as a change elsewhere does: the hidden panes reload when shown
    ops = window.services.ops
    qtbot.waitUntil(lambda: not ops.busy and ops.pending == 0)
    wanted = sorted(pane.model.ids)[:3]
    reads.clear()
    facts.clear()
    window.show_episodes(wanted, "Three episodes")
    assert window.tabs.currentWidget() is pane
    qtbot.waitUntil(lambda: pane.model.complete and not pane.model.loading, timeout=10_000)
    qtbot.waitUntil(lambda: not ops.busy and ops.pending == 0 and not pane.model.loading)
    assert sorted(pane.model.ids) == wanted
    assert reads["query_ids"] + reads["query_first_ids"] == 1
    assert len(facts) == (1 if stale else 0)
    window.close()

"""A window on a database server sends it nothing from the GUI thread.

Every statement to PostgreSQL is a round trip over the network: tens of milliseconds to a
remote server, seconds to one that stopped answering. The window hears other processes'
writes, tells its own writes from theirs and reloads the pane in view; on a server each
of those reads (the change counter, the id list, the counts, the page of rows the table
is drawing, every other pane's reads) runs off the GUI thread. A *statement probe* (a fault
injection around peewee's ``execute_sql`` that records the thread and the statement, then
runs it) watches the GUI thread while other processes and the window itself write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import peewee
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QSettings

from curator import Curator
from curator.gui.episodes import episode_model
from curator.gui.episodes.episodes_pane import EpisodesPane
from curator.gui.review.review_pane import ReviewPane
from curator.gui.runs.runs_pane import RunsPane
from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.settings.settings_pane import SettingsPane
from curator.gui.window.change_listener import ChangeListener
from curator.gui.window.main_window import MainWindow
from curator.pipeline import review
from curator.pipeline.labels import relabel
from curator.store.backup import BackupResult
from curator.store.changes import Change, PostgresWatcher
from curator.store.db import Store
from curator.store.models import Episode
from curator.store.settings import load_settings
from tests.gui.test_review_pane import build_staged_run
from tests.gui.test_window_live_engines import another_process

T = TypeVar("T")

ROWS_SQL = "SELECT id, label FROM episode ORDER BY id"


RECORDER = """
import sys
from curator import Curator

with Curator(db=sys.argv[1]) as memory:
    for i in range(int(sys.argv[3])):
        memory.record(f"note {i} from writer {sys.argv[2]}", source="burst")
"""


def record(store: Store, writer: int, notes: int) -> None:
    """Another process records ``notes`` episodes through the Python API."""
    another_process(RECORDER, store.location, str(writer), str(notes))


@pytest.fixture
def engine() -> str:
    return "postgresql"


class StatementProbe:
    """Fault injection: records every statement the GUI thread runs, then runs it."""

    def __init__(self) -> None:
        self.on_gui_thread: list[str] = []
        self.elsewhere = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = peewee.Database.execute_sql
        probe = self

        def execute_sql(db: peewee.Database, sql: str, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                probe.on_gui_thread.append(" ".join(str(sql).split()))
            else:
                probe.elsewhere += 1
            return real(db, sql, *args, **kwargs)

        monkeypatch.setattr(peewee.Database, "execute_sql", execute_sql)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[StatementProbe]:
    found = StatementProbe()
    found.install(monkeypatch)
    yield found


def count(store: Store) -> int:
    with store.read():
        return int(Episode.select().count())


@pytest.fixture
def shown(qtbot, main_window: MainWindow, store: Store) -> tuple[EpisodesPane, int]:
    """The Episodes pane in view and loaded, and how many episodes it shows."""
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    before = count(store)
    qtbot.waitUntil(lambda: pane.model.rowCount() == before and not pane.model.loading)
    # On a busy machine the watcher may listen after the first load (FIRST_HEARD_MS), and
    # its first report then reloads the pane: that reload is over before a test begins.
    ops = main_window.services.ops
    qtbot.waitUntil(
        lambda: (
            main_window.listening
            and not main_window._outside_pending
            and not ops.busy
            and ops.pending == 0
            and not pane.model.loading
        ),
        timeout=10_000,
    )
    return pane, before


def test_outside_writes_and_our_own_are_read_off_the_gui_thread(
    qtbot,
    main_window: MainWindow,
    store: Store,
    probe: StatementProbe,
    shown: tuple[EpisodesPane, int],
) -> None:
    pane, before = shown
    probe.on_gui_thread.clear()

    record(store, 0, 1)  # another process records an episode
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 1, timeout=10_000)
    pane.select_ids([pane.model.episode_id(0)])
    pane.relabel_selected("noise")  # the window's own write, then its reload
    qtbot.waitUntil(lambda: not main_window.services.ops.busy and not pane.model.loading)
    record(store, 1, 1)  # and one more, after the window's own write
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 2, timeout=10_000)

    assert probe.elsewhere > 0  # the probe sees the reads that ran elsewhere
    assert probe.on_gui_thread == []


def test_a_burst_of_outside_writes_is_shown_with_no_read_on_the_gui_thread(
    qtbot, store: Store, probe: StatementProbe, shown: tuple[EpisodesPane, int]
) -> None:
    pane, before = shown
    probe.on_gui_thread.clear()
    writers = [threading.Thread(target=record, args=(store, n, 20)) for n in range(3)]
    for writer in writers:
        writer.start()
    while any(writer.is_alive() for writer in writers):
        qtbot.wait(20)
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 60, timeout=10_000)
    assert probe.on_gui_thread == []


def test_a_colleagues_decision_heard_only_after_my_own_write_is_still_shown(
    qtbot, main_window: MainWindow, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher hears a colleague's commit late (a slow server's answer, held here by
    a fault injection on its counter read), and my own decision commits meanwhile: the
    counter my write reports already counts the colleague's commit, so the window must
    not take everything up to it for its own."""
    ids = build_staged_run(store)
    pane = main_window.pane("reviewPane")
    assert isinstance(pane, ReviewPane)
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: pane.settled and pane.current_run_id() == ids["run"], timeout=30_000)
    mine, theirs = [c for c in pane.candidates() if c.action is None][:2]
    pane._select_row(pane.model.find_row(lambda row: row.id == mine.id))
    assert pane.current_candidate().id == mine.id
    held, reading = threading.Event(), threading.Event()
    real = PostgresWatcher._counter

    def late(watcher: PostgresWatcher) -> int | None:
        reading.set()
        held.wait(30)
        return real(watcher)

    monkeypatch.setattr(PostgresWatcher, "_counter", late)
    try:
        colleague = threading.Thread(target=decide_elsewhere, args=(store, theirs.id))
        colleague.start()
        colleague.join(60)
        qtbot.waitUntil(reading.is_set, timeout=10_000)  # heard, its counter not yet read
        assert pane.decide_current("REJECT")
        qtbot.waitUntil(lambda: not main_window.services.ops.busy and pane.settled)
    finally:
        held.set()

    def decided(candidate: int) -> str | None:
        return next(c.action for c in pane.candidates() if c.id == candidate)

    qtbot.waitUntil(lambda: pane.settled and decided(theirs.id) == "REJECT", timeout=10_000)
    assert decided(mine.id) == "REJECT"


def decide_elsewhere(store: Store, candidate: int) -> None:
    """A colleague's decision, on a connection of its own."""
    with Store(store.location) as colleague:
        review.decide(colleague, candidate, "REJECT", actor="ana")


@pytest.mark.parametrize(
    "name",
    [
        "episodesPane",
        "reviewPane",
        "knowledgePane",
        "identityPane",
        "runsPane",
        "insightsPane",
        "settingsPane",
    ],
)
def test_every_pane_in_view_reloads_an_outside_change_off_the_gui_thread(
    qtbot, main_window: MainWindow, store: Store, probe: StatementProbe, name: str
) -> None:
    """Shown, then reloaded for another process's write: no pane reads on the GUI thread."""
    assert main_window.tabs.count() == 7  # a new pane joins the list above
    pane = main_window.pane(name)
    main_window.tabs.setCurrentWidget(pane)
    ops = main_window.services.ops
    qtbot.waitUntil(lambda: ops.pending == 0 and not main_window.status_loading)
    with qtbot.waitSignal(main_window.change_listener.changed, timeout=10_000):
        record(store, 0, 1)
    qtbot.waitUntil(lambda: not main_window._outside_pending and ops.pending == 0)
    assert probe.on_gui_thread == []


def elsewhere(store: Store, work: Callable[[Store], T]) -> T:
    """``work`` on another connection, on a thread of its own; its result."""
    found: list[T] = []

    def run() -> None:
        with Store(store.location) as other:
            found.append(work(other))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert found, "the other connection's work failed"
    return found[0]


def record_one(other: Store) -> None:
    with Curator(db=other.location) as memory:
        memory.record(f"an outside note {time.monotonic_ns()}")


def relabel_last(label: str) -> Callable[[Store], None]:
    def work(other: Store) -> None:
        (last,) = other.execute("SELECT max(id) FROM episode")
        relabel(other, [int(last[0])], label)

    return work


def drop_watcher(other: Store) -> None:
    other.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE application_name = 'curator-watch' AND datname = current_database()"
    )


def rows_in(other: Store) -> list[tuple[int, str | None]]:
    return [(int(i), label) for i, label in other.execute(ROWS_SQL)]


LABELS = ("noise", "constitutional", "uncategorized")
STEPS = ("record", "relabel", "mine", "late", "drop")


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=6))
@example(steps=["late", "record", "mine"])  # heard late, then the window's own write
@example(steps=["drop", "relabel", "mine"])  # the watcher away, then the window's own write
def test_any_interleaving_of_outside_writes_and_ours_ends_showing_the_database(
    qtbot,
    main_window: MainWindow,
    store: Store,
    shown: tuple[EpisodesPane, int],
    monkeypatch: pytest.MonkeyPatch,
    steps: list[str],
) -> None:
    """Other connections record and relabel, the window relabels, the watcher hears late
    (a fault injection holding its counter read) or loses its connection, in any order:
    once all is settled the Episodes pane shows what the database holds."""
    pane = shown[0]
    # the retrain after a relabel reloads the pane by itself: off, so only the window's
    # bookkeeping of changes heard and its own writes can bring the outside ones in
    monkeypatch.setattr(pane.relearner, "schedule", lambda: None)
    held = threading.Event()
    real = PostgresWatcher._counter

    def late(watcher: PostgresWatcher) -> int | None:
        held.wait(30)
        return real(watcher)

    ops = main_window.services.ops
    try:
        for n, step in enumerate(steps):
            label = LABELS[n % len(LABELS)]
            if step == "record":
                elsewhere(store, record_one)
            elif step == "relabel":
                elsewhere(store, relabel_last(label))
            elif step == "mine":
                pane.select_ids([pane.model.episode_id(0)])
                pane.relabel_selected(label)
                qtbot.waitUntil(lambda: not ops.busy, timeout=30_000)
            elif step == "late":
                monkeypatch.setattr(PostgresWatcher, "_counter", late)
            else:
                elsewhere(store, drop_watcher)
    finally:
        held.set()
        monkeypatch.setattr(PostgresWatcher, "_counter", real)

    def shown_rows() -> list[tuple[int, str | None]]:
        rows = (pane.model.row_data(r) for r in range(pane.model.rowCount()))
        return sorted((row.id, row.label) for row in rows if row is not None)

    qtbot.waitUntil(
        lambda: not ops.busy and ops.pending == 0 and shown_rows() == elsewhere(store, rows_in),
        timeout=15_000,
    )


def test_a_page_on_its_way_shows_that_it_is_and_an_unreadable_one_says_so_once(
    qtbot, shown: tuple[EpisodesPane, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server the table's rows come in the background too: "…" until they arrive;
    a page that cannot be read shows "(not read)" until the next reload, said once."""
    pane = shown[0]
    model = pane.model
    preview = model.index(0, model.columnCount() - 1)
    real = episode_model.fetch_rows
    opened = threading.Event()

    def held(*args: Any) -> Any:  # fault injection: a slow server
        assert opened.wait(30)
        return real(*args)

    monkeypatch.setattr(episode_model, "fetch_rows", held)
    model.reload()  # the same ids: the rows are read again
    qtbot.waitUntil(lambda: not model.loading)
    assert model.data(preview) == episode_model.PENDING_TEXT
    opened.set()
    qtbot.waitUntil(lambda: model.data(preview) not in (episode_model.PENDING_TEXT, None))
    expected = model.data(preview)

    monkeypatch.setattr(model, "page_size", 20)  # many pages: scrolling far
    model.reload()  # the server still answers: the new pages' first reads are over
    qtbot.waitUntil(lambda: not model.loading and pane.ops.pending == 0)
    said: list[str] = []
    pane.status_message.connect(said.append)

    def unreadable(*args: Any) -> Any:  # fault injection: the server went away
        raise OSError("server closed the connection unexpectedly")

    def outage_said() -> int:
        return len([line for line in said if "closed the connection" in line])

    monkeypatch.setattr(episode_model, "fetch_rows", unreadable)
    model.reload()
    qtbot.waitUntil(lambda: model.data(preview) == episode_model.UNREAD_TEXT)
    for _ in range(2):  # every page painted, then painted again
        for row in range(0, model.rowCount(), model.page_size):
            model.data(model.index(row, 0))
        qtbot.waitUntil(lambda: pane.ops.pending == 0)
    assert outage_said() == 1
    monkeypatch.setattr(episode_model, "fetch_rows", real)
    model.reload()
    qtbot.waitUntil(lambda: model.data(preview) == expected)
    monkeypatch.setattr(episode_model, "fetch_rows", unreadable)  # the next reload says it
    model.reload()
    qtbot.waitUntil(lambda: model.data(preview) == episode_model.UNREAD_TEXT)
    qtbot.waitUntil(lambda: pane.ops.pending == 0)
    assert outage_said() == 2


def test_a_page_read_before_a_relabel_of_many_rows_is_read_again(
    qtbot, shown: tuple[EpisodesPane, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relabel of more rows than the cache holds forgets only the cached pages it
    touched: a page read before it and answered after it must not be kept."""
    pane = shown[0]
    model = pane.model
    monkeypatch.setattr(pane.relearner, "schedule", lambda: None)  # no reload after it
    monkeypatch.setattr(model, "max_pages", 1)  # every episode: more than the cache holds
    label = model.index(0, [key for key, _ in episode_model.COLUMNS].index("label"))
    real = episode_model.fetch_rows
    opened, reading = threading.Event(), threading.Event()

    def held(*args: Any) -> Any:  # fault injection: read now, answered late
        found = real(*args)
        reading.set()
        assert opened.wait(30)
        return found

    monkeypatch.setattr(episode_model, "fetch_rows", held)
    model.reload()
    qtbot.waitUntil(lambda: not model.loading)
    assert model.data(label) == episode_model.PENDING_TEXT
    qtbot.waitUntil(reading.is_set)
    monkeypatch.setattr(episode_model, "fetch_rows", real)
    assert pane.start_relabel(model.ids, "noise")
    qtbot.waitUntil(lambda: not pane.ops.busy)
    opened.set()
    qtbot.waitUntil(lambda: str(model.data(label)).startswith("noise"))


@pytest.mark.llm
def test_the_window_built_running_and_closed_on_a_server_reads_nothing_on_the_gui_thread(
    qtbot, store: Store, qsettings: QSettings, probe: StatementProbe
) -> None:
    """From its construction to its close, a classify run started in it included, every
    read of the window runs elsewhere (the first read of the change counter, the run's
    settings, the backup interval on close were the last ones on the GUI thread)."""
    worker = LlmWorker(store)
    services = AppServices(store=store, db_path=store.path, worker=worker)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    ops = services.ops
    qtbot.waitUntil(lambda: ops.pending == 0 and not window.status_loading, timeout=10_000)
    runs = window.pane("runsPane")
    assert isinstance(runs, RunsPane)
    window.tabs.setCurrentWidget(runs)
    runs.limit_spin.setValue(1)
    with qtbot.waitSignal(worker.finished, timeout=120_000) as finished:
        assert runs.start_classify()
    assert finished.args[0].status == "done"
    qtbot.waitUntil(lambda: ops.pending == 0, timeout=10_000)
    window.close()
    worker.shutdown()
    assert probe.elsewhere > 0
    assert probe.on_gui_thread == []


def test_a_commit_made_before_the_watcher_listens_is_shown(
    qtbot, services: AppServices, qsettings: QSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window's first load and its watcher's LISTEN race: an episode an agent records
    after the one and before the other sends a notification nobody hears. The watcher's
    first change (the counter it starts from) brings it in."""
    store = services.store
    real = PostgresWatcher._connect
    listening = threading.Event()

    def slow(watcher: PostgresWatcher) -> Any:  # fault injection: a slow first connect
        assert listening.wait(30)
        return real(watcher)

    monkeypatch.setattr(PostgresWatcher, "_connect", slow)
    window = MainWindow(services, qsettings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    pane = window.episodes_pane
    window.tabs.setCurrentWidget(pane)
    before = count(store)
    qtbot.waitUntil(lambda: pane.model.rowCount() == before and not pane.model.loading)
    record(store, 0, 1)  # nobody listens yet
    listening.set()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + 1, timeout=10_000)
    window.close()


def test_the_first_report_waits_for_its_slot(qtbot, store: Store) -> None:
    """The listener listens from ``start()``, not from its construction: its first report
    (the counter it starts from) came, on a busy machine, before the window connected to
    it, and was lost; the window then never knew it listened."""
    listener = ChangeListener(store.changes())
    time.sleep(0.5)  # what a busy machine does between the construction and the connect
    assert not listener.running
    with qtbot.waitSignal(listener.changed, timeout=10_000) as heard:
        listener.start()
    assert isinstance(heard.args[0], Change) and heard.args[0].counter is not None
    listener.shutdown()
    assert not listener.running
    listener.deleteLater()


def test_settings_apply_checks_the_form_without_a_round_trip(
    qtbot, main_window: MainWindow, store: Store, probe: StatementProbe
) -> None:
    """Apply checks the form against the values last read, and the save (in the
    background) checks them again: neither a refusal nor a save sends the server anything
    from the GUI thread."""
    pane = main_window.pane("settingsPane")
    assert isinstance(pane, SettingsPane)
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.loading and main_window.services.ops.pending == 0)
    probe.on_gui_thread.clear()
    pane.skip_threshold.setValue(0.6)  # below the UPDATE threshold: refused
    pane.update_threshold.setValue(0.8)
    pane.apply()
    assert "Not saved" in main_window.services.dialogs.shown[-1].text()
    pane.skip_threshold.setValue(0.9)
    pane.top_k.setValue(7)
    pane.apply()
    qtbot.waitUntil(lambda: not pane.saving and main_window.services.ops.pending == 0)
    assert elsewhere(store, lambda other: load_settings(other).top_k) == 7
    assert probe.on_gui_thread == []


def test_backup_now_on_a_server_backs_it_up_the_way_the_command_line_does(
    qtbot,
    main_window: MainWindow,
    probe: StatementProbe,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """File ▸ Backup now on PostgreSQL: ``curator backup``'s backup (pg_dump, or the
    export where it is not installed), its size bound read in the job; it took the URL
    for a file name ("unable to open database file") after a settings read here."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # the user's data folder
    auto = main_window.auto_backup
    probe.on_gui_thread.clear()
    with qtbot.waitSignal(auto.finished, timeout=60_000) as done:
        main_window.backup_action.trigger()
    result = done.args[0]
    assert isinstance(result, BackupResult)
    assert result.path.is_file() and tmp_path / "data" in result.path.parents
    qtbot.waitUntil(lambda: "Backed up to" in main_window.statusBar().currentMessage())
    assert probe.on_gui_thread == []

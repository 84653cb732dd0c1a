"""How long the window's GUI thread stalls during the big store operations.

Opens the real :class:`MainWindow` offscreen on generated databases. A ``QTimer``
heartbeat ticks every 10 ms on the GUI thread; the longest gap between two ticks while
an operation runs is the longest time the window could not repaint or take input. Each
operation runs twice in the same process:

* **direct** (the baseline): the store function called on the GUI thread, as the window
  did before operations went through ``StoreOps``;
* **window**: the way the window runs it now (``ops.write`` / ``ops.query``), until the
  result is delivered and the Episodes table reloaded.

Operations: importing a 60,000-line file (File ▸ Import episodes), relabelling 100,000
episodes (Ctrl+A, U, confirm) and undoing it (Backspace), searching a 300,000-episode
database, and committing then undoing a staged distill run on it the way the Review pane
does (Commit… and its dialog's OK, Undo last commit… and its confirmation; the panes
reload afterwards). The staged run is what the pipeline leaves: its candidates cite
their batches' episodes as sources and the run lists every episode it distilled, so
the commit links provenance and marks those episodes distilled, and the undo restores
all of it. Goal: no stall over 100 ms. ``--quick`` runs a tenth of the sizes.

Not a timed test: it prints the figures and writes ``RESULTS-gui-responsiveness.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_episode_table import fill  # noqa: E402
from PySide6.QtCore import QEventLoop, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QPushButton  # noqa: E402

from curator.gui.app import freeze_startup_heap  # noqa: E402
from curator.gui.review.review_pane import ReviewPane  # noqa: E402
from curator.gui.runtime.services import AppServices  # noqa: E402
from curator.gui.window.main_window import MainWindow  # noqa: E402
from curator.pipeline.commit import commit_run, undo_changeset  # noqa: E402
from curator.pipeline.labels import relabel, undo_last_relabel  # noqa: E402
from curator.store.backup import list_backups, take_backup  # noqa: E402
from curator.store.db import Store  # noqa: E402
from curator.store.episode_queries import (  # noqa: E402
    EpisodeFilter,
    EpisodeSort,
    count_episodes,
    query_ids,
)
from curator.store.importer import import_file  # noqa: E402
from curator.store.models import Candidate, CandidateEpisode, Run, utcnow  # noqa: E402

TICK_MS = 10
GOAL_MS = 100
CONTROL_S = 7.0
SEARCH = "tired build"
WORDS = ("memory", "agent", "reply", "thread", "kind", "tired", "build", "release", "note")


def cpu_waits() -> dict[str, float]:
    """Per thread of this process, seconds spent runnable but waiting for a CPU (Linux's
    ``schedstat`` run-queue time; empty where it is not available).

    During a stall the GUI thread waits for a CPU itself, or for the GIL held by a job
    thread that waits for a CPU: both are the machine (other people's processes holding
    both CPUs), not this process. Waiting for the GIL is not in it (such a thread
    sleeps), so a stall less the longest of these waits during it is what this process
    did to itself: a job holding the GIL, work on the GUI thread.
    """
    waits: dict[str, float] = {}
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return waits
    for task in tasks:
        try:
            waits[task.name] = int((task / "schedstat").read_text("ascii").split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return waits


def waited_since(before: dict[str, float], now: dict[str, float]) -> float:
    """The longest CPU wait of any one thread between two :func:`cpu_waits` readings."""
    return max((w - before.get(t, 0.0) for t, w in now.items()), default=0.0)


class Stall:
    """Runs the event loop until ``done()``, recording the longest gap between ticks, and
    the longest gap less the time the GUI thread waited for a CPU during it (``own``)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.own = 0.0
        self._last = 0.0
        self._waits: dict[str, float] = {}

    def measure(
        self, start: Callable[[], object], done: Callable[[], bool], timeout_s: float = 900
    ) -> tuple[float, float, float]:
        """(longest stall in ms, wall seconds) of ``start`` until ``done()``; the longest
        stall less CPU wait is left in :attr:`own` (seconds)."""
        loop = QEventLoop()
        timer = QTimer()
        timer.setInterval(TICK_MS)
        began = time.perf_counter()
        self._last = began
        self._waits = cpu_waits()
        self.longest = 0.0
        self.own = 0.0
        started = [False]

        def tick() -> None:
            now = time.perf_counter()
            waits = cpu_waits()
            self.longest = max(self.longest, now - self._last)
            self.own = max(self.own, now - self._last - waited_since(self._waits, waits))
            self._last = now
            self._waits = waits
            if (started[0] and done()) or now - began > timeout_s:
                loop.quit()

        def kick() -> None:
            self._last = time.perf_counter()
            self._waits = cpu_waits()
            start()
            started[0] = True

        timer.timeout.connect(tick)
        timer.start()
        QTimer.singleShot(TICK_MS, kick)
        loop.exec()
        timer.stop()
        tick()  # the gap up to the end
        return self.longest * 1000, time.perf_counter() - began, self.own * 1000


def settle(app: QApplication, window: MainWindow, seconds: float = 0.3) -> None:
    """Let queued results, reloads and the relearner finish before the next measure."""
    end = time.perf_counter() + seconds
    pane = window.episodes_pane
    while time.perf_counter() < end or window.services.ops.pending or pane.relearner.running:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        time.sleep(0.01)


def idle(window: MainWindow) -> bool:
    pane = window.episodes_pane
    return window.services.ops.pending == 0 and not pane.model.loading


def open_window(store: Store, tmp: Path) -> MainWindow:
    services = AppServices(store=store, db_path=store.path)
    settings = QSettings(str(tmp / f"window-{store.path.stem}.ini"), QSettings.Format.IniFormat)
    window = MainWindow(services, settings)
    window.resize(1400, 900)
    window.show()
    freeze_startup_heap()  # what curator.gui.app.main does once the window is up
    return window


def close_window(app: QApplication, window: MainWindow) -> None:
    window.episodes_pane.relearner.shutdown()
    window.close()
    app.processEvents()


def write_import_file(path: Path, lines: int) -> None:
    rng = random.Random(11)
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            text = f"imported {i}: " + " ".join(rng.choice(WORDS) for _ in range(55))
            stamp = f"2027-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z"
            out.write(json.dumps({"text": text, "timestamp": stamp, "source": "bench"}) + "\n")


DISTILLED_PER_RUN = 10_000
"""Episodes a staged run distilled (a tenth with ``--quick``)."""

BATCH = 20
"""Episodes per distill batch; each batch yields one candidate citing them."""


def stage_runs(store: Store, runs: int, episodes_per_run: int) -> list[int]:
    """Staged distill runs as the pipeline leaves them, every candidate reviewed as ADD.

    Each run distilled ``episodes_per_run`` episodes of its own (listed in its stats) in
    batches of :data:`BATCH`, and each batch's candidate cites the batch's episodes as
    sources. An earlier version staged 50 candidates with no sources and no listed
    episodes: the commit then wrote 50 rows and nothing else, and measured 0.0 s.
    """
    ids = []
    episode_ids = [int(r[0]) for r in store.execute("SELECT id FROM episode ORDER BY id")]
    with store.write():
        for r in range(runs):
            mine = episode_ids[r * episodes_per_run : (r + 1) * episodes_per_run]
            run = Run.create(
                kind="distill", status="staged", finished_at=utcnow(), stats={"episode_ids": mine}
            )
            for n, start in enumerate(range(0, len(mine), BATCH)):
                candidate = Candidate.create(
                    run=run,
                    ordinal=n + 1,
                    text=f"bench pattern {r}-{n}: keep replies short and kind ({start})",
                    importance=0.5,
                    proposed_action="ADD",
                    action="ADD",
                    decided_by="human",
                    decided_at=utcnow(),
                    state="reviewed",
                )
                CandidateEpisode.insert_many(
                    [{"candidate": candidate.id, "episode": e} for e in mine[start : start + BATCH]]
                ).execute()
            ids.append(run.id)
    return ids


def distilled(store: Store) -> int:
    (count,) = store.execute("SELECT count(*) FROM episode WHERE distilled_at IS NOT NULL")[0]
    return int(count)


Row = tuple[str, float, float, float, float, float]
"""operation, direct ms, window ms, window ms less CPU wait, direct s, window s"""


def bench_import(app: QApplication, tmp: Path, lines: int) -> Row:
    source = tmp / "import.jsonl"
    write_import_file(source, lines)
    stall = Stall()
    direct_store = Store(tmp / "import-direct.sqlite")
    direct = stall.measure(lambda: import_file(direct_store, source), lambda: True)
    direct_store.close()

    store = Store(tmp / "import-window.sqlite")
    window = open_window(store, tmp)
    settle(app, window)
    window_ms = stall.measure(lambda: window.import_episodes(source), lambda: idle(window))
    assert count_episodes(store) == lines, "the import did not finish"
    settle(app, window)
    close_window(app, window)
    store.close()
    return (
        f"import {lines:,} lines",
        direct[0],
        window_ms[0],
        window_ms[2],
        direct[1],
        window_ms[1],
    )


def bench_relabel(app: QApplication, tmp: Path, episodes: int) -> list[Row]:
    store = Store(tmp / "relabel.sqlite")
    fill(store, episodes)
    ids = [int(r[0]) for r in store.execute("SELECT id FROM episode")]
    stall = Stall()
    direct = stall.measure(lambda: relabel(store, ids, "uncategorized"), lambda: True)
    direct_undo = stall.measure(lambda: undo_last_relabel(store), lambda: True)

    window = open_window(store, tmp)
    pane = window.episodes_pane
    settle(app, window)

    def select_all_and_relabel() -> None:
        pane.table.selectAll()
        pane.relabel_selected("uncategorized")
        box = window.services.dialogs.shown[-1]
        button = box.findChild(QPushButton, "confirmButton")
        assert button is not None, "no confirmation"
        button.click()

    relabelled = stall.measure(select_all_and_relabel, lambda: idle(window))
    (changed,) = store.execute("SELECT count(*) FROM episode WHERE human_label IS NOT NULL")[0]
    assert changed == episodes, "the relabel did not finish"
    settle(app, window)
    undone = stall.measure(pane.undo_relabel, lambda: idle(window))
    (changed,) = store.execute("SELECT count(*) FROM episode WHERE human_label IS NOT NULL")[0]
    assert changed == 0, "the undo did not finish"
    settle(app, window)
    close_window(app, window)
    store.close()
    return [
        (
            f"relabel {episodes:,} episodes",
            *(direct[0], relabelled[0], relabelled[2], direct[1], relabelled[1]),
        ),
        ("undo that relabel", direct_undo[0], undone[0], undone[2], direct_undo[1], undone[1]),
    ]


def bench_large(app: QApplication, tmp: Path, episodes: int, per_run: int) -> list[Row]:
    store = Store(tmp / "large.sqlite")
    fill(store, episodes)
    runs = stage_runs(store, 2, per_run)
    stall = Stall()
    flt = EpisodeFilter(text=SEARCH)

    def search_direct() -> None:
        query_ids(store, flt, EpisodeSort())
        count_episodes(store)

    direct_search = stall.measure(search_direct, lambda: True)
    found: list[Any] = []
    direct_commit = stall.measure(
        lambda: found.append(commit_run(store, runs[0], reviewed_only=True)), lambda: True
    )
    assert distilled(store) == per_run, "the direct commit did not mark its episodes"
    direct_undo = stall.measure(lambda: undo_changeset(store, found[0].id), lambda: True)
    assert distilled(store) == 0, "the direct undo did not restore its episodes"

    window = open_window(store, tmp)
    pane = window.episodes_pane
    settle(app, window)

    def search() -> None:
        pane.search_edit.setText(SEARCH)
        pane.apply_filter()

    searched = stall.measure(search, lambda: idle(window))
    assert pane.model.rowCount() > 0, "the search found nothing"
    settle(app, window)

    review = window.pane("reviewPane")
    assert isinstance(review, ReviewPane)
    window.tabs.setCurrentWidget(review)
    settle(app, window)
    review.select_run(runs[1])
    settle(app, window)
    results: list[Any] = []
    review.commits.committed.connect(results.append)
    review.commits.undone.connect(results.append)

    def commit() -> None:  # Commit…, then the dialog's OK
        dialog = review.open_commit_dialog()
        assert dialog is not None, "no commit dialog"
        dialog.accept()

    committed = stall.measure(commit, lambda: bool(results) and idle(window))
    assert results[0] is not None, "the commit failed"
    assert distilled(store) == per_run, "the commit did not mark its episodes"
    settle(app, window)

    def undo() -> None:  # Undo last commit…, then its confirmation
        review.undo_last_commit()
        box = window.services.dialogs.shown[-1]
        button = box.findChild(QPushButton, "confirmButton")
        assert button is not None, "no confirmation"
        button.click()

    undone = stall.measure(undo, lambda: len(results) == 2 and idle(window))
    assert results[1] is not None, "the undo failed"
    assert distilled(store) == 0, "the undo did not restore its episodes"
    settle(app, window)

    direct_backup = stall.measure(
        lambda: take_backup(store.path, dest_dir=tmp / "direct-backups"), lambda: True
    )
    before = len(list_backups(store.path))
    started: list[bool] = []
    backed_up = stall.measure(
        lambda: started.append(window.backup_now()),
        lambda: (
            started == [False]  # refused: the assertion below says so
            or (started == [True] and idle(window) and len(list_backups(store.path)) > before)
        ),
    )
    assert len(list_backups(store.path)) == before + 1, "Backup now took no backup"
    settle(app, window)
    close_window(app, window)
    store.close()
    size = f"{episodes:,} episodes"
    return [
        (
            f"search ({size})",
            *(direct_search[0], searched[0], searched[2], direct_search[1], searched[1]),
        ),
        (
            f"commit a run of {per_run:,} episodes ({size})",
            direct_commit[0],
            committed[0],
            committed[2],
            direct_commit[1],
            committed[1],
        ),
        (
            f"undo the commit ({size})",
            *(direct_undo[0], undone[0], undone[2], direct_undo[1], undone[1]),
        ),
        (
            f"backup now ({size})",
            *(direct_backup[0], backed_up[0], backed_up[2], direct_backup[1], backed_up[1]),
        ),
    ]


def bench_noise(app: QApplication) -> Row:
    """The machine's own floor: the heartbeat with nothing to do, and with a thread that
    only runs Python (it competes for the GIL like every background operation), each
    for as long as an import takes."""
    stall = Stall()
    idle_ms, idle_s, _idle_own = stall.measure(lambda: None, lambda: False, timeout_s=CONTROL_S)
    spinning: list[threading.Thread] = []

    def spin() -> None:
        end = time.perf_counter() + CONTROL_S
        while time.perf_counter() < end:
            sum(i * i for i in range(1000))

    def start() -> None:
        spinning.append(threading.Thread(target=spin))
        spinning[0].start()

    busy_ms, busy_s, busy_own = stall.measure(start, lambda: not spinning[0].is_alive())
    name = f"(control) idle / a Python thread, {CONTROL_S:.0f} s"
    return (name, idle_ms, busy_ms, busy_own, idle_s, busy_s)


def cpu_pressure() -> str:
    """Linux's CPU pressure (share of time some task waited for a CPU), when available."""
    try:
        first = Path("/proc/pressure/cpu").read_text(encoding="ascii").splitlines()[0]
    except (OSError, IndexError):
        return ""
    fields = dict(part.split("=") for part in first.split()[1:])
    return (
        f"; CPU pressure (some task waiting for a CPU) {fields.get('avg60', '?')} % over a minute"
    )


def report(rows: list[Row], quick: bool) -> str:
    lines = [
        "# GUI responsiveness benchmark",
        "",
        f"The real main window offscreen{' (--quick sizes)' if quick else ''}, Python "
        f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs. Longest "
        f"gap of a {TICK_MS} ms heartbeat on the GUI thread while each operation ran: "
        "*direct* calls the store function on the GUI thread (how the window ran it before), "
        "*window* runs it the way the window does now (background operation, result "
        f"delivered, table reloaded). Goal: no stall over {GOAL_MS} ms. *less CPU wait*: "
        "each gap minus the longest time one of the process's threads (the GUI thread, or "
        "the job holding the GIL) was runnable but waited for a CPU during it (Linux "
        "run-queue time; waiting for the GIL is not subtracted): what this process did to "
        "itself rather than other processes on the shared machine.",
        "",
        "| operation | direct: longest stall | window: longest stall | window: less CPU wait "
        "| ratio | direct: wall | window: wall |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, direct_ms, window_ms, own_ms, direct_s, window_s in rows:
        control = name.startswith("(control)")
        ratio = "—" if control or not window_ms else f"{direct_ms / window_ms:,.0f}×"
        flag = "" if window_ms <= GOAL_MS else " ⚠"
        own_flag = "" if own_ms <= GOAL_MS else " ⚠"
        lines.append(
            f"| {name} | {direct_ms:,.0f} ms | {window_ms:,.0f} ms{flag} | "
            f"{own_ms:,.0f} ms{own_flag} | {ratio} | {direct_s:.1f} s | {window_s:.1f} s |"
        )
    lines += [
        "",
        "The control row is the floor of this machine in the same run: the heartbeat with "
        "nothing to do (*direct* column) and while a thread only runs Python (*window* "
        "column). Background operations share the GIL with the GUI thread; on a loaded "
        "machine the GUI thread also waits for a CPU.",
        "",
        f"Load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}"
        f"{cpu_pressure()}.",
        "",
        "Regenerate with `python benchmarks/bench_gui_responsiveness.py` "
        "(add `--quick` for a tenth of the sizes).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument("--no-write", action="store_true", help="do not write the results file")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rows.append(bench_noise(app))
        rows.append(bench_import(app, tmp, 60_000 // scale))
        rows += bench_relabel(app, tmp, 100_000 // scale)
        rows += bench_large(app, tmp, 300_000 // scale, DISTILLED_PER_RUN // scale)
    text = report(rows, args.quick)
    print(text)
    if not args.no_write:
        (HERE / "RESULTS-gui-responsiveness.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

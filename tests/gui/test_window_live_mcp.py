"""The window open while an agent records through ``curator mcp``: live, smooth, complete.

The MCP SDK's own client spawns ``curator mcp`` over stdio on the window's database and
records 1,000 episodes from a thread of the test, while the window runs its event loop.
The Episodes pane must show every episode, with no reload asked for, and nothing lost or
doubled. A QTimer heartbeat on the GUI thread measures the longest the window went
without processing events; it is printed, not asserted (a wall-clock figure moves with
the machine's load: the stalls are measured by ``benchmarks/bench_gui_responsiveness.py``).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation
from PySide6.QtCore import QTimer

from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from curator.store.models import Episode
from tests.mcp.conftest import child_env, curator_command

EPISODES = 1000


def record_all(db: Path, results: list[Any], failures: list[BaseException]) -> None:
    """The agent: one stdio session recording :data:`EPISODES` episodes, one by one."""
    command = curator_command(db, "--rate", "0")
    params = StdioServerParameters(command=command[0], args=command[1:], env=child_env())

    async def main() -> None:
        info = Implementation(name="live-agent", version="1")
        async with Client(params, client_info=info, read_timeout_seconds=120) as client:
            for n in range(EPISODES):
                answer = await client.call_tool("record_episode", {"text": f"live episode {n}"})
                results.append((time.perf_counter(), answer.structured_content))

    try:
        anyio.run(main)
    except BaseException as exc:  # reported by the test on its own thread
        failures.append(exc)


def test_the_window_shows_everything_a_client_records(
    qtbot, main_window: MainWindow, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    with store.read():
        before = Episode.select().count()
    qtbot.waitUntil(lambda: pane.model.rowCount() == before)

    gaps: list[float] = []
    last = [time.perf_counter()]

    def beat() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(beat)
    heartbeat.start()

    results: list[Any] = []
    failures: list[BaseException] = []
    agent = threading.Thread(target=record_all, args=(store.path, results, failures))
    agent.start()
    qtbot.waitUntil(
        lambda: pane.model.rowCount() == before + EPISODES or not agent.is_alive(),
        timeout=600_000,
    )
    qtbot.waitUntil(lambda: pane.model.rowCount() == before + EPISODES, timeout=30_000)
    shown = time.perf_counter()
    qtbot.waitUntil(lambda: not agent.is_alive(), timeout=60_000)
    heartbeat.stop()
    assert not failures, failures
    shown_after = shown - results[-1][0]  # after the last answer came back

    assert len(results) == EPISODES and all(r["created"] for _t, r in results)
    with store.read():
        assert Episode.select().count() == before + EPISODES  # nothing lost, nothing doubled
    worst = max(gaps)
    with capsys.disabled():
        print(
            f"\n[live mcp] {EPISODES} episodes; shown {shown_after * 1000:.0f} ms after the "
            f"last; GUI heartbeat worst gap {worst * 1000:.0f} ms over {len(gaps)} beats"
        )


def test_fitting_the_columns_after_a_reload_reads_about_a_screenful_of_rows(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    """The longest stall the live test found: every reload fitted the columns by asking
    the model for the first 1,000 rows' text (Qt's default precision), 0.5-1 s on a
    loaded machine at each outside change. The shown rows are what the fit is about."""
    with store.write():
        Episode.insert_many(
            [
                {"content_hash": f"fit-{n}", "text": f"row {n}", "timestamp": "2026-01-01"}
                for n in range(3000)
            ]
        ).execute()
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    pane.refresh()
    qtbot.waitUntil(lambda: pane.model.rowCount() > 3000)
    rows: set[int] = set()
    original = pane.model.data

    def counting(index: Any, role: int = 0) -> Any:
        rows.add(index.row())
        return original(index, role)

    pane.model.data = counting  # type: ignore[method-assign]
    try:
        pane.table.fit_columns()
    finally:
        del pane.model.data
    assert 0 < len(rows) <= 100, len(rows)

"""What another process commits while one of the window's own writes runs is shown.

A job's connection is another connection: its commits move the window's
``data_version`` as an outside one's do. The window took the version after each of its
own writes as seen, and so swallowed what an agent (or the command line) committed
meanwhile: 20,000 episodes imported during a three-episode relabel never appeared until
something forced a reload. Both engines; the other process is the real command line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from curator.gui.runtime.operations import OpContext
from curator.gui.window.main_window import MainWindow
from curator.store.db import Store
from tests.mcp.conftest import child_env

OUTSIDE = 3
BOTH_ENGINES = True


def _import_elsewhere(store: Store, tmp_path: Path) -> None:
    """Another process commits :data:`OUTSIDE` episodes (the real CLI)."""
    lines = tmp_path / "outside.jsonl"
    lines.write_text(
        "".join(json.dumps({"content": f"recorded elsewhere {i}"}) + "\n" for i in range(OUTSIDE)),
        "utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "curator", "--db", store.location, "import", str(lines)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_what_another_process_commits_during_a_write_of_the_window_is_shown(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.total > 0, timeout=20_000)
    before = pane.model.total
    release = threading.Event()

    def slow_write(ctx: OpContext) -> None:
        release.wait(60)
        with ctx.store.write():
            ctx.store.execute("UPDATE episode SET source = 'relabelled' WHERE id = 1")

    ops = main_window.services.ops
    assert ops.write("Slow write", slow_write, lambda _: main_window._pane_wrote(pane))
    try:
        _import_elsewhere(store, tmp_path)
    finally:
        release.set()
    qtbot.waitUntil(lambda: not ops.busy, timeout=20_000)
    qtbot.waitUntil(lambda: pane.model.total == before + OUTSIDE, timeout=10_000)


def test_a_write_of_the_window_alone_reloads_nothing_more(
    qtbot, main_window: MainWindow, store: Store
) -> None:
    """With nobody else committing, the window's own write is taken as seen: the next
    looks find no change (a reload per write of a pane would redo its queries)."""
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.total > 0, timeout=20_000)
    ops = main_window.services.ops
    # what the window's start committed (a pane's first load, a backup's id) looked at
    qtbot.waitUntil(
        lambda: ops.pending == 0 and not main_window.check_for_outside_changes(), timeout=20_000
    )

    def write(ctx: OpContext) -> None:
        with ctx.store.write():
            ctx.store.execute("UPDATE episode SET source = 'relabelled' WHERE id = 1")

    assert ops.write("Write", write, lambda _: main_window._pane_wrote(pane))
    qtbot.waitUntil(lambda: not ops.busy, timeout=20_000)
    # on a server the window knows the counters its watcher reported: the write's own too
    qtbot.waitUntil(
        lambda: not main_window._counts_heard or main_window._heard == main_window._data_version,
        timeout=20_000,
    )
    assert not main_window.check_for_outside_changes()


def test_what_another_process_committed_unseen_before_a_write_is_not_taken_as_seen(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    """The commit lands between the window's last look and its write's start: the
    write's own look cannot see it, the window's look at the start does."""
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.total > 0, timeout=20_000)
    main_window.poll_timer.stop()  # no look between the import and the write
    main_window.change_listener.changed.disconnect(main_window._outside_change)

    def write(ctx: OpContext) -> None:
        with ctx.store.write():
            ctx.store.execute("UPDATE episode SET source = 'relabelled' WHERE id = 1")

    _import_elsewhere(store, tmp_path)
    ops = main_window.services.ops
    assert ops.write("Write", write, lambda _: main_window._pane_wrote(pane))
    qtbot.waitUntil(lambda: not ops.busy, timeout=20_000)
    assert main_window.check_for_outside_changes()


def test_what_another_process_commits_as_a_write_of_the_window_is_delivered_is_shown(
    qtbot, main_window: MainWindow, store: Store, tmp_path: Path
) -> None:
    """The commit lands after the write's own last look and before the pane has said
    it wrote: the change counter, the same on every connection, tells."""
    pane = main_window.episodes_pane
    main_window.tabs.setCurrentWidget(pane)
    qtbot.waitUntil(lambda: not pane.model.loading and pane.model.total > 0, timeout=20_000)
    before = pane.model.total
    ops = main_window.services.ops
    # after the window's own slot, before the write's result is delivered to the pane
    ops.write_finished.connect(lambda *_: _import_elsewhere(store, tmp_path))

    def write(ctx: OpContext) -> None:
        with ctx.store.write():
            ctx.store.execute("UPDATE episode SET source = 'relabelled' WHERE id = 1")

    assert ops.write("Write", write, lambda _: main_window._pane_wrote(pane))
    qtbot.waitUntil(lambda: not ops.busy, timeout=20_000)
    qtbot.waitUntil(lambda: pane.model.total == before + OUTSIDE, timeout=10_000)

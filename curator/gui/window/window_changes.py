"""The main window's ear for other processes' commits, and its account of its own.

A mixin of :class:`curator.gui.window.main_window.MainWindow`. Whatever writes the
database (an agent through ``curator mcp``, ``curator watch``, the command line, another
window), a :class:`~curator.gui.window.change_listener.ChangeListener` hears the commit
off the GUI thread, and the window reloads the pane in view. The window's own writes are
heard too (every connection's commits are): what it knew before each write, and the
change counter after it, tell them from others', so a write reloads only what it changed
and an agent's episodes recorded meanwhile are never taken as seen. On PostgreSQL the
first load waits for the watcher's first report, the counter it starts from.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from curator.gui.window.change_listener import ChangeListener
from curator.store.changes import Change

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QTabWidget, QWidget

    from curator.gui.runtime.services import AppServices
    from curator.gui.widgets.pane import Pane

    _WindowBase = QMainWindow
else:
    _WindowBase = object

POLL_MS = 500
"""How soon a change heard while the window could not reload (its own write running, the
database locked for a moment) is looked at again: no query, a flag, until then."""
FIRST_HEARD_MS = 1000
"""On a server, how long the first load waits for the watcher to listen (loopback: a few
milliseconds) before it loads without knowing the counter it starts from."""


class OutsideChangesMixin(_WindowBase):
    """Hears commits, tells the window's own from others', and reloads (see the module doc)."""

    services: AppServices
    panes: list[Pane]
    tabs: QTabWidget
    _dirty: set[int]
    _closed: bool

    if TYPE_CHECKING:

        def refresh_all(self) -> None: ...

        def _pane_shown(self, index: int) -> None: ...

        def update_status(self) -> None: ...

    def _listen_for_changes(self) -> None:
        services = self.services
        watcher = services.store.changes()
        # PostgreSQL's watcher reads the change counter on its own thread with every
        # change it hears: the GUI thread then makes no round trip to the server to tell
        # its own writes from others' (SQLite's data_version is a shared-memory read).
        # Its first change, once it listens, says the counter it starts from: the first
        # load waits for it (loaded before it and again on it, every pane was read twice).
        # A watcher slower than FIRST_HEARD_MS does not hold the window back: the pane
        # loads without a counter (None), and that first change reloads it, so a commit
        # made before the watcher listened is shown too.
        self._counts_heard = watcher.counts_changes
        self._data_version: int | None = (
            None if self._counts_heard else services.store.data_version()
        )
        self._heard: int | None = self._data_version
        """The change counter of the last change heard (a watcher that counts changes)."""
        self._outside_pending = False
        self._unseen_at_write = False
        self._own_write_seen = False
        self._own_write_counter: int | None = None
        services.ops.busy_changed.connect(self._write_starts)
        services.ops.write_finished.connect(self._job_wrote)
        self._looked_at = 0.0  # time.monotonic() of the last look for outside changes
        self.change_listener = ChangeListener(watcher, self)
        self.change_listener.changed.connect(self._outside_change)
        self.change_listener.start()  # connected first: its first report is not lost
        self.poll_timer = QTimer(self)
        self.poll_timer.setInterval(POLL_MS)
        self.poll_timer.timeout.connect(self._look_again)
        self.poll_timer.start()

    def _start_first_load(self) -> None:
        """The restored tab loads now on a file; on a server, see :meth:`_load_first`
        (the timer runs while the first load waits)."""
        self._first_load = QTimer(self)
        self._first_load.setSingleShot(True)
        self._first_load.setInterval(FIRST_HEARD_MS)
        self._first_load.timeout.connect(self._load_first)
        if self._counts_heard:
            self._first_load.start()
        else:
            self._load_first()

    def _stop_listening(self) -> None:
        """At close: nothing heard or timed is acted on any more."""
        self.poll_timer.stop()
        self._first_load.stop()
        self.change_listener.shutdown()

    @property
    def first_load_pending(self) -> bool:
        """On a server, the pane in view has not loaded yet: it waits for the watcher."""
        return self._first_load.isActive()

    @property
    def listening(self) -> bool:
        """The window knows the change counter its watcher started from (on a file, from
        the start; on a server, once the watcher's first report came)."""
        return not self._counts_heard or self._heard is not None

    def _load_first(self) -> None:
        """The restored tab's first load: at once on a file; on a server once the watcher
        listens, or after :data:`FIRST_HEARD_MS` without it."""
        self._first_load.stop()
        if not self._closed:
            self._pane_shown(self.tabs.currentIndex())

    def _pane_wrote(self, source: QWidget) -> None:
        """A pane committed something: the others reload when next shown."""
        self._dirty.update(i for i, p in enumerate(self.panes) if p is not source)
        if self._own_write_seen and self._counts_heard:
            # Counters heard so far up to the write's own: nobody else's commit came after
            # it (one during or before it is the job's own look, see _job_wrote).
            self._own_write_seen = False
            own, heard = self._own_write_counter, self._heard
            if own is not None and heard is not None and heard <= own:
                self._data_version = max(own, self._data_version or 0)
            else:
                self._outside_pending = True
        elif self._own_write_seen:  # the job's write this pane reloaded for, nobody else's
            self._own_write_seen = False
            version = self._version_now()  # first: a commit between the two is not in it
            counter = self._counter_now()
            if counter is not None and counter == self._own_write_counter:  # none since
                self._data_version = version
            else:
                self._outside_pending = True
        self.update_status()

    def _write_starts(self, busy: bool) -> None:
        if busy:  # what another connection committed before it, not yet looked at
            self._unseen_at_write = self._version_now() != self._data_version

    def _job_wrote(
        self, others_committed: bool, counter: int | None, counter_before: int | None
    ) -> None:
        """A job's write committed (its result is delivered next, and the pane that asked
        for it says :meth:`_pane_wrote` once it reloaded). The job's connection is
        another connection, so its commits move :meth:`Store.data_version` as an outside
        one's would: they are taken as seen only when nobody else committed, neither
        while it ran (the job's own look) nor before it, unseen. Taking them as seen
        regardless swallowed the episodes an agent recorded meanwhile: the window never
        showed them. A write no pane reloaded for is left to the next look; and between
        the job's last look and the pane's word, the change counter (the same number on
        every connection) tells whether another process's write came in.

        On a server the window knows only the counters its watcher has heard, which lag
        the commits: one not yet heard when the write began would otherwise be taken for
        the write's own. The job's own read of the counter as it began says it: anything
        but the counter the window last looked at is a commit it has not shown."""
        unseen = self._unseen_at_write
        if self._counts_heard and (counter_before is None or counter_before != self._data_version):
            unseen = True
            self._data_version = None  # the next look reloads, whatever it has heard
        self._own_write_seen = not (others_committed or unseen)
        self._own_write_counter = counter
        self._outside_pending = self._outside_pending or not self._own_write_seen
        self._unseen_at_write = False

    def _counter_now(self) -> int | None:
        try:
            return self.services.store.change_counter()
        except Exception:  # a locked, closed or vanished database: "changed", look again
            return None

    def _version_now(self) -> int | None:
        if self._counts_heard:
            return self._heard
        try:
            return self.services.store.data_version()
        except Exception:  # a locked, closed or vanished database: "changed", look again
            return None

    def _outside_change(self, change: Change) -> None:
        """The listener heard a commit (any connection's, ours included): looked at now,
        or, when the window looked less than :data:`POLL_MS` ago, at the next tick. An
        agent recording episodes one by one commits many times a second; a reload per
        commit would redo the pane's queries back to back."""
        if self._closed:  # one queued before the listener stopped
            return
        if self.first_load_pending and len(self._dirty) == len(self.panes):
            # Nothing loaded yet (no tab was switched to meanwhile): the counter the first
            # load starts from.
            self._heard = self._data_version = change.counter
            self._load_first()
            return
        self._first_load.stop()
        self._outside_pending = True
        if self._counts_heard:
            self._heard = change.counter
        if time.monotonic() - self._looked_at >= POLL_MS / 1000:
            self._look_again()

    def _look_again(self) -> None:
        if self._outside_pending and not self.services.ops.busy:
            self._outside_pending = False
            self._looked_at = time.monotonic()
            self.check_for_outside_changes()

    def check_for_outside_changes(self) -> bool:
        """True (and the visible pane reloaded) when another connection committed.

        Not while one of our own writes runs: its connection is "another connection", so
        an import committing before its result is delivered looked like an outside
        change, and the reload it started still saw the small table size known before
        the import and ran the id query over all the new rows on the GUI thread (the
        longest freezes of a 60,000-line import, 90-160 ms). The write's own callback
        reloads what it changed; anything else the next poll after it finds.
        """
        if self.services.ops.busy:
            self._outside_pending = True  # looked at again once the write is done
            return False
        self._own_write_seen = False  # a job's write no pane reloaded for: looked at now
        if self._counts_heard:
            version = self._heard  # None: the counter could not be read, so look again
        else:
            try:
                version = self.services.store.data_version()
            except Exception:  # a locked/closed database: try again next tick
                self._outside_pending = True
                return False
        if version is not None and version == self._data_version:
            return False
        self._data_version = version
        worker = self.services.worker
        if worker is not None and worker.busy:
            # Our own run commits once per episode: reloading a pane every tick would
            # redo its queries all run long. The panes reload when the run ends.
            self._dirty.update(range(len(self.panes)))
            return False
        self.refresh_all()
        return True

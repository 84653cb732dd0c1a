"""Which process owns a ``running`` run, whether it is still alive, and what to do if not.

A run is written ``running`` when it starts and gets its final status when it ends. A
process that dies without ending it (``kill -9``, a power cut, a crash in llama.cpp)
would leave it ``running`` for ever, and review and commit refuse a run in that state.
So every run records the process that owns it (``pid``, ``host``) and refreshes a
``heartbeat_at`` timestamp while it works (at most every :data:`HEARTBEAT_EVERY_S`
seconds, from the progress loop). At every start, the CLI and the window call
:func:`mark_abandoned_runs`, which marks ``abandoned`` each ``running`` run whose owner
is gone:

- same host: its pid is no longer a live process, or the process now holding that pid
  started after the run did (the pid was reused, e.g. after a reboot; Linux, where the
  start time is known), so a run of a dead process is never kept alive by a stranger;
- another host (a database on a shared folder): its heartbeat is older than
  :data:`ABANDON_AFTER` (15 minutes; generous, because one long prompt on a slow machine
  may go that long between two progress reports);
- a run recorded before pid/host existed: started more than :data:`ABANDON_AFTER` ago.

A run of this very process, or of a live process on this host, is never touched. An
abandoned run keeps its trace and counts; its candidates cannot be reviewed or committed,
and its episodes are free for the next ``distill``.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import peewee

from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.models import Run, utcnow

log = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 5.0
ABANDON_AFTER = timedelta(minutes=15)
PID_REUSE_SLACK = timedelta(seconds=60)
"""A process that started this much after a run cannot own it (the boot time that the
start time is computed from is known to the second; small clock corrections are
tolerated; a large clock change during a run only marks it early, and finishing the run
still records its real status)."""


def this_host() -> str:
    return socket.gethostname()


def owner_fields() -> dict[str, object]:
    """What a new Run row records about the process that owns it."""
    return {"pid": os.getpid(), "host": this_host(), "heartbeat_at": utcnow()}


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this machine.

    On Windows ``os.kill`` would terminate the process, so there the answer is always
    "alive" and only the heartbeat timeout applies.
    """
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - not tested on this platform
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it belongs to another user
    except OSError:
        return True  # unknown: leave it alone
    return True


def process_started_at(pid: int) -> datetime | None:
    """When process ``pid`` started (UTC), from ``/proc``; None where it is not known."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        # the command name (field 2) may hold spaces and parentheses: split after the last ')'
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
            if line.startswith("btime ")
        )
        ticks_per_s = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return datetime.fromtimestamp(boot + start_ticks / ticks_per_s, UTC)


def abandon_reason(run: Run, *, now: datetime, host: str, pid: int) -> str | None:
    """Why ``run`` (status ``running``) is abandoned, or None when its owner may be alive."""
    last_sign = run.heartbeat_at or run.started_at
    stale = last_sign is not None and now - last_sign > ABANDON_AFTER
    if run.pid is None or not run.host:
        if stale:
            return "abandoned: recorded by an older version and not finished"
        return None
    if run.host == host:
        if run.pid != pid and not pid_alive(int(run.pid)):
            return f"abandoned: its process (pid {run.pid}) ended without finishing it"
        started = process_started_at(int(run.pid))
        if started is None or run.started_at is None:
            return None
        if started > run.started_at + PID_REUSE_SLACK:
            return (
                f"abandoned: its process (pid {run.pid}) ended without finishing it "
                "(the pid now belongs to a process started later)"
            )
        return None
    if stale:
        return (
            f"abandoned: no sign of life from pid {run.pid} on {run.host} "
            f"for more than {int(ABANDON_AFTER.total_seconds() // 60)} minutes"
        )
    return None


def mark_abandoned_runs(store: Store) -> list[int]:
    """Mark ``abandoned`` every ``running`` run whose process is gone; returns their ids.

    Reads first and writes only when something is found; the update is conditional on the
    run still being ``running``, so a run that finished meanwhile keeps its status.
    """
    now, host, pid = utcnow(), this_host(), os.getpid()
    found: list[tuple[int, str]] = []
    for run in Run.select().where(Run.status == "running").order_by(Run.id):
        reason = abandon_reason(run, now=now, host=host, pid=pid)
        if reason is not None:
            found.append((int(run.id), reason))
    if not found:
        return []
    # Every start calls this, reads included, and reads never wait for writers: the write
    # is tried without waiting (a busy database raises StoreBusyError at once; the runs
    # are marked by a later start).
    with store.write_without_waiting():
        for run_id, reason in found:
            Run.update(status="abandoned", status_reason=reason, finished_at=now).where(
                (Run.id == run_id) & (Run.status == "running")
            ).execute()
    for run_id, reason in found:
        log.warning("run %d %s", run_id, reason)
    return [run_id for run_id, _ in found]


class Heartbeat:
    """Refreshes one run's ``heartbeat_at``, at most every ``every`` seconds.

    Called from the progress loop of the thread doing the work (the one whose connection
    wrote the run). A heartbeat that cannot be written (the database is busy) is skipped:
    it must never fail the run itself.
    """

    def __init__(self, store: Store, run_id: int, every: float = HEARTBEAT_EVERY_S) -> None:
        self.store = store
        self.run_id = run_id
        self.every = every
        self._last = time.monotonic()

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        try:
            # never hold the run up behind another writer: skipped, tried again next time
            with self.store.write_without_waiting():
                Run.update(heartbeat_at=utcnow()).where(
                    (Run.id == self.run_id) & (Run.status == "running")
                ).execute()
        except (peewee.OperationalError, CuratorError) as exc:
            log.warning("heartbeat of run %d skipped: %s", self.run_id, exc)

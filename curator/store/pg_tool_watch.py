"""``pg_dump`` and ``pg_restore`` held to the deadline the store's own statements keep.

A server that stops answering (frozen, its machine gone, a proxy that keeps the connection
but forwards nothing) would hold a tool, and the backup or restore that runs it, for as
long as the connection lasts: the kernel still answers keepalive probes. The store's
statements are given up after the lock wait plus the answer margin
(:mod:`curator.store.pg_connection`); a tool is watched to the same deadline, from both
ends, every :data:`WATCH_TICK_S`:

- **the tool** (Linux): its context switches and its file reads and writes
  (``/proc/PID/status``, ``/proc/PID/io``). A tool that receives even a few bytes is woken
  for them; one blocked on a silent socket is never woken. (Socket traffic itself is not
  counted by ``/proc/PID/io``, and a trickle of bytes costs too little CPU to show.)
- **the server**, asked on the store's own connection (``pg_stat_activity``, by the
  application name the tool connects with): a new statement of the tool's, a change of
  what its backend waits for, or a backend at work on something other than the client
  (a long ``CREATE INDEX`` of a restore) is progress; a backend that waits on the client,
  or no backend at all, is not. A server that does not answer this question within the
  store's deadline is a server that stopped answering: the look itself is given up.

When neither end has moved for the lock wait plus the answer margin, the tool (and any
process it started: it runs in a session of its own) is killed and the command fails in
one sentence. A slow tool on a slow link moves, so it is never given up, however long its
whole run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import peewee

from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.pg_connection import no_answer

__all__ = [
    "WATCH_TICK_S",
    "Activity",
    "ToolGivenUp",
    "may_have_committed",
    "run_watched",
    "tool_tag",
]

#: How often a running tool and its backend are looked at.
WATCH_TICK_S = 0.2
#: After a kill, how long the tool's pipes may take to close.
REAP_S = 5.0

#: The tool's backends as ``pg_stat_activity`` shows them:
#: ``(pid, state, wait_event_type, wait_event, query_start, the query's start)``.
Activity = Sequence[tuple[Any, ...]]
#: Signals that end a watched tool with the command: SIGINT arrives as KeyboardInterrupt;
#: these would end the command without its clean-up (the tool, in a session of its own,
#: would go on, and a backup would leave its partial file).
ENDING_SIGNALS = ("SIGTERM", "SIGHUP")


class ToolGivenUp(CuratorError):
    """The tool was killed unfinished; ``rows`` is what the server last showed of it."""

    def __init__(self, message: str, rows: Activity) -> None:
        super().__init__(message)
        self.rows = rows


def may_have_committed(rows: Activity) -> bool:
    """Whether the tool had asked the server to commit (a restore may then be applied)."""
    return any(str(row[5] or "").lstrip().upper().startswith("COMMIT") for row in rows)


@contextlib.contextmanager
def _signals_end_the_tool(what: str) -> Iterator[Callable[[], None]]:
    """SIGTERM and SIGHUP end the command as SystemExit (128 + the signal), so that the
    tool is killed and partial files removed on the way out (main thread only).

    The handlers are in place before the tool starts, but only *armed* (the callable
    yielded) once the caller holds the tool's process inside the ``try`` whose
    ``finally`` kills it: a signal that arrives while the tool is being started waits
    until then. Before, one arriving between the start and the handlers ended the
    command with the tool left running in its own session."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    pending: list[int] = []
    armed = False

    def end(signum: int) -> None:
        name = signal.Signals(signum).name
        with contextlib.suppress(OSError):
            sys.stderr.write(f"curator: {name}: {what} was stopped\n")
        raise SystemExit(128 + signum)

    def stop(signum: int, _frame: object) -> None:
        if not armed:
            pending.append(signum)
            return
        end(signum)

    def arm() -> None:
        nonlocal armed
        armed = True
        if pending:
            end(pending[0])

    wanted = [getattr(signal, name) for name in ENDING_SIGNALS if hasattr(signal, name)]
    previous = {sig: signal.signal(sig, stop) for sig in wanted}
    try:
        yield arm
    finally:
        for sig, handler in previous.items():
            # None: a handler set outside Python, which cannot be put back; the default
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def tool_tag(kind: str) -> str:
    """An application name unique to one run of a tool (``PGAPPNAME``)."""
    return f"curator-{kind}-{uuid.uuid4().hex[:12]}"


def _tool_motion(pid: int) -> tuple[str, ...] | None:
    """What moves while the tool works, or None where it cannot be read.

    Its context switches (``/proc/PID/status``: a tool blocked on a silent socket is never
    woken; one that receives even a few bytes is, at each) and its file bytes
    (``/proc/PID/io``). Socket traffic itself is not counted by ``/proc/PID/io``.
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
        io = Path(f"/proc/{pid}/io").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    wanted = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", "rchar", "wchar")
    lines = (line.partition(":") for line in (*status.splitlines(), *io.splitlines()))
    return tuple(value.strip() for key, _, value in lines if key in wanted)


def _server_busy(rows: Activity) -> bool:
    """Whether a backend of the tool is at work on something other than its client."""
    return any(state == "active" and kind != "Client" for _pid, state, kind, *_ in rows)


def run_watched(
    command: list[str],
    env: dict[str, str],
    store: Store,
    what: str,
    outcome: str,
    tag: str,
    on_look: Callable[[Activity], None] | None = None,
) -> tuple[int, str]:
    """Run a tool that connects as ``tag``: its exit status and first message line.

    ``on_look(rows)`` sees the tool's backends at every look (the restore's lock watch).
    A failure of the watch itself is one sentence ending in ``outcome``.
    """
    silence: float = store.db.answer_deadline_s  # type: ignore[attr-defined]
    last: tuple[object, ...] = ()
    rows: Activity = ()
    with _signals_end_the_tool(what) as arm:
        try:
            proc = subprocess.Popen(
                command,
                env={**env, "PGAPPNAME": tag},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",  # a server's message in another encoding is one line
                start_new_session=True,  # the kill reaches whatever it starts
            )
        except OSError as exc:
            raise CuratorError(f"{what} failed: {exc}{outcome}") from exc
        moved = time.monotonic()
        try:
            arm()  # a signal that came while the tool started ends it now
            while True:
                try:
                    out, err = proc.communicate(timeout=WATCH_TICK_S)
                except subprocess.TimeoutExpired:
                    pass
                else:
                    lines = (err or out).strip().splitlines() or [f"exit {proc.returncode}"]
                    return proc.returncode, lines[0][:500]
                try:
                    rows = store.execute(
                        "SELECT pid, state, wait_event_type, wait_event, query_start, "
                        "left(query, 16) FROM pg_stat_activity WHERE application_name = ?",
                        (tag,),
                    )
                except (peewee.PeeweeException, CuratorError) as exc:
                    if proc.poll() is not None:
                        continue  # it ended meanwhile: its own outcome counts
                    reason = (str(exc).strip().splitlines() or ["the server did not answer"])[0]
                    raise ToolGivenUp(f"{what} failed: {reason}{outcome}", rows) from exc
                now = time.monotonic()
                seen = (_tool_motion(proc.pid), tuple(map(tuple, rows)))
                if seen != last or _server_busy(rows):
                    last, moved = seen, now
                elif now - moved > silence:
                    raise ToolGivenUp(
                        f"{what} failed: {no_answer(silence)}, so it was given up{outcome}", rows
                    )
                if on_look is not None:
                    on_look(rows)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.communicate(timeout=REAP_S)

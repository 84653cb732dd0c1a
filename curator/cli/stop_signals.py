"""SIGTERM and SIGHUP stop a command the way Ctrl-C does.

Python's default for both is to end the process where it stands: no ``finally`` runs, so
a backup's ``.partial`` file, a restore's ``.restoring-`` copy or a new ``copy``
destination stayed behind (a quarter gigabyte each on a large database), where Ctrl-C
removed them. While a command runs, both raise :class:`Stopped`, a
:class:`KeyboardInterrupt`, so every cleanup written for Ctrl-C runs for them too, and
the command ends with ``128 + the signal's number`` (143, 129) and one line. A signal
that something else chose a handler for (``nohup`` ignoring SIGHUP, a program embedding
the command line) is left as it was, and so are the commands that stop on their own
terms (the runs, ``watch``: they set their own handlers while they work).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Stopped", "stopping_like_ctrl_c"]


class Stopped(KeyboardInterrupt):
    """The command was stopped by ``signum`` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def _stop(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`Stopped` once; the signals that follow are ignored until the block
    ends, so a second one cannot cut short the cleanup the first one started (SIGKILL
    still ends the process at once)."""
    del frame
    for name in ("SIGTERM", "SIGHUP"):
        other = getattr(signal, name, None)
        if other is not None and signal.getsignal(other) is _stop:
            signal.signal(other, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def stopping_like_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Stopped` (on the main thread,
    where signals are handled; elsewhere this changes nothing)."""
    previous: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _stop)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]

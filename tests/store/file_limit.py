"""A full disk, for real and without one: this process's file size limit.

``RLIMIT_FSIZE`` makes every write past ``size`` bytes of any file fail (EFBIG, with
SIGXFSZ ignored so that the write fails instead of the process being killed), as a full
disk or quota fails it: SQLite's own writes fail where they would, its ``-shm`` included
(which it grows a page at a time and leaves short, as on a full disk).
"""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def files_limited_to(size: int) -> Iterator[None]:
    """No file grows past ``size`` bytes in this process inside the block."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)

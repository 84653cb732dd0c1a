"""A JSON file of entries by key in the user cache, changed by several writers at once.

The model digests (:func:`curator.llm.model_file.model_sha256`) and the thread choices
(:mod:`curator.llm.threads`) are kept this way. Each writer used to read the whole file,
change its entry and write the whole file back: two threads of one process (the window's
jobs) or two processes (the CLI beside the window) writing at once each wrote back what
they had read, and the other's entry was lost (16 models hashed by 8 threads left 3 or 4
entries). An entry is now changed under a lock of this process and an ``flock`` on a lock
file beside the cache, with the file read again inside them. A cache that cannot be read
or written costs only time (a digest computed again, threads measured again).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX: the lock of this process only
    fcntl = None  # type: ignore[assignment]

__all__ = ["change_entry", "read_entries"]

_LOCK = threading.Lock()


def read_entries(path: Path) -> dict[str, Any]:
    """The file's entries; empty where it is missing, unreadable or not a JSON object."""
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    return {}


def change_entry(path: Path, key: str, entry: dict[str, Any] | None) -> None:
    """Set ``key`` to ``entry`` (``None``: drop it), keeping every other entry, including
    one another writer set a moment ago; the file is replaced whole (a reader never sees
    half of it)."""
    with contextlib.suppress(OSError), _LOCK, _file_lock(path):
        entries = read_entries(path)
        if entry is None:
            if entries.pop(key, None) is None:
                return
        else:
            entries[key] = entry
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entries, out, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``'s lock file (``.NAME.lock``, made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)

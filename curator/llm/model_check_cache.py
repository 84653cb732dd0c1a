"""Model files that passed the trial load, remembered until the file or llama.cpp changes.

:func:`curator.llm.model_trial.validate_model_file` loads every model in a child process
before this process does, so that a file that crashes llama.cpp ends the child, not the
window. The trial load reads the whole model and evaluates a token: a third of a second
for the demo model, seconds and gigabytes of reading for a 7B one, paid again by every
``curator classify``, every window start and every test that loads a model. A file that
passed is remembered here, and tried again whenever something that could change the
verdict may have changed:

* the file: its resolved path, device, inode, size, and modification and status-change
  times in nanoseconds. A write, a truncation, a replacement or another file renamed
  onto its name changes one of them, and the status-change time cannot be set back (a
  write that restores the modification time still moves it);
* which file the child loaded: the child is handed the file this process opened and
  stamped (``/proc/self/fd/N``), not its name, and the pass is kept only when the name
  still leads to that file, unchanged, after the trial: a name pointed elsewhere during
  the trial and back (a folder swapped, a link changed) is not remembered;
* writers the times do not show: a page written through a writable shared mapping moves
  no file time until the kernel writes it back. A pass is kept only when nobody has the
  file open for writing, or mapped writable, before the trial and after it (a read lease,
  ``F_SETLEASE``, is granted only then; it needs the file's owner, so another account's
  file is always tried; a lease broken by a writer while it is held signals ``SIGURG``,
  whose default is to be ignored, not ``SIGIO``, whose default ends the process). And only
  on file systems that stamp a file at the first write through a mapping
  (:data:`STAMPING_FILE_SYSTEMS`): tmpfs, for one, lets a mapping read first be written
  without any time moving, so a file there is always tried;
* the llama.cpp that loaded it: the interpreter or frozen application
  (``sys.executable``), llama-cpp-python's version, its Python files and shared
  libraries (and a library folder named by ``LLAMA_CPP_LIB_PATH``), stamped like the
  model file, NumPy's version (the child loads NumPy first, as the parent does), and the
  ``GGML_*``/``LLAMA_*`` environment and the dynamic loader's (``LD_LIBRARY_PATH``,
  ``LD_PRELOAD``).

Only passes are kept, only on Linux (where the two checks above exist), and only for a
file that was left alone for :data:`SETTLE_S` before its trial: a refused file is tried
each time (it may have been fixed). The verdict is kept through
:mod:`curator.core.derived_cache`, signed with the cache folder's secret: a forged or
damaged entry is ignored, since a verdict nobody earned would let a crashing file into the
window. Without a usable cache folder every load is tried, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from curator.core import derived_cache
from curator.core.regular_file import NotRegularFile, open_regular

__all__ = ["SETTLE_S", "Trial", "passed_before", "remember_pass", "trial"]

SETTLE_S = 2.0
"""A file changed less than this long before its trial is not remembered. File times
move in steps of the kernel's clock tick (a few milliseconds), so a second change within
the tick of the first would leave every time as it was; a file left alone this long
before its times were read gets, from any later change, a status-change time of its own.
A file still being written (a download, a copy) is the usual case, and it only costs
one more trial next time."""

_FD_FOLDER = Path("/proc/self/fd")

STAMPING_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs"})
"""File systems whose page-fault path stamps the file's times at the first write through
a shared mapping (``page_mkwrite``); files on any other are never remembered."""


class Trial(NamedTuple):
    """What the child is given to load, the descriptors it inherits, and the key of the
    file it loads (None: a pass of this trial is not to be remembered)."""

    target: Path
    pass_fds: tuple[int, ...]
    key: bytes | None


def _entry_name(path: Path) -> str:
    """One cache file per model path (a second model never evicts the first)."""
    digest = hashlib.sha256(str(path).encode("utf-8", "surrogatepass")).hexdigest()
    return "model-check-" + digest[:24]


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _folder_stamps(folder: Path, suffixes: tuple[str, ...] | None = None) -> list[Any]:
    stamps: list[Any] = []
    with contextlib.suppress(OSError):
        for item in sorted(folder.iterdir()):
            if item.is_file() and (suffixes is None or item.suffix in suffixes):
                stamps.append([item.name, _stamp(item.stat())])
    return stamps


def _llama_build() -> list[Any]:
    """What identifies the llama.cpp (and its company) that a child loads the model
    with, read without importing any of it."""
    from importlib import metadata  # only where a model is checked: a dozen modules of its own

    build: list[Any] = [sys.executable]
    with contextlib.suppress(OSError):
        build.append(_stamp(os.stat(sys.executable)))
    for package in ("llama_cpp_python", "numpy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            build.append([package, metadata.version(package)])
    with contextlib.suppress(ImportError, ValueError):
        spec = find_spec("llama_cpp")
        for folder in (spec.submodule_search_locations or []) if spec else []:
            build.append(_folder_stamps(Path(folder), (".py",)))
            build.append(_folder_stamps(Path(folder) / "lib"))
    named = os.environ.get("LLAMA_CPP_LIB_PATH")
    if named:
        build.append(["LLAMA_CPP_LIB_PATH", named, _folder_stamps(Path(named))])
    build.append(sorted((k, v) for k, v in os.environ.items() if _shapes_the_load(k)))
    return build


def _shapes_the_load(variable: str) -> bool:
    """Environment variables that can change what a trial load runs: llama.cpp's and
    ggml's own, and the dynamic loader's (another library found first)."""
    return variable.startswith(("GGML_", "LLAMA_")) or variable in ("LD_LIBRARY_PATH", "LD_PRELOAD")


def _key(path: Path, st: os.stat_result) -> bytes:
    return json.dumps([str(path), _stamp(st), _llama_build()]).encode("utf-8", "surrogatepass")


def _no_writers(fd: int) -> bool:
    """Nobody has the file open for writing, nor mapped writable (a read lease is granted
    only then, and only to the file's owner); False where that cannot be known."""
    try:
        import fcntl  # POSIX only; the callers run only where /proc/self/fd exists
        import signal

        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)  # a broken lease must not end us
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except (OSError, AttributeError, ImportError):
        return False
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    return True


def _stamping_file_system(device: int) -> bool:
    """Whether the file system mounted on ``device`` is one of
    :data:`STAMPING_FILE_SYSTEMS` (``/proc/self/mountinfo``; False when unknown)."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    kinds = set()
    for line in lines.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == wanted and " - " in line:
            kinds.add(line.split(" - ", 1)[1].split()[0])
    return bool(kinds) and kinds <= STAMPING_FILE_SYSTEMS


def _opened(path: Path) -> BinaryIO | None:
    """``path`` opened for reading when it is a regular file (a FIFO is not waited on:
    :func:`curator.core.regular_file.open_regular`); None otherwise."""
    try:
        return open_regular(path)
    except (OSError, NotRegularFile):
        return None


@contextlib.contextmanager
def trial(path: Path) -> Iterator[Trial]:
    """What the trial load of ``path`` (resolved) loads: on Linux the very file opened
    here, by descriptor, with the key of that file when a pass may be remembered; else
    the name itself, never remembered."""
    handle = _opened(path) if _FD_FOLDER.is_dir() else None
    if handle is None:
        yield Trial(path, (), None)
        return
    with handle:
        fd = handle.fileno()
        st = os.fstat(fd)
        settled = time.time_ns() - st.st_ctime_ns >= SETTLE_S * 1e9
        stamped = settled and _stamping_file_system(st.st_dev)
        key = _key(path, st) if stamped and _no_writers(fd) else None
        yield Trial(_FD_FOLDER / str(fd), (fd,), key)


def passed_before(path: Path) -> dict[str, Any] | None:
    """What the trial load of ``path`` (resolved) learned, when this very file passed it
    with this very llama.cpp and nothing writes to it now; None otherwise."""
    handle = _opened(path) if _FD_FOLDER.is_dir() else None
    if handle is None:
        return None
    with handle:
        st = os.fstat(handle.fileno())
        if not _stamping_file_system(st.st_dev):
            return None
        body = derived_cache.load(_entry_name(path), _key(path, st), limit=1 << 16)
        if body is None or not _no_writers(handle.fileno()):
            return None
    try:
        loaded = json.loads(body)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None


def remember_pass(path: Path, loaded: dict[str, Any], tried: Trial) -> None:
    """Keep the pass of ``tried`` (``loaded``: what the trial load learned) when its
    file may be remembered and ``path`` still leads to it, unchanged and unwritten."""
    if tried.key is None or len(tried.key) > 60_000:
        return
    handle = _opened(path)
    if handle is None:
        return
    with handle:
        unchanged = _key(path, os.fstat(handle.fileno())) == tried.key
        if not unchanged or not _no_writers(handle.fileno()):
            return
    derived_cache.store(_entry_name(path), tried.key, json.dumps(loaded).encode("utf-8"))

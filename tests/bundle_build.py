"""The desktop build of ``tests/test_bundle.py``, started when the run starts.

The build (PyInstaller, about a minute of one core) used to start when its module's
turn came, near the end of the run: niced, it crawled while the other workers still had
tests, and its module's worker waited for all of it (151 s of setup in one fresh-clone
run). Started with the run instead, still niced, it gets the time the workers leave idle
(waiting for servers, children and deadlines); behind three busy workers that is not
enough to finish it before its module comes, which then waits for the rest (57 s of
setup). One worker starts it, into the run's shared folder; the worker that runs the
module waits for its exit status.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "packaging" / "build_dist.py"
MODULE = "tests/test_bundle.py"
TIMEOUT_S = 900

_started: list[subprocess.Popen[bytes]] = []


def start(folder: Path) -> None:
    """Start the build into ``folder/out`` unless a worker of this run already did (the
    caller holds ``folder``'s lock). Its output goes to ``log``, PyInstaller's work
    folder is removed, and its exit status goes to ``status`` once it has ended (written
    whole: a reader never sees half a number)."""
    if (folder / "started").exists():
        return
    work = folder / "work"
    build = shlex.join([sys.executable, str(BUILD), str(folder / "out"), "--work", str(work)])
    status, log = shlex.quote(str(folder / "status")), shlex.quote(str(folder / "log"))
    script = (
        f"nice {build} > {log} 2>&1; ended=$?; rm -rf {shlex.quote(str(work))}; "
        f"echo $ended > {status}.part && mv {status}.part {status}"
    )
    _started.append(subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL))
    (folder / "started").write_text(f"{time.time()}\n")


def wait(folder: Path) -> tuple[int, str]:
    """The build's exit status and its output, once it has ended."""
    deadline = time.monotonic() + TIMEOUT_S
    status = folder / "status"
    while not status.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the desktop build did not end within {TIMEOUT_S} s")
        time.sleep(0.2)  # another worker's child: no signal reaches this process
    return int(status.read_text()), (folder / "log").read_text(errors="replace")


def reap() -> None:
    """Wait for a build this process started (its tests may be another worker's)."""
    while _started:
        _started.pop().wait(timeout=TIMEOUT_S)


def remove(folder: Path) -> None:
    """Remove the build once the run is over (half a gigabyte, which pytest would keep
    for three sessions): by the process that ran no test, or the only one, since the
    tests of the build may be spread over several workers (``--dist load``)."""
    shutil.rmtree(folder / "out", ignore_errors=True)

"""Stopping a server the tests started: politely first, then for sure."""

from __future__ import annotations

import subprocess
from typing import Any


def stop(process: subprocess.Popen[Any], grace_s: float = 10) -> None:
    """SIGTERM, and SIGKILL when it has not exited within ``grace_s``; always reaped."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

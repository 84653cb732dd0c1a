"""Processes the tests start: a probe in a fresh interpreter, and stopping a server
politely first, then for sure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def python_json(
    code: str, *args: str, env: dict[str, str], cwd: Path | None = None
) -> dict[str, Any]:
    """Run ``python -c code args`` in a fresh interpreter; the JSON document it prints."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def stop(process: subprocess.Popen[Any], grace_s: float = 10) -> None:
    """SIGTERM, and SIGKILL when it has not exited within ``grace_s``; always reaped."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

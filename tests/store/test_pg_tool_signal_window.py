"""A signal that arrives while a server tool is being started still ends the tool.

The command's handlers for SIGTERM and SIGHUP were put in place only after the tool had
started, so a signal in between ended the command with the tool (pg_dump, in a session
of its own) left running; a fresh-clone run met it once on a slow machine. The moment
cannot be hit from outside reliably, so the signal is sent from inside the start
(a fault injection: the real Popen, then the signal, before run_watched goes on).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from types import SimpleNamespace
from typing import Any

import pytest

from curator.store import pg_tool_watch


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_start_ends_the_started_tool(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    started: list[subprocess.Popen[Any]] = []
    real_popen = subprocess.Popen

    def popen_then_signal(*args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        os.kill(os.getpid(), sig)  # lands before run_watched holds the tool
        return proc

    def unhandled(signum: int, _frame: object) -> None:
        raise AssertionError(f"{signal.Signals(signum).name} reached no handler of the tool's")

    previous = signal.signal(sig, unhandled)  # the command's own handler, in its place
    monkeypatch.setattr(pg_tool_watch.subprocess, "Popen", popen_then_signal)
    store: Any = SimpleNamespace(db=SimpleNamespace(answer_deadline_s=30.0))  # never asked
    try:
        with pytest.raises(SystemExit) as ended:
            pg_tool_watch.run_watched(
                ["sleep", "600"], dict(os.environ), store, "pg_dump of x", "", "t"
            )
        assert signal.getsignal(sig) is unhandled  # put back
    finally:
        signal.signal(sig, previous)
        for started_proc in started:
            if started_proc.poll() is None:
                started_proc.kill()
                started_proc.wait()
    assert ended.value.code == 128 + sig
    (proc,) = started
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.returncode == -signal.SIGKILL  # killed, not left running
    assert f"{sig.name}: pg_dump of x was stopped" in capsys.readouterr().err

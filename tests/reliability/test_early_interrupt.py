"""A Ctrl-C at any moment of a command, its start included, is exit 130 and one line.

Before the entry point caught it, a Ctrl-C in the first few tenths of a second (the
command's imports, the parsing of its arguments) ended ``curator --json stats`` with a
traceback and nothing on stdout. The signal here is sent by the process to itself while
a chosen module is being imported (a fault injection: no real part can time a Ctrl-C to
a given import), so each moment of the start is hit every time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Imported, in this order, by ``curator --json stats``: the command's package (before
#: anything can catch the signal but the entry point), the verb's module (while the
#: arguments are parsed) and the store (while the command runs).
MOMENTS = ["curator.cli", "curator.cli.data", "curator.store.db"]

CHILD = """
import builtins, importlib, os, signal, sys
# as a terminal starts a program: a process started in the background of a shell that
# is not interactive inherits SIGINT ignored, and Python then keeps it ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
target, argv = sys.argv[1], sys.argv[2:]
real_import, real_module = builtins.__import__, importlib.import_module
def send(name):
    if name == target:  # once: handled before this import completes
        builtins.__import__, importlib.import_module = real_import, real_module
        os.kill(os.getpid(), signal.SIGINT)
def importing(name, *args, **kwargs):
    send(name)
    return real_import(name, *args, **kwargs)
def module(name, *args, **kwargs):
    send(name)
    return real_module(name, *args, **kwargs)
builtins.__import__, importlib.import_module = importing, module
sys.argv = ["curator", *argv]
from curator.launch import run
sys.exit(run())
"""


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "plain"])
def test_a_ctrl_c_while_a_command_starts_is_exit_130_in_one_line(
    tmp_path: Path, moment: str, as_json: bool
) -> None:
    db = tmp_path / "curator.sqlite"
    argv = ["--json"] * as_json + ["--db", str(db), "--create", "stats"]
    env = {k: v for k, v in os.environ.items() if k not in ("CURATOR_DB", "CURATOR_MODEL")}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, moment, *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines() == ["curator: error: interrupted"]
    if as_json:
        assert json.loads(done.stdout) == {"error": "interrupted", "exit": 130}
    else:
        assert done.stdout == ""

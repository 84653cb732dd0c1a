"""The server warms the detector when it starts, so the first record_episode does not pay
for compiling its word families and loading its learned reader (about 0.7 s of CPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys, threading, time
from curator.api import Curator
from curator.core import flag_families, flag_learned
from curator.mcp_server.server import ServerOptions, build_server

read_only = sys.argv[2] == "read-only"
build_server(Curator(db=sys.argv[1]), ServerOptions(read_only=read_only))
warming = [t for t in threading.enumerate() if t.name == "warm-detector"]
for thread in warming:
    thread.join(60)
print(len(warming), bool(flag_families._BUILT), bool(flag_learned._READER))
"""


def _probe(memory_db: Path, mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(memory_db), mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_server_that_records_warms_the_detector_at_start(memory_db: Path) -> None:
    assert _probe(memory_db, "read-write") == "1 True True"


def test_a_read_only_server_does_not(memory_db: Path) -> None:
    assert _probe(memory_db, "read-only") == "0 False False"

"""``curator mcp`` over stdio answers every line, also one that is no JSON-RPC message.

The SDK's transport handed such a line to the server as an exception, which was logged
and never answered: a client waiting for its reply waited for ever. JSON-RPC's answer is
an error with a null id; the server goes on serving.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from curator.cli import main

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "framing", "version": "1"},
    },
}
STATUS = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "memory_status"}}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"this is not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
        (json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]).encode(), -32600),
        (b'{"jsonrpc": "1.0", "id": 3}', -32600),
        (b"42", -32600),
        (b"   ", None),  # a blank line keeps a pipe alive: nothing to answer
    ],
)
def test_a_line_that_is_no_message_gets_an_error_and_the_server_goes_on(
    tmp_path: Path, line: bytes, code: int | None
) -> None:
    db = tmp_path / "memory.sqlite"
    assert main(["--db", str(db), "demo"]) == 0
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    lines = [INIT, initialized, line, {**STATUS, "id": 9}]
    server = subprocess.Popen(
        [sys.executable, "-m", "curator", "--db", str(db), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    watchdog = threading.Timer(30, server.kill)  # an unanswered line must fail, not hang
    watchdog.start()
    try:
        for item in lines:
            server.stdin.write(item if isinstance(item, bytes) else json.dumps(item).encode())
            server.stdin.write(b"\n")
        server.stdin.flush()
        answers: list[dict[str, Any]] = []
        while not answers or answers[-1].get("id") != 9:  # the last call's answer
            answer = server.stdout.readline()
            assert answer, server.communicate(timeout=30)[1].decode()[-2000:]
            answers.append(json.loads(answer))
        _, stderr = server.communicate(timeout=30)  # closes its input: the end
    finally:
        watchdog.cancel()
        if server.poll() is None:
            server.kill()
    if code is None:
        assert [a.get("id") for a in answers] == [0, 9]
    else:
        assert [a.get("id") for a in answers] == [0, None, 9]
        assert answers[1]["error"]["code"] == code
    assert "episodes" in answers[-1]["result"]["content"][0]["text"]
    assert server.returncode == 0
    assert b"Traceback" not in stderr

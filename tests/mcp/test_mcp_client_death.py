"""A client that goes away mid-call: the server ends by itself, the database stays whole."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from curator.store.db import Store

Counts = Callable[[Path], dict[str, int]]


def message(ident: int, method: str, params: dict[str, Any]) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n"
    ).encode()


def initialised_server(params: Any, client: str) -> subprocess.Popen[bytes]:
    """``curator mcp`` over raw pipes, past the MCP handshake (as a client named ``client``)."""
    process = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
    )
    assert process.stdin is not None and process.stdout is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": client, "version": "0"},
    }
    process.stdin.write(message(1, "initialize", init))
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    return process


def test_a_stdio_client_that_dies_mid_call_leaves_the_server_ending_cleanly(
    stdio_params: Callable[..., Any], memory_db: Path, table_counts: Counts
) -> None:
    params = stdio_params()
    before = table_counts(memory_db)["episode"]
    process = initialised_server(params, "doomed")
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    call = {"name": "record_episode", "arguments": {"text": "the last words of a client"}}
    process.stdin.write(message(2, "tools/call", call))
    # Half of a third request, then the client is gone: both pipes closed under the server.
    process.stdin.write(message(3, "tools/call", call)[:25])
    process.stdin.flush()
    process.stdin.close()
    process.stdout.close()
    try:
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None
    err = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    assert code == 0, err  # the end of its input ends the server: no hang, no crash
    assert "Traceback" not in err and "error" not in err, err
    store = Store(memory_db, read_only=True)
    try:
        assert store.execute("PRAGMA integrity_check")[0][0] == "ok"
        texts = [
            row[0] for row in store.execute("SELECT text FROM episode WHERE source = 'doomed'")
        ]
    finally:
        store.close()
    # The whole call was sent before the client went: recorded once or not at all.
    assert texts in ([], ["the last words of a client"])
    assert table_counts(memory_db)["episode"] == before + len(texts)


def test_a_stdio_client_that_stops_reading_ends_the_server_cleanly(
    stdio_params: Callable[..., Any], memory_db: Path, table_counts: Counts
) -> None:
    """The client closes the pipe it reads answers from but goes on sending: the server's
    next answer meets a broken pipe. No one is left to answer, so the server ends (exit 0,
    nothing on stderr) instead of crashing with a traceback."""
    params = stdio_params()
    before = table_counts(memory_db)
    process = initialised_server(params, "deaf")
    assert process.stdin is not None and process.stdout is not None
    process.stdout.close()
    process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    try:
        for ident in range(2, 2000):
            if process.poll() is not None:
                break
            process.stdin.write(message(ident, "tools/call", {"name": "memory_status"}))
            process.stdin.flush()
            try:
                code = process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            break
        code = process.wait(timeout=60)
    except BrokenPipeError:  # it ended while we wrote
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    assert process.stderr is not None
    err = process.stderr.read().decode("utf-8", "replace")
    process.stderr.close()
    assert code == 0, err
    assert "Traceback" not in err and "error" not in err.lower(), err
    assert table_counts(memory_db) == before

"""``curator mcp --http`` under attack: clients racing on the same content, a client killed
mid-call while others go on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import Implementation

from curator.store.db import Store
from tests.mcp.conftest import child_env

Counts = Callable[[Path], dict[str, int]]
Start = Callable[..., Any]

DYING_CLIENT = """
import sys, anyio
from mcp import Client
from mcp.types import Implementation

async def main(url):
    info = Implementation(name="dying", version="0")
    async with Client(url, client_info=info, read_timeout_seconds=60) as client:
        await client.call_tool("record_episode", {"text": "dying 0"})
        print("recording", flush=True)

        async def lane(j):
            for i in range(1, 400):
                await client.call_tool("record_episode", {"text": f"dying {j}.{i}"})

        async with anyio.create_task_group() as group:
            for j in range(8):
                group.start_soon(lane, j)

anyio.run(main, sys.argv[1])
"""


def record_from(url: str, names: list[str], texts: list[str]) -> list[Any]:
    """Each named client records every text, all clients at once; their answers."""

    async def main() -> list[Any]:
        answers: list[Any] = []

        async def one(name: str) -> None:
            info = Implementation(name=name, version="1")
            async with (
                Client(url, client_info=info, read_timeout_seconds=60) as client,
                anyio.create_task_group() as group,
            ):
                for text in texts:

                    async def call(text: str = text) -> None:
                        args = {"text": text, "source": "shared"}
                        answers.append(await client.call_tool("record_episode", args))

                    group.start_soon(call)

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)
        return answers

    return anyio.run(main)


def test_two_clients_recording_the_same_content_at_once_store_it_once(
    http_server: Start, memory_db: Path, table_counts: Counts
) -> None:
    server = http_server("--rate", "0")
    before = table_counts(memory_db)["episode"]
    texts = [f"the same event {n}" for n in range(15)]
    answers = record_from(server.url, ["agent-a", "agent-b"], texts)
    assert len(answers) == 30 and not any(a.is_error for a in answers)
    by_text: dict[int, list[bool]] = {}
    for answer in answers:
        content = answer.structured_content
        by_text.setdefault(content["episode_id"], []).append(content["created"])
    assert len(by_text) == 15  # one episode per text, whoever came first
    assert all(sorted(created) == [False, True] for created in by_text.values())
    assert table_counts(memory_db)["episode"] == before + 15


def test_a_client_killed_mid_call_leaves_the_server_serving_and_nothing_half_written(
    http_server: Start, memory_db: Path
) -> None:
    server = http_server("--rate", "0")
    dying = subprocess.Popen(
        [sys.executable, "-c", DYING_CLIENT, server.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env(),
    )
    try:
        assert dying.stdout is not None
        assert dying.stdout.readline().strip() == "recording"
        time.sleep(0.2)  # a few groups of its calls are in flight when it dies
    finally:
        dying.send_signal(signal.SIGKILL)
        dying.wait()
        if dying.stdout is not None:
            dying.stdout.close()
    answers = record_from(server.url, ["survivor"], ["after the crash"])
    assert not answers[0].is_error, answers[0].content
    assert server.process.poll() is None  # still serving
    store = Store(memory_db, read_only=True)
    try:
        assert store.execute("PRAGMA integrity_check")[0][0] == "ok"
        texts = [r[0] for r in store.execute("SELECT text FROM episode WHERE source = 'dying'")]
    finally:
        store.close()
    sent = {"dying 0"} | {f"dying {j}.{i}" for j in range(8) for i in range(1, 400)}
    assert "dying 0" in texts
    assert set(texts) <= sent and len(texts) == len(set(texts))  # whole, and each once

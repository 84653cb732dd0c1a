"""Benchmark ``curator mcp``: reading knowledge over stdio and HTTP against the in-process
export, and recording episodes over HTTP.

Usage: ``python benchmarks/bench_mcp.py [--patterns 10000] [--calls 50] [--records 300]
[--clients 4]``

A temporary database holds the demo data plus ``--patterns`` generated patterns. Measured:
the in-process ``Curator.knowledge()`` (the code behind ``curator export``), then the same
read as the ``get_knowledge`` tool through the SDK's client over stdio and over streamable
HTTP (each server a real ``curator mcp`` child process), as p50 and p95 with their ratio
to the in-process p95 (the issue's goal: within 2× plus transport); then
``record_episode`` throughput over HTTP from ``--clients`` concurrent clients, with the
rate limit off.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from mcp import Client, StdioServerParameters

from curator import Curator
from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import Pattern, utcnow

ROOT = Path(__file__).resolve().parent.parent


def build(path: Path, patterns: int) -> None:
    store = Store(path)
    create_demo(store)
    now = utcnow()
    rows = []
    for i in range(patterns):
        importance = (i % 100) / 100 + 0.001
        rows.append(
            {
                "text": f"Pattern {i} about topic {i % 97} and its follow-up {i % 13}.",
                "importance": importance,
                "distilled_at": now,
                "rank_key": rank_key(importance, now),
            }
        )
    with store.write():
        for start in range(0, len(rows), 500):
            Pattern.insert_many(rows[start : start + 500]).execute()
    store.close()


def quantiles(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def timed(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return times


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def start_http(db: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "curator", "--db", str(db), "mcp"]
    process = subprocess.Popen(
        [*command, "--http", "127.0.0.1:0", "--rate", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=child_env(),
    )
    assert process.stderr is not None
    for line in process.stderr:
        found = re.search(r"(http://\S+/mcp)", line)
        if found:
            return process, found.group(1)
    raise SystemExit(f"the HTTP server did not start (exit {process.wait()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.sqlite"
        build(db, args.patterns)
        with Curator(db=db) as curator:
            local = []
            for _ in range(args.calls):
                start = time.perf_counter()
                curator.knowledge()
                local.append(time.perf_counter() - start)
        p50, p95 = quantiles(local)
        print(
            f"{args.patterns:,} patterns; in-process knowledge(): p50 {p50 * 1e3:.1f} ms, "
            f"p95 {p95 * 1e3:.1f} ms"
        )
        base = p95

        async def over(target: Any, name: str) -> None:
            async with Client(target, read_timeout_seconds=120) as client:
                times = await timed(lambda: client.call_tool("get_knowledge", {}), args.calls)
            q50, q95 = quantiles(times)
            print(
                f"get_knowledge over {name}: p50 {q50 * 1e3:.1f} ms, p95 {q95 * 1e3:.1f} ms "
                f"({q95 / base:.1f}× the in-process p95)"
            )

        stdio = StdioServerParameters(
            command=sys.executable,
            args=["-m", "curator", "--db", str(db), "mcp"],
            env={"PYTHONPATH": str(ROOT)},
        )
        anyio.run(over, stdio, "stdio")
        process, url = start_http(db)
        try:
            anyio.run(over, url, "HTTP")

            async def record() -> float:
                per_client = args.records // args.clients

                async def one(tag: int) -> None:
                    async with Client(url, read_timeout_seconds=120) as client:
                        for i in range(per_client):
                            text = f"bench {tag} {i} {time.time_ns()}"
                            await client.call_tool("record_episode", {"text": text})

                start = time.perf_counter()
                async with anyio.create_task_group() as group:
                    for tag in range(args.clients):
                        group.start_soon(one, tag)
                return per_client * args.clients / (time.perf_counter() - start)

            rate = anyio.run(record)
            print(f"record_episode over HTTP, {args.clients} clients: {rate:.0f} per second")
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()

"""Benchmark ``curator mcp`` and ``curator watch``: the agent's reads, writes and log lag.

Usage: ``python benchmarks/bench_mcp.py [--patterns 10000] [--calls 50] [--records 1600]
[--clients 8] [--in-flight 8] [--lines 60] [--parts reads,record,follow] [--kinds sdk,raw]
[--texts lines,episodes]``

A temporary database holds the demo data plus ``--patterns`` generated patterns. Measured,
all in one run:

- the in-process ``Curator.knowledge()`` (the code behind ``curator export``), then the
  same read as the ``get_knowledge`` tool through the SDK's client over stdio and over
  streamable HTTP (each server a real ``curator mcp`` child process). "Transport" is a
  no-op call, ``memory_status``, over the same client in the same run; the goal is
  ``get_knowledge p95 <= 2 x in-process p95 + transport p95``;
- ``record_episode`` throughput over HTTP: ``--clients`` clients, each with
  ``--in-flight`` calls outstanding, rate limit off; also the server's CPU time per
  recorded episode (from ``/proc``), which says what one core would sustain whatever else
  the machine is running (the goal is 500 a second), and the clients' own CPU time per
  call: server and clients share the machine, so its cores divided by both is the most
  this machine can record a second, whatever the server does. Two kinds of client, each
  against a fresh server and reported on its own line (``--kinds``): ``sdk``, the SDK's
  own ``Client``, and ``raw``, an agent that speaks the protocol directly: the same
  JSON-RPC POSTs (headers, envelope, client name) sent with plain ``httpx``. The SDK's
  client spends more CPU per call than the server, so on a small machine it measures
  mostly itself; the raw client leaves the cores to the server. Two kinds of text, each
  kind of client recording each (``--texts``): one-line notes of 30 characters, and the
  demo episodes' texts (376 characters on average), which the poisoned-memory detector
  reads at intake at a cost that grows with the text. The last line names the worst
  combination, the figure the goal is judged by;
- the lag from a line appended to a log followed by a real ``curator watch`` child process
  to its episode being readable through ``Curator.status()`` (goal: p95 <= 1 s).

The one-minute load average is printed first and last: on a shared machine the wall-clock
figures move with it.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.types import Implementation
from mcp.types.version import LATEST_MODERN_VERSION
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

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


class HttpServer:
    """A ``curator mcp --http`` child: its address, and the last lines it wrote to stderr
    (read for as long as it runs: a pipe nobody reads stalls a server that logs)."""

    def __init__(self, db: Path) -> None:
        command = [sys.executable, "-m", "curator", "--db", str(db), "mcp"]
        self.process = subprocess.Popen(
            [*command, "--http", "127.0.0.1:0", "--rate", "0"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=child_env(),
        )
        self.said: collections.deque[str] = collections.deque(maxlen=40)
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line)
            found = re.search(r"(http://\S+/mcp)", line)
            if found:
                self.url = found.group(1)
                self._drainer = threading.Thread(target=self._drain, daemon=True)
                self._drainer.start()
                return
        raise SystemExit(f"the HTTP server did not start (exit {self.process.wait()})")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line)

    def stop(self, failed: bool) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._drainer.join(timeout=10)  # what it wrote last is in the pipe still
        if failed:
            print("the server's last words:\n" + "".join(self.said), file=sys.stderr)


def server_cpu_s(pid: int) -> float:
    """User plus system CPU seconds the process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def knowledge_reads(db: Path, calls: int) -> float:
    """The in-process reads; returns their p95."""
    with Curator(db=db) as curator:
        local = []
        for _ in range(calls):
            start = time.perf_counter()
            curator.knowledge()
            local.append(time.perf_counter() - start)
    p50, p95 = quantiles(local)
    print(f"in-process knowledge(): p50 {p50 * 1e3:.1f} ms, p95 {p95 * 1e3:.1f} ms")
    return p95


async def reads_over(target: Any, name: str, calls: int, base: float) -> None:
    """get_knowledge against a no-op call (the transport) over one client."""
    async with Client(target, read_timeout_seconds=120) as client:
        await client.call_tool("get_knowledge", {})  # warm both paths once
        await client.call_tool("memory_status", {})
        reads: list[float] = []
        noops: list[float] = []
        for _ in range(calls):  # interleaved: both see the same load
            reads += await timed(lambda: client.call_tool("get_knowledge", {}), 1)
            noops += await timed(lambda: client.call_tool("memory_status", {}), 1)
    q50, q95 = quantiles(reads)
    t50, t95 = quantiles(noops)
    goal = 2 * base + t95
    verdict = "met" if q95 <= goal else "NOT met"
    print(
        f"over {name}: transport (memory_status) p50 {t50 * 1e3:.1f} ms, p95 {t95 * 1e3:.1f} ms;"
        f" get_knowledge p50 {q50 * 1e3:.1f} ms, p95 {q95 * 1e3:.1f} ms; goal p95 <= 2 x "
        f"{base * 1e3:.1f} + {t95 * 1e3:.1f} = {goal * 1e3:.1f} ms: {verdict}"
    )


SDK_CLIENT_NAME = "bench-sdk"
RAW_CLIENT_NAME = "bench-raw"
RAW_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": LATEST_MODERN_VERSION,
    "mcp-method": "tools/call",
    "mcp-name": "record_episode",
}
"""What the SDK's client sends with a ``tools/call`` (``Mcp-Name`` names the tool)."""
RAW_ENVELOPE = {
    PROTOCOL_VERSION_META_KEY: LATEST_MODERN_VERSION,
    CLIENT_INFO_META_KEY: {"name": RAW_CLIENT_NAME, "version": "1"},
    CLIENT_CAPABILITIES_META_KEY: {},
}
"""The per-request envelope of the 2026-07-28 revision: the client's name rides in it."""

Record = Callable[[str], Awaitable[dict[str, Any]]]


@asynccontextmanager
async def sdk_recorder(url: str, in_flight: int) -> AsyncIterator[tuple[str, Record]]:
    """``record(text)`` through the SDK's own client; answers its structured content."""
    del in_flight  # the SDK's client pools its connections itself
    info = Implementation(name=SDK_CLIENT_NAME, version="1")
    async with Client(url, read_timeout_seconds=120, client_info=info) as client:

        async def record(text: str) -> dict[str, Any]:
            result = await client.call_tool("record_episode", {"text": text})
            if result.is_error or result.structured_content is None:
                raise SystemExit(f"record_episode failed: {result.content}")
            return result.structured_content

        yield SDK_CLIENT_NAME, record


@asynccontextmanager
async def raw_recorder(url: str, in_flight: int) -> AsyncIterator[tuple[str, Record]]:
    """``record(text)`` as the same JSON-RPC POST the SDK's client sends, with plain httpx
    (one kept-alive connection per call in flight)."""
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    ids = itertools.count(1)
    async with httpx.AsyncClient(limits=limits, timeout=120) as http:

        async def record(text: str) -> dict[str, Any]:
            params = {"name": "record_episode", "arguments": {"text": text}, "_meta": RAW_ENVELOPE}
            body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call", "params": params}
            answer = await http.post(url, content=json.dumps(body), headers=RAW_HEADERS)
            result = answer.json().get("result") if answer.status_code == 200 else None
            if not result or result.get("isError") or "structuredContent" not in result:
                raise SystemExit(f"record_episode failed: {answer.status_code} {answer.text}")
            return dict(result["structuredContent"])

        yield RAW_CLIENT_NAME, record


RECORDERS = {"sdk": sdk_recorder, "raw": raw_recorder}
KIND_NAMES = {
    "sdk": "the SDK's client",
    "raw": "raw JSON-RPC over httpx",
}


def demo_episode_texts() -> list[str]:
    """The demo episodes' texts as an agent would record them (a post, or its messages one
    per line): 203 of them, 212 characters at the median and 376 on average."""
    texts = []
    for line in (ROOT / "resources" / "demo" / "episodes.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            episode = json.loads(line)
            messages = episode.get("messages") or []
            texts.append(episode.get("content") or "\n".join(m["content"] for m in messages))
    return texts


#: What the recorded texts are (``--texts``): each kind measured on its own, the worst kept.
TEXTS: dict[str, str] = {
    "lines": "one-line notes of 30 characters",
    "episodes": "the demo episodes' texts (376 characters on average)",
}


def text_maker(texts: str) -> Callable[[str], str]:
    """Distinct texts of kind ``texts``, each told apart by ``tag``."""
    if texts == "lines":
        return lambda tag: f"bench {tag} {time.time_ns()}"
    episodes = demo_episode_texts()
    counter = itertools.count()
    return lambda tag: f"{episodes[next(counter) % len(episodes)]}\n({tag} {time.time_ns()})"


async def record_load(
    kind: str, texts: str, url: str, pid: int, records: int, clients: int, in_flight: int
) -> float:
    """``clients`` clients of ``kind`` with ``in_flight`` calls each, recording distinct
    texts of kind ``texts``; every episode must come back attributed to the client's own
    name. Returns the episodes recorded a second."""
    make_text = text_maker(texts)
    lanes = clients * in_flight
    per_lane = max(1, records // lanes)
    ready = anyio.Event()
    opened = 0
    box: dict[str, float] = {}

    async def client_task(tag: int) -> None:
        nonlocal opened
        async with RECORDERS[kind](url, in_flight) as (name, record):
            # Warm the detector, the connections and the worker threads before timing.
            warm = await record(f"warm {tag} {time.time_ns()}")
            if warm.get("source") != name or not warm.get("created"):
                raise SystemExit(f"{kind}: recorded as {warm}, not a new episode from {name!r}")
            opened += 1
            if opened == clients:
                box["cpu"] = server_cpu_s(pid)
                box["client_cpu"] = server_cpu_s(os.getpid())
                box["start"] = time.perf_counter()
                ready.set()
            await ready.wait()

            async def lane(j: int) -> None:
                for i in range(per_lane):
                    await record(make_text(f"{tag}.{j}.{i}"))

            async with anyio.create_task_group() as group:
                for j in range(in_flight):
                    group.start_soon(lane, j)

    async with anyio.create_task_group() as group:
        for tag in range(clients):
            group.start_soon(client_task, tag)
    wall = time.perf_counter() - box["start"]
    cpu = server_cpu_s(pid) - box["cpu"]
    mine = server_cpu_s(os.getpid()) - box["client_cpu"]
    done = per_lane * lanes
    cores = os.cpu_count() or 1
    print(
        f"record_episode over HTTP, {KIND_NAMES[kind]}, {TEXTS[texts]}, {clients} clients x "
        f"{in_flight} in flight, {done} episodes: {done / wall:.0f} per second; server CPU "
        f"{cpu / done * 1e3:.2f} ms per episode (one core: {done / cpu:.0f} per second), "
        f"server busy {cpu / wall * 100:.0f}% of a core; clients' CPU {mine / done * 1e3:.2f} ms "
        f"per call (this machine's {cores} cores hold at most {cores * done / (cpu + mine):.0f} "
        f"per second of server and clients together)"
    )
    return done / wall


def follow_lag(db: Path, folder: Path, lines: int) -> None:
    """Append lines to a log a ``curator watch`` child follows; time each to readable."""
    log = folder / "agent.jsonl"
    log.write_text("")
    watch = subprocess.Popen(
        [sys.executable, "-m", "curator", "--db", str(db), "watch", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env(),
    )
    lags: list[float] = []
    try:
        with Curator(db=db, read_only=True) as curator:
            count = curator.status()["episodes"]
            time.sleep(2.0)  # the child starts and takes its first look
            for i in range(lines):
                line = json.dumps({"text": f"followed line {i} {time.time_ns()}"})
                start = time.perf_counter()
                with log.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
                while curator.status()["episodes"] <= count:
                    if time.perf_counter() - start > 30:
                        raise SystemExit("a followed line did not arrive within 30 s")
                    time.sleep(0.005)
                lags.append(time.perf_counter() - start)
                count += 1
                time.sleep(0.05)  # lines arrive at random points of the watch interval
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    p50, p95 = quantiles(lags)
    verdict = "met" if p95 <= 1.0 else "NOT met"
    print(
        f"follow lag (curator watch, default interval), {lines} lines: p50 {p50 * 1e3:.0f} ms, "
        f"p95 {p95 * 1e3:.0f} ms, max {max(lags) * 1e3:.0f} ms; goal p95 <= 1 s: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patterns", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--records", type=int, default=1600)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--in-flight", type=int, default=8)
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument(
        "--kinds",
        default="sdk,raw",
        help="record's clients, comma-separated: sdk (the SDK's Client), raw (plain httpx)",
    )
    parser.add_argument(
        "--texts",
        default=",".join(TEXTS),
        help="what record's clients record, comma-separated: lines (30-character notes), "
        "episodes (the demo episodes' texts)",
    )
    parser.add_argument(
        "--parts",
        default="reads,record,follow",
        help="which measurements to run, comma-separated (default: all three)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"reads", "record", "follow"}:
        parser.error("--parts takes reads, record and follow")
    kinds = args.kinds.split(",")
    if not set(kinds) <= set(RECORDERS):
        parser.error("--kinds takes sdk and raw")
    texts = args.texts.split(",")
    if not set(texts) <= set(TEXTS):
        parser.error("--texts takes lines and episodes")
    print(f"load average (1 min) {load_average()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.sqlite"
        build(db, args.patterns)
        print(f"{args.patterns:,} patterns")
        base = knowledge_reads(db, args.calls) if "reads" in parts else 0.0
        if "reads" in parts:
            stdio = StdioServerParameters(
                command=sys.executable,
                args=["-m", "curator", "--db", str(db), "mcp"],
                env={"PYTHONPATH": str(ROOT)},
            )
            anyio.run(reads_over, stdio, "stdio", args.calls, base)
        if "reads" in parts:
            server = HttpServer(db)
            failed = True
            try:
                anyio.run(reads_over, server.url, "HTTP", args.calls, base)
                failed = False
            finally:
                server.stop(failed)
        rates: dict[tuple[str, str], float] = {}
        for what, kind in itertools.product(texts, kinds) if "record" in parts else []:
            server = HttpServer(db)  # each kind against a fresh server
            failed = True
            try:
                rates[kind, what] = anyio.run(
                    record_load,
                    kind,
                    what,
                    server.url,
                    server.process.pid,
                    args.records,
                    args.clients,
                    args.in_flight,
                )
                failed = False
            finally:
                server.stop(failed)
        if rates:
            (kind, what), worst = min(rates.items(), key=lambda item: item[1])
            verdict = "met" if worst >= 500 else "not met"
            print(
                f"record_episode, the worst of {len(rates)}: {worst:.0f} per second "
                f"({KIND_NAMES[kind]}, {TEXTS[what]}); goal >= 500 a second: {verdict}"
            )
        if "follow" in parts:
            follow_lag(db, Path(folder), args.lines)
    print(f"load average (1 min) {load_average()}")


if __name__ == "__main__":
    main()

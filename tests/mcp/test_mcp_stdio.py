"""``curator mcp`` over stdio, spawned and driven by the MCP SDK's own client."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation, TextResourceContents

from curator.store.db import Store

Counts = Callable[[Path], dict[str, int]]
AGENT = Implementation(name="test-agent", version="1.0")

BOTH_ENGINES = True  # each memory_db test on a SQLite file and a PostgreSQL database


def run(body: Callable[[Client], Any], params: Any) -> Any:
    async def main() -> Any:
        async with Client(params, client_info=AGENT, read_timeout_seconds=60) as client:
            return await body(client)

    return anyio.run(main)


def error_text(result: Any) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return str(text)


def test_every_tool_and_resource(stdio_params: Callable[..., Any], memory_db: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        resources = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        block = await client.call_tool("get_knowledge", {"top_k": 3})
        queried = await client.call_tool("get_knowledge", {"top_k": 2, "query": "disk quota"})
        search = await client.call_tool("search_knowledge", {"query": "backoff", "limit": 5})
        recorded = await client.call_tool("record_episode", {"text": "Build 41 passed."})
        chat = await client.call_tool(
            "record_episode",
            {"messages": [{"role": "user", "content": "ok?"}], "source": "chat-log"},
        )
        status = await client.call_tool("memory_status", {})
        knowledge = await client.read_resource("curator://knowledge")
        identity = await client.read_resource("curator://identity")
        return {
            "tools": tools,
            "resources": resources,
            "block": block.structured_content,
            "queried": queried.structured_content,
            "search": search.structured_content,
            "recorded": recorded.structured_content,
            "chat": chat.structured_content,
            "status": status.structured_content,
            "knowledge": knowledge.contents[0],
            "identity": identity.contents[0],
        }

    got = run(body, stdio_params())
    assert got["tools"] == ["get_knowledge", "memory_status", "record_episode", "search_knowledge"]
    assert got["resources"] == ["curator://identity", "curator://knowledge"]
    assert got["block"]["count"] == 3 and got["block"]["text"].startswith("## Knowledge")
    assert got["queried"]["patterns"][0]["text"].startswith("Check the disk quota")
    assert got["search"]["patterns"][0]["text"].startswith("Retry flaky")
    # The source defaults to the client's name from the handshake.
    assert got["recorded"]["created"] and got["recorded"]["source"] == "test-agent"
    assert got["chat"]["source"] == "chat-log"
    assert got["status"]["pending_classification"] >= 2
    assert isinstance(got["knowledge"], TextResourceContents)
    assert got["knowledge"].text == got_block_text(memory_db)
    identity = json.loads(got["identity"].text)
    assert identity["axioms"] and identity["version"] >= 1


def got_block_text(db: Path) -> str:
    from curator import Curator

    with Curator(db=db) as curator:
        return str(curator.knowledge()["text"])


HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("record_episode", {"text": "x" * 1_100_000}, "over the"),
    ("record_episode", {"text": "nul \x00 byte"}, "control character"),
    ("record_episode", {"text": "bell \x07 and escape \x1b[2J"}, "control character"),
    ("record_episode", {"text": 12345}, "'text'"),
    ("record_episode", {}, "either text or messages"),
    ("record_episode", {"messages": "not a list"}, "'messages'"),
    ("record_episode", {"text": "ok", "timestamp": "soon"}, "ISO 8601"),
    ("get_knowledge", {"top_k": -5}, "top_k"),
    ("get_knowledge", {"top_k": 10**12}, "top_k"),
    ("get_knowledge", {"top_k": "many"}, "'top_k'"),
    ("search_knowledge", {"query": "", "limit": 3}, "query"),
    ("search_knowledge", {"query": "a", "limit": 0}, "limit"),
    ("search_knowledge", {"limit": 3}, "'query'"),
    ("no_such_tool", {}, "Unknown tool"),
]


def test_hostile_arguments_get_one_sentence_and_write_nothing(
    stdio_params: Callable[..., Any], memory_db: Path, table_counts: Counts
) -> None:
    before = table_counts(memory_db)

    async def body(client: Client) -> list[tuple[str, Any]]:
        answers = []
        for name, arguments, _ in HOSTILE:
            answers.append((name, await client.call_tool(name, arguments)))
        answers.append(("alive", await client.call_tool("memory_status", {})))
        return answers

    answers = run(body, stdio_params())
    for (name, arguments, wanted), (_, result) in zip(HOSTILE, answers, strict=False):
        assert wanted in error_text(result), (name, arguments)
    assert not answers[-1][1].is_error  # the server is still serving
    assert table_counts(memory_db) == before


def test_read_only_serves_no_write_tool(
    stdio_params: Callable[..., Any], memory_db: Path, table_counts: Counts
) -> None:
    before = table_counts(memory_db)

    async def body(client: Client) -> tuple[list[str], Any]:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        return names, await client.call_tool("record_episode", {"text": "sneaky"})

    names, refused = run(body, stdio_params("--read-only"))
    assert "record_episode" not in names
    assert "Unknown tool" in error_text(refused)
    assert table_counts(memory_db) == before


def test_a_flood_above_the_rate_limit_is_refused(
    stdio_params: Callable[..., Any], memory_db: Path, table_counts: Counts
) -> None:
    before = table_counts(memory_db)["episode"]

    async def body(client: Client) -> list[Any]:
        return [await client.call_tool("record_episode", {"text": f"flood {n}"}) for n in range(12)]

    results = run(body, stdio_params("--rate", "1", "--burst", "5"))
    accepted = [r for r in results if not r.is_error]
    refused = [r for r in results if r.is_error]
    assert len(accepted) == 5
    assert all("rate limit" in error_text(r) for r in refused)
    assert table_counts(memory_db)["episode"] == before + 5


def test_missing_database_is_refused_before_serving(tmp_path: Path) -> None:
    from curator.cli import main

    missing = tmp_path / "absent.db"
    assert main(["--db", str(missing), "mcp"]) == 2
    assert not missing.exists()


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["--http", "nohost"], "HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "HOST:PORT"),
        (["--http", "agent.example:80"], "IP address or localhost"),
        (["--rate", "-1"], "--rate"),
        (["--burst", "0"], "--burst"),
    ],
)
def test_bad_options_are_usage_errors(
    memory_db: Path, capsys: pytest.CaptureFixture[str], args: list[str], wanted: str
) -> None:
    from curator.cli import main

    assert main(["--db", str(memory_db), "mcp", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curator: error:") and wanted in err and err.count("\n") == 1


def test_stdio_without_byte_streams_is_refused_in_one_line(
    memory_db: Path, table_counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a process whose stdout is a text buffer (an embedding host, a test harness) the
    stdio transport cannot frame messages: one line, exit 2, not an AttributeError."""
    import contextlib
    import io

    from curator.cli import main

    before = table_counts(memory_db)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["--db", str(memory_db), "mcp"])
    assert code == 2
    assert "byte streams" in err.getvalue() and err.getvalue().count("\n") == 1
    assert table_counts(memory_db) == before


def test_a_refused_read_is_one_sentence_from_tools_and_resources(
    stdio_params: Callable[..., Any], memory_db: Path, engine: str
) -> None:
    """A value this program never writes (a NaN importance, which PostgreSQL stores; on
    SQLite an importance over 1): the tools and the resources answer with the sentence,
    never 'Error reading resource' and a traceback."""
    bad = "'NaN'" if engine == "postgresql" else "1.5"
    with Store(memory_db) as store:
        store.execute(f"UPDATE pattern SET importance = {bad}")  # whichever is read

    async def body(client: Client) -> list[str]:
        said = [error_text(await client.call_tool("get_knowledge", {"top_k": 3}))]
        with pytest.raises(MCPError) as refused:
            await client.read_resource("curator://knowledge")
        return [*said, str(refused.value)]

    for text in run(body, stdio_params()):
        assert "a pattern holds importance " in text and "\n" not in text, text

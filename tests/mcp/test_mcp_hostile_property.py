"""Any arguments to any tool: an answer, or an MCP error of one sentence that wrote nothing.

The property runs the real server in-process through the SDK's own client (the same
code paths as stdio and HTTP, without a process per example). Arguments are drawn per
tool from the names it takes and from names it does not, with values of every JSON
type: huge and negative numbers, NUL and control characters, long texts, nested lists.
A call that is answered held arguments its tool's published input schema allows: what
the schema says is what the server takes (no ``true`` or ``"5"`` for an integer).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

from curator import Curator
from curator.mcp_server.server import ServerOptions, build_server
from curator.store.db import Store

Counts = Callable[[Path], dict[str, int]]

TOOLS = {
    "get_knowledge": ["top_k", "query"],
    "search_knowledge": ["query", "limit"],
    "memory_status": [],
    "record_episode": ["text", "messages", "source", "timestamp"],
}

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.text(alphabet=st.characters(max_codepoint=0x9F), max_size=20),
    st.sampled_from(["x" * 300_000, "\x00", "a\x1b[2Jb", "2026-13-45T99:00:00Z", " "]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from([*TOOLS, "no_such_tool", "record_episodes", "", "no\nsuch\ttool"]))
    keys = draw(
        st.lists(
            st.sampled_from([*TOOLS.get(name, []), "top_k", "extra", "role"]) | st.text(max_size=6),
            max_size=4,
            unique=True,
        )
    )
    return name, {key: draw(VALUES) for key in keys}


def snapshot(db: Path) -> list[Any]:
    store = Store(db, read_only=True)
    try:
        return store.execute("SELECT id, text, source, metadata FROM episode ORDER BY id")
    finally:
        store.close()


def one_sentence(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text and "Traceback" not in text and len(text) < 600


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(call=calls())
@example(call=("get_knowledge", {"top_k": -1}))
@example(call=("get_knowledge", {"top_k": 2**70}))
@example(call=("get_knowledge", {"top_k": 1.5}))
@example(call=("get_knowledge", {"top_k": True}))
@example(call=("get_knowledge", {"top_k": "5"}))
@example(call=("search_knowledge", {"query": "disk", "limit": 2.0}))
@example(call=("search_knowledge", {"query": "\x00", "limit": 10}))
@example(call=("record_episode", {"text": "x" * 300_000}))
@example(call=("record_episode", {"messages": [{"role": "user", "content": "\x00"}]}))
@example(call=("record_episode", {"text": "ok", "timestamp": 5}))
@example(call=("no_such_tool", {}))
@example(call=("get\nknowledge\n", {}))
@example(call=("memory_status", {"extra": 1}))
def test_any_call_is_answered_or_refused_in_one_sentence(
    tmp_path_factory: Any, call: tuple[str, dict[str, Any]]
) -> None:
    name, arguments = call
    db = tmp_path_factory.mktemp("hostile") / "m.db"
    Store(db).close()
    before = snapshot(db)

    async def main() -> Any:
        with Curator(db=db) as curator:
            server = build_server(curator, ServerOptions())
            info = Implementation(name="hostile", version="1")
            async with Client(server, client_info=info) as client:
                schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
                try:
                    return schemas, await client.call_tool(name, arguments)
                except MCPError as exc:  # a protocol-level refusal is an MCP error too
                    return schemas, exc

    schemas, answer = anyio.run(main)
    after = snapshot(db)
    if isinstance(answer, MCPError):
        assert one_sentence(answer.error.message), answer.error.message
        assert after == before
        return
    if answer.is_error:
        assert one_sentence(answer.content[0].text), answer.content[0].text
        assert after == before, "a refused call wrote to the database"
        return
    assert name in TOOLS
    jsonschema.validate(arguments, schemas[name])  # taken, so the schema allows it
    if name == "record_episode":
        assert len(after) == len(before) + 1
        assert after[-1][0] == answer.structured_content["episode_id"]
    else:
        assert after == before, f"{name} is a read and wrote to the database"


def test_published_counts_say_their_range_and_unknown_resources_one_line(
    tmp_path: Path,
) -> None:
    """The schemas give top_k and limit their range (1 to 1000, what the server takes),
    and an unknown resource's name, newlines and all, comes back on one line."""
    db = tmp_path / "m.db"
    Store(db).close()

    async def main() -> tuple[dict[str, Any], MCPError]:
        with Curator(db=db) as curator:
            server = build_server(curator, ServerOptions())
            async with Client(server) as client:
                schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
                try:
                    await client.read_resource("curator://x\ny\nz")
                except MCPError as exc:
                    return schemas, exc
                raise AssertionError("an unknown resource was read")

    schemas, refused = anyio.run(main)
    for tool, name in (("get_knowledge", "top_k"), ("search_knowledge", "limit")):
        found = json.dumps(schemas[tool]["properties"][name])
        assert '"minimum": 1' in found and '"maximum": 1000' in found, found
    assert one_sentence(refused.error.message), refused.error.message


def test_an_unknown_prompt_is_one_line_and_logs_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    Store(db).close()

    async def main() -> MCPError:
        with Curator(db=db) as curator:
            async with Client(build_server(curator, ServerOptions())) as client:
                try:
                    await client.get_prompt("no\nsuch prompt")
                except MCPError as exc:
                    return exc
                raise AssertionError("a prompt that does not exist was served")

    with caplog.at_level(logging.INFO):
        refused = anyio.run(main)
    assert one_sentence(refused.error.message), refused.error.message
    assert not [r for r in caplog.records if r.exc_info], caplog.text

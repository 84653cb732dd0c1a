"""A failure of the server itself: the client is told in one sentence, the log says why.

A bug inside a tool (a cache changed by two threads at once raised under a load of
clients) reached the client as "Error executing tool record_episode" and nothing else:
the server rewrote the SDK's error for an unexpected exception into an ordinary tool
error, which the SDK does not log, so the traceback went nowhere. The faults here are
injected (test doubles: no real input provokes a bug on purpose), through the SDK's real
client and the real server.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from curator import Curator
from curator.mcp_server.server import RECORD_FAILED, ServerOptions, build_server

NOTE = "The deploy of the billing service finished at noon; nothing else changed."


class InjectedFault(RuntimeError):
    """The fault a test double raises."""


def _logged(records: list[logging.LogRecord]) -> bool:
    """Whether a record carries the injected fault's traceback (itself or as the cause)."""
    for record in records:
        found = record.exc_info[1] if record.exc_info else None
        while found is not None:
            if isinstance(found, InjectedFault):
                return True
            found = found.__cause__
    return False


def _call(db: Path, tool: str, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        with Curator(db=db) as curator:
            server = build_server(curator, ServerOptions(records_per_minute=0))
            async with Client(server) as client:
                return await client.call_tool(tool, arguments)

    return anyio.run(main)


def _episodes(db: Path) -> int:
    with Curator(db=db) as curator:
        return int(curator.status()["episodes"])


def test_a_failed_record_is_one_sentence_to_the_client_and_a_traceback_in_the_log(
    memory_db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before = _episodes(memory_db)

    def broken(*_: object, **__: object) -> None:  # fault injection
        raise InjectedFault("a bug inside the group commit")

    monkeypatch.setattr(Curator, "record_many", broken)
    with caplog.at_level(logging.WARNING):
        result = _call(memory_db, "record_episode", {"text": NOTE})
    monkeypatch.undo()
    said = result.content[0].text
    assert result.is_error and said.endswith(RECORD_FAILED) and "\n" not in said
    assert "a bug inside" not in said  # the cause stays on the server
    assert _logged(caplog.records), caplog.text
    assert _episodes(memory_db) == before


def test_a_failed_read_leaves_its_traceback_in_the_log(
    memory_db: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: object, **__: object) -> None:  # fault injection
        raise InjectedFault("a bug inside the knowledge read")

    monkeypatch.setattr(Curator, "knowledge", broken)
    with caplog.at_level(logging.WARNING):
        result = _call(memory_db, "get_knowledge", {})
    said = result.content[0].text
    assert result.is_error and said == "Error executing tool get_knowledge"
    assert _logged(caplog.records), caplog.text

"""``curator mcp --http``: streamable HTTP with the SDK's client, and the bearer token."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

from curator.errors import CuratorError
from curator.mcp_server.http import is_loopback, load_or_create_token, parse_address
from tests.mcp.conftest import child_env

Counts = Callable[[Path], dict[str, int]]
Start = Callable[..., Any]

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


def call(
    server: Any, body: Callable[[Client], Any], name: str = "http-agent", token: str = ""
) -> Any:
    async def main() -> Any:
        info = Implementation(name=name, version="1")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with create_mcp_http_client(headers=headers) as http:
            target = streamable_http_client(server.url, http_client=http)
            async with Client(target, client_info=info, read_timeout_seconds=60) as client:
                return await body(client)

    return anyio.run(main)


def test_every_tool_and_resource_over_http(http_server: Start, memory_db: Path) -> None:
    server = http_server()
    assert server.url.startswith("http://127.0.0.1:")

    async def body(client: Client) -> dict[str, Any]:
        return {
            "tools": sorted(t.name for t in (await client.list_tools()).tools),
            "block": (await client.call_tool("get_knowledge", {})).structured_content,
            "search": (
                await client.call_tool("search_knowledge", {"query": "quota", "limit": 1})
            ).structured_content,
            "record": (
                await client.call_tool("record_episode", {"text": "over http"})
            ).structured_content,
            "status": (await client.call_tool("memory_status", {})).structured_content,
            "knowledge": (await client.read_resource("curator://knowledge")).contents[0],
            "identity": (await client.read_resource("curator://identity")).contents[0],
        }

    got = call(server, body)
    assert got["tools"] == ["get_knowledge", "memory_status", "record_episode", "search_knowledge"]
    assert got["block"]["count"] == 23  # the demo's 20 patterns and three more
    assert got["search"]["count"] == 1
    assert got["record"]["source"] == "http-agent" and got["record"]["created"]
    assert got["status"]["episodes"] >= 1
    assert got["knowledge"].text == got["block"]["text"]
    assert '"axioms"' in got["identity"].text


def test_two_clients_at_once_each_keep_their_name(
    http_server: Start, memory_db: Path, table_counts: Counts
) -> None:
    server = http_server()
    before = table_counts(memory_db)["episode"]

    async def both() -> list[Any]:
        results: list[Any] = []

        async def one(name: str) -> None:
            info = Implementation(name=name, version="1")
            async with Client(server.url, client_info=info, read_timeout_seconds=60) as client:
                for n in range(10):
                    answer = await client.call_tool("record_episode", {"text": f"{name} {n}"})
                    results.append(answer.structured_content)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "agent-a")
            group.start_soon(one, "agent-b")
        return results

    results = anyio.run(both)
    assert len(results) == 20 and all(r["created"] for r in results)
    assert {r["source"] for r in results} == {"agent-a", "agent-b"}
    assert table_counts(memory_db)["episode"] == before + 20


def _loaded_libraries(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_the_http_server_runs_on_uvloop_and_httptools(http_server: Start) -> None:
    """Both are dependencies (uvicorn's "standard" set): 12 to 14 % less server CPU per
    recorded episode than asyncio's loop and h11 (``benchmarks/RESULTS-mcp-record.md``)."""
    server = http_server()
    status = call(server, lambda client: client.call_tool("memory_status", {}))
    assert "episodes" in status.structured_content
    maps = _loaded_libraries(server.process.pid)
    assert "uvloop/loop." in maps
    assert "httptools/parser/parser." in maps


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps")
def test_without_uvloop_and_httptools_the_server_serves_the_same(
    http_server: Start, tmp_path: Path, memory_db: Path, table_counts: Counts
) -> None:
    """Where they cannot be imported (Windows has no uvloop; an environment may lack
    either), asyncio's loop and h11 serve. Fault injection: two modules that raise
    ``ImportError`` stand first on the child's path."""
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("uvloop", "httptools"):
        (blocked / f"{name}.py").write_text('raise ImportError("not installed here")\n')
    env = child_env()
    env["PYTHONPATH"] = str(blocked) + os.pathsep + env["PYTHONPATH"]
    server = http_server(env=env)
    before = table_counts(memory_db)["episode"]
    answer = call(server, lambda client: client.call_tool("record_episode", {"text": "h11"}))
    assert answer.structured_content["created"]
    assert table_counts(memory_db)["episode"] == before + 1
    maps = _loaded_libraries(server.process.pid)
    assert "uvloop/loop." not in maps and "httptools/parser/parser." not in maps


def test_token_required_refuses_missing_and_wrong_tokens(
    http_server: Start, memory_db: Path, tmp_path: Path, table_counts: Counts
) -> None:
    token_file = tmp_path / "secret" / "mcp-token"
    server = http_server("--require-token", "--token-file", str(token_file))
    assert "bearer token required" in server.announce
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text().strip()
    before = table_counts(memory_db)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
        answer = httpx.post(server.url, json=INIT, headers={**HEADERS, **headers}, timeout=30)
        assert answer.status_code == 401
        assert "refused" in answer.json()["error"]
    assert table_counts(memory_db) == before

    async def body(client: Client) -> Any:
        return await client.call_tool("record_episode", {"text": "with the token"})

    recorded = call(server, body, token=token)
    assert not recorded.is_error
    assert table_counts(memory_db)["episode"] == before["episode"] + 1


_TOKEN = "tok3n-Secret_value"
_VALUES = st.one_of(
    st.sampled_from(["Bearer", "bearer", "BEARER", "BeArEr", "Basic", "Token", ""]).map(
        lambda scheme: f"{scheme} {_TOKEN}"
    ),
    st.sampled_from([_TOKEN, f"Bearer  {_TOKEN}", f"Bearer\t{_TOKEN}", f"Bearer {_TOKEN} "]),
    st.text(max_size=30).map(lambda t: f"Bearer {t}"),
)
_NAMES = st.sampled_from([b"authorization", b"Authorization", b"AUTHORIZATION", b"x-authorization"])


@settings(max_examples=200, deadline=None)
@given(headers=st.lists(st.tuples(_NAMES, _VALUES), max_size=3))
@example(headers=[(b"authorization", f"bearer {_TOKEN}")])
@example(headers=[(b"authorization", "Bearer wrong"), (b"authorization", f"Bearer {_TOKEN}")])
def test_the_gate_takes_exactly_one_bearer_token_in_any_case_of_its_scheme(
    headers: list[tuple[bytes, str]],
) -> None:
    """RFC 9110: the scheme's case does not matter; the token's does. Two Authorization
    headers are refused, whichever holds the token (a proxy and the server could each
    read another one)."""
    from curator.mcp_server.http import BearerTokenGate

    passed: list[bool] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        passed.append(True)

    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    raw = [(name, value.encode("utf-8", "surrogatepass")) for name, value in headers]
    scope = {"type": "http", "headers": raw}
    anyio.run(BearerTokenGate(app, _TOKEN), scope, receive, send)
    given_values = [value for name, value in raw if name.lower() == b"authorization"]
    scheme, _, token = given_values[0].partition(b" ") if given_values else (b"", b"", b"")
    expected = len(given_values) == 1 and scheme.lower() == b"bearer" and token == _TOKEN.encode()
    assert bool(passed) == expected
    if not expected:
        assert sent[0]["status"] == 401
        reason = json.loads(sent[1]["body"])["error"]
        assert reason.startswith("refused: ") and _TOKEN not in reason


def test_the_token_is_kept_between_starts(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    first = load_or_create_token(path)
    assert load_or_create_token(path) == first and len(first) >= 32


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    path.write_text("abc\n")
    os.chmod(path, 0o644)
    with pytest.raises(CuratorError, match="chmod 600"):
        load_or_create_token(path)


def test_an_empty_token_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp-token"
    path.write_text("\n")
    os.chmod(path, 0o600)
    with pytest.raises(CuratorError, match="empty"):
        load_or_create_token(path)


SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- never shown"


def _link_to_a_private_file(folder: Path) -> Path:
    key = folder / "id_ed25519"
    key.write_text(SECRET + "\n")
    key.chmod(0o600)
    (folder / "mcp-token").symlink_to(key)
    return folder / "mcp-token"


def _garbage(folder: Path) -> Path:
    path = folder / "mcp-token"
    path.write_bytes(b"\xff\xfe" + SECRET.encode() + b"\x00")
    path.chmod(0o600)
    return path


def _short(folder: Path) -> Path:
    path = folder / "mcp-token"
    path.write_text("abc " + SECRET + "\n")
    path.chmod(0o600)
    return path


def _in_a_folder_others_write(folder: Path) -> Path:
    shared = folder / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # no sticky bit: anyone may replace the file
    path = shared / "mcp-token"
    path.write_text("a" * 43 + "\n")
    path.chmod(0o600)
    return path


def _another_users(folder: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("planting a file as another user needs root")
    shared = folder / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # /tmp's kind: others create, nobody replaces
    path = shared / "mcp-token"
    path.write_text("a" * 43 + "\n")
    path.chmod(0o600)
    os.chown(path, 65534, 65534)
    return path


def _a_folder(folder: Path) -> Path:
    (folder / "token.d").mkdir()
    return folder / "token.d"


def _over_long(folder: Path) -> Path:
    path = folder / "mcp-token"
    path.write_text("a" * 43 + "\n" * 5000 + "junk\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_a_folder, "is not a regular file"),
        (_over_long, "does not hold a token"),
        (_link_to_a_private_file, "is a link"),
        (_garbage, "does not hold a token"),
        (_short, "does not hold a token"),
        (_in_a_folder_others_write, "can be written by other users"),
        (_another_users, "belongs to another user"),
    ],
)
def test_a_token_file_that_is_not_safely_yours_is_refused_without_showing_it(
    tmp_path: Path, make: Callable[[Path], Path], said: str
) -> None:
    """A link is never followed (it could lead to a private key, which would then be the
    token); a file another user planted, or one in a folder others may write, is
    refused; content that is no token is refused; nothing of what it holds is shown."""
    path = make(tmp_path)
    with pytest.raises(CuratorError) as refused:
        load_or_create_token(path)
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert "PRIVATE" not in str(refused.value) and "aaaa" not in str(refused.value)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("example.org", False),
        ("127.0.0.1.example.org", False),
    ],
)
def test_loopback_decides_whether_a_token_is_needed(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("host", ["127.0.0.2", "LOCALHOST", "0:0:0:0:0:0:0:1"])
def test_every_loopback_spelling_keeps_web_pages_out(
    http_server: Start, memory_db: Path, table_counts: Counts, host: str
) -> None:
    """A server that asks no token checks the Host and the Origin (DNS rebinding: a page
    whose name now points at this machine), however loopback was written: the SDK
    checks them by itself only for 127.0.0.1, localhost and ::1, and these three took a
    page's records."""
    if ":" in host and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    before = table_counts(memory_db)
    try:
        server = http_server(host=host)
    except AssertionError as exc:  # a machine without an IPv6 loopback
        pytest.skip(f"cannot serve on {host}: {exc}")
    page = {"Host": "evil.example:80", "Origin": "http://evil.example"}
    answer = httpx.post(server.url, json=INIT, headers={**HEADERS, **page}, timeout=30)
    assert answer.status_code == 421, answer.text
    origin = {"Origin": "http://evil.example"}  # the right Host, a page's Origin
    answer = httpx.post(server.url, json=INIT, headers={**HEADERS, **origin}, timeout=30)
    assert answer.status_code == 403, answer.text
    own = httpx.post(server.url, json=INIT, headers=HEADERS, timeout=30)
    assert own.status_code == 200, own.text
    given = f"[{host}]" if ":" in host else host  # the address as it was written
    port = server.url.rsplit(":", 1)[1].split("/")[0]
    spelled = httpx.post(
        server.url, json=INIT, headers={**HEADERS, "Host": f"{given}:{port}"}, timeout=30
    )
    assert spelled.status_code == 200, spelled.text
    assert table_counts(memory_db) == before


def test_a_non_loopback_bind_without_a_usable_token_is_refused(
    memory_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """0.0.0.0 needs the token: a token file others can read stops it before it listens."""
    from curator.cli import main

    token_file = tmp_path / "mcp-token"
    token_file.write_text("leaked\n")
    os.chmod(token_file, 0o644)
    code = main(
        ["--db", str(memory_db), "mcp", "--http", "0.0.0.0:0", "--token-file", str(token_file)]
    )
    assert code == 2
    assert "chmod 600" in capsys.readouterr().err


@settings(deadline=None, max_examples=200)
@given(text=st.text(max_size=40))
@example(text="[::1]:80")
@example(text=":80")
@example(text="host:")
@example(text="host:+80")
@example(text="127.0.0.1:٣")
@example(text="127.0.0.1:²")
@example(text="0:0")
@example(text="example.org:80")
def test_any_address_parses_or_is_refused_in_one_line(text: str) -> None:
    try:
        host, port = parse_address(text)
    except CuratorError as exc:
        assert "\n" not in str(exc) and "--http wants" in str(exc)
        return
    assert 0 <= port <= 65535
    assert host == "localhost" or ipaddress.ip_address(host)


@pytest.mark.parametrize("text", ["0:0", "example.org:80", "127.0.0.1:²", "[::1]:"])
def test_names_and_odd_ports_are_refused(text: str) -> None:
    with pytest.raises(CuratorError, match="--http wants"):
        parse_address(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:8080", ("::1", 8080)),
        ("localhost:1", ("localhost", 1)),
    ],
)
def test_good_addresses_parse(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


def test_hostile_calls_over_http_are_one_sentence_and_write_nothing(
    http_server: Start, memory_db: Path, table_counts: Counts
) -> None:
    server = http_server()
    before = table_counts(memory_db)

    async def body(client: Client) -> list[Any]:
        answers = [
            await client.call_tool("record_episode", {"text": "m" * 1_500_000}),
            await client.call_tool("record_episode", {"text": "tab\tok but nul \x00"}),
            await client.call_tool("get_knowledge", {"top_k": 0}),
            await client.call_tool("search_knowledge", {"query": ["a"], "limit": 2}),
        ]
        # Over the SDK's 4 MiB body limit: an HTTP 413 before any tool runs, which the
        # client raises as an MCP error.
        try:
            await client.call_tool("record_episode", {"text": "b" * 5_000_000})
        except MCPError as exc:
            answers.append(exc)
        answers.append(await client.call_tool("memory_status", {}))
        return answers

    answers = call(server, body)
    *refused, too_big, alive = answers
    for result in refused:
        assert result.is_error and "\n" not in result.content[0].text, result
    assert isinstance(too_big, MCPError)
    assert not alive.is_error
    assert table_counts(memory_db) == before


def test_no_token_is_left_in_a_folder_others_may_write(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(CuratorError, match="can be written by other users"):
        load_or_create_token(shared / "mcp-token")
    assert list(shared.iterdir()) == []


def test_a_folder_only_the_users_own_group_may_write_keeps_the_token(tmp_path: Path) -> None:
    """A umask of 002 makes folders writable by the user's private group: that is the
    user alone, and the token is kept; a folder of another group is refused."""
    own = tmp_path / "own"
    own.mkdir()
    os.chown(own, os.geteuid(), os.getegid())
    own.chmod(0o775)
    assert len(load_or_create_token(own / "mcp-token")) >= 32
    if os.geteuid() == 0:
        shared = tmp_path / "shared"
        shared.mkdir()
        os.chown(shared, 0, 65534)
        shared.chmod(0o775)
        with pytest.raises(CuratorError, match="can be written by other users"):
            load_or_create_token(shared / "mcp-token")

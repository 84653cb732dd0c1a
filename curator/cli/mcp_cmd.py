"""``curator mcp``: serve the database to an agent over the Model Context Protocol.

The server module (and the MCP SDK under it) is imported only when the verb runs: every
other command starts without it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.errors import CuratorError


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "mcp",
        parents=[common],
        description="A Model Context Protocol server for the agent: it reads committed "
        "knowledge (get_knowledge, search_knowledge, memory_status, the resources "
        "curator://knowledge and curator://identity) and records pending episodes "
        "(record_episode), which a person still reviews. Stdio by default, the transport "
        "MCP clients launch; --http HOST:PORT serves streamable HTTP at /mcp, where any "
        "address but loopback needs the bearer token kept in --token-file.",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP instead of stdio (port 0: any free port, printed on stderr)",
    )
    p.add_argument("--read-only", action="store_true", help="serve no write tool")
    p.add_argument(
        "--require-token",
        action="store_true",
        help="ask for the bearer token on loopback too (always asked on other addresses)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="where the bearer token is kept (created, mode 0600, on first use; "
        "default: mcp-token in the app's data folder)",
    )
    p.add_argument(
        "--rate",
        type=integer,
        default=600,
        metavar="N",
        help="episodes each client may record per minute (0: no limit; default 600)",
    )
    p.add_argument(
        "--burst",
        type=integer,
        default=100,
        metavar="N",
        help="episodes a client may record at once before --rate applies (default 100)",
    )
    p.set_defaults(handler=cmd_mcp)


def _byte_streams() -> bool:
    """Whether stdin and stdout are real streams with bytes under them (MCP's stdio
    transport frames JSON-RPC on ``sys.stdin.buffer`` and ``sys.stdout.buffer``)."""
    return all(
        stream is not None and hasattr(stream, "buffer") and hasattr(stream, "fileno")
        for stream in (sys.stdin, sys.stdout)
    )


def _serve_stdio(server: Any) -> None:
    """Serve over stdio until the client closes its end.

    A client that closes the pipe it reads answers from is gone, whether or not its other
    pipe is still open: the next answer meets a broken pipe, which ends the serving like
    the end of input does, quietly. Standard output then points at /dev/null, so the
    interpreter's last flush at exit does not meet the broken pipe again.
    """
    import anyio

    from curator.mcp_server.stdio import serve_stdio

    try:
        anyio.run(serve_stdio, server)
    except BaseExceptionGroup as group:
        _gone, rest = group.split((BrokenPipeError, ConnectionResetError))
        if rest is not None:
            raise
    except (BrokenPipeError, ConnectionResetError):
        pass
    else:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def cmd_mcp(ctx: CommandContext) -> int:
    from curator.api import Curator
    from curator.mcp_server.http import (
        default_token_file,
        is_loopback,
        load_or_create_token,
        parse_address,
        serve_http,
    )
    from curator.mcp_server.server import ServerOptions, build_server

    args = ctx.args
    if args.rate < 0:
        raise CuratorError("--rate must be 0 (no limit) or more")
    if args.burst < 1:
        raise CuratorError("--burst must be at least 1")
    address = parse_address(args.http) if args.http else None
    store = ctx.store  # a missing or unusable database is refused first
    if address is None and not _byte_streams():
        raise CuratorError(
            "the stdio transport needs standard input and output as byte streams; "
            "use --http HOST:PORT here"
        )
    token = None
    if address is not None and (args.require_token or not is_loopback(address[0])):
        path = Path(args.token_file) if args.token_file else default_token_file()
        token = load_or_create_token(path)
        ctx.info(f"curator mcp: the bearer token is in {path}")
    options = ServerOptions(
        read_only=args.read_only, records_per_minute=args.rate, burst=args.burst
    )
    server = build_server(Curator.over(store), options)
    if address is None:
        _serve_stdio(server)
    else:
        serve_http(server, *address, token=token)
    return 0

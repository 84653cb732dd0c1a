"""``curator watch PATH...``: follow the JSON Lines logs an agent writes.

Each complete new line becomes a pending episode once; the follow itself is
:mod:`curator.store.follow`, imported only when the verb runs.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from curator.cli.common import CommandContext
from curator.core.wording import plural
from curator.errors import CuratorError


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.01 and 3600 seconds")
    return value


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "watch",
        parents=[common],
        description="Follow append-only JSON Lines logs (files, or folders of *.jsonl and "
        "*.ndjson files): every complete new line is imported once as a pending episode. "
        "Where each file was read up to is kept in the database with its lines, so a "
        "restart neither repeats nor skips a line; rotation (rename or copy-truncate), "
        "truncation and files deleted and created again are followed. Bad lines are "
        "reported as FILE:LINE on stderr and the follow goes on. Stops on Ctrl-C or "
        "SIGTERM.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a log file or a folder of logs")
    p.add_argument(
        "--interval",
        type=_interval,
        default=0.5,
        metavar="SECONDS",
        help="seconds between two looks at the files (default 0.5)",
    )
    p.add_argument(
        "--once", action="store_true", help="import what is there now and exit (for cron)"
    )
    p.set_defaults(handler=cmd_watch)


def cmd_watch(ctx: CommandContext) -> int:
    from curator.store.follow import Follower
    from curator.store.opening import StoreBusyError

    args = ctx.args
    follower = Follower(ctx.store, args.paths, ctx.info)
    if args.once:
        follower.poll()
    else:
        _follow_until_stopped(ctx, follower, args.interval, StoreBusyError)
    totals = follower.totals

    def human() -> str:
        return (
            f"{totals.imported} imported, {totals.duplicates} already present, "
            f"{len(totals.errors)} rejected"
        )

    ctx.emit(totals.as_dict(), human)
    return 1 if totals.errors else 0


def _follow_until_stopped(
    ctx: CommandContext, follower: Any, interval: float, busy: type[CuratorError]
) -> None:
    """Poll until SIGINT or SIGTERM; a signal ends the wait, never a transaction half way
    (the handler only sets a flag, checked between polls). A database busy for longer
    than its timeout is tried again at the next poll (what was committed stays); any
    other error (a read-only database) stops the follow."""
    stop = threading.Event()

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        following = plural(len(follower.paths), "path")
        ctx.info(f"curator watch: following {following}; Ctrl-C stops")
        while not stop.is_set():
            try:
                follower.poll()
            except busy as exc:
                ctx.info(f"curator watch: {exc}; trying again")
            stop.wait(interval)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

"""``curator watch PATH...``: follow the JSON Lines logs an agent writes.

Each complete new line becomes a pending episode once; the follow itself is
:mod:`curator.store.follow`, imported only when the verb runs. With ``--classify-every N``
the configured model labels the pending episodes in batches of N on a thread of its own
(:mod:`curator.pipeline.batch_classify`), so the follow goes on reading while it does.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from curator.cli.common import CommandContext
from curator.cli.pipeline import model_parser
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


def _batch(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError("must be between 1 and 100000 episodes")
    return value


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "watch",
        parents=[common, model_parser()],
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
    p.add_argument(
        "--classify-every",
        type=_batch,
        metavar="N",
        help="also label the pending episodes with the configured model, N at a time, "
        "whenever N are pending (with --once: all of them); the follow goes on meanwhile",
    )
    p.set_defaults(handler=cmd_watch)


def cmd_watch(ctx: CommandContext) -> int:
    from curator.store.follow import Follower
    from curator.store.opening import StoreBusyError

    args = ctx.args
    stop = threading.Event()
    follower = Follower(ctx.store, args.paths, ctx.info, should_stop=stop.is_set)
    classifier = _classifier(ctx)

    def handle(signum: int, frame: FrameType | None) -> None:
        stop.set()  # only flags: a transaction is never cut half way
        if classifier is not None:
            classifier.stop_soon()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if args.once:
            follower.poll()
            follower.note_waiting_tails()
            if classifier is not None:
                classifier.drain()
        else:
            _follow_until_stopped(ctx, follower, classifier, stop, args.interval, StoreBusyError)
    finally:
        follower.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if classifier is not None:
            classifier.stop()
            classifier.backend.close()
    totals = follower.totals
    document = totals.as_dict()
    if classifier is not None:
        document["classify"] = classifier.totals.as_dict()

    def human() -> str:
        text = (
            f"{totals.imported:,} imported, {totals.duplicates:,} already present, "
            f"{len(totals.errors):,} rejected"
        )
        if classifier is not None:
            batches = classifier.totals
            text += f"; {batches.classified} classified in {plural(len(batches.runs), 'run')}"
        return text

    ctx.emit(document, human)
    failed = classifier is not None and bool(classifier.totals.failure)
    return 1 if totals.errors or failed else 0


def _classifier(ctx: CommandContext) -> Any:
    """The batch classifier of ``--classify-every``, its model loaded and checked before
    anything is followed (an unusable model is a one-line error, nothing imported)."""
    if ctx.args.classify_every is None:
        return None
    from curator.cli.pipeline import _load_backend
    from curator.pipeline.batch_classify import BatchClassifier

    backend = _load_backend(ctx)
    return BatchClassifier(ctx.store, backend, ctx.args.classify_every, ctx.info)


def _follow_until_stopped(
    ctx: CommandContext,
    follower: Any,
    classifier: Any,
    stop: threading.Event,
    interval: float,
    busy: type[CuratorError],
) -> None:
    """Poll until ``stop`` (SIGINT or SIGTERM) is set; a signal ends the wait, never a
    transaction half way. A database busy for longer than its timeout is tried again at
    the next poll (what was committed stays); any other error (a read-only database)
    stops the follow. A poll that imported lines nudges the classifier, which runs its
    batch on its own thread while the polls go on."""
    following = plural(len(follower.paths), "path")
    ctx.info(f"curator watch: following {following}; Ctrl-C stops")
    if classifier is not None:
        classifier.start()
    while not stop.is_set():
        try:
            if follower.poll() and classifier is not None:
                classifier.nudge()
        except busy as exc:
            ctx.info(f"curator watch: {exc}; trying again")
        stop.wait(interval)

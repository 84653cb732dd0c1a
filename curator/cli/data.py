"""Data subcommands: import, export, stats, demo; and opening the window.

Each command imports the store's modules it uses when it runs, not with this module:
``curator stats --help`` then starts without the database layer, and ``stats`` without
the knowledge export's."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.core.wording import plural
from curator.errors import CuratorError


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "import",
        parents=[common],
        description="Import episodes. Bad lines are reported as FILE:LINE: reason and skipped; "
        "the good lines of each file are imported in one transaction. A file that cannot be "
        "read is reported as FILE: reason and the other files are still imported. FILE - "
        "reads standard input. Chat exports (ChatGPT, Claude, Telegram, Discord, Slack, CSV) "
        "are recognised by their content; bad elements are reported by position. Exit code "
        "0 when every line was good, 1 when some were rejected.",
    )
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a JSONL or JSON file, a chat export (a Slack export may be a folder); - for stdin",
    )
    p.add_argument(
        "--format",
        default="auto",
        choices=("auto", "jsonl", "chatgpt", "claude", "telegram", "discord", "slack", "csv"),
        help="the file's format; auto (default) recognises each file by its content",
    )
    p.add_argument(
        "--per",
        default=None,
        metavar="GRANULARITY",
        help="episodes of a chat export: message, conversation or window:N (N messages); "
        "default: conversation for ChatGPT and Claude, window:20 for Telegram, Discord and "
        "Slack, message for CSV",
    )
    p.add_argument(
        "--map",
        default="",
        metavar="FIELD=COLUMN,...",
        help="CSV columns: content (required), timestamp, source, role, name, id, "
        "conversation; e.g. content=body,timestamp=sent_at,source=channel",
    )
    p.set_defaults(handler=cmd_import)

    p = subparsers.add_parser("export", parents=[common])
    p.add_argument(
        "--top", type=integer, default=None, metavar="K", help="default: setting top_k (50)"
    )
    p.add_argument(
        "--format",
        choices=("json", "markdown", "mem0", "letta-block"),
        default="markdown",
        help="markdown: the prompt block; json: the patterns with their scores; mem0: a "
        "JSON list for Mem0's Memory.add; letta-block: a Letta core-memory block within "
        "--limit characters",
    )
    p.add_argument(
        "--limit",
        type=integer,
        default=None,
        metavar="N",
        help="letta-block only: the block's character limit (default 5000)",
    )
    p.set_defaults(handler=cmd_export)

    p = subparsers.add_parser("stats", parents=[common])
    p.set_defaults(handler=cmd_stats)

    p = subparsers.add_parser("demo", parents=[common])
    p.add_argument(
        "--if-missing", action="store_true", help="do nothing when the database has data"
    )
    p.set_defaults(handler=cmd_demo)


def _chat_import(args: argparse.Namespace) -> Any:
    """The chat-export options as a ``ChatImport``; bad ones are usage errors (exit 2)."""
    from curator.chat_formats import ChatImport, parse_granularity
    from curator.chat_formats.csv_map import parse_mapping
    from curator.store.importer import STDIN

    try:
        per = None if args.per is None else parse_granularity(args.per)
    except ValueError as exc:
        raise CuratorError(f"--per: {exc}") from None
    try:
        mapping = parse_mapping(args.map)
    except ValueError as exc:
        raise CuratorError(f"--map: {exc}") from None
    if mapping and args.format not in ("auto", "csv"):
        raise CuratorError(f"--map applies to CSV files, not --format {args.format}")
    if args.format not in ("auto", "jsonl") and STDIN in args.files:
        raise CuratorError(f"--format {args.format} reads files, not standard input")
    return ChatImport(format=args.format, per=per, mapping=mapping)


def cmd_import(ctx: CommandContext) -> int:
    from curator.store.importer import import_files  # only here: stats and export stay cheap

    chat = _chat_import(ctx.args)
    # A closed standard input (`<&-`) is None: the importer says "no standard input".
    stdin = getattr(sys.stdin, "buffer", None)
    reports = import_files(ctx.store, ctx.args.files, stdin=stdin, chat=chat)
    rejected = sum(len(r.errors) for r in reports)
    for report in reports:
        for error in report.errors:
            ctx.info(str(error))
        for note in report.notes:
            ctx.info(f"{report.file}: note: {note}")
        left_out = chat.skipped.get(report.file)
        if left_out:
            counts = ", ".join(f"{n} {kind}" for kind, n in sorted(left_out.items()))
            ctx.info(f"{report.file}: left out or only named: {counts}")

    def human() -> str:
        lines = [
            f"{r.file}: {r.imported:,} imported, {r.duplicates:,} already present, "
            f"{len(r.errors):,} rejected"
            for r in reports
        ]
        return "\n".join(lines)

    ctx.emit(
        {
            "files": [
                {
                    **r.as_dict(),
                    "format": chat.formats.get(r.file, "jsonl"),
                    "left_out": dict(sorted(chat.skipped.get(r.file, {}).items())),
                }
                for r in reports
            ],
            "imported": sum(r.imported for r in reports),
            "duplicates": sum(r.duplicates for r in reports),
            "rejected": rejected,
        },
        human,
    )
    return 1 if rejected else 0


def cmd_export(ctx: CommandContext) -> int:
    from curator.store.knowledge import export_json, export_markdown, top_k_patterns

    if ctx.args.top is not None and ctx.args.top < 1:
        raise CuratorError("--top must be at least 1")
    fmt = ctx.args.format
    if ctx.args.limit is not None and fmt != "letta-block":
        raise CuratorError("--limit applies to --format letta-block only")
    if fmt == "letta-block":
        from curator.store.memtool_export import DEFAULT_BLOCK_LIMIT, MIN_BLOCK_LIMIT

        limit = DEFAULT_BLOCK_LIMIT if ctx.args.limit is None else ctx.args.limit
        if limit < MIN_BLOCK_LIMIT:
            raise CuratorError(f"--limit must be at least {MIN_BLOCK_LIMIT} characters")
    rows = top_k_patterns(ctx.store, k=ctx.args.top)
    if fmt == "mem0":
        from curator.store.memtool_export import export_mem0

        ctx.json = True  # the list is the document, with or without --json
        ctx.emit(export_mem0(ctx.store, rows))
    elif fmt == "letta-block":
        from curator.store.memtool_export import export_letta_block

        block = export_letta_block(rows, limit)
        ctx.emit({"block": block, "limit": limit, "patterns": len(rows)}, block)
    elif ctx.json or fmt == "json":
        ctx.json = True
        ctx.emit({"patterns": export_json(rows), "count": len(rows)})
    else:
        ctx.emit(None, export_markdown(rows).rstrip("\n"))
    return 0


def stats_document(ctx: CommandContext) -> dict[str, Any]:
    from curator.store.models import LABELS, Candidate, Episode, Pattern, Run

    store = ctx.store
    labels: Counter[str] = Counter(
        {
            (label or "unlabelled"): int(n)
            for label, n in store.execute("SELECT label, COUNT(*) FROM episode GROUP BY label")
        }
    )
    runs: Counter[str] = Counter(
        {
            str(status): int(n)
            for status, n in store.execute("SELECT status, COUNT(*) FROM run GROUP BY status")
        }
    )
    return {
        "database": ctx.db_display,
        "episodes": {
            "total": sum(labels.values()),
            "by_label": {label: labels.get(label, 0) for label in (*LABELS, "unlabelled")},
            "human_labelled": Episode.select().where(Episode.human_label.is_null(False)).count(),
            "distilled": Episode.select().where(Episode.distilled_at.is_null(False)).count(),
        },
        "patterns": {
            "active": Pattern.select().where(Pattern.status == "active").count(),
            "retired": Pattern.select().where(Pattern.status != "active").count(),
        },
        "runs": {"total": sum(runs.values()), "by_status": dict(runs)},
        "candidates_pending": Candidate.select()
        .join(Run)
        .where((Run.status == "staged") & Candidate.action.is_null())
        .count(),
    }


def cmd_stats(ctx: CommandContext) -> int:
    doc = stats_document(ctx)

    def human() -> str:
        e, p, r = doc["episodes"], doc["patterns"], doc["runs"]
        by_label = ", ".join(f"{k} {v}" for k, v in e["by_label"].items())
        by_status = ", ".join(f"{k} {v}" for k, v in sorted(r["by_status"].items())) or "none"
        return "\n".join(
            [
                f"database:  {doc['database']}",
                f"episodes:  {e['total']} ({by_label}); human-labelled {e['human_labelled']}, "
                f"distilled {e['distilled']}",
                f"patterns:  {p['active']} active, {p['retired']} retired",
                f"runs:      {r['total']} ({by_status}); "
                f"{plural(doc['candidates_pending'], 'candidate')} awaiting review",
            ]
        )

    ctx.emit(doc, human)
    return 0


def cmd_demo(ctx: CommandContext) -> int:
    from curator.store.demo import create_demo  # only here: stats and export stay cheap

    report = create_demo(ctx.store)
    if not report.created and not ctx.args.if_missing:
        raise CuratorError(f"{ctx.db_display} already has data; the demo needs an empty database")
    message = (
        f"demo database ready: {plural(report.episodes, 'episode')}, "
        f"{plural(report.patterns, 'pattern')}"
        if report.created
        else f"{ctx.db_display} already has data; left as it is"
    )
    ctx.emit(
        {
            "created": report.created,
            "episodes": report.episodes,
            "patterns": report.patterns,
            "database": ctx.db_display,
        },
        message,
    )
    return 0


def open_window(ctx: CommandContext) -> int:
    """No subcommand: the desktop window on the resolved database (a file or a
    PostgreSQL URL, whose password rule :func:`resolve_db_path` has applied already)."""
    from curator.gui.app import main as gui_main

    return gui_main(ctx.db_path, source=ctx.db_source)

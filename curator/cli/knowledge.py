"""Knowledge guard subcommands: import-knowledge, audit, retire.

``import-knowledge`` stages existing memory as a run to review (like a distillation);
``audit`` lists stored patterns, identity and axioms that carry memory-poisoning flags;
``retire`` takes patterns out of the prompt as an undoable changeset (``curator undo``).
"""

from __future__ import annotations

import argparse
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.cli.pipeline import _load_backend, model_parser
from curator.core.redact import redact
from curator.core.wording import plural
from curator.errors import CuratorError


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "import-knowledge",
        parents=[common, model_parser()],
        description="Read FILE: the seed's JSON list of {pattern, importance, distilled}, "
        "plain text (one pattern per line), a Markdown bullet list, Mem0 memories "
        "(Memory.get_all()), an OpenMemory export (JSON or zip), a Letta agent file (.af) "
        "or a JSON list of strings, recognised by content. The patterns go "
        "through the quality and dedup gates and are staged as a run: review it "
        "(`curator review RUN`) and commit it like a distillation. Bad lines are reported "
        "as FILE:LINE: reason; exit code 1 when some were rejected. The configured model "
        "gives its second opinion on each pattern (setting guard_model_opinion; not the "
        "demo model unless it is 'always'); a model that cannot be loaded is reported and "
        "the file is staged without it.",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--format",
        choices=("auto", "seed", "mem0", "openmemory", "letta", "strings"),
        default="auto",
        help="the file's shape; auto (the default) recognises it by content",
    )
    p.set_defaults(handler=cmd_import_knowledge)

    p = subparsers.add_parser(
        "audit",
        parents=[common],
        description="Runs the flag detector over every active pattern (with its provenance) "
        "and over the identity and axioms. Retire a flagged pattern with `curator retire`.",
    )
    p.set_defaults(handler=cmd_audit)

    p = subparsers.add_parser(
        "retire",
        parents=[common],
    )
    p.add_argument("patterns", nargs="+", type=integer, metavar="PATTERN_ID")
    p.set_defaults(handler=cmd_retire)


def _opinion_model(ctx: CommandContext) -> Any:
    """The model for the second opinion, or None (not wanted, or it cannot be loaded:
    the import goes on without it and the run records why). A model named by ``--model``
    or ``--server`` is loaded, and then judged (the demo model is still not asked under
    ``on``); else the saved settings decide before anything is loaded."""
    from curator.pipeline.guard_opinion import opinion_wanted
    from curator.pipeline.runlog import one_line
    from curator.store.settings import load_settings

    args = ctx.args
    settings = load_settings(ctx.store)
    chosen = bool(args.model or args.server)  # a model named here, not the saved one
    if settings.guard_model_opinion == "off" or not (chosen or opinion_wanted(settings)):
        return None
    try:
        return _load_backend(ctx)
    except CuratorError as exc:
        ctx.info(f"curator: warning: no second opinion from the model: {redact(one_line(exc))}")
        return None


def cmd_import_knowledge(ctx: CommandContext) -> int:
    """Stage FILE; a file of more than one gate batch shows its progress on stderr.

    Ctrl+C stops it with nothing staged (the gate runs before the write, and the write
    is one transaction).
    """
    from curator.cli.pipeline import ProgressPrinter
    from curator.pipeline.import_knowledge import GATE_BATCH, import_knowledge
    from curator.pipeline.progress import Progress

    printer = ProgressPrinter()

    def progress(done: int, total: int) -> None:
        if total >= GATE_BATCH:  # a small file is quick: no progress lines
            printer(Progress("dedup", done, total, message="patterns through the dedup gate"))

    backend = _opinion_model(ctx)
    try:
        report = import_knowledge(
            ctx.store, ctx.args.file, backend=backend, progress=progress, fmt=ctx.args.format
        )
    finally:
        printer.close()
        if backend is not None:
            backend.close()
    for error in report.errors:
        ctx.info(str(error))
    for dropped in report.dropped_quality:
        ctx.info(
            f"{report.file}:{dropped['line']}: dropped by the quality gate "
            f"({'; '.join(dropped['reasons'])})"
        )

    def human() -> str:
        text = report.describe()
        if report.run_id is not None:
            text += f"\nreview it with: curator review {report.run_id}"
        return text

    ctx.emit(report.to_json(), human)
    return 1 if report.errors else 0


def cmd_audit(ctx: CommandContext) -> int:
    from curator.pipeline.audit import audit

    report = audit(ctx.store)

    def human() -> str:
        lines = [
            f"{report.patterns_checked} active patterns and identity version "
            f"{report.identity_version} checked; {len(report.entries)} flagged"
        ]
        for entry in report.entries:
            head = f"pattern {entry.pattern_id}" if entry.pattern_id is not None else entry.where
            text = " ".join(entry.text.split())
            lines.append(f"{head}: {text[:100]}{'…' if len(text) > 100 else ''}")
            for flag in entry.flags:
                lines.append(f"    ⚑ {flag.describe()}")
            if entry.pattern_id is not None:
                run = (
                    f"run {entry.created_run_id} ({entry.created_run_kind})"
                    if entry.created_run_id is not None
                    else "no run recorded"
                )
                sources = ", ".join(sorted(set(entry.sources))) or "none"
                lines.append(
                    f"    provenance: {run}; {plural(len(entry.episode_ids), 'episode')} "
                    f"from {sources}"
                )
        if any(e.pattern_id is not None for e in report.entries):
            lines.append("retire one with: curator retire PATTERN_ID (undo: curator undo)")
        return "\n".join(lines)

    ctx.emit(report.to_json(), human)
    return 0


#: Retired patterns the command line names with their text (the rest are counted).
RETIRED_SHOWN = 20


def cmd_retire(ctx: CommandContext) -> int:
    from curator.core.flag_type import short
    from curator.core.textsafety import escape_controls
    from curator.pipeline.audit import retire_patterns
    from curator.store.models import Pattern

    summary = retire_patterns(ctx.store, ctx.args.patterns, actor="cli")
    retired = summary.counts["retired"]
    # the texts, so a person sees what an id named (an id of a removed pattern is reused)
    with ctx.store.read():
        texts = [
            f"  #{p.id} {escape_controls(short(p.text, 100))}"
            for p in Pattern.select(Pattern.id, Pattern.text)
            .where(Pattern.id.in_(sorted(set(ctx.args.patterns))))
            .order_by(Pattern.id)
            .limit(RETIRED_SHOWN)
        ]
    more = [f"  … and {retired - RETIRED_SHOWN:,} more"] if retired > RETIRED_SHOWN else []
    ctx.emit(
        summary.to_json(),
        "\n".join(
            [
                f"retired {plural(retired, 'pattern')} as changeset {summary.id}; "
                f"undo with: curator undo {summary.id}",
                *texts,
                *more,
            ]
        ),
    )
    return 0

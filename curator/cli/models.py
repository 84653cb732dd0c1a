"""``curator models``: the model catalogue, downloads, and GGUF files already on this computer.

``list`` shows the catalogue and what is downloaded; ``download NAME`` fetches one model
(resumable: run it again after an interruption; a second download of the same model while
one runs is refused with exit code 1, as is removing it meanwhile); ``remove NAME``
deletes it; ``local``
lists the GGUF files that LM Studio, Ollama, GPT4All and the Hugging Face cache already
hold. None of these touch the database; the printed path is what ``curator settings
model_path=PATH`` (or Settings in the window) takes.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from curator.cli.common import CommandContext
from curator.core.redact import redact
from curator.llm.catalogue import (
    entry_state,
    find_entry,
    installed_path,
    load_catalogue,
    models_dir,
    remove_model,
)
from curator.llm.discovery import find_local_models
from curator.llm.download import DownloadLimits, Progress, download_model


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "models",
        parents=[common],
        description="The model catalogue and the GGUF files already on this computer. "
        f"Downloads are saved in {models_dir()} ($CURATOR_MODELS_DIR overrides it).",
    )
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    catalogue = argparse.ArgumentParser(add_help=False)
    catalogue.add_argument(
        "--catalogue", metavar="FILE", help="a catalogue JSON file instead of the shipped one"
    )
    ls = sub.add_parser(
        "list", parents=[common, catalogue], help="the catalogue, with what is downloaded"
    )
    ls.set_defaults(handler=cmd_list)
    dl = sub.add_parser(
        "download",
        parents=[common, catalogue],
        help="download a catalogue model (run again to resume)",
    )
    dl.add_argument("name", metavar="NAME")
    dl.set_defaults(handler=cmd_download)
    rm = sub.add_parser(
        "remove", parents=[common, catalogue], help="delete a downloaded catalogue model"
    )
    rm.add_argument("name", metavar="NAME")
    rm.set_defaults(handler=cmd_remove)
    local = sub.add_parser(
        "local",
        parents=[common],
        help="GGUF files of LM Studio, Ollama, GPT4All and the Hugging Face cache",
    )
    local.set_defaults(handler=cmd_local)


def cmd_list(ctx: CommandContext) -> int:
    entries = load_catalogue(ctx.args.catalogue)
    rows = []
    for entry in entries:
        state = entry_state(entry)
        rows.append({**entry.as_dict(), "state": state, "path": str(installed_path(entry))})

    def human() -> str:
        lines = []
        for row in rows:
            lines.append(
                f"{row['name']:<32} {row['ram_gb']:>4g} GB RAM  ctx {row['context_length']:<6} "
                f"{row['state']}"
            )
            lines.append(f"    {row['title']} · {row['licence']} · {row['note']}")
        return "\n".join(lines)

    ctx.emit({"models_dir": str(models_dir()), "models": rows}, human)
    return 0


class _ProgressPrinter:
    """A progress line on stderr, rewritten at most twice a second."""

    def __init__(self, ctx: CommandContext) -> None:
        self.ctx = ctx
        self.last = 0.0

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if progress.phase == "downloading" and now - self.last < 0.5:
            return
        self.last = now
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K" + progress.describe())
            sys.stderr.flush()
        else:
            self.ctx.info(progress.describe())


def cmd_download(ctx: CommandContext) -> int:
    entry = find_entry(load_catalogue(ctx.args.catalogue), ctx.args.name)
    limits = DownloadLimits.from_env()  # a bad $CURATOR_DOWNLOAD_* is refused before anything
    ctx.info(f"downloading {entry.title} from {redact(entry.url)}")
    try:
        result = download_model(entry, progress=_ProgressPrinter(ctx), limits=limits)
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    ctx.emit(
        {
            "name": entry.name,
            "path": str(result.path),
            "sha256": result.sha256,
            "verified": result.verified,
            "resumed_from": result.resumed_from,
        },
        f"{result.describe()}\nUse it: curator settings model_path={result.path}",
    )
    return 0


def cmd_remove(ctx: CommandContext) -> int:
    entry = find_entry(load_catalogue(ctx.args.catalogue), ctx.args.name)
    removed = remove_model(entry)
    ctx.emit(
        {"name": entry.name, "removed": [str(p) for p in removed]},
        "\n".join(f"deleted {p}" for p in removed),
    )
    return 0


def cmd_local(ctx: CommandContext) -> int:
    models = find_local_models()

    def human() -> str:
        if not models:
            return "No GGUF models found in the LM Studio, Ollama, GPT4All or Hugging Face folders."
        return "\n".join(
            f"{m.source:<12} {m.label}\n    {m.name} · {m.architecture} · {m.quantization} · "
            f"{m.size_bytes / 1_048_576:.0f} MiB\n    {m.path}"
            for m in models
        )

    ctx.emit({"models": [m.as_dict() for m in models]}, human)
    return 0

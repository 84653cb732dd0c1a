"""``curator settings``: show the saved settings, or change some of them.

The same :class:`~curator.store.settings.Settings` rules as the window's Settings pane, so
a value one refuses the other refuses too, with the same one-line message. A new model
file is checked (header, then a trial load in a child process) before it is saved, as the
window does.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from curator.cli.common import CommandContext
from curator.errors import CuratorError
from curator.store.settings import RULES, changed_settings, load_settings, update_settings


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "settings",
        parents=[common],
        description="Without arguments, print every setting. With KEY=VALUE pairs, validate "
        "them all and save all or none (VALUE is JSON: 4096, 0.9, true, null for the "
        "default; anything else is text). Keys: " + ", ".join(RULES) + ".",
    )
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE")
    p.set_defaults(handler=cmd_settings)


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as JSON where it is JSON, as text otherwise."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CuratorError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw, parse_constant=lambda name: name)
    except (ValueError, RecursionError):  # not JSON (or nested too deeply): the text itself
        value = raw
    return key, value


def cmd_settings(ctx: CommandContext) -> int:
    changes = dict(parse_assignment(a) for a in ctx.args.assignments)
    if changes:
        candidate = changed_settings(ctx.store, changes)  # refuse before any check
        path = changes.get("model_path")
        if candidate.model_path and path is not None:
            from curator.llm.model_trial import validate_model_file

            validate_model_file(candidate.model_path)
        settings = update_settings(ctx.store, changes)
    else:
        settings = load_settings(ctx.store)
    values = settings.as_dict()
    width = max(len(k) for k in values)
    ctx.emit(
        {"settings": values},
        "\n".join(f"{k:<{width}}  {json.dumps(v)}" for k, v in values.items()),
    )
    return 0

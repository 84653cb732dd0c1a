"""The ``curator`` program's entry point: a Ctrl-C at any moment ends it as exit 130, one line.

The command's modules take a few tenths of a second to import and its arguments are
parsed before any command runs; a Ctrl-C there raised ``KeyboardInterrupt`` out of the
program: a traceback instead of ``curator: error: interrupted``, and with ``--json`` no
document on stdout. This module imports nothing of the curator's before it can catch it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: a Ctrl-C may come

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["INTERRUPTED", "run", "wants_json"]

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), as the shell's own.
INTERRUPTED = 130


def wants_json(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` (or an abbreviation argparse accepts) is among the options.

    Looked up in the raw arguments because a usage error (or a Ctrl-C) stops argparse
    before it has set anything; arguments after ``--`` are operands, not options.
    """
    for argument in arguments:
        if argument == "--":
            return False
        if len(argument) >= 3 and "--json".startswith(argument):
            return True
    return False


def interrupted(arguments: Sequence[str]) -> int:
    """Say that the command was interrupted before it wrote anything: stderr, and the
    ``--json`` error document on stdout (written as ``json.dumps`` would, importing
    nothing: a second Ctrl-C may come at any moment)."""
    try:
        print("curator: error: interrupted", file=sys.stderr, flush=True)
        if wants_json(arguments):
            sys.stdout.write(f'{{\n  "error": "interrupted",\n  "exit": {INTERRUPTED}\n}}\n')
            sys.stdout.flush()
    except (OSError, ValueError, KeyboardInterrupt):
        pass
    return INTERRUPTED


def run() -> int:
    """The ``curator`` program: :func:`curator.cli.run`, its imports included."""
    try:
        from curator.cli import run as command

        return command()
    except KeyboardInterrupt:  # before the command could: nothing was written
        return interrupted(sys.argv[1:])

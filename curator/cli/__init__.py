"""The ``curator`` command line.

Every subcommand lives in a small module of this package that exposes
``register(subparsers)``; each parser sets ``handler`` to a function
``handler(ctx: CommandContext) -> int``. With no subcommand the desktop window opens.

Conventions shared by all commands:
- ``--json`` prints exactly one JSON document on stdout (for scripts and tests), on failure
  too: ``{"error": "...", "exit": N}``, whatever failed (a usage error included);
- errors are one readable line on stderr, never a traceback (``CURATOR_DEBUG=1`` shows it);
- exit codes: 0 success, 1 some input rejected or a conflict (or the output could not be
  written), 2 usage or unusable input (nothing changed), 130 interrupted, 141 the reader
  of stdout went away; 3 only for an internal error, a bug to report;
- a missing database is created only by the commands made for it (see
  :data:`curator.cli.common.DATABASE_USE`) or with ``--create``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from curator import __version__
from curator.cli.common import (
    CommandContext,
    OutputError,
    add_common_options,
    ensure_standard_streams,
    print_error_document,
)
from curator.core.jsonsafe import dumps
from curator.errors import CuratorError
from curator.llm.model_file import CHECK_OPTION, run_child_check
from curator.store.db import DATABASE_ERRORS, explain_database_error

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class UsageExit(SystemExit):
    """argparse's usage error (exit code 2), carrying its message for the JSON document
    (without the ``curator COMMAND: error:`` prefix, like every error document)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class HelpFormatter(argparse.HelpFormatter):
    """One escaping rule for every help text: ``%%`` is a percent sign, ``%(prog)s`` the
    program.

    argparse %-formats argument and subcommand help always, but a description or epilog
    only when it happens to contain ``%(prog)``; so the same "95%%" rendered as "95%" in
    one place and literally in the other. Here descriptions are formatted too.
    """

    def _format_text(self, text: str) -> str:
        if "%" in text and "%(prog)" not in text:
            text = text % {"prog": self._prog}
        return super()._format_text(text)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line on stderr (exit code 2), no usage dump.

    Every parser uses :class:`HelpFormatter` (one ``%%`` rule for all help texts). With
    ``--json`` anywhere among the options (:attr:`json_output`, set by :func:`main`
    before parsing, since ``--help`` stops argparse before it sets anything) the help is
    one document too, ``{"help": TEXT}``: a script asking for JSON always gets JSON.
    """

    json_output = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        if not self.json_output:
            super().print_help(file)
            return
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(dumps({"help": self.format_help()}) + "\n")
            sys.stdout.flush()

    def error(self, message: str) -> NoReturn:
        text = " ".join(f"{message} (see --help)".split())
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{self.prog}: error: {text}\n")
            sys.stderr.flush()
        raise UsageExit(text)


class _VersionAction(argparse.Action):
    """``--version``: ``curator X.Y`` for a person, ``{"version": "X.Y"}`` with ``--json``."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        plain = f"curator {__version__}"
        text = dumps({"version": __version__}) if _Parser.json_output else plain
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        parser.exit()


def _wants_json(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` (or an abbreviation argparse accepts) is among the options.

    Looked up in the raw arguments because a usage error stops argparse before it has
    set anything; arguments after ``--`` are operands, not options.
    """
    for argument in arguments:
        if argument == "--":
            return False
        if len(argument) >= 3 and "--json".startswith(argument):
            return True
    return False


def _shown_path(name: object, limit: int = 120) -> str:
    text = str(name)
    return text if len(text) <= limit else f"{text[: limit // 2]}…{text[-limit // 3 :]}"


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError no command explained: the path (shortened) and the reason.

    Such an error names a path the operating system refused (too long, not a folder,
    permission denied, ...) before anything was written: a transaction it interrupts
    is rolled back.
    """
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"cannot use {_shown_path(exc.filename)}: {reason}"


def _discard_stdout() -> None:
    """Point stdout at the null device so the final flush at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def build_parser() -> argparse.ArgumentParser:
    # Imported here so each module registers its own subcommands (one place per concern).
    from curator.cli import (
        backup_cmd,
        data,
        insights,
        knowledge,
        mcp_cmd,
        models,
        pipeline,
        recovery,
        review,
        settings_cmd,
    )

    common = _Parser(add_help=False)
    add_common_options(common, suppress_defaults=True)
    parser = _Parser(
        prog="curator",
        description="Curate the long-term memory of an autonomous LLM agent. "
        "Without a command, the desktop window opens.",
    )
    add_common_options(parser, suppress_defaults=False)
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in (data, pipeline, review, knowledge, recovery, settings_cmd, insights, models):
        module.register(subparsers, common)
    backup_cmd.register(subparsers, common)
    mcp_cmd.register(subparsers, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    ensure_standard_streams()
    if len(arguments) == 2 and arguments[0] == CHECK_OPTION:
        # Hidden: the child that trial-loads a model file for validate_model_file. Kept
        # off the parser so --help does not show it; being an option of the program itself
        # (not `python -c`) it works in a frozen build too.
        return run_child_check(arguments[1])
    parser = build_parser()
    _Parser.json_output = _wants_json(arguments)
    try:
        args = parser.parse_args(arguments)
    except UsageExit as exc:
        if _wants_json(arguments):
            print_error_document(exc.message, 2)
        raise
    ctx = CommandContext(args)
    code = 3
    try:
        code = _run(ctx)
        return code
    finally:
        if code == 2:
            ctx.discard_created()
        ctx.close()


def _run(ctx: CommandContext) -> int:
    """Run the command; every failure becomes its exit code and one line (see the module)."""
    args = ctx.args
    try:
        if args.command is None:
            from curator.cli.data import open_window

            return open_window(ctx)
        code: int = args.handler(ctx)
        return code
    except OutputError as exc:  # stdout is unusable: the error goes to stderr only
        ctx.json = False
        ctx.fail(str(exc), exc.exit_code)
        _discard_stdout()
        return exc.exit_code
    except CuratorError as exc:
        ctx.fail(str(exc), exc.exit_code)
        return exc.exit_code
    except DATABASE_ERRORS as exc:  # a SQLite failure outside an explained write
        if ctx.debug:
            raise
        error = explain_database_error(
            exc,
            ctx.db_path,
            args.command or "window",
            outcome="stopped; its unfinished transaction was rolled back",
        )
        ctx.fail(str(error), error.exit_code)
        return error.exit_code
    except BrokenPipeError:
        # The reader went away (e.g. `curator export | head`): not an error worth a message.
        _discard_stdout()
        return 141
    except KeyboardInterrupt:
        ctx.fail("interrupted", 130)
        return 130
    except OSError as exc:  # a path or file the system refuses: unusable input
        if ctx.debug:
            raise
        ctx.fail(describe_os_error(exc), 2)
        return 2
    except Exception as exc:  # last resort: one line, not a traceback
        if ctx.debug:
            raise
        message = f"unexpected {type(exc).__name__}: {exc} (set CURATOR_DEBUG=1 for details)"
        ctx.fail(message, 3)
        return 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

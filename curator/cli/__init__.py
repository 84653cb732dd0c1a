"""The ``curator`` command line.

Every subcommand lives in a small module of this package that exposes
``register(subparsers, common)``; each parser sets ``handler`` to a function
``handler(ctx: CommandContext) -> int``. With no subcommand the desktop window opens.

Start-up is kept cheap because cron jobs, shells and agents start the command often:
:data:`VERBS` names each verb's module and one-line help, and only the module of the
verb being run is imported (``curator --help`` and ``--version`` import none). A new verb
is one line there plus its module's ``register``.

Conventions shared by all commands:
- ``--json`` prints exactly one JSON document on stdout (for scripts and tests), on failure
  too: ``{"error": "...", "exit": N}``, whatever failed (a usage error included);
- errors are one readable line on stderr, never a traceback (``CURATOR_DEBUG=1`` shows it);
- exit codes: 0 success, 1 some input rejected or a conflict (or the output could not be
  written), 2 usage or unusable input (nothing changed), 130 interrupted (143 and 129:
  stopped by SIGTERM or SIGHUP, cleaned up after as Ctrl-C is), 141 the reader of stdout
  went away; 3 only for an internal error, a bug to report;
- a missing database is created only by the commands made for it (see
  :data:`curator.cli.common.DATABASE_USE`) or with ``--create``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import importlib
import os
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, NoReturn

from curator import __version__
from curator.core import kept_code
from curator.launch import INTERRUPTED, wants_json
from curator.store import pg_driver

pg_driver.hold_back()  # first, before peewee is imported: psycopg only for postgresql://

from curator.cli.common import (  # noqa: E402
    CommandContext,
    OutputError,
    add_common_options,
    ensure_standard_streams,
    print_error_document,
)
from curator.cli.stop_signals import Stopped, stopping_like_ctrl_c  # noqa: E402
from curator.core.jsonsafe import dumps  # noqa: E402
from curator.errors import CuratorError  # noqa: E402

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class UsageExit(SystemExit):
    """argparse's usage error (exit code 2), carrying its message for the JSON document
    (without the ``curator COMMAND: error:`` prefix, like every error document)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing :mod:`shutil`.

    argparse asks :mod:`shutil` for the width whenever a parser adds an argument, and
    :mod:`shutil` imports the archive modules (``lzma``, ``bz2``): a few milliseconds of
    every start for a number read the same way here (``$COLUMNS``, else the terminal on
    stdout, else 80)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """One escaping rule for every help text: ``%%`` is a percent sign, ``%(prog)s`` the
    program.

    argparse %-formats argument and subcommand help always, but a description or epilog
    only when it happens to contain ``%(prog)``; so the same "95%%" rendered as "95%" in
    one place and literally in the other. Here descriptions are formatted too.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2  # as argparse does
        super().__init__(prog, indent_increment, max_help_position, width)

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
    secret_words: ClassVar[list[str]] = []
    """The command line's secret option values (:func:`curator.core.redact.secret_arguments`),
    masked in any usage error that quotes one."""
    verbs: _Verbs | None = None
    """The top parser's verbs (set by :func:`build_parser`)."""

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

    def parse_args(  # type: ignore[override]  # argparse's overloads, one used here
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:  # argparse's own message, its words masked one by one
            from curator.core.redact import redact_arguments

            self.error(f"unrecognized arguments: {' '.join(redact_arguments(extras))}")
        return parsed

    def error(self, message: str) -> NoReturn:
        # argparse quotes a word it could not take ("invalid choice: '...'"), which may
        # be a password or a key, a secret option's value taken for the command included
        from curator.core.redact import mask_words, redact

        text = redact(mask_words(" ".join(f"{message} (see --help)".split()), self.secret_words))
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


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError no command explained: the path (shortened) and the reason.

    Such an error names a path the operating system refused (too long, not a folder,
    permission denied, ...) before anything was written: a transaction it interrupts
    is rolled back.
    """
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    from curator.core.userpath import shown_path

    return f"cannot use {shown_path(exc.filename)}: {reason}"


def _discard_stdout() -> None:
    """Point stdout at the null device so the final flush at exit cannot fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class Verb(NamedTuple):
    """Where a verb is registered (a module of this package) and its line in ``--help``."""

    module: str
    help: str


VERBS: dict[str, Verb] = {
    "import": Verb("data", "import episodes from JSONL or JSON files and chat exports"),
    "export": Verb("data", "print the top-K patterns (Markdown, JSON, Mem0, Letta block)"),
    "stats": Verb("data", "count episodes, patterns, runs"),
    "demo": Verb("data", "fill the database with demo data"),
    "classify": Verb("pipeline", "label pending episodes constitutional / noise / uncategorized"),
    "distill": Verb("pipeline", "distil labelled episodes into a staged run of candidate patterns"),
    "runs": Verb("pipeline", "list classification and distillation runs"),
    "run": Verb("pipeline", "show one run and its trace"),
    "review": Verb("review", "list a staged run's candidates with their proposals"),
    "decide": Verb("review", "decide one candidate (ACCEPT, SKIP, UPDATE, ADD, REJECT)"),
    "commit": Verb("review", "apply a reviewed run to Knowledge (one transaction, undoable)"),
    "undo": Verb("review", "undo a commit (by changeset id)"),
    "label": Verb("review", "relabel episodes (a human label overrides the model's)"),
    "history": Verb("review", "list commits and undos"),
    "import-knowledge": Verb(
        "knowledge",
        "stage existing knowledge (JSON list, text, Markdown, Mem0, Letta) for review",
    ),
    "audit": Verb(
        "knowledge", "list stored patterns, identity and axioms with memory-poisoning flags"
    ),
    "retire": Verb(
        "knowledge", "retire patterns (out of the prompt; undo with `curator undo CHANGESET`)"
    ),
    "restore": Verb(
        "recovery", "restore the database from a backup (default: the newest good one)"
    ),
    "settings": Verb("settings_cmd", "show the saved settings, or set KEY=VALUE ..."),
    "watch": Verb("watch_cmd", "follow JSONL logs an agent writes, importing each new line once"),
    "insights": Verb(
        "insights",
        "agreement of the model and the gate with the human decisions; what-if; forecast",
    ),
    "replay": Verb(
        "insights", "re-classify the human-labelled episodes with a model/prompt and compare"
    ),
    "gold": Verb(
        "insights", "export or import the gold set (human labels and review decisions) as JSONL"
    ),
    "models": Verb(
        "models",
        "list, download or remove catalogue models; list models already on this computer",
    ),
    "backup": Verb("backup_cmd", "back up the database now (checked with quick_check)"),
    "compact": Verb("backup_cmd", "give the space of deleted rows back to the disk (VACUUM)"),
    "copy": Verb("copy_cmd", "copy the whole database between SQLite and PostgreSQL (verified)"),
    "mcp": Verb("mcp_cmd", "serve knowledge and episode recording to an agent over MCP"),
}
"""Every verb, in the order ``curator --help`` lists them (one line per verb).

The help line lives here, not in the module, so the list can be shown without importing
the modules (which import the store, the pipeline and their libraries)."""


class _VerbParsers(argparse._SubParsersAction):
    """The verbs' subparsers action: a verb's ``--help`` line comes from :data:`VERBS`;
    a verb defined by its module replaces its stand-in (see :func:`_parse`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stand_ins: set[str] = set()
        """The verbs standing in, not defined by their module yet."""

    def add_stand_in(self, name: str) -> None:
        """A stand-in for ``name`` that accepts anything, until its module defines it."""
        self.add_parser(name, add_help=False)
        self.stand_ins.add(name)

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("help", VERBS[name].help)
        if name not in self.stand_ins:  # a name defined twice is argparse's conflict, as always
            parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
            return parser
        self.stand_ins.discard(name)
        parsers = self._name_parser_map  # also argparse's ``choices``: changed in place
        order = list(parsers)
        position = next(i for i, a in enumerate(self._choices_actions) if a.dest == name)
        del parsers[name]
        parser = super().add_parser(name, **kwargs)
        # the verb where its stand-in was, in --help's and errors' order
        self._choices_actions[position] = self._choices_actions.pop()
        ordered = {n: parsers[n] for n in order}
        parsers.clear()
        parsers.update(ordered)
        return parser


class _Verbs(NamedTuple):
    """What :func:`define_verbs` needs of a built parser: its subparsers and the options
    every verb shares."""

    subparsers: _VerbParsers
    common: argparse.ArgumentParser


def _memoise_argparse_messages() -> None:
    """Translate each of argparse's own messages once per process, not at every use.

    argparse passes every message it builds a parser with ("show this help message and
    exit", "options", ...) to :func:`gettext.gettext`, which looks for a catalogue on disk
    each time (a few file-system lookups per call, sixty calls for the verbs' stand-ins):
    a few milliseconds of every start. The answer for a message does not change while
    the process runs, so it is kept; the command line is the one program that does this
    (as :mod:`curator.core.kept_code` does for :mod:`dataclasses`)."""
    translate = argparse._  # type: ignore[attr-defined]
    if not hasattr(translate, "cache_info"):  # not kept yet
        argparse._ = functools.lru_cache(maxsize=1024)(translate)  # type: ignore[attr-defined]


def build_parser(modules: Collection[str] | None = None) -> _Parser:
    """The ``curator`` parser with the verbs of ``modules`` (default: all) fully defined.

    Every other verb is a stand-in that accepts anything (its words are left over): it
    shows in the ``--help`` list and names the verb, and :func:`main` then defines that
    verb with its module (:func:`define_verbs`). So a command imports only its own module.
    """
    _memoise_argparse_messages()
    common = _Parser(add_help=False)
    add_common_options(common, suppress_defaults=True)
    parser = _Parser(
        prog="curator",
        description="Curate the long-term memory of an autonomous LLM agent. "
        "Without a command, the desktop window opens.",
    )
    add_common_options(parser, suppress_defaults=False)
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=_Parser, action=_VerbParsers
    )
    assert isinstance(subparsers, _VerbParsers)
    verbs = parser.verbs = _Verbs(subparsers, common)
    wanted = {verb.module for verb in VERBS.values()} if modules is None else set(modules)
    if wanted:
        # before a verb's classes are defined: their methods compiled once, kept per verb
        kept_code.install(next(iter(wanted)) if len(wanted) == 1 else "all")
    for name, verb in VERBS.items():
        if name in subparsers.choices:
            continue
        if verb.module in wanted:
            _define_module(verbs, verb.module)
        else:
            subparsers.add_stand_in(name)
    return parser


def _define_module(verbs: _Verbs, module_name: str) -> None:
    module = importlib.import_module(f"{__name__}.{module_name}")
    module.register(verbs.subparsers, verbs.common)


def define_verbs(parser: _Parser, module_name: str) -> None:
    """Define the verbs of ``module_name`` in ``parser`` (made by :func:`build_parser`
    with stand-ins), each replacing its stand-in: the same parser as
    ``build_parser(modules=(module_name,))``, without building the rest again."""
    assert parser.verbs is not None, "a parser made by build_parser"
    kept_code.install(module_name)
    _define_module(parser.verbs, module_name)


def _parse(arguments: list[str]) -> argparse.Namespace:
    """Parse in two steps: find the verb with stand-ins, then parse with its module."""
    from curator.core.redact import secret_arguments

    _Parser.secret_words = secret_arguments(arguments)  # masked in any usage error
    parser = build_parser(modules=())
    args, _ = parser.parse_known_args(arguments)
    if args.command is not None:
        define_verbs(parser, VERBS[args.command].module)
    return parser.parse_args(arguments)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    ensure_standard_streams()
    if len(arguments) == 2 and arguments[0].startswith("--check-"):
        # Hidden: the child that trial-loads a model file for validate_model_file. Kept
        # off the parser so --help does not show it; being an option of the program itself
        # (not `python -c`) it works in a frozen build too. Imported only here: the
        # model-file module is not needed by any other start.
        from curator.llm.model_trial import CHECK_OPTION, run_child_check

        if arguments[0] == CHECK_OPTION:
            return run_child_check(arguments[1])
    _Parser.json_output = wants_json(arguments)
    try:
        args = _parse(arguments)
    except UsageExit as exc:
        if wants_json(arguments):
            print_error_document(exc.message, 2)
        raise
    ctx = CommandContext(args)
    code = 3
    try:
        code = _run(ctx)
    finally:
        code = _close(ctx, code)
    return code


def _close(ctx: CommandContext, code: int) -> int:
    """Close what the command opened; a Ctrl-C meanwhile is exit 130 in one line (the
    command's document, when it wrote one, stays the only one)."""
    try:
        if code != 0:  # failed: a database it created and wrote nothing into goes again
            ctx.discard_created()
        ctx.close()
    except KeyboardInterrupt:
        ctx.fail("interrupted", INTERRUPTED)
        return INTERRUPTED
    return code


def run() -> int:
    """The ``curator`` program (its entry point and ``python -m curator``): :func:`main`,
    then every object still alive is handed to the process's end as it is.

    Python's shutdown runs the cyclic collector over every object the command created
    (the detector's word families, the store's models, the parsers): a tenth of a short
    command's time, for memory the operating system takes back anyway. Frozen objects
    are skipped by those passes and still released by reference counting; the streams
    are flushed and the exit handlers run as always. Only the program does this, so a
    caller of :func:`main` (a test, a script) keeps a collector that collects."""
    code = main()
    gc.freeze()
    return code


def _run(ctx: CommandContext) -> int:
    """Run the command; every failure becomes its exit code and one line (see the module)."""
    from curator.store.db_errors import DATABASE_ERRORS, STOPPED_OUTCOME, explain_database_error

    args = ctx.args
    try:
        if args.command is None:
            kept_code.install("window")
            from curator.cli.data import open_window

            return open_window(ctx)
        if args.command == "mcp":  # a server: the SDK's event loop ends it on its own terms
            code: int = args.handler(ctx)
        else:
            with stopping_like_ctrl_c():
                code = args.handler(ctx)
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
            ctx.db_display,
            args.command or "window",
            outcome=STOPPED_OUTCOME,
        )
        ctx.fail(str(error), error.exit_code)
        return error.exit_code
    except BrokenPipeError:
        # The reader went away (e.g. `curator export | head`): not an error worth a message.
        _discard_stdout()
        return 141
    except Stopped as exc:  # SIGTERM or SIGHUP, cleaned up after as Ctrl-C is
        ctx.fail(str(exc), exc.exit_code)
        return exc.exit_code
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

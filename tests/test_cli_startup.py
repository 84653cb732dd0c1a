"""The CLI starts cheap: each often-run command imports only what it needs.

Cron jobs, shells and agents start ``curator`` often; Qt, llama.cpp, scikit-learn/SciPy
and NumPy cost most of a second before anything happens. Each command runs in a fresh
interpreter against a real SQLite demo database (with a staged run for ``review``), and
the modules it leaves in ``sys.modules`` are checked against what it may import.

The lazy verb registry (:data:`curator.cli.VERBS`) parses in two steps; a property test
holds that the two steps accept, reject and fill in exactly what the full parser does.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import curator.cli as cli

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = ("PySide6", "shiboken6", "pyqtgraph", "llama_cpp", "sklearn", "scipy", "numpy")
"""Never imported by the commands below: the desktop, the model and the learned guard."""

BASE = frozenset({"curator"})
STORE = BASE | {"peewee", "platformdirs"}

#: Each command and the third-party packages (top-level names) it may import.
MAY_IMPORT: dict[tuple[str, ...], frozenset[str]] = {
    ("--version",): BASE,
    ("--help",): BASE,
    ("stats", "--help"): BASE,
    ("export", "--help"): BASE,
    ("review", "--help"): STORE | {"rapidfuzz"},
    ("stats",): STORE,
    ("export",): STORE,
    ("export", "--format", "json"): STORE,
    ("review", "{run}", "--json"): STORE | {"rapidfuzz"},
}

WRITERS = frozenset(
    {"curator.pipeline.commit", "curator.pipeline.commit_preview", "curator.pipeline.labels"}
)
"""The commit, its preview (a ranking of every pattern) and relabelling: no command below
writes, and ``review --json`` reads the fingerprint without building the preview."""

#: The commands that read texts for flags, and so compile the detector's word families
#: (a third of a second); every other command must not, even where it imports the detector.
READS_FLAGS = frozenset({("review", "{run}", "--json")})

PROBE = """
import json, sys
import curator.cli
try:
    code = curator.cli.main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
names = sorted(n for n, m in sys.modules.items() if m is not None)
families = sys.modules.get("curator.core.flag_families")
compiled = families is not None and bool(getattr(families, "_BUILT", True))
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump({"exit": code, "modules": names, "families_compiled": compiled}, out)
"""


def _bench() -> ModuleType:
    """The start-up benchmark, whose ``prepare`` builds the database both use."""
    spec = importlib.util.spec_from_file_location(
        "bench_startup", ROOT / "benchmarks" / "bench_startup.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    db, run_id = _bench().prepare(tmp_path_factory.mktemp("startup"))
    return db, run_id


def run_probe(tmp_path: Path, db: Path, words: list[str]) -> dict[str, Any]:
    """Run ``curator WORDS`` in a fresh interpreter; its exit code and loaded modules."""
    report = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), CURATOR_DB=str(db))
    env.pop("CURATOR_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *words],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.exists(), done.stderr
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    result["stderr"] = done.stderr
    return result


def third_party(modules: list[str]) -> set[str]:
    tops = {name.split(".")[0] for name in modules}
    return {t for t in tops if t not in sys.stdlib_module_names and not t.startswith("_")}


@pytest.mark.parametrize("command", list(MAY_IMPORT), ids=" ".join)
def test_often_run_commands_import_only_what_they_need(
    command: tuple[str, ...], demo: tuple[Path, int], tmp_path: Path
) -> None:
    db, run_id = demo
    words = [w.format(run=run_id) for w in command]
    result = run_probe(tmp_path, db, words)
    assert result["exit"] in (0, None), result["stderr"]
    loaded = third_party(result["modules"])
    heavy = sorted(m for m in result["modules"] if m.split(".")[0] in FORBIDDEN)
    assert not heavy, f"curator {' '.join(words)} imported {heavy[:5]}"
    extra = loaded - MAY_IMPORT[command]
    assert not extra, f"curator {' '.join(words)} imported {sorted(extra)}"
    verb = next((w for w in words if w in cli.VERBS), None)
    own = set() if verb is None else {f"curator.cli.{cli.VERBS[verb].module}"}
    verb_modules = {f"curator.cli.{v.module}" for v in cli.VERBS.values()}
    assert verb_modules & set(result["modules"]) == own, "another verb's module was imported"
    writers = sorted(WRITERS & set(result["modules"]))
    assert not writers, f"curator {' '.join(words)} imported {writers}"
    if command not in READS_FLAGS:
        assert not result["families_compiled"], f"curator {' '.join(words)} compiled the flags"


@pytest.mark.parametrize("verb", list(cli.VERBS))
def test_every_verb_help_imports_no_desktop_and_no_model(verb: str, tmp_path: Path) -> None:
    result = run_probe(tmp_path, tmp_path / "absent.db", [verb, "--help"])
    assert result["exit"] in (0, None), result["stderr"]
    heavy = sorted({m.split(".")[0] for m in result["modules"]} & set(FORBIDDEN))
    assert not heavy, f"curator {verb} --help imported {heavy}"


def test_the_registry_names_every_verb_and_its_module() -> None:
    """Each verb of :data:`VERBS` is defined by the module named there, and only there."""
    for name, verb in cli.VERBS.items():
        parser = cli.build_parser(modules=(verb.module,))
        chosen = _verbs(parser)[name]
        assert chosen._actions, f"{verb.module} does not define {name}"
        stand_in = _verbs(cli.build_parser(modules=()))[name]
        assert not stand_in._actions  # accepts anything: the second step parses
    assert set(_verbs(cli.build_parser())) == set(cli.VERBS)


def _verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no verbs")


def test_a_verb_missing_from_the_registry_is_refused_when_registered() -> None:
    parser = cli.build_parser(modules=())
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    with pytest.raises(KeyError):
        subparsers.add_parser("no-such-verb")


# Words the property test builds command lines from: every verb, global and verb options
# (with and without values), operands, abbreviations, "--" and help.
WORDS = [
    *cli.VERBS,
    "gold",
    "export",
    "import",
    "--db",
    "--d",
    "--json",
    "--js",
    "--create",
    "--version",
    "--help",
    "-h",
    "--top",
    "3",
    "0",
    "--format",
    "json",
    "markdown",
    "--run",
    "1",
    "x.db",
    "--",
    "-",
    "--accept-all",
    "--limit",
    "--bogus",
    "KEY=VALUE",
    "list",
    "local",
    "ACCEPT",
]


def _outcome(parse: Any, words: list[str]) -> tuple[str, Any, str, str]:
    """What parsing ``words`` gives: the namespace or the exit, and what was printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = parse(words)
        except SystemExit as exc:
            return ("exit", exc.code, out.getvalue(), err.getvalue())
    shown = {k: v for k, v in vars(args).items() if k != "handler"}
    handler = getattr(args, "handler", None)
    shown["handler"] = None if handler is None else handler.__qualname__
    return ("parsed", shown, out.getvalue(), err.getvalue())


FULL = cli.build_parser()


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(WORDS), max_size=6))
@example(["--db", "stats", "stats"])
@example(["stats", "--help"])
@example(["--bogus", "stats"])
@example(["--json", "review", "--help"])
@example(["models", "list", "--json"])
@example(["gold", "export", "-"])
@example([])
def test_two_step_parse_is_the_full_parse(words: list[str]) -> None:
    """Finding the verb first and loading only its module parses like the full parser."""
    cli._Parser.json_output = cli.wants_json(words)
    try:
        full = _outcome(FULL.parse_args, words)
        lazy = _outcome(cli._parse, words)
    finally:
        cli._Parser.json_output = False
    assert lazy == full


def test_verbs_defined_over_their_stand_ins_make_the_full_parser() -> None:
    """The second step defines the verb in the parser of the first (no second build):
    every verb so defined, in any order, reads and helps as the full parser's, and the
    verbs are listed in the same order."""
    parser = cli.build_parser(modules=())
    modules = list(dict.fromkeys(v.module for v in cli.VERBS.values()))
    for module in reversed(modules):
        cli.define_verbs(parser, module)
    assert parser.format_help() == FULL.format_help()
    mine, full = _verbs(parser), _verbs(FULL)
    assert list(mine) == list(full)
    assert {n: p.format_help() for n, p in mine.items()} == {
        n: p.format_help() for n, p in full.items()
    }


def test_the_terminal_width_is_read_as_shutil_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Help is wrapped to the width :mod:`shutil` would give argparse, without it."""
    import shutil

    for columns in ("", "0", "-3", "abc", "40", "132"):
        monkeypatch.setenv("COLUMNS", columns)
        assert cli.terminal_columns() == shutil.get_terminal_size().columns
    monkeypatch.delenv("COLUMNS")
    assert cli.terminal_columns() == shutil.get_terminal_size().columns


def test_the_program_leaves_as_before(demo: tuple[Path, int], tmp_path: Path) -> None:
    """``python -m curator`` freezes what is alive before Python's shutdown (:func:`run`):
    its output is whole and its exit handlers still run (the kept code is written)."""
    db, _ = demo
    env = dict(os.environ, PYTHONPATH=str(ROOT), CURATOR_CACHE_DIR=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(db), "stats", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["episodes"]["total"] > 0
    assert (tmp_path / "dataclass-code-data.bin").exists()


def test_argparse_messages_are_translated_once_as_gettext_translates_them() -> None:
    """The command line keeps each argparse message's translation (start-up cost): the
    kept answer is gettext's."""
    import gettext

    cli.build_parser(modules=())
    translate = argparse._  # type: ignore[attr-defined]
    for message in (
        "show this help message and exit",
        "options",
        "usage: ",
        "%(prog)s: error: %(message)s\n",
    ):
        assert translate(message) == gettext.gettext(message)
    before = translate.cache_info().hits
    cli.build_parser(modules=())
    assert translate.cache_info().hits > before


def test_a_verb_defined_twice_is_a_conflict_and_only_stand_ins_are_replaced() -> None:
    parser = cli.build_parser(modules=())
    assert parser.verbs is not None
    subparsers = parser.verbs.subparsers
    subparsers.add_parser("stats")  # the stand-in, replaced
    with pytest.raises(argparse.ArgumentError, match="conflicting subparser"):
        subparsers.add_parser("stats")

"""The command line's contract under inputs its first tests did not try.

An empty ``--db`` names no file: it is a usage error, not the default database (with
``--create`` it would have made one where the user never asked). ``--help`` and
``--version`` with ``--json`` print one JSON document too. The real CLI, real files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from curator import __version__
from curator.cli import main
from curator.store.db_choice import DB_ENV


def _exit_of(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's --help, --version and usage errors
        return int(exc.code or 0)


@pytest.mark.parametrize("create", [[], ["--create"]])
def test_an_empty_db_is_a_usage_error_not_the_default_database(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    create: list[str],
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.setenv(DB_ENV, str(tmp_path / "env.sqlite"))
    assert _exit_of(["--db", "", *create, "--json", "stats"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["exit"] == 2 and "--db" in doc["error"] and "empty" in doc["error"]
    assert captured.err.count("\n") == 1
    assert not home.exists() and not (tmp_path / "env.sqlite").exists()


@pytest.mark.parametrize("option", ["--version", "--vers"])
def test_version_with_json_is_one_document(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_of(["--json", option]) == 0
    assert json.loads(capsys.readouterr().out) == {"version": __version__}


@pytest.mark.parametrize(
    "argv", [["--json", "--help"], ["--json", "stats", "-h"], ["gold", "--help", "--json"]]
)
def test_help_with_json_is_one_document(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_of(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"help"} and doc["help"].startswith("usage: curator")


def test_help_and_version_without_json_stay_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_of(["--version"]) == 0
    assert capsys.readouterr().out == f"curator {__version__}\n"
    assert _exit_of(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: curator")


_OPTIONS = [
    "--json",
    "--help",
    "-h",
    "--version",
    "--db",
    "",
    "--create",
    "--keep",
    "0",
    "x",
    "--model",
    "--dir",
    "~no-such-user-of-curator/x",
]
_COMMANDS = ["stats", "gold", "backup", "restore", "--help", "--version"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(options=st.lists(st.sampled_from(_OPTIONS), max_size=5), command=st.sampled_from(_COMMANDS))
def test_json_runs_print_exactly_one_document(
    options: list[str],
    command: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Property (a command always given: none would open the window): any mix of --json
    with ~ paths of unknown users, --help, --version, an empty --db and usage errors
    prints one JSON document with --json (an exit in {0,1,2}) and creates no database
    where none was asked for."""
    # "--db" last would take the command as its value and leave none: the window, which
    # this in-process run cannot close; that case is the window's, not this property's.
    assume(not options or options[-1] != "--db")
    folder = tmp_path_factory.mktemp("cli")
    old = Path.cwd()
    env = {k: os.environ.get(k) for k in (DB_ENV, "XDG_DATA_HOME")}
    os.chdir(folder)
    os.environ[DB_ENV] = str(folder / "env.sqlite")
    os.environ["XDG_DATA_HOME"] = str(folder / "home")
    try:
        code = _exit_of(["--json", *options, command])
    finally:
        os.chdir(old)
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    out = capsys.readouterr().out
    assert code in (0, 1, 2)
    json.loads(out)  # exactly one document (json.loads refuses two)
    assert not (folder / "home").exists()


_NO_SUCH_USER = "~no-such-user-of-curator"


def _demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "c.sqlite"
    assert main(["--db", str(db), "demo"]) == 0
    capsys.readouterr()
    return db


@pytest.mark.parametrize(
    "argv",
    [
        ["--db", f"{_NO_SUCH_USER}/x.sqlite", "stats"],
        ["--db", f"{_NO_SUCH_USER}/x.sqlite", "--create", "stats"],
        ["backup", "--dir", f"{_NO_SUCH_USER}/backups"],
        ["restore", f"{_NO_SUCH_USER}/b.sqlite"],
        ["classify", "--model", f"{_NO_SUCH_USER}/m.gguf"],
        ["distill", "--model", f"{_NO_SUCH_USER}/m.gguf"],
    ],
)
def test_a_home_of_an_unknown_user_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """``~name`` of a user the system does not know cannot be expanded (Python raises
    RuntimeError there): a usage error in one line, not an internal error (exit 3)."""
    db = _demo(tmp_path, capsys)
    before = db.read_bytes()
    full = argv if argv[0] == "--db" else ["--db", str(db), *argv]
    assert _exit_of(["--json", *full]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["exit"] == 2 and "unknown user" in doc["error"], doc
    assert captured.err.count("\n") == 1
    assert db.read_bytes() == before
    assert not Path(_NO_SUCH_USER).exists()


def test_an_unknown_users_home_in_curator_db_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DB_ENV, f"{_NO_SUCH_USER}/x.sqlite")
    assert _exit_of(["--json", "--create", "stats"]) == 2
    assert "unknown user" in json.loads(capsys.readouterr().out)["error"]

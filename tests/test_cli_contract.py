"""The command line's contract as a whole: a missing database, ``--json`` failures, output.

- Only the commands made to create a database (``demo`` and the imports: ``import``,
  ``import-knowledge``, ``gold import``; the window's first run; any command with
  ``--create``) create a missing one; every other command stops
  with "no database at PATH" (exit 2) and creates nothing: no file, no folder, no -wal/-shm.
- With ``--json`` every failure still prints exactly one JSON document on stdout
  (``{"error": ..., "exit": N}``) and one line on stderr.
- A stdout that cannot be written (``> /dev/full``) is one line and exit code 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import curator.cli.data
from curator.cli import build_parser, main
from curator.cli.common import CREATES, DATABASE_USE, NO_DATABASE, OPENS, RESTORES
from curator.store.db import Store
from curator.store.models import Episode

MISSING_MODEL = "no-such-model.gguf"

MINIMAL_ARGS: dict[str, list[str]] = {
    "export": ["--top", "50", "--format", "markdown"],
    "stats": [],
    "classify": ["--model", MISSING_MODEL],
    "distill": ["--model", MISSING_MODEL],
    "runs": [],
    "run": ["1"],
    "review": ["1"],
    "decide": ["1", "1", "ACCEPT"],
    "commit": ["1"],
    "undo": ["1"],
    "label": ["1", "noise"],
    "history": [],
    "audit": [],
    "retire": ["1"],
    "settings": ["top_k=40"],
    "insights": [],
    "replay": ["--model", MISSING_MODEL],
    "gold": ["export", "gold-out.jsonl"],
    "backup": [],
    "compact": [],
    "mcp": ["--read-only"],
    "watch": ["--once", "log.jsonl"],
    "restore": [],
    "copy": ["copy.sqlite"],
}
"""A well-formed call of every command that needs a database (the file it names exists)."""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with the input files the minimal calls read; no database in it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "knowledge.md").write_text("- Backups run every night at two o'clock.\n", "utf-8")
    (work / "gold.jsonl").write_text(
        json.dumps({"format": "memory-curator gold set", "version": 1}) + "\n", "utf-8"
    )
    monkeypatch.chdir(work)
    monkeypatch.delenv("CURATOR_DB", raising=False)
    monkeypatch.setenv("CURATOR_MODEL", str(work / MISSING_MODEL))
    return work


def test_every_command_has_a_row_in_the_database_table() -> None:
    """A new command must say whether it may create a database (the table is the rule)."""
    parser = build_parser()
    commands = set()
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            commands |= set(choices)
    assert commands == {key.split()[0] for key in DATABASE_USE}
    assert {k for k, v in DATABASE_USE.items() if v == CREATES} == {
        "demo",
        "import",
        "import-knowledge",
        "gold import",
    }
    assert {k.split()[0] for k, v in DATABASE_USE.items() if v in (OPENS, RESTORES)} == set(
        MINIMAL_ARGS
    )
    assert {k for k, v in DATABASE_USE.items() if v == NO_DATABASE} == {"models"}


@pytest.mark.parametrize("command", sorted(MINIMAL_ARGS))
@pytest.mark.parametrize("where", ["typo.sqlite", "nonexist/x.sqlite"])
def test_a_missing_database_is_refused_and_nothing_is_created(
    command: str, where: str, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(inputs)
    code, out, err = run_cli(capsys, "--db", where, "--json", command, *MINIMAL_ARGS[command])
    if command == "restore" and where == "typo.sqlite":
        # restore may put a backup back where the database was lost; there is none here
        assert code == 2 and "no good backup" in err
    else:
        assert code == 2, err
        assert f"no database at {where} (named by --db)" in err
        assert "--create" in err
    assert err.count("\n") == 1 and err.startswith("curator: error: ")
    assert json.loads(out) == {"error": err.removeprefix("curator: error: ").strip(), "exit": 2}
    assert tree(inputs) == before


def _empty_file(path: Path, kind: str) -> None:
    """Zero bytes (``touch``), or SQLite without a table (one made and dropped)."""
    if kind == "zero bytes":
        path.write_bytes(b"")
        return
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("DROP TABLE t")
        conn.commit()


@pytest.mark.parametrize("command", sorted(MINIMAL_ARGS))
@pytest.mark.parametrize("kind", ["zero bytes", "sqlite without a table"])
def test_an_empty_file_is_refused_and_left_as_it_was(
    command: str, kind: str, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`touch notes.txt; curator --db notes.txt export` once filled notes.txt with the
    schema and printed an empty memory (exit 0); `compact` rewrote an empty SQLite file."""
    _empty_file(inputs / "empty.db", kind)
    before = (tree(inputs), (inputs / "empty.db").read_bytes())
    code, out, err = run_cli(capsys, "--db", "empty.db", "--json", command, *MINIMAL_ARGS[command])
    assert code == 2, err
    if command == "restore":
        assert "no good backup" in err  # it puts a backup back; there is none here
    elif command == "compact":
        assert "empty.db is empty (no database in it); nothing changed" in err
    else:
        assert "empty.db (named by --db) is empty (no database in it); nothing was written" in err
        assert "--create" in err
    assert json.loads(out) == {"error": err.removeprefix("curator: error: ").strip(), "exit": 2}
    assert (tree(inputs), (inputs / "empty.db").read_bytes()) == before


@pytest.mark.parametrize(
    "argv",
    [["gold", "import", "no-such-gold.jsonl"], ["--create", "run", "99"], ["--create", "stats"]],
    ids=["creating-command-refused", "create-then-refused", "create-then-done"],
)
def test_a_zero_byte_file_filled_by_a_refused_command_gets_its_zero_bytes_back(
    argv: list[str], inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (inputs / "empty.db").write_bytes(b"")
    before = tree(inputs)
    code, _, err = run_cli(capsys, "--db", "empty.db", *argv)
    if argv[-1] == "stats":  # done: the database it was asked to start stays
        assert code == 0, err
        with Store(inputs / "empty.db", create=False) as store:
            assert store.schema_version > 0
        return
    assert code == 2, err
    assert (inputs / "empty.db").stat().st_size == 0
    assert tree(inputs) == before


def test_the_environment_variable_is_named_when_it_points_nowhere(
    inputs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CURATOR_DB", str(inputs / "gone" / "curator.sqlite"))
    code, _, err = run_cli(capsys, "export", "--top", "50")
    assert code == 2 and "(named by $CURATOR_DB)" in err
    assert not (inputs / "gone").exists()


def test_create_option_before_or_after_the_command_creates_it(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--create", "--db", "new/a.sqlite", "stats", "--json")
    assert code == 0, err
    assert json.loads(out)["episodes"]["total"] == 0
    code, _, err = run_cli(capsys, "--db", "b.sqlite", "export", "--create")
    assert code == 0, err
    assert (inputs / "new" / "a.sqlite").is_file() and (inputs / "b.sqlite").is_file()


def test_demo_and_the_imports_still_create_their_database(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `make run` does first: the demo database in a folder that does not exist yet."""
    code, _, err = run_cli(capsys, "--db", ".demo/curator.sqlite", "demo", "--if-missing")
    assert code == 0, err
    episodes = inputs / "eps.jsonl"
    episodes.write_text('{"content": "an episode about rate limits"}\n', "utf-8")
    code, _, err = run_cli(capsys, "--db", "fresh/c.sqlite", "import", str(episodes))
    assert code == 0, err
    code, _, err = run_cli(capsys, "--db", "k/c.sqlite", "import-knowledge", "knowledge.md")
    assert code == 0, err
    code, _, err = run_cli(capsys, "--db", "g/c.sqlite", "gold", "import", "gold.jsonl")
    assert code == 0, err
    for made in (".demo/curator.sqlite", "fresh/c.sqlite", "k/c.sqlite", "g/c.sqlite"):
        assert (inputs / made).is_file(), made


def test_a_refusal_takes_back_the_database_it_created(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzzer: `--create ... decide 1 1 noise` refused the unknown candidate
    (exit 2) but left the new, empty database and its folder behind."""
    before = tree(inputs)
    code, _, err = run_cli(
        capsys, "--create", "--db", "new/deeper/x.sqlite", "decide", "1", "1", "ADD"
    )
    assert code == 2 and "has no candidate" in err
    code, _, err = run_cli(capsys, "--db", "made/c.sqlite", "demo", "--top", "1")
    assert code == 2  # a usage error: nothing was opened
    assert tree(inputs) == before
    # a folder that already held something is left alone
    (inputs / "kept").mkdir()
    (inputs / "kept" / "note.txt").write_text("mine", "utf-8")
    code, _, _ = run_cli(capsys, "--create", "--db", "kept/x.sqlite", "run", "99")
    assert code == 2 and tree(inputs / "kept") == {"note.txt"}


def test_restore_into_a_missing_folder_is_refused(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cli(capsys, "--db", "c.sqlite", "demo")
    assert run_cli(capsys, "--db", "c.sqlite", "backup")[0] == 0
    backup = next((inputs / "backups").glob("c.sqlite-*.sqlite"))
    before = tree(inputs)
    code, _, err = run_cli(capsys, "--db", "elsewhere/c.sqlite", "restore", str(backup))
    assert code == 2 and "no database at elsewhere/c.sqlite" in err
    assert tree(inputs) == before
    # the lost file of an existing folder is what restore is for
    (inputs / "c.sqlite").unlink()
    for sibling in ("c.sqlite-wal", "c.sqlite-shm"):
        (inputs / sibling).unlink(missing_ok=True)
    code, _, err = run_cli(capsys, "--db", "c.sqlite", "restore", str(backup))
    assert code == 0, err


def test_a_nul_character_in_the_database_path_is_a_usage_error(
    inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--db", "a\x00b.sqlite", "--json", "stats")
    assert code == 2 and "NUL character" in err and err.count("\n") == 1
    assert json.loads(out)["exit"] == 2


# -- --json on every failure path ------------------------------------------------------------


@pytest.fixture
def demo_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "demo.sqlite"
    assert main(["--db", str(db), "demo"]) == 0
    capsys.readouterr()
    return db


def one_error_document(out: str, err: str, code: int) -> dict[str, object]:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    doc = json.loads(out)  # exactly one document: json.loads refuses trailing data
    assert doc == {"error": err.removeprefix("curator: error: ").strip(), "exit": code}
    return dict(doc)


def test_json_usage_errors_print_one_document(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["--json", "export", "--top", "many"],
        ["export", "--js", "--top", "many"],  # an abbreviation argparse accepts
        ["--json", "no-such-command"],
        ["--json", "stats", "--no-such-option"],
        ["--json", "models"],  # a required action missing
    ):
        code, out, err = run_cli(capsys, "--db", str(demo_db), *argv)
        assert code == 2, argv
        assert err.count("\n") == 1 and "error:" in err
        doc = json.loads(out)
        assert doc["exit"] == 2 and err.strip().endswith(f": error: {doc['error']}"), argv


def test_json_is_not_guessed_from_an_operand(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "--db", str(demo_db), "export", "--top", "x", "--", "--json")
    assert code == 2 and out == ""


def test_json_curator_and_database_errors_print_one_document(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--db", str(demo_db), "--json", "export", "--top", "0")
    assert code == 2
    one_error_document(out, err, 2)
    # A trigger of the database itself refuses the write: SQLite's error, not ours.
    store = Store(demo_db)
    store.execute(
        "CREATE TRIGGER no_labels BEFORE UPDATE ON episode BEGIN "
        "SELECT RAISE(ABORT, 'labels are frozen'); END"
    )
    store.close()
    code, out, err = run_cli(capsys, "--db", str(demo_db), "--json", "label", "1", "noise")
    assert code == 2 and "labels are frozen" in err
    one_error_document(out, err, 2)


def test_json_unexpected_error_and_interrupt_print_one_document(
    demo_db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: ``stats`` raising a bug's exception, then a Ctrl-C; once the
    fuzzer's findings are fixed no real input provokes the first, and a real Ctrl-C
    cannot be timed to land inside the command in-process."""

    def broken(ctx: object) -> int:
        raise RuntimeError("a bug in http://user:hunter2@example.org/x")

    def interrupted(ctx: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(curator.cli.data, "cmd_stats", broken)
    code, out, err = run_cli(capsys, "--db", str(demo_db), "--json", "stats")
    assert code == 3 and "unexpected RuntimeError" in err and "hunter2" not in err
    one_error_document(out, err, 3)
    monkeypatch.setattr(curator.cli.data, "cmd_stats", interrupted)
    code, out, err = run_cli(capsys, "--db", str(demo_db), "stats", "--json")
    assert code == 130
    one_error_document(out, err, 130)


# -- one line, not exit 3 --------------------------------------------------------------------


def test_a_forecast_beyond_ten_years_is_refused(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`insights --days 9223372036854775807` built one forecast row per day until the
    process was killed for memory (exit 137); the bound is the Insights pane's."""
    for days in ("9223372036854775807", "3651", "-1"):
        code, _, err = run_cli(capsys, "--db", str(demo_db), "insights", "--days", days)
        assert code == 2 and "--days must be between 0 and 3650" in err, days
    code, out, _ = run_cli(capsys, "--db", str(demo_db), "insights", "--days", "3650", "--json")
    assert code == 0 and json.loads(out)


def test_huge_next_uncertain_is_a_usage_error(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = "99999999999999999999999"
    code, _, err = run_cli(capsys, "--db", str(demo_db), "label", "--next-uncertain", big)
    assert code == 2 and "out of range" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "--top", "50", "--format", "markdown"],
        ["stats", "--json"],
        ["gold", "export", "-"],
        ["history"],
    ],
    ids=["export", "stats-json", "gold-export-stdout", "history"],
)
def test_a_full_stdout_is_one_line_and_exit_one(argv: list[str], demo_db: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "curator", "--db", str(demo_db), *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "cannot write the output to standard output: No space left on device" in proc.stderr


def test_gold_export_to_stdout_refuses_json(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gold set itself is JSONL on stdout: it cannot also be one JSON document."""
    code, out, err = run_cli(capsys, "--db", str(demo_db), "--json", "gold", "export", "-")
    assert code == 2 and "--json goes with a FILE" in err
    one_error_document(out, err, 2)


def test_relearn_says_why_a_human_label_is_not_used(
    demo_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`label 1 noise` then `classify --relearn` used to say "0 noise" and nothing more."""
    code, out, _ = run_cli(capsys, "--db", str(demo_db), "label", "1", "noise")
    assert code == 0
    assert "1 human label not usable yet (1 noise)" in out
    assert "no classify run has scored episodes" in out
    code, out, _ = run_cli(capsys, "--db", str(demo_db), "classify", "--relearn", "--json")
    assert code == 0
    assert json.loads(out)["unusable_labels"] == {"noise": 1}
    code, out, _ = run_cli(capsys, "--db", str(demo_db), "classify", "--relearn")
    assert "not usable yet (1 noise)" in out
    store = Store(demo_db)
    try:
        assert Episode.get_by_id(1).human_label == "noise"
    finally:
        store.close()


@pytest.mark.parametrize(
    ("argv", "redirect", "code", "message"),
    [
        (["import", "-"], "<&-", 1, "-: there is no standard input to read"),
        (["stats", "--json"], ">&-", 1, "cannot write the output to standard output"),
        (["export", "--top", "5"], ">&-", 1, "cannot write the output to standard output"),
        (["gold", "export", "-"], ">&-", 1, "cannot write the output to standard output"),
        (["stats"], ">&- 2>&-", 1, ""),
    ],
    ids=["stdin-closed", "stdout-closed-json", "stdout-closed", "gold-stdout", "all-closed"],
)
def test_closed_standard_streams_are_one_line_not_a_crash(
    argv: list[str], redirect: str, code: int, message: str, demo_db: Path
) -> None:
    """A daemon or a cron line can start us with stdin, stdout or stderr closed (`>&-`):
    Python then leaves ``sys.stdout`` None, and every write used to be an internal error
    (exit 3, with a traceback when the error document went to the closed stdout too)."""
    line = shlex.join([sys.executable, "-m", "curator", "--db", str(demo_db), *argv])
    proc = subprocess.run(
        ["bash", "-c", f"{line} {redirect}"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and message in proc.stderr
    if message:
        assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--db", "{long}", "import", "{episodes}"],
        ["--db", "{db}", "gold", "export", "{long}"],
        ["--db", "{db}", "restore", "{long}"],
        ["--db", "{long}/x.sqlite", "demo"],
    ],
    ids=["db-import", "gold-export", "restore", "db-folder-demo"],
)
def test_a_path_the_system_refuses_is_one_line_and_exit_two(
    argv: list[str], demo_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzzer: a name longer than the file system allows (ENAMETOOLONG) was
    an internal error (exit 3); any path the operating system refuses is unusable input."""
    episodes = tmp_path / "eps.jsonl"
    episodes.write_text('{"content": "an episode about rate limits"}\n', "utf-8")
    places = {"{long}": str(tmp_path / ("é" * 300)), "{db}": str(demo_db)}
    places["{episodes}"] = str(episodes)
    words = [places.get(w, w.replace("{long}", places["{long}"])) for w in argv]
    before = tree(tmp_path)
    code, out, err = run_cli(capsys, *words, "--json")
    assert code == 2, err
    assert "File name too long" in err and err.count("\n") == 1 and len(err) < 400
    assert json.loads(out)["exit"] == 2
    assert tree(tmp_path) == before


@pytest.mark.parametrize("exists", [True, False])
def test_a_stdout_that_cannot_encode_a_character_escapes_it(tmp_path: Path, exists: bool) -> None:
    """``PYTHONIOENCODING=ascii`` (or a C locale's ASCII) and a path with ``ü``: the JSON
    document is still one valid document (``\\u00fc``), where the write used to raise
    UnicodeEncodeError (exit 3, and no document at all for a failure)."""
    folder = tmp_path / "ü"
    folder.mkdir()
    db = folder / "x.sqlite"
    if exists:
        assert main(["--db", str(db), "--create", "stats"]) == 0
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(db), "--json", "stats"],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == (0 if exists else 2), done.stderr.decode(errors="replace")
    document = json.loads(done.stdout.decode("ascii"))
    assert str(db) in (document["database"] if exists else document["error"])
    assert len(done.stderr.decode("ascii").splitlines()) == (0 if exists else 1)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_cleans_up_as_ctrl_c_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signame: str
) -> None:
    """A backup's half-written copy is removed and the command ends with 128 + the
    signal and one line. Fault injection: the signal is sent from inside the copy, once
    its file exists (a real backup of a small database ends before a signal could be
    timed into it)."""
    import signal

    import curator.store.backup as backup_module

    db = tmp_path / "db.sqlite"
    assert main(["--db", str(db), "demo"]) == 0
    real_copy = backup_module._copy_and_check
    signum = getattr(signal, signame)

    def copy_then_signal(db_path: Path, partial: Path, *args: object, **kwargs: object) -> str:
        result = real_copy(db_path, partial, *args, **kwargs)  # type: ignore[arg-type]
        assert partial.exists()
        os.kill(os.getpid(), signum)
        return result

    real_remove = backup_module.remove_quietly

    def signalled_again_while_cleaning_up(path: Path) -> None:
        os.kill(os.getpid(), signum)  # a second signal: must not cut the cleanup short
        real_remove(path)

    monkeypatch.setattr(backup_module, "_copy_and_check", copy_then_signal)
    monkeypatch.setattr(backup_module, "remove_quietly", signalled_again_while_cleaning_up)
    before = signal.getsignal(signum)
    assert main(["--db", str(db), "backup", "--dir", str(tmp_path / "bk")]) == 128 + signum
    assert signal.getsignal(signum) == before  # the command's handler went with it
    assert not (tmp_path / "bk").exists()  # nothing of it, and the folder it made went too

"""Every verb and option of the command line, fuzzed with Hypothesis, in process.

The verbs, their positionals and options (with their types and choices) are read from the
real parser (``curator.cli.build_parser()``), so a new option is fuzzed without a change
here. Argument vectors mix valid values (ids that exist in the database, the right
choices) with hostile ones: huge and negative integers, NaN and infinities, empty
strings, control characters, arguments that are not UTF-8 (lone surrogates, as Python
passes such bytes), paths that do not exist or are folders, ``/dev/full`` for outputs,
unknown options, a database path that is missing or a folder (given by ``--db`` or
``$CURATOR_DB``), and hostile ``$CURATOR_BUSY_TIMEOUT`` and ``$CURATOR_SERVER`` values.

Each example runs ``curator.cli.main`` on a private copy of a small real database (made
once per module) with no network: the model is a missing file ($CURATOR_MODEL), a server
is a closed loopback port, the model catalogue points at that port too, and the keyring
is the null one. The promises checked on every example:

- the exit status is 0, 1 or 2 (no internal error, exit 3);
- no traceback on stderr; a refusal (exit 2) ends with exactly one ``error:`` line, a
  partial rejection (exit 1) with at most one (progress notes and an import's rejected
  lines come before it);
- with ``--json``, stdout is exactly one JSON document;
- a stdout that is full (``/dev/full``) or closed is one ``error:`` line and exit 1;
- a refusal (exit 2) leaves the database's content (every table) and the files around
  it unchanged: nothing is created, not even a missing database or its folder.

The run is derandomized (the same 400 examples every time, well under a minute);
``CURATOR_FUZZ_EXAMPLES=2000 CURATOR_FUZZ_RANDOM=1`` explores further by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from review.conftest import candidate_ids, make_episode, make_pattern, make_staged_run

from curator.cli import build_parser, main
from curator.cli.common import integer
from curator.pipeline import commit, review
from curator.store.db import Store

GLOBAL_DESTS = frozenset({"help", "db", "json", "create"})
NOT_UTF8 = os.fsdecode(b"caf\xe9 \xff")
"""An argument as a shell passes bytes that are not UTF-8 (surrogate-escaped)."""


@dataclass(frozen=True)
class Verb:
    words: tuple[str, ...]
    positionals: tuple[argparse.Action, ...] = field(repr=False)
    options: tuple[argparse.Action, ...] = field(repr=False)


def verbs_of(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[Verb]:
    """Every leaf command of ``parser`` (``models list`` included) with its arguments."""
    found: list[Verb] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            if nested:
                found += verbs_of(sub, (*prefix, name))
                continue
            own = [a for a in sub._actions if a.dest not in GLOBAL_DESTS]
            found.append(
                Verb(
                    (*prefix, name),
                    tuple(a for a in own if not a.option_strings),
                    tuple(a for a in own if a.option_strings),
                )
            )
    return found


VERBS = verbs_of(build_parser())

# Commands that run until they are stopped are fuzzed in the form that ends by itself:
# `watch` reads what is there with --once (following is tests/watch's), and `mcp` serves
# stdio, which ends with its empty stdin (`--http` serves until stopped: tests/mcp's).
UNTIL_STOPPED_END = {("watch",): "--once"}
SERVES_UNTIL_STOPPED = {"--http"}


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, repr=False)
class Template:
    path: Path
    catalogue: Path
    server: str
    folder: Path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    """Runs 1 (committed), 2 (committed, blocks undoing 1) and 3 (staged, candidate 3);
    patterns, episodes 1 and 2; and the environment with no way out of the machine."""
    folder = tmp_path_factory.mktemp("cli-fuzz")
    path = folder / "template.sqlite"
    store = Store(path)
    try:
        with store.write():
            pattern = make_pattern(store, "The operator prefers short status updates at nine.")
            make_pattern(store, "Backups of the database run every night at two.")
            make_episode(store, "The agent kept its promise to the operator today.")
            make_episode(store, "Rate limits hit the timeline fetch again this morning.")
        first = make_staged_run(store, [{"text": "The operator likes brief updates at nine."}])
        review.decide(store, candidate_ids(first)[0], "UPDATE", target_id=pattern)
        commit.commit_run(store, first.id)
        second = make_staged_run(store, [{"text": "The operator wants short updates at nine."}])
        review.decide(store, candidate_ids(second)[0], "UPDATE", target_id=pattern)
        commit.commit_run(store, second.id)
        make_staged_run(store, [{"text": "Backups run every night at two o'clock."}])
        store.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    port = closed_port()
    server = f"http://127.0.0.1:{port}"
    catalogue = json.loads(Path("resources/catalogue.json").read_text("utf-8"))
    for entry in catalogue["models"]:
        entry["url"] = f"{server}/{entry['file']}"
    catalogue_path = folder / "catalogue.json"
    catalogue_path.write_text(json.dumps(catalogue), "utf-8")
    with pytest.MonkeyPatch.context() as env:
        for name in ("CURATOR_DB", "CURATOR_SERVER", "CURATOR_API_KEY", "CURATOR_DEBUG"):
            env.delenv(name, raising=False)
        env.setenv("CURATOR_MODEL", str(folder / "no-such-model.gguf"))
        env.setenv("CURATOR_MODELS_DIR", str(folder / "models"))
        env.setenv("CURATOR_BUSY_TIMEOUT", "1")
        env.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
        yield Template(path, catalogue_path, server, folder)


# -- values ----------------------------------------------------------------------------------

PATH_PLACEHOLDERS = ["{missing}", "{missing}/x.jsonl", "{dir}", "{file}", "{out}", "/dev/null"]
HOSTILE_TEXT = [
    "",
    " ",
    "-",
    "0",
    "\x1b[31mred\x1b[0m",
    "two\nlines",
    "tab\there",
    "\u2028",
    NOT_UTF8,
    "é" * 300,
    "{server}",
    "{server}/v1?api_key=hunter2",
    "http://user:hunter2@127.0.0.1:9/",
]
WORDS = [
    "noise",
    "constitutional",
    "uncategorized",
    "ACCEPT",
    "SKIP",
    "UPDATE",
    "ADD",
    "REJECT",
    "top_k=40",
    "top_k=nan",
    "skip_threshold=0.1",
    "n_ctx=-1",
    "model_path={file}",
    "=",
    "KEY",
    "qwen2.5-0.5b-instruct-q4_k_m",
    "smollm2-135m-instruct-q8_0",
]
VALID_INTEGERS = st.sampled_from(["1", "2", "3", "4", "10"])
INTEGERS = st.one_of(
    VALID_INTEGERS,
    VALID_INTEGERS,
    st.sampled_from(["0", "-1", "+2", " 3", "9" * 25, str(2**63), str(-(2**63) - 1)]),
    st.sampled_from([str(2**63 - 1), str(-(2**63)), "100000000", "3651"]),
    st.sampled_from(["nan", "inf", "1e3", "0x10", "", "٣", "1_000", NOT_UTF8]),
    st.integers(-(10**6), 10**6).map(str),
)
VALID_FLOATS = st.sampled_from(["0.5", "0", "1", "0.9", "0.1"])
FLOATS = st.one_of(
    VALID_FLOATS,
    VALID_FLOATS,
    st.sampled_from(["-0.1", "1.5", "nan", "NaN", "inf", "-inf", "1e309", "", "x", NOT_UTF8]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
SAFE_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
TEXTS = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS),
    st.sampled_from(HOSTILE_TEXT),
    st.sampled_from(PATH_PLACEHOLDERS),
    st.text(SAFE_CHARS, max_size=20),
)
OUTPUT_PATHS = st.sampled_from([*PATH_PLACEHOLDERS, "/dev/full", "-"])
READ_WHOLE = frozenset({"catalogue"})
"""Options whose file is read whole: /dev/full (endless) is kept away from them (see the
README's findings for other areas)."""


def values_for(action: argparse.Action, verb: Verb) -> st.SearchStrategy[str]:
    if action.choices is not None:
        return choices_for(action)
    if action.type in (integer, int):
        return INTEGERS
    if action.type is float:
        return FLOATS
    if action.dest in READ_WHOLE or verb.words[0] == "gold":
        return TEXTS
    return st.one_of(TEXTS, OUTPUT_PATHS)


def choices_for(action: argparse.Action) -> st.SearchStrategy[str]:
    """Mostly one of the choices, sometimes anything."""
    valid = st.sampled_from([str(c) for c in action.choices or ()])
    return st.one_of(valid, valid, valid, TEXTS)


def count_of(action: argparse.Action) -> st.SearchStrategy[int]:
    nargs = action.nargs
    if nargs == "?":
        return st.integers(0, 1)
    if nargs == "+":
        return st.integers(1, 3)
    if nargs == "*":
        return st.integers(0, 3)
    return st.just(int(nargs) if isinstance(nargs, int) else 1)


@dataclass(frozen=True)
class CommandLine:
    verb: Verb
    words: tuple[str, ...]
    json: bool
    create: bool
    database: str  # "ours", "missing" or "dir"
    globals_first: bool
    stdout: str  # "captured", "full" (/dev/full) or "closed"
    db_in_environment: bool  # $CURATOR_DB names the database instead of --db
    environment: tuple[tuple[str, str], ...]  # other variables the command reads


@st.composite
def command_lines(draw: st.DrawFn) -> CommandLine:
    verb = draw(st.sampled_from(VERBS))
    words: list[str] = list(verb.words)
    for action in verb.positionals:
        if draw(st.integers(0, 19)) == 0:
            continue  # a required argument left out now and then
        for _ in range(draw(count_of(action))):
            words.append(draw(values_for(action, verb)))
    for action in draw(st.lists(st.sampled_from(verb.options or (None,)), max_size=3)):
        if action is None or SERVES_UNTIL_STOPPED & set(action.option_strings):
            continue
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            words.append(flag)
            continue
        value = draw(values_for(action, verb))
        if draw(st.booleans()):
            words += [flag, value]
        else:
            words.append(f"{flag}={value}")
    if verb.words in UNTIL_STOPPED_END:
        words.append(UNTIL_STOPPED_END[verb.words])
    if draw(st.integers(0, 9)) == 0:
        words.insert(draw(st.integers(1, len(words))), draw(st.sampled_from(["--no-such", "-z"])))
    return CommandLine(
        verb,
        tuple(words),
        json=draw(st.booleans()),
        create=draw(st.integers(0, 9)) == 0,
        database=draw(st.sampled_from(["ours"] * 6 + ["missing", "dir"])),
        globals_first=draw(st.booleans()),
        stdout=draw(st.sampled_from(["captured"] * 8 + ["full", "closed"])),
        db_in_environment=draw(st.integers(0, 5)) == 0,
        environment=tuple(
            (name, draw(strategy))
            for name, strategy in (("CURATOR_BUSY_TIMEOUT", FLOATS), ("CURATOR_SERVER", TEXTS))
            if draw(st.integers(0, 5)) == 0
        ),
    )


# -- running one example ---------------------------------------------------------------------


def content_digest(db: Path) -> str:
    """Every table's rows, hashed: what "the database is unchanged" means.

    Rows are sorted by their text (some tables have no rowid).
    """
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
        for (name,) in list(tables):
            digest.update(name.encode())
            rows = sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{name}"'))
            digest.update("\n".join(rows).encode())
        digest.update(repr(conn.execute("PRAGMA user_version").fetchone()).encode())
        return digest.hexdigest()
    finally:
        conn.close()


def files_in(folder: Path, transient: frozenset[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if name in transient:
            continue
        found[name] = None if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


def run_in_process(argv: list[str], workdir: Path, *, stdout: str = "captured") -> Outcome:
    """``main(argv)`` in ``workdir`` with empty stdin and stderr captured; stdout captured,
    ``/dev/full`` (every write fails with ENOSPC) or ``closed`` (None, as after ``>&-``)."""
    err = io.StringIO()
    captured = io.StringIO()
    previous_dir, previous_stdin = os.getcwd(), sys.stdin
    os.chdir(workdir)
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    with contextlib.ExitStack() as stack:
        out: Any = captured
        if stdout == "full":
            out = stack.enter_context(open("/dev/full", "w", encoding="utf-8"))
        elif stdout == "closed":
            out = None
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(argv)
                except SystemExit as exc:  # argparse: usage errors, --help
                    code = int(exc.code) if isinstance(exc.code, int) else 2
        finally:
            sys.stdin = previous_stdin
            os.chdir(previous_dir)
            if stdout == "full":
                with contextlib.suppress(OSError):
                    out.close()  # what was left in its buffer cannot be written either
    return Outcome(code, captured.getvalue(), err.getvalue())


def fill(text: str, places: dict[str, str]) -> str:
    for key, value in places.items():
        text = text.replace("{" + key + "}", value)
    return text


def check(line: CommandLine, template: Template) -> None:
    work = Path(tempfile.mkdtemp(dir=template.folder, prefix="example-"))
    try:
        db = work / "db.sqlite"
        shutil.copyfile(template.path, db)
        (work / "adir").mkdir()
        episodes = work / "episodes.jsonl"
        episodes.write_text(
            '{"content": "an episode about the nightly backups"}\n{"content": 1}\nnot json\n',
            "utf-8",
        )
        places = {
            "missing": str(work / "missing"),
            "dir": str(work / "adir"),
            "file": str(episodes),
            "out": str(work / "out.jsonl"),
            "server": template.server,
        }
        words = [fill(w, places) for w in line.words]
        reads_catalogue = line.verb.words[0] == "models" and line.verb.words[-1] != "local"
        if reads_catalogue and not any(w.startswith("--catalogue") for w in words):
            words += ["--catalogue", str(template.catalogue)]
        target = {"ours": str(db), "missing": str(work / "missing" / "c.sqlite")}.get(
            line.database, str(work / "adir")
        )
        environment = {name: fill(value, places) for name, value in line.environment}
        if line.db_in_environment:
            environment["CURATOR_DB"] = target
            options = []
        else:
            options = ["--db", target]
        options += ["--json"] if line.json else []
        options += ["--create"] if line.create else []
        argv = [*options, *words] if line.globals_first else [*words, *options]
        before_db = content_digest(db)
        before_files = files_in(work, frozenset({"db.sqlite-wal", "db.sqlite-shm"}))

        with pytest.MonkeyPatch.context() as env:
            for name, value in environment.items():
                env.setenv(name, value)
            result = run_in_process(argv, work, stdout=line.stdout)

        event(f"exit {result.code}")  # --hypothesis-show-statistics shows the spread
        shown = (
            f"{environment} curator {' '.join(map(repr, argv))} -> {result.code}\n{result.stderr}"
        )
        assert result.code in (0, 1, 2), shown
        assert "Traceback" not in result.stderr, shown
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if "error:" in ln]
        if result.code == 2:  # one error line, the last (progress notes may come before it)
            assert len(errors) == 1 and lines[-1] == errors[0], shown
        elif result.code == 1:
            assert len(errors) <= 1 and (not errors or lines[-1] == errors[0]), shown
        if line.stdout != "captured" and "cannot write the output" in result.stderr:
            assert result.code == 1, shown
        elif line.json and line.stdout == "captured":
            try:
                json.loads(result.stdout)
            except ValueError as exc:  # pragma: no cover - the failure message
                raise AssertionError(f"not one JSON document: {result.stdout!r}\n{shown}") from exc
        if result.code == 2:
            assert content_digest(db) == before_db, shown
            transient = frozenset({"db.sqlite-wal", "db.sqlite-shm"})
            assert files_in(work, transient) == before_files, shown
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_every_verb_is_fuzzed() -> None:
    """The generator covers the parser: every leaf command, ``models`` actions included."""
    names = {" ".join(v.words) for v in VERBS}
    assert {
        "stats",
        "export",
        "label",
        "decide",
        "compact",
        "models list",
        "models download",
    } <= names
    assert all(v.words[0] != "models" or len(v.words) == 2 for v in VERBS)


@settings(
    max_examples=int(os.environ.get("CURATOR_FUZZ_EXAMPLES", "400")),
    deadline=None,
    derandomize="CURATOR_FUZZ_RANDOM" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(line=command_lines())
def test_the_command_line_keeps_its_contract(line: CommandLine, template: Template) -> None:
    check(line, template)

"""Attacks on the recovery, settings and liveness paths, each a regression test.

Each test is a way a hostile user, a fault or a second process once broke a promise of
the README's "What happens when things go wrong" section: a restore under a live
connection, saved settings that could not be repaired or that crashed the command, a
model path the system refuses to look up, a run whose pid was reused. The child
processes are the real ``curator`` command (:func:`reliability.harness.run_case`).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.demo import create_demo
from reliability.harness import Expect, row_counts, run_case, sha256_of


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo database (checkpointed into a single file), copied by every test."""
    path = tmp_path_factory.mktemp("template") / "curator.sqlite"
    store = Store(path)
    create_demo(store)
    store.close()
    return path


@pytest.fixture
def demo_db(tmp_path: Path, demo_template: Path) -> Path:
    db = tmp_path / "db.sqlite"
    shutil.copyfile(demo_template, db)
    return db


def _backup_of(db: Path, template: Path) -> Path:
    folder = db.parent / "backups"
    folder.mkdir(exist_ok=True)
    backup = folder / f"{db.stem}-20260101T000000000000Z.sqlite"
    shutil.copyfile(template, backup)
    return backup


# -- restore ----------------------------------------------------------------------------


_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM episode").fetchone()
print("open", flush=True)
sys.stdin.readline()
conn.execute("UPDATE episode SET source = 'written-after' WHERE id = 1")
conn.commit()
conn.close()
print("done", flush=True)
"""


def test_restore_refuses_while_another_process_has_the_database_open(
    demo_db: Path, demo_template: Path
) -> None:
    """A restore under a live connection would lose that process's later writes (they go
    to the file set aside) and SQLite would delete the restored file's -wal by name when
    that connection closed. It must refuse, change nothing, and the writer's row stays.

    The holder is a separate process: in this one, reading the file (the hash) would
    drop the holder's POSIX locks, which belong to the process, not the connection.
    """
    _backup_of(demo_db, demo_template)
    before = sha256_of(demo_db)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(demo_db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "open"
        run_case(
            ["--db", str(demo_db), "restore"],
            Expect(code=1, message=r"busy: .* is open in another process.*nothing changed"),
        )
        names = [p.name for p in demo_db.parent.iterdir()]
        assert not [n for n in names if ".restoring-" in n or ".replaced-" in n], names
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "done"
    finally:
        holder.communicate(timeout=60)
    assert sha256_of(demo_db) != before  # the holder's write landed in the live file
    conn = sqlite3.connect(demo_db)
    try:
        row = conn.execute("SELECT source FROM episode WHERE id = 1").fetchone()
        assert row[0] == "written-after"
    finally:
        conn.close()


def test_restore_goes_ahead_once_the_other_process_closed(
    demo_db: Path, demo_template: Path
) -> None:
    """The guard is no false alarm: the same database, closed, is restored."""
    _backup_of(demo_db, demo_template)
    holder = sqlite3.connect(demo_db)
    holder.execute("SELECT count(*) FROM episode").fetchone()
    holder.close()
    run_case(["--db", str(demo_db), "restore"], Expect(code=0, db=demo_db))
    assert list(demo_db.parent.glob("db.sqlite.replaced-*"))
    assert row_counts(demo_db)["episode"] > 0


# -- saved settings -----------------------------------------------------------------------


def _save_raw(db: Path, key: str, value: object) -> None:
    """A value written straight into the setting table, as another tool or version might."""
    conn = sqlite3.connect(db)
    try:
        conn.execute('INSERT OR REPLACE INTO setting ("key", "value") VALUES (?, ?)', (key, value))
        conn.commit()
    finally:
        conn.close()


def _saved(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return {str(k): str(v) for k, v in conn.execute('SELECT "key", "value" FROM setting')}
    finally:
        conn.close()


HOSTILE_SAVED = [
    ("deep-nesting", "top_k", "[" * 100_000 + "]" * 100_000, r"top_k.*not valid JSON"),
    ("huge-text", "temperature", '"' + "x" * 1_000_000 + '"', r"temperature.*must be a number"),
    ("nan", "temperature", "NaN", r"temperature.*finite"),
    ("overflow", "top_k", "1e400", r"top_k.*whole number"),
    ("huge-number", "top_k", "1e300", r"top_k.*between 1 and 1000"),
    ("wrong-type", "untrusted_sources", '{"dm": 1}', r"untrusted_sources.*list of names"),
    ("not-utf8", "top_k", b"\xff\xfe", r"top_k.*not valid JSON"),
]


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [case[1:] for case in HOSTILE_SAVED],
    ids=[case[0] for case in HOSTILE_SAVED],
)
def test_a_hostile_saved_setting_is_one_short_line_and_can_be_repaired(
    demo_db: Path, key: str, raw: object, message: str
) -> None:
    """Every command that reads the settings says which value is wrong in one short line
    (no traceback, no megabyte echo); `curator settings KEY=null` repairs it even though
    loading the saved settings fails."""
    _save_raw(demo_db, key, raw)
    result = run_case(
        ["--db", str(demo_db), "export"],
        Expect(code=2, message=message + r".*curator settings", db=demo_db, unchanged_counts=True),
    )
    assert max(len(line) for line in result.stderr.splitlines()) < 400
    run_case(["--db", str(demo_db), "settings", f"{key}=null"], Expect(code=0, db=demo_db))
    assert key not in _saved(demo_db)
    run_case(["--db", str(demo_db), "export"], Expect(code=0))


def test_a_broken_saved_setting_is_replaced_by_a_new_value(demo_db: Path) -> None:
    _save_raw(demo_db, "temperature", '"abc"')
    run_case(["--db", str(demo_db), "settings", "temperature=0.25"], Expect(code=0, db=demo_db))
    assert _saved(demo_db)["temperature"] == "0.25"


def test_a_deeply_nested_setting_argument_is_a_usage_error(demo_db: Path) -> None:
    result = run_case(
        ["--db", str(demo_db), "settings", "top_k=" + "[" * 50_000],
        Expect(code=2, message=r"top_k.*must be a number", db=demo_db, unchanged_counts=True),
    )
    assert max(len(line) for line in result.stderr.splitlines()) < 400
    assert "top_k" not in _saved(demo_db)


# -- model paths --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["settings", "classify"])
def test_a_model_path_the_system_refuses_is_one_line(demo_db: Path, command: str) -> None:
    """A name longer than the system allows made Path.exists() itself raise (exit 3)."""
    name = "a" * 5000
    argv = (
        ["settings", f"model_path={name}"] if command == "settings" else [command, "--model", name]
    )
    result = run_case(
        ["--db", str(demo_db), *argv],
        Expect(code=2, message=r"File name too long", db=demo_db, unchanged_counts=True),
    )
    assert max(len(line) for line in result.stderr.splitlines()) < 400


def test_the_model_check_child_refuses_a_fifo_instead_of_blocking(tmp_path: Path) -> None:
    """llama.cpp opens what it is given; a FIFO nobody writes would block it for ever."""
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "curator", "--check-model", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "not a regular file" in proc.stdout


# -- runs whose pid was reused ------------------------------------------------------------


def test_a_run_whose_pid_now_belongs_to_a_later_process_is_abandoned(demo_db: Path) -> None:
    """After a crash and a reboot, the dead run's pid may belong to an unrelated process;
    "the pid is alive" then kept the run `running` for ever. The process holding the pid
    started after the run did, so it cannot be the owner."""
    from datetime import timedelta

    from curator.store.liveness import this_host
    from curator.store.models import Run, utcnow

    stranger = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        store = Store(demo_db)
        try:
            now = utcnow()
            reused = Run.create(
                kind="distill",
                status="running",
                started_at=now - timedelta(minutes=10),
                heartbeat_at=now - timedelta(minutes=9),
                pid=stranger.pid,
                host=this_host(),
            )
            live = Run.create(  # a live owner that started before its run: left alone
                kind="classify",
                status="running",
                started_at=now,
                heartbeat_at=now,
                pid=stranger.pid,
                host=this_host(),
            )
        finally:
            store.close()
        result = run_case(["--db", str(demo_db), "stats"], Expect(code=0, db=demo_db))
        assert f"run {reused.id} was abandoned" in result.stderr
        conn = sqlite3.connect(demo_db)
        try:
            status = dict(conn.execute("SELECT id, status FROM run").fetchall())
        finally:
            conn.close()
        assert status == {reused.id: "abandoned", live.id: "running"}
    finally:
        stranger.communicate(timeout=30)


def test_marking_abandoned_runs_never_makes_a_read_wait_for_a_writer(demo_db: Path) -> None:
    """Every start marks dead runs; with another process writing, that write waited the
    whole busy timeout, so `stats` (a read) hung behind the writer. It must give up at
    once and leave the marking to a later start. (The busy timeout is an hour here, so a
    wait shows as the child's timeout, not as a measured duration.)"""
    from curator.store.liveness import this_host
    from curator.store.models import Run

    store = Store(demo_db)
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        run = Run.create(kind="classify", status="running", pid=dead.pid, host=this_host())
    finally:
        store.close()
    writer = sqlite3.connect(demo_db, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        result = run_case(
            ["--db", str(demo_db), "stats"],
            Expect(code=0),
            env={"CURATOR_BUSY_TIMEOUT": "3600"},
            timeout=60,
        )
        assert "abandoned runs not checked: busy" in result.stderr
        writer.execute("ROLLBACK")
    finally:
        writer.close()
    result = run_case(["--db", str(demo_db), "stats"], Expect(code=0, db=demo_db))
    assert f"run {run.id} was abandoned" in result.stderr


# -- edited UPDATE texts ------------------------------------------------------------------


def _staged_update(db: Path, folder: Path) -> tuple[str, str]:
    """A run staged by import-knowledge (no model needed): (run id, candidate id)."""
    source = folder / "knowledge.md"
    source.write_text(
        "- Beginner questions about prompt formats repeat almost word for word every week.\n"
    )
    result = run_case(["--db", str(db), "--json", "import-knowledge", str(source)], Expect(0))
    document = json.loads(result.stdout)
    run_id = str(document["run_id"])
    listing = json.loads(run_case(["--db", str(db), "--json", "review", run_id], Expect(0)).stdout)
    return run_id, str(listing["candidates"][0]["id"])


def test_an_edited_update_text_longer_than_a_pattern_may_be_is_refused(demo_db: Path) -> None:
    """import-knowledge refuses a pattern over 4,000 characters; an edit is held to the
    same bound (it would otherwise replace a pattern in every prompt with a document)."""
    run_id, candidate = _staged_update(demo_db, demo_db.parent)
    huge = "Beginner questions about prompt formats repeat every week. " * 200
    run_case(
        ["--db", str(demo_db), "decide", run_id, candidate, "UPDATE", "--text", huge],
        Expect(code=2, message=r"over the 4,000", db=demo_db, unchanged_counts=True),
    )


# -- a database reached through a symbolic link -------------------------------------------


def _rows_only_in_the_wal(db: Path) -> None:
    """Committed rows that live only in the -wal, as a killed process leaves them."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE episode SET source = 'from-the-wal' WHERE id <= 5")
    conn.commit()
    wal = db.with_name(db.name + "-wal").read_bytes()
    snapshot = db.read_bytes()
    conn.close()  # checkpoints and deletes the WAL: put the crash state back
    db.write_bytes(snapshot)
    db.with_name(db.name + "-wal").write_bytes(wal)


def test_a_symlinked_database_with_a_crashed_writers_wal_is_read_with_its_rows(
    demo_db: Path, tmp_path: Path
) -> None:
    """SQLite keeps the -wal beside the real file, not beside the link; looking for it next
    to the link opened the file immutable and read it without the WAL's committed rows."""
    _rows_only_in_the_wal(demo_db)
    link = tmp_path / "elsewhere" / "link.sqlite"
    link.parent.mkdir()
    link.symlink_to(demo_db)
    store = Store(link, read_only=True)
    try:
        rows = store.execute("SELECT count(*) FROM episode WHERE source = 'from-the-wal'")
    finally:
        store.close()
    assert rows == [(5,)]
    result = run_case(["--db", str(link), "--json", "stats"], Expect(code=0))
    assert json.loads(result.stdout)["episodes"]["total"] > 0


def test_a_heartbeat_never_holds_the_run_up_behind_another_writer(demo_db: Path) -> None:
    """The heartbeat is written from the progress loop; behind another process's write
    lock it waited the whole busy timeout (30 s by default) on every beat. It is skipped
    instead. (The busy timeout is an hour: a wait shows as the thread still running.)"""
    import threading

    from curator.store.liveness import Heartbeat
    from curator.store.models import Run

    store = Store(demo_db, busy_timeout_s=3600)
    writer = sqlite3.connect(demo_db, isolation_level=None)
    try:
        run = Run.create(kind="distill", status="running")
        beat = Heartbeat(store, run.id, every=0.0)
        writer.execute("BEGIN IMMEDIATE")
        errors: list[BaseException] = []

        def work() -> None:
            try:
                beat()
            except BaseException as exc:  # reported to the test thread
                errors.append(exc)
            finally:
                store.close()

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the heartbeat waited for the other writer"
        assert not errors
    finally:
        if writer.in_transaction:
            writer.execute("ROLLBACK")
        writer.close()
        store.close()


# -- audit on hostile stored texts --------------------------------------------------------


def test_audit_of_a_crafted_stored_text_finishes(demo_db: Path) -> None:
    """ "a.a.a.…" made the link rules backtrack quadratically: 60,000 characters kept
    `curator audit` busy for many minutes (and the same text would freeze Review). The
    rules bound their repetitions (64-character local parts, 8 labels), so it finishes;
    a wait shows as the child's timeout, not as a measured duration. The domain at the
    end of such a text is still flagged. The same class (an unbounded run that can start
    at every character of a long stretch) is measured for every rule, over 36 shapes, by
    ``benchmarks/bench_detector_scaling.py``; "a-a-…" and "1.1.…" were its last finds."""
    conn = sqlite3.connect(demo_db)
    try:
        conn.execute("UPDATE pattern SET text = ? WHERE id = 1", ("a." * 30_000 + "com",))
        conn.execute("UPDATE pattern SET text = ? WHERE id = 2", ("x@" + "b." * 30_000,))
        conn.execute("UPDATE pattern SET text = ? WHERE id = 3", ("c dot " * 20_000 + "at x",))
        blank_lines = "Notes" + "\n" * 40_000 + "Always reply to every message."
        conn.execute("UPDATE pattern SET text = ? WHERE id = 4", (blank_lines,))
        conn.execute("UPDATE pattern SET text = ? WHERE id = 5", ("![a](" * 12_000,))
        conn.execute("UPDATE pattern SET text = ? WHERE id = 6", ("a-" * 30_000 + "com",))
        conn.execute("UPDATE pattern SET text = ? WHERE id = 7", ("1." * 30_000 + "com",))
        conn.commit()
    finally:
        conn.close()
    result = run_case(
        ["--db", str(demo_db), "--json", "audit"],
        Expect(code=0, db=demo_db, unchanged_counts=True),
        timeout=120,
    )
    assert '"link"' in result.stdout
    assert '"instruction"' in result.stdout  # the sentence after the blank lines


# -- a --db that is not a regular file ----------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_db_path_that_is_a_pipe_or_device_is_refused(tmp_path: Path, kind: str) -> None:
    """A FIFO blocked the first read of the check for ever; /dev/null was "upgraded" and
    failed with a disk I/O error. Neither is a database: one line, exit 2."""
    if kind == "fifo":
        path = tmp_path / "db.sqlite"
        os.mkfifo(path)
    else:
        path = Path(os.devnull)
    run_case(
        ["--db", str(path), "stats"],
        Expect(code=2, message=r"is not a regular file"),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("fifo", r"is a named pipe"), ("folder", r"is a directory"), ("device", r"is a device")],
)
def test_import_knowledge_names_why_a_source_cannot_be_read(
    demo_db: Path, kind: str, reason: str
) -> None:
    """Every source that was not a regular file was reported as "no such file"."""
    if kind == "fifo":
        source = demo_db.parent / "knowledge.md"
        os.mkfifo(source)
    elif kind == "folder":
        source = demo_db.parent
    else:
        source = Path(os.devnull)
    run_case(
        ["--db", str(demo_db), "import-knowledge", str(source)],
        Expect(code=1, message=reason, db=demo_db, unchanged_counts=True),
        timeout=60,
    )


# -- a signal in the middle of a restore --------------------------------------------------

_RESTORE_KILLED_MIDWAY = """
import os, signal, sys
from pathlib import Path
import curator.store.restore as backup

set_aside = backup._set_aside


def set_aside_then_sigterm(*args):
    # fault injection (a test double): SIGTERM lands right after the renames aside,
    # where no real part can be made to deliver it reliably
    moved = set_aside(*args)
    os.kill(os.getpid(), signal.SIGTERM)
    return moved


backup._set_aside = set_aside_then_sigterm
backup.restore_backup(Path(sys.argv[1]))
"""


def test_sigterm_during_a_restore_never_leaves_the_database_path_empty(
    demo_db: Path, demo_template: Path
) -> None:
    """Between renaming the database aside and the copy into place, a SIGTERM (default
    action: the process ends) left no file at the path, and the next start would create
    an empty database there. The signals are held for the swap: it completes, then the
    process ends."""
    _backup_of(demo_db, demo_template)
    proc = subprocess.run(
        [sys.executable, "-c", _RESTORE_KILLED_MIDWAY, str(demo_db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -15, proc.stderr  # it was stopped by the signal
    assert demo_db.is_file()
    assert row_counts(demo_db)["episode"] > 0
    assert list(demo_db.parent.glob("db.sqlite.replaced-*"))
    assert not [p for p in demo_db.parent.iterdir() if ".restoring-" in p.name]


# -- undo after a decay-rate change -------------------------------------------------------


def test_undo_after_a_decay_rate_change_is_not_blocked_and_reranks(demo_db: Path) -> None:
    """A new decay rate rewrites every pattern's ranking key; undo compared whole rows and
    refused every earlier changeset for good ("its rows changed since ... undo the later
    changes first", with no later change to undo). The key is derived: it is ignored by
    the check and recomputed, with the rate now in force, for the restored pattern."""
    from curator.core.scoring import rank_key
    from curator.store.models import Pattern

    db = ["--db", str(demo_db)]
    run_case([*db, "retire", "20"], Expect(code=0, db=demo_db))
    run_case([*db, "settings", "decay_rate=0.9"], Expect(code=0, db=demo_db))
    run_case([*db, "undo", "1"], Expect(code=0, db=demo_db))
    store = Store(demo_db)
    try:
        pattern = Pattern.get_by_id(20)
        assert pattern.status == "active"
        assert pattern.rank_key == pytest.approx(
            rank_key(pattern.importance, pattern.distilled_at, rate=0.9)
        )
    finally:
        store.close()

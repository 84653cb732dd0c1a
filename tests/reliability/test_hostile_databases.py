"""Hostile database files, table-driven: what ``curator`` does with files that are not
(or no longer) a healthy database of ours, with a busy database and a read-only one.

Each case builds its files in its own folder, then runs the real command in a child
process through :func:`reliability.harness.run_case`, which asserts the exit code, a
one-line message without a traceback, ``integrity_check`` of our database, unchanged row
counts where nothing may change, and byte-identical foreign files with no ``-wal``/``-shm``
left next to them.

Read-only cases: the file is chmod 444 in a folder chmod 555. Root ignores permission bits
through the capabilities CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so when the suite runs
as root the child drops both from its bounding set before it starts (``prctl``); it then
meets the permission bits as any user does, ``os.access`` included. As any other user
the chmod alone makes them read-only. Busy cases: this process
holds ``BEGIN IMMEDIATE`` on a second connection while the child runs, with
``CURATOR_BUSY_TIMEOUT`` shortened so a write gives up quickly.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import random
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.migrations import LATEST_VERSION
from reliability.harness import Expect, row_counts, run_case, sha256_of

BUSY = {"CURATOR_BUSY_TIMEOUT": "0.5"}
PR_CAPBSET_DROP = 24  # <linux/prctl.h>
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2  # <linux/capability.h>


@pytest.fixture(scope="module")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo database (WAL checkpointed into the file), copied by every case."""
    path = tmp_path_factory.mktemp("template") / "curator.sqlite"
    store = Store(path)
    create_demo(store)
    store.close()
    return path


def _sqlite(path: Path, *statements: str) -> Path:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return path


def _good_backup(db: Path, template: Path) -> Path:
    folder = db.parent / "backups"
    folder.mkdir(exist_ok=True)
    backup = folder / f"{db.stem}-20260101T000000000000Z.sqlite"
    shutil.copyfile(template, backup)
    return backup


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random_after_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    rng = random.Random(9)
    for i in range(100, len(data)):
        data[i] = rng.randrange(256)
    path.write_bytes(bytes(data))


def _crash_wal(db: Path) -> None:
    """Committed rows that live only in the -wal, as a killed process leaves them."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("UPDATE episode SET source = 'from-the-wal' WHERE id <= 5")
    conn.commit()
    keep = {s: db.with_name(db.name + s).read_bytes() for s in ("-wal",)}
    snapshot = db.read_bytes()
    conn.close()  # checkpoints and deletes the WAL: put the crash state back
    db.write_bytes(snapshot)
    for suffix, data in keep.items():
        db.with_name(db.name + suffix).write_bytes(data)


@dataclass(frozen=True)
class Case:
    """One hostile database: how to build it, what to run, what must hold."""

    id: str
    build: Callable[[Path, Path], None]  # (folder, demo template) -> files in folder
    argv: tuple[str, ...]  # "{db}" and "{dir}" are replaced by the paths
    code: int
    message: str | None = None
    foreign: bool = False  # the db file must stay byte-identical, no siblings left
    ours: bool = False  # integrity ok and counts unchanged afterwards
    env: dict[str, str] = field(default_factory=dict)
    busy: bool = False  # a second connection holds the write lock while it runs
    read_only: bool = False  # file 444, folder 555, unprivileged child
    writable_folder: bool = False  # with read_only: the folder stays writable
    after: Callable[[Path], None] | None = None  # extra checks on the folder


def _copy_demo(folder: Path, template: Path) -> None:
    shutil.copyfile(template, folder / "db.sqlite")


def _foreign(folder: Path, _: Path) -> None:
    _sqlite(folder / "db.sqlite", "CREATE TABLE contacts (name TEXT, phone TEXT)")
    _sqlite(folder / "db.sqlite", "INSERT INTO contacts VALUES ('Ada', '555')")


def _newer(folder: Path, template: Path) -> None:
    _copy_demo(folder, template)
    _sqlite(folder / "db.sqlite", f"PRAGMA user_version = {LATEST_VERSION + 1}")


def _clashing(folder: Path, _: Path) -> None:
    _sqlite(folder / "db.sqlite", "CREATE TABLE episode (id INTEGER PRIMARY KEY, body BLOB)")


def _other_app_v1(folder: Path, _: Path) -> None:
    _sqlite(folder / "db.sqlite", "CREATE TABLE notes (x)", "PRAGMA user_version = 1")


def _empty_sqlite(folder: Path, _: Path) -> None:
    _sqlite(folder / "db.sqlite", "PRAGMA user_version = 0", "VACUUM")


def _claimed(folder: Path, _: Path) -> None:
    """Another program's new database: no table yet, but its application id set (as
    SQLite's header field for it is meant to be, before the first table)."""
    _sqlite(folder / "db.sqlite", "PRAGMA application_id = 1196446547", "VACUUM")


def _claimed_and_jsonl(folder: Path, template: Path) -> None:
    _claimed(folder, template)
    _jsonl(folder, template)


def _zero_length(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_bytes(b"")


def _text_file(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_text("my shopping list\n- milk\n- eggs\n" * 50)


def _truncated(folder: Path, template: Path) -> None:
    _copy_demo(folder, template)
    _truncate(folder / "db.sqlite")


def _truncated_with_backup(folder: Path, template: Path) -> None:
    _truncated(folder, template)
    _good_backup(folder / "db.sqlite", template)


def _with_a_good_backup(build: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    """``build``'s files, and beside them a good backup of a demo database."""

    def both(folder: Path, template: Path) -> None:
        build(folder, template)
        _good_backup(folder / "db.sqlite", template)

    return both


def _text(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_text("my notes, not a database\n", encoding="utf-8")


def _utf16(folder: Path, _: Path) -> None:  # NUL bytes, as a damaged SQLite file has
    (folder / "db.sqlite").write_bytes(("my notes, not a database\n" * 40).encode("utf-16-le"))


def _xz(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_bytes(b"\xfd7zXZ\x00\x00\x04" + bytes(200))


def _png(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))


def _random_body(folder: Path, template: Path) -> None:
    _copy_demo(folder, template)
    _random_after_header(folder / "db.sqlite")


def _random_bytes(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").write_bytes(random.Random(4).randbytes(64 * 1024))


def _directory(folder: Path, _: Path) -> None:
    (folder / "db.sqlite").mkdir()


def _crashed(folder: Path, template: Path) -> None:
    _copy_demo(folder, template)
    _crash_wal(folder / "db.sqlite")


def _damaged_backup(folder: Path, template: Path) -> None:
    _truncated(folder, template)
    backup = _good_backup(folder / "db.sqlite", template)
    _truncate(backup)


def _jsonl(folder: Path, _: Path) -> None:
    (folder / "new.jsonl").write_text('{"content": "a brand new episode for the test"}\n')


def _demo_and_jsonl(folder: Path, template: Path) -> None:
    _copy_demo(folder, template)
    _jsonl(folder, template)


def _foreign_and_jsonl(folder: Path, template: Path) -> None:
    _foreign(folder, template)
    _jsonl(folder, template)


def _truncated_and_notes(folder: Path, template: Path) -> None:
    _truncated(folder, template)
    (folder / "notes.txt").write_text("not a backup\n" * 100)


def _check_restored(folder: Path) -> None:
    db = folder / "db.sqlite"
    aside = sorted(folder.glob("db.sqlite.damaged-*"))
    assert aside and not aside[0].name.endswith(("-wal", "-shm")), "damaged file not kept"
    assert row_counts(db)["episode"] > 0
    assert not list(folder.glob("*.restoring-*"))


def _check_wal_rows_seen(folder: Path) -> None:
    conn = sqlite3.connect(folder / "db.sqlite")
    try:
        assert (
            conn.execute("SELECT count(*) FROM episode WHERE source='from-the-wal'").fetchone()[0]
            == 5
        )
    finally:
        conn.close()


CASES = [
    Case("foreign-stats", _foreign, ("stats",), 2, r"not a Memory Curator database", foreign=True),
    Case("foreign-import", _foreign_and_jsonl, ("import", "{dir}/new.jsonl"), 2, r"contacts", True),
    Case("foreign-backup", _foreign, ("backup",), 2, r"not a Memory Curator", foreign=True),
    Case("truncated-backup", _truncated, ("backup",), 2, r"is damaged", foreign=True),
    Case("busy-backup", _copy_demo, ("backup",), 0, ours=True, env=BUSY, busy=True),
    Case("foreign-json", _foreign, ("--json", "stats"), 2, r"not a Memory Curator", True),
    Case("newer-version", _newer, ("stats",), 2, r"newer than this version", foreign=True),
    Case("clashing-table", _clashing, ("stats",), 2, r"holds table episode", foreign=True),
    Case("other-app-v1", _other_app_v1, ("stats",), 2, r"schema version 1 but no", True),
    # empty: nobody's database yet; filled only where a database may be created
    Case("empty-sqlite", _empty_sqlite, ("stats",), 2, r"is empty.*--create", foreign=True),
    Case("zero-length", _zero_length, ("stats",), 2, r"is empty.*--create", foreign=True),
    Case("zero-length-export", _zero_length, ("export",), 2, r"is empty", foreign=True),
    Case("empty-sqlite-create", _empty_sqlite, ("--create", "stats"), 0),
    Case("claimed-create", _claimed, ("--create", "stats"), 2, r"application id 0x47505353", True),
    Case(
        "claimed-import", _claimed_and_jsonl, ("import", "{dir}/new.jsonl"), 2, r"another p", True
    ),
    Case("claimed-demo", _claimed, ("demo",), 2, r"not a Memory Curator database", foreign=True),
    Case("zero-length-create", _zero_length, ("--create", "stats"), 0),
    Case("zero-length-demo", _zero_length, ("demo",), 0),
    Case("text-file", _text_file, ("stats",), 2, r"not a SQLite database.*no good backup", True),
    Case("text-import", _text_file, ("import", "{db}"), 2, r"not a SQLite database", True),
    Case("truncated", _truncated, ("stats",), 2, r"is damaged", foreign=True),
    Case(
        "truncated-names-backup",
        _truncated_with_backup,
        ("stats",),
        2,
        r"newest good backup is .*20260101T000000000000Z.*curator restore",
        foreign=True,
    ),
    Case("random-after-header", _random_body, ("stats",), 2, r"damaged|not a SQLite", True),
    Case("random-bytes", _random_bytes, ("export",), 2, r"not a SQLite database", True),
    Case("directory", _directory, ("stats",), 2, r"is a folder, not a database file"),
    Case("crashed-wal", _crashed, ("stats",), 0, ours=True, after=_check_wal_rows_seen),
    Case("busy-stats", _copy_demo, ("stats",), 0, ours=True, env=BUSY, busy=True),
    Case("busy-export", _copy_demo, ("export", "--top", "3"), 0, ours=True, env=BUSY, busy=True),
    Case(
        "busy-import",
        _demo_and_jsonl,
        ("import", "{dir}/new.jsonl"),
        1,
        r"^curator: error: busy: another curator process is writing",
        ours=True,
        env=BUSY,
        busy=True,
    ),
    Case(
        "busy-label",
        _copy_demo,
        ("label", "1", "noise"),
        1,
        r"busy: another curator process is writing",
        ours=True,
        env=BUSY,
        busy=True,
    ),
    Case("restore-no-backup", _truncated, ("restore",), 2, r"no good backup", foreign=True),
    Case(
        "restore-damaged-backup",
        _damaged_backup,
        ("restore", "{dir}/backups/db-20260101T000000000000Z.sqlite"),
        2,
        r"cannot be restored: .*damaged",
        foreign=True,
    ),
    Case(
        "restore-a-text-file",
        _truncated_and_notes,
        ("restore", "{dir}/notes.txt"),
        2,
        r"cannot be restored",
        foreign=True,
    ),
    Case("restore-newest", _truncated_with_backup, ("restore",), 0, after=_check_restored),
    Case(
        "restore-named",
        _truncated_with_backup,
        ("restore", "{dir}/backups/db-20260101T000000000000Z.sqlite"),
        0,
        after=_check_restored,
    ),
    # Restore replaces a damaged database of ours, never a file that is plainly not one
    *(
        Case(
            f"restore-onto-{name}", _with_a_good_backup(build), ("restore",), 2, r"refused: ", True
        )
        for name, build in (
            ("foreign", _foreign),
            ("text", _text),
            ("utf16", _utf16),
            ("png", _png),
            ("xz", _xz),
            ("newer", _newer),
        )
    ),
    Case(
        "restore-read-only-file",
        _with_a_good_backup(_truncated),
        ("restore",),
        2,
        r"read-only: .* cannot be written by this user; nothing changed",
        foreign=True,
        read_only=True,
        writable_folder=True,
    ),
    Case("read-only-stats", _copy_demo, ("stats",), 0, foreign=True, read_only=True),
    Case(
        "read-only-export",
        _copy_demo,
        ("export", "--format", "json"),
        0,
        foreign=True,
        read_only=True,
    ),
    Case(
        "read-only-backup",
        _copy_demo,
        ("backup",),
        2,
        r"^curator: error: cannot create the backup folder .*backups",
        foreign=True,
        read_only=True,
    ),
    Case(
        "read-only-import",
        _demo_and_jsonl,
        ("import", "{dir}/new.jsonl"),
        2,
        r"read-only: ",
        foreign=True,
        read_only=True,
    ),
    Case(
        "read-only-label",
        _copy_demo,
        ("label", "1", "noise"),
        2,
        r"read-only: ",
        True,
        read_only=True,
    ),
]


@pytest.fixture
def case_dir() -> Iterator[Path]:
    """A folder an unprivileged child can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="curator-hostile-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder)


def _make_read_only(folder: Path, monkeypatch: pytest.MonkeyPatch, *, whole: bool) -> None:
    if whole:
        for path in folder.iterdir():
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        folder.chmod(0o555)
    else:  # the database file only: its folder stays writable
        (folder / "db.sqlite").chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        folder.chmod(0o777)
    if os.geteuid() == 0:
        # root ignores permission bits: the child gives up the capabilities that let it
        bound = functools.partial(subprocess.run, preexec_fn=_drop_permission_override)
        monkeypatch.setattr(subprocess, "run", bound)


def _drop_permission_override() -> None:
    """In the child before exec: root without the capabilities to bypass file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_database(
    case: Case, case_dir: Path, demo_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case.build(case_dir, demo_template)
    db = case_dir / "db.sqlite"
    argv = [
        "--db",
        str(db),
        *(a.replace("{db}", str(db)).replace("{dir}", str(case_dir)) for a in case.argv),
    ]
    if case.read_only:
        _make_read_only(case_dir, monkeypatch, whole=not case.writable_folder)
    foreign_digest = sha256_of(db)
    holder = None
    if case.busy:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE pattern SET importance = importance")
    try:
        result = run_case(
            argv,
            Expect(
                code=case.code,
                message=case.message,
                db=db if (case.ours or case.code == 0) and not db.is_dir() else None,
                unchanged_counts=case.ours,
                untouched=(db,) if case.foreign else (),
            ),
            env=case.env,
        )
    finally:
        if holder is not None:
            holder.execute("ROLLBACK")
            holder.close()
    if case.code != 0:
        assert len([ln for ln in result.stderr.splitlines() if ln.strip()]) == 1, result.stderr
        if "--json" in argv:  # the one document is the error's
            assert json.loads(result.stdout)["exit"] == case.code, result.stdout
        else:
            assert result.stdout == "", result.stdout
    if case.foreign:
        assert sha256_of(db) == foreign_digest
    if case.after is not None:
        case.after(case_dir)


def _limit_file_size() -> None:
    """In the child before exec: no file may grow past 5,000 bytes (the -shm SQLite makes
    is 32 KiB), as a full quota fails a write. SIGXFSZ would kill the child first."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (5000, 5000))


def test_a_healthy_database_the_system_cannot_read_is_not_called_damaged(
    case_dir: Path, demo_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read the system fails (an I/O error: here a file-size limit, a real one, that
    stops SQLite making its -shm) is not damage: "damaged" sends the person to restore
    an older backup, losing what was written since. Twice: the second open finds the
    side files the first one left."""
    _copy_demo(case_dir, demo_template)
    db = case_dir / "db.sqlite"
    counts = row_counts(db)
    limited = functools.partial(subprocess.run, preexec_fn=_limit_file_size)
    monkeypatch.setattr(subprocess, "run", limited)
    for _ in range(2):
        result = run_case(["--db", str(db), "stats"], Expect(code=2))
        assert "damaged" not in result.stderr and "restore" not in result.stderr, result.stderr
        assert "disk I/O error" in result.stderr and "upgrade" not in result.stderr
        assert "is the disk full?" in result.stderr
    monkeypatch.undo()
    assert row_counts(db) == counts
    run_case(["--db", str(db), "stats"], Expect(code=0, db=db))

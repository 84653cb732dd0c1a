"""``curator copy``: a whole database between SQLite and PostgreSQL, verified, all or nothing.

The databases are filled through the models' own description of every table
(:func:`fill`), so a table added to the schema is filled, copied and checked here without
a test to remember it. Everything runs on real SQLite files and the session's real
PostgreSQL server (tests/pg_server.py).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from peewee import (
    AutoField,
    BlobField,
    BooleanField,
    CompositeKey,
    FloatField,
    ForeignKeyField,
    IntegerField,
)
from pg_server import PostgresServer
from store.file_limit import files_limited_to

from curator.cli import main
from curator.errors import ConflictError, CuratorError
from curator.store import copy as copy_module
from curator.store.copy import (
    LOCAL_SETTING_KEYS,
    CopyError,
    copied_tables,
    copy_database,
    open_apart,
    table_digest,
)
from curator.store.db import Store
from curator.store.models import ALL_MODELS

TEXTS = ["", "plain", 'it\'s "quoted"', "50% ? %s \\ ?", "ünïcödé 中文 \U0001f600", "a\nb\tc"]
FLOATS = [0.0, -1.5, 1e300, 3.141592653589793, float("inf"), -float("inf"), 2.0**-1074]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fill(store: Store, rng: random.Random, *, at_least: int = 0, most: int = 3) -> None:
    """Random rows in every table of the models, foreign keys pointing at real rows (a
    self-reference at any row of its table, later ones included)."""
    models = {m._meta.table_name: m for m in ALL_MODELS}  # type: ignore[attr-defined]
    ids: dict[str, list[int]] = {}
    with store.write():
        for table in copied_tables():
            model = models[table.name]
            meta = model._meta  # type: ignore[attr-defined]
            count = rng.randint(at_least, most)
            own_ids = sorted(rng.sample(range(1, 10_000), count))
            ids[table.name] = own_ids
            rows: list[dict[str, Any]] = []
            pk = meta.primary_key
            key_fields = (
                [meta.fields[n] for n in pk.field_names] if isinstance(pk, CompositeKey) else [pk]
            )
            seen_keys: set[tuple[Any, ...]] = set()
            for index in range(count):
                row: dict[str, Any] = {}
                for f in meta.sorted_fields:
                    row[f.column_name] = _value(f, rng, index, own_ids, ids, model)
                if any(
                    row[f.column_name] is None
                    for f in meta.sorted_fields
                    if isinstance(f, ForeignKeyField) and not f.null
                ):
                    continue  # its parent table is empty
                if isinstance(pk, AutoField):
                    rows.append(row)
                    continue
                key = tuple(row[f.column_name] for f in key_fields)
                if (
                    None in key
                    or key in seen_keys
                    or (table.skip_keys and key[0] in LOCAL_SETTING_KEYS)
                ):
                    continue
                seen_keys.add(key)
                rows.append(row)
            if isinstance(pk, AutoField):
                for row, value in zip(rows, own_ids, strict=False):
                    row[pk.column_name] = value
            for row in rows:  # a self-reference is set once its row exists
                names = [n for n in row if n not in table.self_refs]
                store.db.execute_sql(
                    f"INSERT INTO {_q(table.name)} ({', '.join(_q(n) for n in names)}) "
                    f"VALUES ({', '.join('?' for _ in names)})",
                    tuple(row[n] for n in names),
                )
            for row in rows:
                for column in table.self_refs:
                    store.db.execute_sql(
                        f"UPDATE {_q(table.name)} SET {_q(column)} = ? WHERE id = ?",
                        (row[column], row["id"]),
                    )
            ids[table.name] = [r[pk.column_name] for r in rows] if isinstance(pk, AutoField) else []


def _value(
    f: Any,
    rng: random.Random,
    index: int,
    own_ids: list[int],
    ids: dict[str, list[int]],
    model: Any,
) -> Any:
    if isinstance(f, AutoField):
        return None  # set from own_ids
    if isinstance(f, ForeignKeyField):
        parent = f.rel_model._meta.table_name
        pool = own_ids if f.rel_model is model else ids.get(parent, [])
        if f.null and (not pool or rng.random() < 0.3):
            return None
        return rng.choice(pool) if pool else None
    if f.null and rng.random() < 0.25:
        return None
    if f.unique:
        return f"unique-{index}" if not isinstance(f, IntegerField) else index + 1
    if isinstance(f, BooleanField):  # the flags: 0 or 1 on both engines
        return rng.choice([0, 1])
    if isinstance(f, IntegerField):
        return rng.choice([0, 1, -7, 2**62, rng.randint(-1000, 1000)])
    if isinstance(f, FloatField):
        return rng.choice([*FLOATS, rng.random()])
    if isinstance(f, BlobField):
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
    return rng.choice(TEXTS) + f"-{index}" if f.primary_key else rng.choice(TEXTS)


def digests(store: Store) -> dict[str, tuple[int, str]]:
    return {
        t.name: table_digest(store, t, store.dialect.columns(store.db, t.name))
        for t in copied_tables()
    }


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


# -- every table ------------------------------------------------------------------------------


def test_the_copy_knows_every_table_of_the_schema(db_url: str) -> None:
    """A table added by a migration but unknown to the copy would be left behind: the
    schema's content tables (both engines) are exactly the tables copied."""
    store = Store(db_url)
    try:
        assert store.dialect.content_tables(store.db) == {t.name for t in copied_tables()}
    finally:
        store.close()


def test_a_full_database_goes_to_postgresql_and_back_unchanged(tmp_path: Path, pg_url: str) -> None:
    source = Store(tmp_path / "laptop.sqlite")
    fill(source, random.Random(7), at_least=2, most=5)
    before = digests(source)
    assert all(n > 0 for n, _ in before.values()), before  # every table holds rows
    server = open_apart(pg_url)
    report = copy_database(source, server)
    assert report.tables == before == digests(server)
    back = open_apart(tmp_path / "back.sqlite")
    assert copy_database(server, back).tables == before == digests(back)
    # ids kept, and the server's sequences moved past them: a new row takes the next id
    top = max(r[0] for r in server.execute("SELECT id FROM changeset"))
    server.execute(
        "INSERT INTO changeset (kind, actor, created_at, summary) VALUES ('commit', 'x', "
        "'2026-01-01T00:00:00.000000+00:00', '{}')"
    )
    assert server.execute("SELECT max(id) FROM changeset")[0][0] == top + 1
    # the search index of a SQLite destination is built by its triggers
    word = back.execute("SELECT text FROM episode WHERE text != '' LIMIT 1")
    if word and len(word[0][0]) >= 3:
        found = back.execute(
            "SELECT count(*) FROM episode_fts WHERE episode_fts MATCH ?",
            ('"' + word[0][0][:3].replace('"', '""') + '"',),
        )
        assert found[0][0] >= 1
    for store in (source, server, back):
        store.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32), most=st.integers(0, 6), page=st.integers(1, 3))
@example(seed=0, most=0, page=1000)
@example(seed=1, most=6, page=1)
def test_property_sqlite_to_postgresql_to_sqlite_keeps_every_hash(
    tmp_path: Path, pg_url: str, seed: int, most: int, page: int
) -> None:
    """Random small databases: SQLite → PostgreSQL → SQLite gives the same hash per table
    (the server database and the file are replaced with --force each example), read and
    written a few rows per page so that every table, composite keys and the setting
    table's skipped rows included, spans several pages."""
    first = tmp_path / f"a-{seed}-{most}-{page}.sqlite"
    first.unlink(missing_ok=True)
    source = Store(first)
    fill(source, random.Random(seed), most=most)
    server = open_apart(pg_url)
    back = open_apart(tmp_path / "b.sqlite")
    try:
        expected = digests(source)
        assert copy_database(source, server, force=True, page_rows=page).tables == expected
        assert copy_database(server, back, force=True, page_rows=page).tables == expected
        assert digests(back) == expected == digests(server)
    finally:
        for store in (source, server, back):
            store.close()


def test_postgresql_to_postgresql(pg_server: PostgresServer, pg_url: str) -> None:
    source = Store(pg_url)
    fill(source, random.Random(3), at_least=1)
    name = pg_server.fresh_database()
    try:
        dest = open_apart(pg_server.url(name))
        assert copy_database(source, dest).tables == digests(source) == digests(dest)
        dest.close()
    finally:
        source.close()
        pg_server.drop(name)


# -- refusals and failures leave the destination as it was -------------------------------------


def test_a_destination_with_rows_is_refused_unless_forced(tmp_path: Path, db_url: str) -> None:
    source = Store(tmp_path / "src.sqlite")
    fill(source, random.Random(11), at_least=1)
    dest = open_apart(db_url)
    fill(dest, random.Random(12), at_least=1)
    held = digests(dest)
    with pytest.raises(ConflictError, match=r"already holds rows .*--force"):
        copy_database(source, dest)
    assert digests(dest) == held
    report = copy_database(source, dest, force=True)
    assert report.replaced_rows == sum(n for n, _ in held.values())
    assert digests(dest) == digests(source)
    source.close()
    dest.close()


def test_a_failure_mid_copy_leaves_the_destination_unchanged(tmp_path: Path, db_url: str) -> None:
    """Fault injection: the progress callback raises once the third table is half
    written (no real part fails on cue there); the copy over a database holding rows
    (--force) must roll back its emptying and every row it wrote."""
    source = Store(tmp_path / "src.sqlite")
    fill(source, random.Random(5), at_least=2)
    dest = open_apart(db_url)
    fill(dest, random.Random(6), at_least=1)
    held = digests(dest)
    tables: list[str] = []

    def stop(table: str, done: int, total: int) -> None:
        tables.append(table) if table not in tables else None
        if len(tables) == 3 and done > 0:
            raise RuntimeError("injected failure")

    with pytest.raises(RuntimeError, match="injected"):
        copy_database(source, dest, force=True, progress=stop)
    assert digests(dest) == held
    source.close()
    dest.close()


def test_a_value_the_server_refuses_fails_the_copy_in_one_line(tmp_path: Path, pg_url: str) -> None:
    """A real failure: PostgreSQL text cannot hold a NUL character, SQLite's can. The copy
    fails with the server's reason, and the server database keeps its rows."""
    source = Store(tmp_path / "src.sqlite")
    fill(source, random.Random(9), at_least=1)
    source.execute(
        "UPDATE episode SET text = ? WHERE id = (SELECT max(id) FROM episode)", ("a\x00b",)
    )
    dest = open_apart(pg_url)
    fill(dest, random.Random(10), at_least=1)
    held = digests(dest)
    with pytest.raises(CopyError) as failed:
        copy_database(source, dest, force=True)
    assert "\n" not in str(failed.value) and "left as it was" in str(failed.value)
    assert digests(dest) == held
    source.close()
    dest.close()


def test_a_copy_that_fails_after_setting_the_ids_leaves_every_sequence_ahead(
    tmp_path: Path, pg_url: str
) -> None:
    """A real failure after the sequences were set: an integer column of SQLite holding
    1.5 is copied as 2, so the copy's check refuses it. ``setval`` is not undone by the
    rollback that brings the rows back: set to the copied rows' ids it left every later
    insert colliding with a restored row. Each sequence must stay ahead of its table."""
    source = Store(tmp_path / "src.sqlite")
    fill(source, random.Random(11), at_least=1, most=1)
    source.execute("UPDATE pattern SET revision = 1.5")
    dest = open_apart(pg_url)
    fill(dest, random.Random(12), at_least=3, most=3)
    with dest.write():  # as a database whose rows were written by the application
        for table in copied_tables():
            if table.generated_id is not None:
                dest.dialect.advance_ids(dest.db, table.name, table.generated_id)
    held = digests(dest)
    with pytest.raises(CopyError, match="does not match its source"):
        copy_database(source, dest, force=True)
    assert digests(dest) == held
    for table in copied_tables():
        if table.generated_id is None:
            continue
        name = _q(table.name)
        (largest,) = dest.execute(f"SELECT COALESCE(max({_q(table.generated_id)}), 0) FROM {name}")[
            0
        ]
        (following,) = dest.execute(
            "SELECT nextval(pg_get_serial_sequence(?, ?))", (name, table.generated_id)
        )[0]
        assert following > largest, table.name
    source.close()
    dest.close()


def test_a_negative_zero_copies_as_the_zero_sqlite_keeps(tmp_path: Path, pg_url: str) -> None:
    """PostgreSQL keeps the sign of -0.0, SQLite stores it as 0.0: one number, one hash
    (the copy to SQLite, and so a backup without pg_dump, failed on it every time)."""
    source = open_apart(pg_url)
    fill(source, random.Random(13), at_least=1, most=1)
    source.execute("UPDATE candidate SET importance = ?", (-0.0,))
    dest = Store(tmp_path / "dest.sqlite")
    copy_database(source, dest)
    assert digests(dest) == digests(source)
    source.close()
    dest.close()


# -- the command ------------------------------------------------------------------------------


def test_the_command_copies_with_progress_and_one_json_document(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    laptop = tmp_path / "laptop.sqlite"
    store = Store(laptop)
    fill(store, random.Random(21), at_least=1)
    expected = digests(store)
    store.close()
    code, out, err = cli(capsys, "--json", "copy", str(laptop), pg_url)
    assert code == 0, err
    document = json.loads(out)
    assert {k: (v["rows"], v["sha256"]) for k, v in document["tables"].items()} == expected
    assert "copy: episode 0/" in err and "Traceback" not in err
    # into a destination holding rows: refused (a conflict, exit 1), then forced
    code, out, err = cli(capsys, "--db", str(laptop), "copy", pg_url)
    assert code == 1 and "already holds rows" in err and err.count("\n") == 1
    code, out, err = cli(capsys, "--db", str(laptop), "copy", pg_url, "--force")
    assert code == 0 and "counts and content hashes match" in out
    # and back into a new file, then the same file again: refused
    back = tmp_path / "new" / "back.sqlite"
    assert cli(capsys, "copy", pg_url, str(back))[0] == 0
    dest = Store(back)
    assert digests(dest) == expected
    dest.close()


def test_the_command_refuses_what_it_cannot_do_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "a.sqlite"
    Store(db).close()
    cases = [
        (["copy", str(db), str(db)], "the same database"),
        (["--db", str(db), "copy", str(db), str(tmp_path / "x.sqlite")], "not both"),
        (["copy", str(tmp_path / "missing.sqlite"), str(tmp_path / "y.sqlite")], "no database"),
        (["copy", str(db), "postgresql://ana:pw123@db.example/m"], "~/.pgpass"),
        (["copy", "postgresql://ana:pw123@db.example/m", str(tmp_path / "z.sqlite")], "SOURCE"),
    ]
    for argv, message in cases:
        before = sorted(p.name for p in tmp_path.iterdir())
        code, out, err = cli(capsys, "--json", *argv)
        assert code == 2 and message in err, (argv, err)
        assert err.count("\n") == 1 and "pw123" not in err + out
        assert json.loads(out)["exit"] == 2
        assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_second_name_of_the_source_file_is_refused_before_dest_is_opened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hard link, a symbolic link, another spelling: opened as DEST, a second name of
    the source file got a -wal of its own beside the source's before the refusal."""
    db = tmp_path / "a.sqlite"
    Store(db).close()
    os.link(db, tmp_path / "hard.sqlite")
    (tmp_path / "soft.sqlite").symlink_to("a.sqlite")
    before = sorted(p.name for p in tmp_path.iterdir())
    for dest in ("hard.sqlite", "soft.sqlite", "./a.sqlite"):
        code, _, err = cli(capsys, "copy", str(db), str(tmp_path / dest), "--force")
        assert code == 2 and "the same database" in err and err.count("\n") == 1, (dest, err)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, dest


def test_files_whose_names_are_not_utf8_copy_both_ways(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name with a byte that is not UTF-8 is a file's name like any other (the other
    commands open it): the copy's same-database check read it as text and failed."""
    odd = tmp_path / os.fsdecode(b"odd-\xff.sqlite")
    plain = tmp_path / "plain.sqlite"
    store = Store(odd)
    fill(store, random.Random(33), at_least=1)
    held = digests(store)
    store.close()
    assert cli(capsys, "copy", str(odd), str(plain))[0] == 0
    back = tmp_path / os.fsdecode(b"back-\xfe.sqlite")
    assert cli(capsys, "copy", str(plain), str(back))[0] == 0
    copied = Store(back)
    assert digests(copied) == held
    copied.close()
    code, _, err = cli(capsys, "copy", str(odd), str(odd), "--force")
    assert code == 2 and "the same database" in err


def test_a_failed_copy_into_a_new_file_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source with a table the copy does not know is refused; the new destination file
    (and its folder) made for it are taken back."""
    db = tmp_path / "a.sqlite"
    store = Store(db)
    store.execute('CREATE TABLE "plugin_notes" ("id" INTEGER PRIMARY KEY)')
    store.close()
    code, _, err = cli(capsys, "copy", str(db), str(tmp_path / "new" / "b.sqlite"))
    assert code == 1 and "plugin_notes" in err and err.count("\n") == 1
    assert not (tmp_path / "new").exists()


def test_a_full_disk_while_the_new_file_is_made_leaves_nothing(
    tmp_path: Path, db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`copy SOURCE NEW` on a full disk (this process's file size limit, a real one: the
    new file's -shm stops growing after its first pages) failed as it should, and left the
    new file (4 KiB, the schema not written) with its -wal and -shm: the take-back's own
    look at the file needed the -shm to grow too. From a file or a server alike."""
    source = open_apart(db_url)  # held open: its own -shm is whole before the limit
    fill(source, random.Random(41), at_least=1)
    dest = tmp_path / "new" / "dest.sqlite"
    try:
        with files_limited_to(12_288):
            code, _, err = cli(capsys, "copy", db_url, str(dest))
    finally:
        source.close()
    assert code == 2 and err.count("\n") == 1 and "disk is full" in err, err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("stop", ["full", "interrupted"])
def test_a_copy_into_a_new_file_stopped_half_way_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """The neighbours of a full disk at the new file's making: the disk filling up under
    the copy's rows (SQLite's page limit on DEST's connection, a real SQLITE_FULL), and a
    Ctrl-C between two pages (a fault injection: the progress report raises
    KeyboardInterrupt once episodes are being written)."""
    db = tmp_path / "a.sqlite"
    store = Store(db)
    fill(store, random.Random(42), at_least=1)
    with store.write():
        for i in range(60):  # pages of rows the destination must grow for
            store.db.execute_sql(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata, "
                "imported_at, classify_truncated) VALUES (?, ?, ?, 's', '{}', ?, 0)",
                (f"big-{i}", "x" * 3000, "2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"),
            )
    store.close()
    if stop == "full":

        def limited(location: str | os.PathLike[str], **options: Any) -> Store:
            opened = open_apart(location, **options)
            if options.get("create"):  # DEST, its schema written: no page more
                [(pages,)] = opened.execute("PRAGMA page_count")
                opened.execute(f"PRAGMA max_page_count = {int(pages)}")
            return opened

        monkeypatch.setattr(copy_module, "open_apart", limited)
    else:

        def interrupted(source: Store, dest: Store, **options: Any) -> Any:
            def progress(table: str, done: int, total: int) -> None:
                if table == "episode" and done > 0:
                    raise KeyboardInterrupt
                options["progress"](table, done, total)

            return copy_database(source, dest, **{**options, "progress": progress})

        monkeypatch.setattr(copy_module, "copy_database", interrupted)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = cli(capsys, "copy", str(db), str(tmp_path / "new" / "b.sqlite"))
    expected = ("database or disk is full", 1) if stop == "full" else ("interrupted", 130)
    assert code == expected[1] and expected[0] in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_copy_refuses_a_read_only_destination(tmp_path: Path) -> None:
    source = Store(tmp_path / "a.sqlite")
    dest = open_apart(tmp_path / "b.sqlite")
    dest.close()
    readonly = open_apart(tmp_path / "b.sqlite", read_only=True)
    with pytest.raises(CuratorError, match="read-only"):
        copy_database(source, readonly)
    source.close()
    readonly.close()


def test_one_database_under_other_names_is_refused(
    pg_server: PostgresServer, pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SOURCE and DEST that reach one database, however they are written (another host
    name, parameters, a second path to one file), are refused before anything is written:
    with --force a copy onto itself would empty the database it reads."""
    store = open_apart(pg_url)
    fill(store, random.Random(31), at_least=1)
    held = digests(store)
    store.close()
    name = pg_url.rsplit("/", 1)[1]
    port = pg_server.port
    for spelling in (
        f"postgresql://postgres@localhost:{port}/{name}",
        f"postgresql://postgres@127.0.0.1:{port}/{name}?sslmode=disable",
        f"postgresql://postgres@/{name}?host=127.0.0.1&port={port}",
    ):
        code, _, err = cli(capsys, "copy", pg_url, spelling, "--force")
        assert code == 2 and "the same database" in err and err.count("\n") == 1, err
    check = open_apart(pg_url)
    assert digests(check) == held
    check.close()
    # a file under a second name (a symbolic link), through the library as the API would
    db = tmp_path / "a.sqlite"
    fill_store = Store(db)
    fill(fill_store, random.Random(32), at_least=1)
    (tmp_path / "alias.sqlite").symlink_to(db)
    alias = Store(tmp_path / "alias.sqlite")
    with pytest.raises(CuratorError, match="the same database"):
        copy_database(fill_store, alias, force=True)
    assert digests(fill_store) == digests(alias)
    alias.close()
    fill_store.close()

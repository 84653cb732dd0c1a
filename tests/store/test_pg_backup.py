"""Backups of a PostgreSQL database: with ``pg_dump``, and without it (a logical export).

Both ways on the session's real server: ``pg_dump``/``pg_restore`` are used when they are
on the PATH, and hidden by a PATH that lacks them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest
from pg_server import PostgresServer

from curator.cli import main
from curator.store.backup import BackupCancelled
from curator.store.db import Store
from curator.store.pg_backup import backups_of, database_id, take_pg_backup
from tests.store.test_copy import digests, fill

needs_pg_dump = pytest.mark.skipif(
    shutil.which("pg_dump") is None or shutil.which("pg_restore") is None,
    reason="pg_dump and pg_restore are not installed",
)


@pytest.fixture(autouse=True)
def _data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default backup folder is the user data folder's: a test's own here."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(params=["pg_dump", "export"])
def tools(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """With the server's tools on the PATH, or with a PATH that has none of them."""
    if request.param == "pg_dump":
        if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
            pytest.skip("pg_dump and pg_restore are not installed")
    else:
        empty = tmp_path / "no-tools"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
    return str(request.param)


def test_backup_and_restore_put_the_content_back(
    tools: str, pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(pg_url)
    fill(store, random.Random(1), at_least=1)
    before = digests(store)
    store.close()
    folder = tmp_path / "backups"
    code, out, err = cli(capsys, "--db", pg_url, "--json", "backup", "--dir", str(folder))
    assert code == 0, err
    backup = Path(json.loads(out)["backup"])
    assert backup.suffix == (".pgdump" if tools == "pg_dump" else ".sqlite")
    # the content changes after the backup ...
    store = Store(pg_url)
    store.execute("DELETE FROM episode")
    store.execute("INSERT INTO setting (key, value) VALUES ('after', '1')")
    changed = digests(store)
    store.close()
    assert changed != before
    code, out, err = cli(capsys, "--db", pg_url, "--json", "restore", str(backup))
    assert code == 0, err
    document = json.loads(out)
    store = Store(pg_url)
    try:
        assert digests(store) == before  # ... and the restore puts it back
        # the state it replaced was backed up first, and is this database's own
        safety = Path(document["safety"])
        assert safety.is_file() and safety in backups_of(database_id(store), folder)
    finally:
        store.close()


def test_a_logical_export_is_an_ordinary_curator_database(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump
    store = Store(pg_url)
    fill(store, random.Random(4), at_least=1)
    expected = digests(store)
    store.close()
    code, out, err = cli(capsys, "--db", pg_url, "--json", "backup", "--dir", str(tmp_path))
    assert code == 0, err
    export = Store(json.loads(out)["backup"], create=False)
    try:
        assert digests(export) == expected
    finally:
        export.close()


def test_backups_belong_to_their_database(
    tools: str,
    pg_server: PostgresServer,
    pg_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two databases share a backup folder: --keep 1 of one keeps the other's, and one's
    backup is refused over the other."""
    other = pg_server.url(pg_server.fresh_database())
    folder = str(tmp_path / "shared")
    for _ in range(2):
        for url in (pg_url, other):
            assert cli(capsys, "--db", url, "backup", "--dir", folder)[0] == 0
    code, _, err = cli(capsys, "--db", pg_url, "backup", "--dir", folder, "--keep", "1")
    assert code == 0, err
    stores = [Store(pg_url), Store(other)]
    ids = [database_id(s) for s in stores]
    mine, theirs = (backups_of(i, Path(folder)) for i in ids)
    assert len(mine) == 1 and len(theirs) == 2
    before = digests(stores[1])
    for s in stores:
        s.close()
    code, _, err = cli(capsys, "--db", other, "--json", "restore", str(mine[0]))
    assert code == 2 and "another database" in err and err.count("\n") == 1
    store = Store(other)
    assert digests(store) == before
    store.close()


def test_a_backup_renamed_as_another_databases_is_refused_by_its_content(
    pg_server: PostgresServer,
    pg_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The name of a logical export says whose it is; the identity inside decides (a
    file renamed, by hand or by a tool, replaced the whole content of the other)."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump: logical exports
    other = pg_server.url(pg_server.fresh_database())
    folder = tmp_path / "shared"
    for url in (pg_url, other):
        assert cli(capsys, "--db", url, "backup", "--dir", str(folder))[0] == 0
    stores = [Store(pg_url), Store(other)]
    mine, theirs = (backups_of(database_id(s), folder)[0] for s in stores)
    before = digests(stores[1])
    for s in stores:
        s.close()
    disguised = folder / theirs.name
    theirs.unlink()
    mine.rename(disguised)  # pg_url's backup under other's name
    code, _, err = cli(capsys, "--db", other, "restore", str(disguised))
    assert code == 2 and "is a backup of another database" in err and err.count("\n") == 1
    store = Store(other)
    assert digests(store) == before
    store.close()


@needs_pg_dump
def test_a_damaged_dump_is_refused_before_anything_changes(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(pg_url)
    fill(store, random.Random(8), at_least=1)
    store.close()
    code, out, _ = cli(capsys, "--db", pg_url, "--json", "backup", "--dir", str(tmp_path))
    backup = Path(json.loads(out)["backup"])
    data = backup.read_bytes()
    backup.write_bytes(data[: len(data) // 3])
    store = Store(pg_url)
    before = digests(store)
    store.close()
    code, _, err = cli(capsys, "--db", pg_url, "restore", str(backup))
    assert code == 2 and err.count("\n") == 1 and "nothing changed" in err
    store = Store(pg_url)
    assert digests(store) == before
    store.close()


@needs_pg_dump
def test_a_restore_that_fails_half_way_changes_nothing(
    pg_server: PostgresServer,
    pg_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Another session holds a table locked: pg_restore's lock wait runs out after it has
    dropped and recreated part of the schema; its single transaction rolls all of it back."""
    from curator.store import pg_driver

    store = Store(pg_url)
    fill(store, random.Random(13), at_least=1)
    store.close()
    code, out, _ = cli(capsys, "--db", pg_url, "--json", "backup", "--dir", str(tmp_path))
    backup = Path(json.loads(out)["backup"])
    store = Store(pg_url)
    store.execute("INSERT INTO setting (key, value) VALUES ('after', '1')")
    before = digests(store)
    store.close()
    monkeypatch.setenv("CURATOR_BUSY_TIMEOUT", "1")
    psycopg = pg_driver.load()
    with psycopg.connect(pg_url) as holder:
        # a reader's lock: pg_dump (the safety backup) reads past it, DROP TABLE waits
        holder.execute("LOCK TABLE follow_state IN ACCESS SHARE MODE")
        code, _, err = cli(capsys, "--db", pg_url, "restore", str(backup))
        holder.rollback()
    assert code == 2 and err.count("\n") == 1 and "nothing changed" in err, err
    store = Store(pg_url)
    assert digests(store) == before
    store.close()


@pytest.mark.parametrize("way", ["pg_dump", "export"])
def test_a_backup_stopped_on_request_ends_its_tool_and_keeps_nothing(
    way: str, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window closing stops its Backup now: the dump's tool is killed (a fault
    injection stands in for a slow pg_dump) or the export stops between two pages, and
    no file is left in the backup folder."""
    store = Store(pg_url)
    fill(store, random.Random(2), at_least=1)
    folder = tmp_path / "backups"
    pid_file = tmp_path / "pg_dump.pid"
    if way == "pg_dump":
        tools = tmp_path / "slow-tools"
        tools.mkdir()
        slow = tools / "pg_dump"
        slow.write_text(f"#!/bin/sh\necho $$ > '{pid_file}'\nexec /bin/sleep 120\n")
        slow.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")

        def cancelled() -> bool:
            return pid_file.exists() and pid_file.read_text().strip() != ""
    else:
        empty = tmp_path / "no-tools"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        asked = iter(range(10**6))

        def cancelled() -> bool:
            return next(asked) >= 3  # a few pages in

    try:
        with pytest.raises(BackupCancelled, match="stopped; nothing was kept"):
            take_pg_backup(store, folder, cancelled=cancelled)
    finally:
        store.close()
    assert not folder.exists() or list(folder.iterdir()) == []
    if way == "pg_dump":
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)  # the tool is gone

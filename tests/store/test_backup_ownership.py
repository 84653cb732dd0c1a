"""Backups belong to their database: two databases in one folder never share backups.

``curator.sqlite`` and ``curator.db`` have the same stem; each keeps, prunes and restores
only its own backups, and a backup of another database copied under this one's name is
never restored over it nor pruned as its own. Real SQLite files and the real CLI.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.store.backup import list_backups, prune_backups, take_backup
from curator.store.backup_identity import DATABASE_ID_KEY, read_database_id
from curator.store.backup_schedule import STAMP_FORMAT
from curator.store.db import Store
from curator.store.models import Pattern, utcnow


def _database(path: Path, patterns: int) -> Path:
    with Store(path) as store, store.write():
        for i in range(patterns):
            now = utcnow()
            Pattern.create(
                text=f"pattern {i} of {path.name}", importance=0.5, distilled_at=now, rank_key=0.5
            )
    return path


def _patterns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT text FROM pattern ORDER BY id")]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backup(db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> None:
    assert main(["--db", str(db), "backup", *extra]) == 0
    capsys.readouterr()


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two databases with one stem in one folder (so one backup folder)."""
    return _database(tmp_path / "curator.sqlite", 1), _database(tmp_path / "curator.db", 2)


def test_keep_prunes_only_its_own_backups(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_db, other = pair
    _backup(other, capsys)
    _backup(other, capsys)
    theirs = sorted((sqlite_db.parent / "backups").iterdir())
    _backup(sqlite_db, capsys)
    _backup(sqlite_db, capsys, "--keep", "1")
    assert all(p.exists() for p in theirs)  # curator.db's backups survive
    assert list_backups(other) == theirs
    own = list_backups(sqlite_db)
    assert len(own) == 1 and own[0].name.startswith("curator.sqlite-")


def test_restore_takes_its_own_newest_backup(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_db, other = pair
    _backup(sqlite_db, capsys)
    _backup(other, capsys)  # newer, of the other database
    assert main(["--db", str(sqlite_db), "restore"]) == 0
    capsys.readouterr()
    assert _patterns(sqlite_db) == ["pattern 0 of curator.sqlite"]


def test_a_backup_of_another_database_under_this_name_is_refused(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_db, other = pair
    _backup(sqlite_db, capsys)
    _backup(other, capsys)
    own = list_backups(sqlite_db)
    foreign = list_backups(other)[-1]
    stamp = datetime.now(UTC) + timedelta(seconds=5)
    disguised = foreign.with_name(f"curator.sqlite-{stamp.strftime(STAMP_FORMAT)}.sqlite")
    shutil.copyfile(foreign, disguised)
    before = _digest(sqlite_db)

    assert main(["--db", str(sqlite_db), "restore", str(disguised)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(disguised) in err and "another database" in err
    assert _digest(sqlite_db) == before and sorted(sqlite_db.parent.iterdir()) == sorted(
        [sqlite_db, other, sqlite_db.parent / "backups"]
    )  # nothing set aside, nothing left behind

    assert list_backups(sqlite_db) == own  # not listed as its own ...
    _backup(sqlite_db, capsys, "--keep", "1")
    assert disguised.exists()  # ... so never pruned as its own
    assert main(["--db", str(sqlite_db), "restore"]) == 0  # and never chosen by default
    capsys.readouterr()
    assert _patterns(sqlite_db) == ["pattern 0 of curator.sqlite"]


def test_one_backup_folder_for_two_databases_of_one_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--dir`` shared by ``a/curator.sqlite`` and ``b/curator.sqlite``: the names are the
    same, the ids tell them apart."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _database(tmp_path / "a" / "curator.sqlite", 1)
    second = _database(tmp_path / "b" / "curator.sqlite", 2)
    shared = str(tmp_path / "shared")
    _backup(second, capsys, "--dir", shared)
    theirs = sorted((tmp_path / "shared").iterdir())
    _backup(first, capsys, "--dir", shared)
    _backup(first, capsys, "--dir", shared, "--keep", "1")
    assert all(p.exists() for p in theirs)
    assert list_backups(second, tmp_path / "shared") == theirs
    assert len(list_backups(first, tmp_path / "shared")) == 1


def test_the_identity_is_created_once_and_copied_into_backups(tmp_path: Path) -> None:
    db = _database(tmp_path / "curator.sqlite", 1)
    assert read_database_id(db) is None  # none until the first backup
    first = take_backup(db).path
    identity = read_database_id(db)
    assert identity and read_database_id(first) == identity
    take_backup(db)
    assert read_database_id(db) == identity  # created once, never replaced
    with Store(db) as store:  # the settings ignore the row
        from curator.store.settings import load_settings

        load_settings(store)
        query = 'SELECT count(*) FROM "setting" WHERE "key" = ?'
        assert store.execute(query, (DATABASE_ID_KEY,)) == [(1,)]


def _legacy(db: Path, when: datetime) -> Path:
    """A backup as an earlier version named it (after the stem), holding no identity."""
    folder = db.parent / "backups"
    folder.mkdir(exist_ok=True)
    path = folder / f"{db.stem}-{when.strftime(STAMP_FORMAT)}.sqlite"
    source, target = sqlite3.connect(db), sqlite3.connect(path)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return path


def test_old_style_names_are_read_where_unambiguous(tmp_path: Path) -> None:
    db = _database(tmp_path / "curator.sqlite", 1)
    old = _legacy(db, datetime(2026, 1, 1, tzinfo=UTC))
    assert list_backups(db) == [old]
    newer = take_backup(db).path  # the database now has an identity; the old one has none
    assert list_backups(db) == [old, newer]
    _database(tmp_path / "curator.db", 1)  # now "curator-<time>.sqlite" may be either's
    assert list_backups(db) == [newer]
    prune_backups(db, recent=1)
    assert old.exists()


# -- the class as a property ------------------------------------------------------------

_DBS = ["curator.sqlite", "curator.db", "curator", "curator.sqlite.sqlite", "other.sqlite"]
_NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


@st.composite
def _folder(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]]]:
    """Databases beside ``curator.sqlite`` and files in the backup folder: backup-like
    names of any of the databases (new and old style, stamps over two months) or junk,
    each empty, a copy of this database's backup, or a copy of another's."""
    siblings = draw(st.lists(st.sampled_from(_DBS[1:]), unique=True, max_size=3))
    owner = st.sampled_from([n for n in _DBS] + [n.split(".")[0] for n in _DBS])
    stamp = st.integers(0, 60 * 24 * 60).map(
        lambda m: (_NOW - timedelta(minutes=m)).strftime(STAMP_FORMAT)
    )
    name = st.one_of(
        st.builds(lambda o, s: f"{o}-{s}.sqlite", owner, stamp),
        st.builds(lambda o, s: f"{o}-{s}.partial", owner, stamp),
        st.sampled_from(["notes.txt", "curator.sqlite", "curator-x.sqlite"]),
    )
    content = st.sampled_from(["empty", "own", "foreign"])
    files = draw(st.lists(st.tuples(name, content), unique_by=lambda f: f[0], max_size=12))
    return siblings, files


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("owners")
    own = _database(folder / "curator.sqlite", 1)
    other = _database(folder / "elsewhere.sqlite", 1)
    return {"own": own, "own_backup": take_backup(own).path, "foreign": take_backup(other).path}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    own_name=st.sampled_from(["curator.sqlite", "curator"]),
    layout=_folder(),
    recent=st.integers(1, 3),
)
def test_retention_removes_only_this_databases_backups(
    samples: dict[str, Path],
    own_name: str,
    layout: tuple[list[str], list[tuple[str, str]]],
    recent: int,
) -> None:
    siblings, files = layout
    siblings = [s for s in siblings if s != own_name]
    with tempfile.TemporaryDirectory() as root:
        db = Path(root) / own_name
        shutil.copyfile(samples["own"], db)
        for sibling in siblings:
            (Path(root) / sibling).write_bytes(b"")
        folder = Path(root) / "backups"
        folder.mkdir()
        for name, content in files:
            if content == "empty":
                (folder / name).write_bytes(b"")
            else:
                sample = samples["own_backup" if content == "own" else "foreign"]
                shutil.copyfile(sample, folder / name)
        prune_backups(db, recent=recent)
        removed = {name for name, _ in files} - {p.name for p in folder.iterdir()}
        ambiguous = any(s == "curator" or s.startswith("curator.") for s in siblings)
        for name, content in files:
            if name not in removed:
                continue
            assert content != "foreign", name  # another database's id: never
            assert name.endswith(".sqlite"), name
            owner = name.rsplit("-", 1)[0]
            assert owner in (own_name, "curator"), name  # its name or the old style
            if content == "empty" and owner == "curator":
                # no id and the old style's name (or a suffixless database's, the same):
                # only while no other database beside it could own it
                assert not ambiguous, (name, siblings)

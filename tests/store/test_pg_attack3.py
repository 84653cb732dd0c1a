"""PostgreSQL where it behaved otherwise than SQLite, or than it said: a database cloned
with ``CREATE DATABASE ... TEMPLATE`` and its original's backups, a failed copy into an
empty database, an importance another program wrote, and where empty values sort.
"""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator import Curator
from curator.cli import main
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.episode_queries import SORT_KEYS, EpisodeFilter, EpisodeSort, _sort, query_ids
from curator.store.knowledge import top_k_patterns
from curator.store.models import Episode, utcnow
from curator.store.opening import StoreError
from curator.store.pg_backup import _NAME, _safe, backups_of, database_id, default_pg_backup_dir
from tests.review.conftest import make_pattern
from tests.store.test_copy import digests, fill
from tests.store.test_pg_backup import _data_home, cli, tools  # noqa: F401 - the fixtures


@pytest.mark.parametrize("long", [False, True])
def test_a_clone_neither_restores_nor_thins_out_its_originals_backups(
    tools: str,  # noqa: F811 - the fixture
    pg_server: PostgresServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    long: bool,
) -> None:
    """A clone carries its original's identity; the database's name tells their backups
    apart, long names that begin alike too. Without a backup of its own the clone has
    nothing to restore, and the original's, named, is refused."""
    alpha = pg_server.fresh_database()
    if long:
        renamed = "x" * 40 + alpha
        pg_server.admin(f'ALTER DATABASE "{alpha}" RENAME TO "{renamed}"')
        alpha = renamed
    store = Store(pg_server.url(alpha))
    fill(store, random.Random(3), at_least=2)
    store.close()
    folder = default_pg_backup_dir()  # where restore looks without a BACKUP
    assert cli(capsys, "--db", pg_server.url(alpha), "backup")[0] == 0
    beta = f"{alpha}_clone"[-63:] if not long else "x" * 40 + "clone"
    pg_server.admin(f'CREATE DATABASE "{beta}" TEMPLATE "{alpha}"')
    try:
        clone = Store(pg_server.url(beta))
        held = digests(clone)
        clone.close()
        code, _, err = cli(capsys, "--db", pg_server.url(beta), "restore")
        assert code == 2 and "no backup of" in err, err
        with Store(pg_server.url(beta)) as clone:
            (original,) = backups_of(database_id(clone), folder)
        code, _, err = cli(capsys, "--db", pg_server.url(beta), "restore", str(original))
        assert code == 2 and "is a backup of the database" in err and err.count("\n") == 1
        code, _, err = cli(capsys, "--db", pg_server.url(beta), "backup", "--keep", "1")
        assert code == 0, err
        store = Store(pg_server.url(alpha))
        own = backups_of(database_id(store), folder)
        store.close()
        assert len(own) == 2 and original in own
        clone = Store(pg_server.url(beta))
        assert digests(clone) == held
        clone.close()
    finally:
        pg_server.drop(beta)


def test_a_failed_copy_leaves_an_empty_database_empty(
    pg_server: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The schema set up for the copy goes with it (PostgreSQL's text cannot hold the NUL
    a SQLite file can): no table, no extension left behind, as a new file is removed."""
    source = Store(tmp_path / "src.sqlite")
    fill(source, random.Random(9), at_least=1)
    source.execute(
        "UPDATE episode SET text = ? WHERE id = (SELECT max(id) FROM episode)", ("a\x00b",)
    )
    source.close()
    empty = pg_server.fresh_database(template="template0")
    try:
        before = (pg_server.tables(empty), _extensions(pg_server, empty))
        code, _, err = cli(capsys, "copy", str(tmp_path / "src.sqlite"), pg_server.url(empty))
        said = err.strip().splitlines()[-1]  # after the progress lines
        assert code == 1 and said.endswith("was left as it was"), err
        assert (pg_server.tables(empty), _extensions(pg_server, empty)) == before
    finally:
        pg_server.drop(empty)


def _extensions(pg_server: PostgresServer, database: str) -> list[str]:
    from curator.store import pg_driver

    psycopg = pg_driver.load()
    with psycopg.connect(pg_server.url(database), autocommit=True) as conn:
        return sorted(str(r[0]) for r in conn.execute("SELECT extname FROM pg_extension"))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-0.5", "1.5"])
def test_an_importance_another_program_wrote_is_said_in_one_sentence_wherever_read(
    pg_server: PostgresServer, pg_url: str, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """PostgreSQL stores NaN and infinities; this program never writes them, nor anything
    outside [0, 1]. Every read of one (the model's field and the raw queries) refuses it
    in one sentence: export, the API's ranked reads, insights."""
    store = Store(pg_url)
    with store.write():
        for n in range(3):
            make_pattern(store, f"pattern {n} says something useful about the agent's work")
    (first,) = store.execute("SELECT min(id) FROM pattern")[0]
    store.execute(f"UPDATE pattern SET importance = '{value}' WHERE id = ?", (first,))
    said = r"^a pattern holds importance .*, not a number from 0 to 1 \(another program wrote"
    with pytest.raises(StoreError, match=said):
        top_k_patterns(store)
    store.close()
    with Curator(db=pg_url) as curator:
        for read in (curator.knowledge, lambda: curator.knowledge(query="useful")):
            with pytest.raises(CuratorError, match=said):
                read()
        with pytest.raises(CuratorError, match=said):
            curator.search_knowledge("useful", 5)
    for args in (["export"], ["export", "--format", "json"], ["insights"]):
        code, _, err = cli(capsys, "--db", pg_url, *args)
        assert code == 2 and err.count("\n") == 1 and "holds importance" in err, (args, err)


def test_empty_values_sort_alike_on_both_engines(pg_url: str, tmp_path: Path) -> None:
    """SQLite puts NULLs first going up and last going down; PostgreSQL the other way,
    unless told: the episode list is the same on both, for every sort key."""
    lite = Store(tmp_path / "lite.sqlite")
    rng = random.Random(11)
    labels = [None, "noise", "constitutional", "uncategorized"]
    with lite.write():
        for n in range(60):
            Episode.create(
                content_hash=f"h{n}",
                text=f"episode {n} " + rng.choice(["alpha", "beta", "gamma"]),
                timestamp=utcnow() - timedelta(minutes=rng.randrange(5)),
                source=rng.choice(["", "a", "b"]),
                label=rng.choice(labels),
                human_label=rng.choice(labels),
                model_label=rng.choice(labels),
                model_confidence=rng.choice([None, 0.5, 0.9]),
            )
    lite.close()
    assert main(["copy", str(tmp_path / "lite.sqlite"), pg_url, "--force"]) == 0
    stores = [Store(tmp_path / "lite.sqlite"), Store(pg_url)]
    try:
        for key in SORT_KEYS:
            for descending in (False, True):
                sort = EpisodeSort(key, descending)
                orders = [query_ids(s, EpisodeFilter(), sort) for s in stores]
                assert orders[0] == orders[1], (key, descending)
    finally:
        for s in stores:
            s.close()


@given(first=st.text(max_size=70), second=st.text(max_size=70))
@example(first="prod@1", second="prod_401")
@example(first="x" * 40 + "_alpha", second="x" * 40 + "_beta")
def test_two_database_names_never_share_a_backup_name(first: str, second: str) -> None:
    if first != second:
        assert _safe(first) != _safe(second)
    assert _NAME.fullmatch(f"pg-{_safe(first)}-0123456789ab-20260101T000000000000Z")


@pytest.mark.parametrize("descending", [False, True])
def test_the_label_sort_walks_an_index_on_postgresql_too(pg_url: str, descending: bool) -> None:
    """SQLite walks its "label" index for the first page (NULLs first, then the id);
    PostgreSQL, told to put NULLs where SQLite does, walks one made in that order."""
    with Store(pg_url) as store:
        order = f"{_sort(store, 'label', descending)}, id {'DESC' if descending else 'ASC'}"
        with store.dialect.no_table_scan(store.db):
            plan = store.execute(f"EXPLAIN SELECT id FROM episode ORDER BY {order} LIMIT 200")
    assert "episode_label_order" in " ".join(str(row[0]) for row in plan)

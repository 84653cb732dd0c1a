"""What a PostgreSQL URL says of its connection is kept, and the text is Unicode whatever
the database's default encoding. Real servers: the session's, its databases made here.

The curator sets a lock wait (and read-only) through libpq's ``options`` and its own
``connect_timeout`` and ``application_name``; given as arguments they replaced the URL's
(``options=-csearch_path=other`` put the tables in ``public``). A database whose client
encoding defaults to LATIN1 turned an emoji into a Python error (exit 3, "a bug").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_server import PostgresServer

from curator import Curator
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.pg_connection import postgres_database


@pytest.fixture
def empty_database(pg_server: PostgresServer) -> Iterator[str]:
    """A new database without the curator's schema; its name."""
    pg_server.counter += 1
    name = f"url_{pg_server.counter}"
    pg_server.admin(f'CREATE DATABASE "{name}"')
    yield name
    pg_server.drop(name)


def _one(pg_server: PostgresServer, database: str, sql: str) -> object:
    from curator.store import pg_driver

    with pg_driver.load().connect(pg_server.url(database)) as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[arg-type]  # our own text
    return None if row is None else row[0]


def test_the_urls_options_are_kept_beside_the_curators(
    pg_server: PostgresServer, empty_database: str
) -> None:
    pg_server.admin_in(empty_database, "CREATE SCHEMA other")
    url = pg_server.url(empty_database) + "?options=-csearch_path%3Dother"
    store = Store(url, create=True)
    try:
        assert store.execute("SHOW search_path") == [("other",)]
        assert store.execute("SHOW lock_timeout")[0][0] != "0"  # the curator's, too
    finally:
        store.close()
    where = "SELECT table_schema FROM information_schema.tables WHERE table_name = 'episode'"
    assert _one(pg_server, empty_database, where) == "other"


def test_the_urls_timeout_and_name_are_kept_and_a_deadline_always_holds(
    pg_server: PostgresServer,
) -> None:
    base = pg_server.url("postgres")
    given = postgres_database(base + "?connect_timeout=3&application_name=agent-box", 5.0)
    assert given.connect_params["connect_timeout"] == 3
    assert given.connect_params["application_name"] == "agent-box"
    for none in ("0", "-4", "soon"):  # no deadline is no choice here: the curator's
        params = postgres_database(f"{base}?connect_timeout={none}", 5.0).connect_params
        assert params["connect_timeout"] == 10
    assert postgres_database(base, 5.0).connect_params["application_name"] == "curator"


def test_a_database_whose_client_encoding_is_latin1_stores_any_character(
    pg_server: PostgresServer, pg_url: str
) -> None:
    name = pg_url.rsplit("/", 1)[1]
    pg_server.admin(f"ALTER DATABASE \"{name}\" SET client_encoding = 'LATIN1'")
    text = "ship it \U0001f680, caf\u00e9, \u05e9\u05dc\u05d5\u05dd"
    with Curator(db=pg_url) as curator:
        curator.record(text=text)
        stored = curator.store.execute("SELECT text FROM episode WHERE text LIKE 'ship it%'")
    assert stored == [(text,)]


def test_a_latin1_database_refuses_what_it_cannot_store_in_one_sentence(
    pg_server: PostgresServer,
) -> None:
    pg_server.counter += 1
    name = f"latin1_{pg_server.counter}"
    pg_server.admin(
        f"CREATE DATABASE \"{name}\" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' "
        "TEMPLATE template0"
    )
    try:
        with Curator(db=pg_server.url(name), create=True) as curator:
            curator.record(text="caf\u00e9 au lait")  # Latin-1 holds it
            before = curator.status()["episodes"]
            with pytest.raises(CuratorError) as refused:
                curator.record(text="ship it \U0001f680")
            said = str(refused.value)
            assert "\n" not in said and "LATIN1" in said, said
            assert curator.status()["episodes"] == before
    finally:
        pg_server.drop(name)


def test_a_service_entrys_settings_are_kept_as_the_urls_are(
    pg_server: PostgresServer, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``?service=NAME`` names an entry of the connection service file; its ``options``
    and ``application_name`` were replaced by the curator's, as the URL's were."""
    name = pg_url.rsplit("/", 1)[1]
    service = tmp_path / "pg_service.conf"
    service.write_text(
        "[agents]\n"
        f"host=127.0.0.1\nport={pg_server.port}\nuser=postgres\ndbname={name}\n"
        "options=-c statement_timeout=1234\napplication_name=from-service\n",
        "utf-8",
    )
    monkeypatch.setenv("PGSERVICEFILE", str(service))
    store = Store("postgresql:///?service=agents")
    try:
        assert store.execute("SHOW statement_timeout") == [("1234ms",)]
        assert store.execute("SHOW application_name") == [("from-service",)]
        assert store.execute("SHOW lock_timeout")[0][0] != "0"
    finally:
        store.close()

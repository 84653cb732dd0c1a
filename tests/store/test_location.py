"""Where a database lives: the one place the window and the commands ask what differs
between a SQLite file and a database on a PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.location import DatabaseLocation


def test_an_open_store_on_either_engine(db_url: str) -> None:
    store = Store(db_url)
    try:
        where = DatabaseLocation.of(store)
    finally:
        store.close()
    assert where == DatabaseLocation.named(db_url)  # the same before and after opening
    if db_url.startswith("postgresql://"):
        name = db_url.rsplit("/", 1)[1]
        assert (where.engine, where.file, where.display_name) == ("PostgreSQL", None, name)
        assert not where.is_local_file and not where.supports_file_backup
        assert where.description == f"PostgreSQL database: {db_url}"
    else:
        assert (where.engine, where.file, where.display_name) == (
            "SQLite",
            Path(db_url),
            "curator.sqlite",
        )
        assert where.is_local_file and where.supports_file_backup
        assert where.description == f"Database file: {db_url}"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("postgresql://ana@db.example:5432/memory", "memory"),
        ("postgres://ana@db.example/memory", "memory"),
        ("postgresql:///memory?host=/run/postgresql", "memory"),  # the local socket
        ("postgresql://ana@db1:5432,db2/memory?sslmode=require", "memory"),
        ("postgresql://ana@host/my%20memory", "my memory"),
        ("postgresql://ana@host/?dbname=memory", "memory"),
        ("postgresql://?service=curator", "service curator"),
    ],
)
def test_a_server_database_is_named_by_its_database(url: str, name: str) -> None:
    where = DatabaseLocation.named(url)
    assert where.display_name == name
    assert not where.is_local_file and where.file is None
    assert where.description.startswith("PostgreSQL database: ")


@settings(deadline=None)
@given(password=st.text(alphabet=st.characters(codec="ascii", categories=["L", "N"]), min_size=1))
@example(password="hunter2")
@example(password="memory")
def test_a_password_never_shows(password: str) -> None:
    where = DatabaseLocation.named(f"postgresql://ana:{password}@host/db?password={password}")
    assert where.shown == "postgresql://ana:***@host/db?password=***"
    assert where.description == f"PostgreSQL database: {where.shown}"
    assert where.display_name == "db"


def test_a_file_is_named_by_its_file_name(tmp_path: Path) -> None:
    path = tmp_path / "postgresql" / "team memory.sqlite"  # a folder may be called anything
    where = DatabaseLocation.named(path)
    assert where.display_name == "team memory.sqlite"
    assert where.file == path and where.is_local_file and where.supports_file_backup
    assert where.description == f"Database file: {path}"


URL_BITS = st.sampled_from(
    ["u", ":", "@", "/", "?", "#", "%", "%40", "%3A", "[", "]", "::1", "h", "&", "=", " ", "é"]
)
SECRET = "S3cr3tPw"


@settings(deadline=None, max_examples=300)
@given(
    st.sampled_from(["postgresql://", "postgres://"]),
    # a "/", "?" or "#" ends the user part: what follows it is a name, not a password
    st.lists(URL_BITS.filter(lambda bit: bit not in "/?#"), max_size=4).map("".join),
    st.lists(URL_BITS, max_size=4).map("".join),
    st.lists(URL_BITS, max_size=6).map("".join),
    st.booleans(),
)
@example("postgres://", "", "[", "u", False)  # a "[" with no "]": urlsplit refuses the host
@example("postgresql://", "u", "h", "]", True)
def test_any_url_around_a_password_is_shown_without_it_and_never_raises(
    scheme: str, user: str, host: str, rest: str, in_query: bool
) -> None:
    if in_query:
        url = f"{scheme}{user}@{host}/db?{rest}&password={SECRET}"
    else:
        url = f"{scheme}{user}:{SECRET}@{host}/{rest}"
    where = DatabaseLocation.named(url)
    for shown in (where.shown, where.display_name, where.summary, where.description):
        assert SECRET not in shown

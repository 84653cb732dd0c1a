"""A database named by a person is a file's path or a PostgreSQL URL, nothing SQLite or a
URL reader would take for something else.

SQLite reads ``:memory:`` as a database that vanishes with the program and (as built here)
any name starting with ``file:`` as a URI: a copy "into" ``:memory:`` reported success and
kept nothing, and ``file:x.sqlite`` opened ``x.sqlite`` itself. A password holding an
unescaped ``@ / ? #`` ends the URL's user part where Python and libpq disagree, and the
rest of the password then appeared in errors as a host, a port or a parameter.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pg_server import _free_port

from curator import Curator
from curator.cli import main
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.pg_url import check_postgres_url, display_url, without_password

SPECIAL = [
    ":memory:",
    "file:x.sqlite",
    "file:x.sqlite?mode=memory",
    "file::memory:",
    # another tool's URLs: as paths they made nested folders ("./sqlite:/tmp/x.sqlite")
    "sqlite:////tmp/x.sqlite",
    "sqlite:///x.sqlite",
    "SQLite3:x.sqlite",
    # PostgreSQL connections written wrong: as paths they made folders named after the
    # password, and every message printed it
    "postgresql:/ana:SECRETX@127.0.0.1/memory",
    "Postgres:ana@db.example/memory",
    "ana:SECRETX@127.0.0.1:55432/memory",
    "host=127.0.0.1 user=ana password='SECRETX but spaced' dbname=memory",
    "user=ana password=SECRETX",
    "postgres+psycopg://ana:SECRETX@h/db",
    "postgresq://ana:SECRETX@h/db",
    "postgresql//ana:SECRETX@h/db",
    "jdbc:postgresql://h/db?user=ana&password=SECRETX",
    " postgresql ://ana:SECRETX@h/db",
    "ana:p/wSECRETX@host/db",
    "//ana:SECRETX@h/db",
    "host = /var/run/postgresql dbname = mem password = SECRETX",
    "password = SECRETX",
]
REFUSED = (
    r"memory only|SQLite URI|URL of another tool|PostgreSQL URL|key=value connection|a URL the"
)


@pytest.mark.parametrize("name", SPECIAL)
def test_sqlite_special_names_are_refused_everywhere(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "a.sqlite"
    Store(source).close()
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(CuratorError, match=REFUSED) as caught:
        Store(name)
    assert "SECRETX" not in str(caught.value)
    with pytest.raises(CuratorError, match=REFUSED):
        Curator(db=name, create=True)
    monkeypatch.setenv("CURATOR_DB", name)
    for argv in (
        ["copy", str(source), name, "--force"],
        ["--db", name, "--create", "stats"],
        ["--create", "stats"],  # named by $CURATOR_DB
    ):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
        assert "SECRETX" not in err
    assert sorted(os.listdir(tmp_path)) == before  # nothing made, x.sqlite not touched


def test_a_file_whose_name_starts_with_file_is_a_file_by_its_full_path(tmp_path: Path) -> None:
    """SQLite is given every file's absolute path, so no name is read as a URI."""
    odd = tmp_path / "file:notes.sqlite"
    store = Store(odd)
    store.close()
    assert odd.is_file() and not (tmp_path / "notes.sqlite").exists()


def test_a_name_typed_as_a_relative_path_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``./:memory:`` and ``./file:x`` say "a file here": they are opened as files."""
    monkeypatch.chdir(tmp_path)
    assert main(["--db", "./:memory:", "--create", "stats"]) == 0
    source = tmp_path / ":memory:"
    assert source.is_file()
    assert main(["copy", "./:memory:", "./file:copy.sqlite"]) == 0
    assert (tmp_path / "file:copy.sqlite").is_file() and not (tmp_path / "copy.sqlite").exists()
    capsys.readouterr()


_SECRET = "SECRETX"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet="ab1:@/?#[]%!$&=+,;.~-", max_size=6),
    st.text(alphabet="ab1:@/?#[]%!$&=+,;.~-", max_size=6),
    st.sampled_from(["$CURATOR_DB", "--db", "the API"]),
    st.sampled_from(["user part", "password parameter"]),
)
@example("hunter@2024", "", "$CURATOR_DB", "user part")
@example("Tr0ub4dor/", "", "$CURATOR_DB", "user part")
@example("12?", "", "--db", "user part")
@example("12#", "@x", "--db", "user part")
@example("hun/ter", "", "the API", "user part")
@example("hun#", "", "$CURATOR_DB", "password parameter")
@example("hunter2&", "", "$CURATOR_DB", "password parameter")
@example("&=", "", "the API", "password parameter")  # "password=&=SECRETX": a nameless one
@example("&=", "", "$CURATOR_DB", "password parameter")
@example("ab&cd=", "", "$CURATOR_DB", "password parameter")  # "cd=SECRETX": unknown to libpq
@example("ab&port=", "", "$CURATOR_DB", "password parameter")  # libpq quotes a bad port
@example("ab&sslmode=", "", "the API", "password parameter")  # so does the sslmode check
@example("ab&host=", "", "$CURATOR_DB", "password parameter")
def test_no_password_shows_in_any_message(before: str, after: str, source: str, where: str) -> None:
    """Whatever characters a password holds unescaped, in the user part or a
    ``password=`` parameter, given by the environment, the command line or a program
    through the API: refused or connected to (here a port nobody listens on), no message
    shows it; what is accepted is read by Python as libpq reads it."""
    password = before + _SECRET + after
    port = _free_port()
    if where == "user part":
        url = f"postgresql://ana:{password}@127.0.0.1:{port}/db"
    else:
        url = f"postgresql://ana@127.0.0.1:{port}/db?password={password}"
    if source == "the API":
        with pytest.raises(CuratorError) as refused:
            Curator(db=url)
        assert _SECRET not in str(refused.value)
        return
    try:
        checked = check_postgres_url(url, source)
    except CuratorError as exc:
        assert _SECRET not in str(exc)
        return
    assert _SECRET not in display_url(checked)
    authority = checked.partition("://")[2].split("/", 1)[0]
    assert authority.count("@") <= 1 and "@" not in checked.partition("://")[2][len(authority) :]
    if source == "--db":  # accepted: then no password was seen, and none is sent
        assert urlsplit(checked).password is None
    with pytest.raises(CuratorError) as failed:
        Store(checked)
    assert _SECRET not in str(failed.value)


@pytest.mark.parametrize(
    "key", ["password", "sslpassword", "oauth_client_secret", "scram_client_key"]
)
def test_every_secret_parameter_is_a_password(key: str) -> None:
    """libpq takes more secrets than ``password``: each is refused where a password is,
    and never shown."""
    url = f"postgresql://ana@127.0.0.1:5/db?{key}={_SECRET}&sslmode=require"
    with pytest.raises(CuratorError, match="would show in the process list") as refused:
        check_postgres_url(url, "--db")
    assert _SECRET not in str(refused.value)
    shown = display_url(check_postgres_url(url, "$CURATOR_DB"))
    # a value after a secret may be its rest (an & unescaped): hidden too
    assert shown == f"postgresql://ana@127.0.0.1:5/db?{key}=***&sslmode=***"


def test_values_after_a_secret_are_never_quoted() -> None:
    """``password=ab&port=SECRETX`` may be the password ``ab&port=SECRETX`` unescaped."""
    url = f"postgresql://ana@127.0.0.1:5/db?password=ab&sslmode={_SECRET}"
    with pytest.raises(CuratorError, match=r"sslmode=\*\*\* in") as refused:
        check_postgres_url(url, "$CURATOR_DB")
    assert _SECRET not in str(refused.value)
    url = f"postgresql://ana@127.0.0.1:5/db?sslmode=require&password=ab&port={_SECRET}"
    assert (
        display_url(url) == "postgresql://ana@127.0.0.1:5/db?sslmode=require&password=***&port=***"
    )
    assert without_password(f"invalid port number: {_SECRET}", url) == "invalid port number: ***"
    short = "postgresql://ana@127.0.0.1:5/db?password=ab&port=1"  # the rest, quoted: hidden
    told = 'invalid integer value "1" for connection option "port" at 127.0.0.1'
    assert without_password(told, short) == (
        'invalid integer value "***" for connection option "port" at 127.0.0.1'
    )


def test_a_parameter_libpq_does_not_know_is_named_unless_a_secret_comes_before_it() -> None:
    with pytest.raises(CuratorError, match=r"does not know \('sslmod'\)"):
        check_postgres_url("postgresql://ana@h/db?sslmod=require", "--db")
    with pytest.raises(CuratorError, match=r"does not know \(write") as refused:
        check_postgres_url(f"postgresql://ana@h/db?password=x&{_SECRET}=1", "$CURATOR_DB")
    assert _SECRET not in str(refused.value)
    assert display_url(f"postgresql://ana@h/db?sslmode=require&{_SECRET}=1") == (
        "postgresql://ana@h/db?sslmode=require&***"
    )


def test_where_the_driver_cannot_be_asked_no_value_is_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fault injection (a libpq the driver cannot load cannot be provoked with the real
    package installed): no parameter is judged unknown, and no value is shown."""
    from curator.store import pg_url

    monkeypatch.setattr(pg_url, "libpq_keywords", lambda: None)
    url = f"postgresql://ana@h/db?sslmode=require&x={_SECRET}"
    assert check_postgres_url(url, "$CURATOR_DB") == url
    assert display_url(url) == "postgresql://ana@h/db?sslmode=***&x=***"


@pytest.mark.parametrize(
    "name",
    [
        "host=x.sqlite",
        "notes=2026.sqlite",
        "dbname=old.sqlite",
        "a:b@c.sqlite",
        "postgres:x",
        "postgres/curator.sqlite",
        "postgresql_backups/mem.db",
        "postgres+old.sqlite",
        "10:30@office.sqlite",
    ],
)
def test_odd_names_that_are_files_open_as_files(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One key=value word is a file's name; a name that looks like a connection but is
    an existing file (made before the check, or as ./NAME) is that file."""
    monkeypatch.chdir(tmp_path)
    assert main(["--db", f"./{name}", "--create", "stats"]) == 0
    assert (tmp_path / name).is_file()
    assert main(["--db", name, "stats"]) == 0
    capsys.readouterr()


def test_a_long_run_of_key_value_words_is_judged_at_once() -> None:
    """The check reads words, not a backtracking pattern: "v=10" sixteen times took 27 s."""
    from curator.core.userpath import sqlite_special_name

    for name in ("v=10" * 5_000, "v=10 " * 5_000, "a:" * 5_000 + "@"):
        sqlite_special_name(name)  # a deadline would be a timed test: the suite's own is

"""PostgreSQL as the second engine: its URL rules, schema, search, writes and commands.

Everything runs against a real server the session starts (tests/pg_server.py); the review
and commit tests run on both engines through the review fixtures (``BOTH_ENGINES``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.cli import main
from curator.errors import CuratorError
from curator.pipeline import commit, review
from curator.store.db import Store
from curator.store.db_choice import resolve_db_path
from curator.store.demo import create_demo
from curator.store.engine import qmark_to_format
from curator.store.episode_queries import (
    RELEVANCE,
    EpisodeFilter,
    EpisodeSort,
    query_first_ids,
    query_ids,
    where_clause,
)
from curator.store.migrations import LATEST_VERSION
from curator.store.models import Pattern
from curator.store.opening import SchemaTooNewError
from curator.store.pg_url import display_url
from curator.store.snapshot import logical_dump
from tests.store.test_episode_search import random_queries


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the URL: credentials and TLS ---------------------------------------------------------


def test_a_password_in_the_db_url_is_refused_with_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = cli(
        capsys, "--db", "postgresql://ana:s3cr3t-pw@db.example:5432/memory", "stats", "--json"
    )
    assert code == 2 and err.count("\n") == 1 and err.startswith("curator: error: ")
    assert "~/.pgpass" in err and "PGPASSWORD" in err and "service" in err
    assert "s3cr3t-pw" not in err + out and json.loads(out)["exit"] == 2
    code, out, err = cli(capsys, "--db", "postgresql://ana@db.example/memory?password=pw12345")
    assert code == 2 and "pw12345" not in err + out and "~/.pgpass" in err


@settings(max_examples=80, deadline=None)
@given(password=st.text(min_size=1, max_size=20).filter(lambda p: p.strip()))
@example(password="postgresql")
@example(password="@:/?#")
def test_no_password_ever_shows(password: str) -> None:
    """Whatever the password, the refusal and the displayed URL never show it."""
    secret = quote(password, safe="")
    url = f"postgresql://ana:{secret}@db.example:5432/memory?sslmode=require"
    with pytest.raises(CuratorError) as refused:
        resolve_db_path(url)
    shown = display_url(url)
    assert f":{secret}@" not in shown and ":***@" in shown
    assert f":{secret}@" not in str(refused.value)


def test_tls_parameters_pass_through_and_the_environment_may_hold_a_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://ana@db.example/memory?sslmode=verify-full&sslrootcert=/etc/ca/root.crt"
    assert resolve_db_path(url) == url
    assert resolve_db_path("postgres://ana@db.example/memory") == (
        "postgresql://ana@db.example/memory"
    )
    monkeypatch.setenv("CURATOR_DB", "postgresql://ana:pw@db.example/memory")
    assert resolve_db_path(None) == "postgresql://ana:pw@db.example/memory"
    code, _, err = cli(capsys, "--db", "postgresql://ana@db.example/memory?sslmode=strict", "stats")
    assert code == 2 and "sslmode='strict'" in err and "verify-full" in err
    code, _, err = cli(capsys, "--db", "postgresql://ana@db.example", "stats")
    assert code == 2 and "names no database" in err


def test_an_unreachable_server_is_one_line_and_names_no_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURATOR_DB", "postgresql://ana:hunter22@127.0.0.1:9/memory")
    code, out, err = cli(capsys, "stats", "--json")
    assert code == 2 and err.count("\n") == 1 and "cannot connect to" in err
    assert "hunter22" not in err + out and "Traceback" not in err


# -- the SQL: one text for both engines ---------------------------------------------------


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[Store]:
    store = Store(pg_url)
    yield store
    store.close()


LITERALS = st.text(alphabet="ab?%'\"\\ é_", max_size=12)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(literal=LITERALS, value=LITERALS)
@example(literal="%s", value="?")
@example(literal="'?'", value="%%")
def test_question_marks_are_parameters_only_outside_quotes(
    pg_store: Store, literal: str, value: str
) -> None:
    """A ``?`` or ``%`` inside a string literal or quoted name stays as written."""
    quoted = "'" + literal.replace("'", "''") + "'"
    column = '"' + literal.replace('"', '""') + '"' if literal else '"x"'
    sql = f"SELECT ?, {quoted} AS {column}, ?"
    assert re.findall(r"%%|%s", qmark_to_format(sql)).count("%s") == 2
    assert pg_store.execute(sql, (value, 7)) == [(value, literal, 7)]


# -- the schema ---------------------------------------------------------------------------


def test_migrated_to_the_latest_version_and_a_newer_schema_is_refused(
    pg_server: PostgresServer, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(pg_url)
    assert store.schema_version == LATEST_VERSION
    store.execute('UPDATE "curator_schema" SET "version" = ?', (LATEST_VERSION + 1,))
    store.close()
    with pytest.raises(SchemaTooNewError, match="newer than"):
        Store(pg_url)
    code, _, err = cli(capsys, "--db", pg_url, "stats")
    assert code == 2 and "newer than" in err and err.count("\n") == 1


def test_an_empty_database_is_set_up_only_when_asked_and_a_foreign_one_is_refused(
    pg_server: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    name = pg_server.fresh_database(template="template1")
    url = pg_server.url(name)
    try:
        code, _, err = cli(capsys, "--db", url, "stats")
        assert code == 2 and "--create" in err
        code, out, _ = cli(capsys, "--db", url, "--create", "stats", "--json")
        assert code == 0 and json.loads(out)["episodes"]["total"] == 0
        assert json.loads(out)["database"] == url
    finally:
        pg_server.drop(name)
    name = pg_server.fresh_database(template="template1")
    url = pg_server.url(name)
    try:
        pg_server.admin_in(name, "CREATE TABLE invoices (id int)")
        code, _, err = cli(capsys, "--db", url, "--create", "stats")
        assert code == 2 and "not a Memory Curator database" in err and "invoices" in err
        assert pg_server.tables(name) == ["invoices"]  # untouched
    finally:
        pg_server.drop(name)


# -- the commands -------------------------------------------------------------------------


def _sessions(n: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"session-{i}",
            "timestamp": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:00:00",
            "source": "chat",
            "text": f"Session {i}: the agent retried the billing API {i % 7} times",
        }
        for i in range(n)
    ]


def test_import_stats_export_and_search_through_the_command_line(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "sessions.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in _sessions(40)), "utf-8")
    code, out, err = cli(capsys, "--db", pg_url, "import", str(source), "--json")
    assert code == 0, err
    assert json.loads(out)["imported"] == 40
    code, out, _ = cli(capsys, "--db", pg_url, "import", str(source), "--json")
    assert code == 0 and json.loads(out)["imported"] == 0  # the same episodes once
    code, out, _ = cli(capsys, "--db", pg_url, "stats", "--json")
    assert code == 0 and json.loads(out)["episodes"]["total"] == 40
    code, out, _ = cli(capsys, "--db", pg_url, "export", "--format", "json")
    assert code == 0 and json.loads(out) is not None
    store = Store(pg_url)
    try:
        found = query_ids(store, EpisodeFilter(text="API 3 TIMES"), EpisodeSort())
        assert len(found) == 6  # sessions 3, 10, 17, 24, 31, 38
    finally:
        store.close()


@pytest.mark.parametrize("verb", ["compact"])
def test_file_commands_point_to_pg_dump(
    pg_url: str, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "--db", pg_url, verb)
    assert code == 2 and "pg_dump" in err and err.count("\n") == 1


# -- search: the same episodes as SQLite's full-text path ---------------------------------

ALPHABET = (
    "abcXYZ  .,;:!?-'\"()[]{}%_\\/*^$#@~`|<>="
    "\u00e9\u00c9\u00df\u1e9e\u03a3\u03c3\u03c2\u0130\u0131i\u00c5\u212b"
    "\u4e2d\u6587\U0001f600\u0301\t\n"
)


def _insert(store: Store, texts: list[str]) -> None:
    with store.write():
        for k, text in enumerate(texts):
            store.execute(
                "INSERT INTO episode (content_hash, text, timestamp, source, metadata,"
                " imported_at, classify_truncated) VALUES (?, ?, ?, ?, '{}', ?, 0)",
                (
                    f"h{k}",
                    text,
                    f"2026-01-{1 + k % 28:02d}T00:00:{k % 60:02d}.{k:06d}+00:00",
                    f"s{k % 3}",
                    "2026-01-01",
                ),
            )


SORTS = [EpisodeSort(), EpisodeSort("source", False), EpisodeSort("preview", True)]


@pytest.fixture(scope="module")
def twin_stores(
    pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, Store, list[str]]]:
    """The same episodes in a SQLite file and a PostgreSQL database."""
    rng = random.Random(11)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))) for _ in range(400)]
    texts += ["50% off", "50_ off", "500 off", "snake_case", "snakeXcase", "a\\b%c", "ÉCOLE école"]
    name = pg_server.fresh_database()
    sqlite = Store(tmp_path_factory.mktemp("twin") / "twin.sqlite")
    postgres = Store(pg_server.url(name))
    _insert(sqlite, texts)
    _insert(postgres, texts)
    yield sqlite, postgres, texts
    sqlite.close()
    postgres.close()
    pg_server.drop(name)


def _same(sqlite: Store, postgres: Store, flt: EpisodeFilter) -> list[int]:
    for sort in SORTS:
        expected = query_ids(sqlite, flt, sort)
        assert query_ids(postgres, flt, sort) == expected, (flt, sort)
        assert query_first_ids(postgres, flt, sort, 20) == expected[:20], (flt, sort)
    ranked = query_ids(postgres, flt, EpisodeSort(RELEVANCE))
    assert sorted(ranked) == sorted(query_ids(sqlite, flt, EpisodeSort(RELEVANCE)))
    return expected


def test_search_returns_the_same_episodes_on_both_engines(
    twin_stores: tuple[Store, Store, list[str]],
) -> None:
    sqlite, postgres, texts = twin_stores
    rng = random.Random(5)
    queries = random_queries(rng, texts, 150, min_size=1)
    queries += ["50%", "0_ ", "e_c", "\\b%", "%%%", "___", "ÉCO", "éco", "Éco", "ss\u00df"]
    queries += ['"a"', 'a" OR "b', "NEAR(a b)", "abc*", "x:y", "()", "\u03c3\u03c3\u03c3", "?"]
    hits = 0
    for query in queries:
        hits += bool(_same(sqlite, postgres, EpisodeFilter(text=query)))
    assert hits > 100  # the comparison is not vacuous
    assert len(query_ids(postgres, EpisodeFilter(text="éco"), EpisodeSort())) == 1  # not "É"
    _same(sqlite, postgres, EpisodeFilter(text="off", source="s1"))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.text(alphabet=ALPHABET, min_size=1, max_size=6), source=st.sampled_from([None, "s0"])
)
@example(query="%", source=None)
@example(query="É", source=None)
@example(query="\\", source="s0")
@example(query="a\x00", source=None)
@example(query="\x00%", source="s0")
@example(query="\U0001f600_\x00", source=None)
def test_any_query_finds_the_same_episodes_on_both_engines(
    twin_stores: tuple[Store, Store, list[str]], query: str, source: str | None
) -> None:
    sqlite, postgres, _ = twin_stores
    _same(sqlite, postgres, EpisodeFilter(text=query, source=source))


def test_the_demo_data_is_searched_alike(pg_url: str, tmp_path: Path) -> None:
    sqlite = Store(tmp_path / "demo.sqlite")
    create_demo(sqlite)
    postgres = Store(pg_url)  # the models are bound to the store opened last
    try:
        create_demo(postgres)
        texts = [str(r[0]) for r in sqlite.execute("SELECT text FROM episode")]
        for query in [
            *random_queries(random.Random(3), texts, 60, min_size=1),
            "the",
            "THE",
            "api",
            "zzzq",
        ]:
            _same(sqlite, postgres, EpisodeFilter(text=query))
    finally:
        sqlite.close()
        postgres.close()


def test_a_text_search_reads_the_trigram_index_not_the_whole_table(pg_store: Store) -> None:
    """The search's own condition (ILIKE on the "C"-collated column) is one the trigram
    index serves: with sequential scans priced out, the plan reads the index. (At a few
    thousand rows the planner rightly prefers reading the table; the benchmark measures
    the sizes where it matters.)"""
    rng = random.Random(2)
    words = ["billing", "retry", "deploy", "standup", "invoice", "backoff", "schema"]
    _insert(pg_store, [" ".join(rng.choices(words, k=12)) + f" n{i}" for i in range(3000)])
    pg_store.execute("ANALYZE episode")
    pg_store.execute("SET enable_seqscan = off")
    where, params = where_clause(EpisodeFilter(text="N1234"), dialect=pg_store.dialect)
    plan = "\n".join(
        str(r[0]) for r in pg_store.execute(f"EXPLAIN SELECT id FROM episode WHERE {where}", params)
    )
    assert "episode_text_trgm" in plan and "Seq Scan" not in plan, plan


# -- writes: atomic, exactly undone, serialised -------------------------------------------


def _staged(store: Store, n: int) -> int:
    from review.conftest import make_pattern, make_staged_run

    target = make_pattern(store, "Retry network calls to the billing API with backoff.", 0.3)
    specs: list[dict[str, Any]] = [
        {"text": f"Release note rule {i}: name the change and its reason.", "action": "ADD"}
        for i in range(n)
    ]
    specs.append({"text": "Retry billing calls with a jittered backoff.", "action": "UPDATE",
                  "target": target})  # fmt: skip
    run = make_staged_run(store, specs)
    review.accept_all(store, run.id)
    return int(run.id)


def test_a_failure_in_the_middle_of_a_commit_applies_nothing(pg_store: Store) -> None:
    """Fault injection on the real server: a trigger fails the 30th new pattern, half way
    through the commit's one transaction. Nothing of it stays; without the fault the same
    commit applies, and its undo puts back exactly the state before it."""
    run_id = _staged(pg_store, 40)
    pg_store.execute(
        "CREATE FUNCTION fail_30th() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF (SELECT count(*) FROM pattern) >= 30 THEN RAISE EXCEPTION 'injected fault'; "
        "END IF; RETURN NEW; END $$"
    )
    pg_store.execute(
        "CREATE TRIGGER fail_30th BEFORE INSERT ON pattern "
        "FOR EACH ROW EXECUTE FUNCTION fail_30th()"
    )
    before = logical_dump(pg_store)
    with pytest.raises(CuratorError) as failed:
        commit.commit_run(pg_store, run_id)
    assert "injected fault" in str(failed.value) and "\n" not in str(failed.value)
    assert logical_dump(pg_store) == before
    pg_store.execute("DROP TRIGGER fail_30th ON pattern")
    summary = commit.commit_run(pg_store, run_id)
    assert summary.counts["ADD"] == 40 and Pattern.select().count() == 41
    commit.undo_changeset(pg_store, summary.id)
    assert logical_dump(pg_store) == before


@pytest.mark.llm
def test_classify_with_the_demo_model(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "--db", pg_url, "demo")
    assert code == 0, err
    code, out, err = cli(capsys, "--db", pg_url, "classify", "--limit", "1", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["counts"]["classified"] == 1
    store = Store(pg_url)
    try:
        labelled = store.execute("SELECT count(*) FROM episode WHERE model_label IS NOT NULL")
        assert labelled == [(1,)]
    finally:
        store.close()


def test_the_window_refuses_a_password_in_db_before_qt_loads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = cli(capsys, "--db", "postgresql://ana:secret@127.0.0.1:9/memory")
    assert code == 2 and "password in the --db URL" in err and "secret" not in err
    assert err.count("\n") == 1


def test_settings_are_saved_and_read_back(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "--db", pg_url, "settings", "min_chars=120", "max_output_tokens=64")
    assert code == 0, err
    code, out, _ = cli(capsys, "--db", pg_url, "settings", "--json")
    shown = json.loads(out)
    assert code == 0 and "120" in json.dumps(shown) and "64" in json.dumps(shown)
    code, _, err = cli(capsys, "--db", pg_url, "settings", "min_chars=lots")
    assert code == 2 and err.count("\n") == 1


def test_a_connection_dropped_in_the_middle_of_a_commit_applies_nothing(
    pg_url: str,
) -> None:
    """Fault injection on the real server: the 10th new pattern's trigger terminates the
    committing connection itself (as a server restart or a network cut would end it).
    The server rolls the commit back; a new connection sees the database as before, and
    the same commit then applies."""
    store = Store(pg_url)
    run_id = _staged(store, 20)
    store.execute(
        "CREATE FUNCTION cut_10th() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF (SELECT count(*) FROM pattern) >= 10 THEN "
        "PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$"
    )
    store.execute(
        "CREATE TRIGGER cut_10th BEFORE INSERT ON pattern FOR EACH ROW EXECUTE FUNCTION cut_10th()"
    )
    before = logical_dump(store)
    with pytest.raises(CuratorError) as failed:
        commit.commit_run(store, run_id)
    assert "\n" not in str(failed.value) and "nothing changed" in str(failed.value)
    store.close()
    store = Store(pg_url)
    try:
        assert logical_dump(store) == before
        store.execute("DROP TRIGGER cut_10th ON pattern")
        assert commit.commit_run(store, run_id).counts["ADD"] == 20
    finally:
        store.close()


def test_insights_of_the_demo_data_are_the_same_on_both_engines(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = []
    for db in (str(tmp_path / "demo.sqlite"), pg_url):
        assert cli(capsys, "--db", db, "--create", "demo")[0] == 0
        code, out, err = cli(capsys, "--db", db, "insights", "--json")
        assert code == 0, err
        document = json.loads(out)
        assert document.pop("forecast")  # decay at each call's own clock reading
        documents.append(document)
    assert documents[0] == documents[1]

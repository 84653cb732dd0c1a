"""PostgreSQL: odd URLs and odd queries, each a case the engine's first tests left out."""

from __future__ import annotations

import json
import os
from contextlib import redirect_stderr, redirect_stdout, suppress
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pg_server import PostgresServer

from curator.cli import main
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.db_choice import resolve_db_path
from curator.store.db_errors import DATABASE_ERRORS
from curator.store.episode_queries import EpisodeFilter, EpisodeSort, query_ids
from curator.store.pg_url import display_url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://ana:se%zzcret@127.0.0.1:9/memory",
        "postgresql://ana@127.0.0.1:9/memory?password=se%zzcret",
        "postgresql://ana:secret%@127.0.0.1:9/memory",
    ],
)
def test_a_bad_percent_escape_never_echoes_the_password(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CURATOR_DB", url)
    code = main(["stats"])
    out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and err.startswith("curator: error: ")
    assert "cret" not in err + out and "%25" in err


def test_a_nul_in_a_search_is_found_alike(pg_url: str, tmp_path: Path) -> None:
    """PostgreSQL's text holds no NUL: a query with one finds nothing, as on SQLite."""
    for location in (tmp_path / "a.sqlite", pg_url):
        store = Store(location)
        try:
            assert query_ids(store, EpisodeFilter(text="a\x00b"), EpisodeSort()) == []
        finally:
            store.close()


@settings(max_examples=60, deadline=None)
@given(
    secret=st.text(alphabet="abcdefCF0189%é-_.~ ", min_size=6, max_size=16).filter(
        lambda s: "%" in s and s.count("%") < len(s) - 3
    ),
    in_query=st.booleans(),
)
@example(secret="hunter%", in_query=False)
@example(secret="pw%zzpw", in_query=True)
@example(secret="000%00", in_query=False)
@example(secret="%90000", in_query=False)
@example(secret="0%01 0", in_query=False)
def test_no_malformed_url_shows_its_password(secret: str, in_query: bool) -> None:
    """Whatever escapes or spaces a password holds, the one-line refusal or failed
    connection never quotes it (libpq's own messages quote the offending token).
    The environment is set by hand: a function-scoped monkeypatch would not reset
    between Hypothesis examples."""
    url = (
        f"postgresql://ana@127.0.0.1:9/memory?password={secret}"
        if in_query
        else f"postgresql://ana:{secret}@127.0.0.1:9/memory"
    )
    before = os.environ.get("CURATOR_DB")
    os.environ["CURATOR_DB"] = url
    try:
        out, err = StringIO(), StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["stats"])
    finally:
        if before is None:
            del os.environ["CURATOR_DB"]
        else:
            os.environ["CURATOR_DB"] = before
    shown = out.getvalue() + err.getvalue()
    assert code == 2 and shown.count("\n") == 1
    assert secret not in shown


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_record_and_record_many_give_the_same_answers_on_both_engines(
    engine: str, pg_url: str, tmp_path: Path
) -> None:
    """The agent's write path (the MCP server's): new ids, duplicates within one group and
    across groups, and a refused item beside good ones, alike on both engines."""
    from curator.api import Curator

    curator = Curator(tmp_path / "r.sqlite" if engine == "sqlite" else pg_url, create=True)
    try:
        first = curator.record(text="one")
        assert first["created"] and first["episode_id"] >= 1
        answers = curator.record_many(
            [{"text": "two"}, {"text": "one"}, {"text": "bad\x00"}, {"text": "two"}]
        )
        assert not isinstance(answers[0], CuratorError) and answers[0]["created"]
        assert answers[1] == {**first, "created": False}
        assert isinstance(answers[2], CuratorError) and "NUL" in str(answers[2])
        assert answers[3] == {**answers[0], "created": False}
        ids = [r[0] for r in curator.store.execute("SELECT id FROM episode ORDER BY id")]
        assert ids == [first["episode_id"], answers[0]["episode_id"]]
    finally:
        curator.close()


def test_a_store_outlives_a_dropped_connection(pg_server: PostgresServer, pg_url: str) -> None:
    """A long-lived store (the MCP server's, a follow's) whose connection the server ended
    (a restart, an administrator's pg_terminate_backend, a network cut) connects again
    for its next statement instead of failing every call until it is restarted."""
    from curator.api import Curator

    curator = Curator(pg_url)
    try:
        assert curator.record(text="before the cut")["created"]
        pid = int(curator.store.execute("SELECT pg_backend_pid()")[0][0])
        pg_server.admin(f"SELECT pg_terminate_backend({pid})")
        for attempt in range(2):
            try:
                curator.record(text=f"after the cut {attempt}")
            except (*DATABASE_ERRORS, CuratorError) as exc:
                assert attempt == 0 and "\n" not in str(exc)  # the call that met the cut
        assert curator.record(text="after the cut 2")["created"]
        texts = [r[0] for r in curator.store.execute("SELECT text FROM episode ORDER BY id")]
        assert texts[0] == "before the cut" and texts[-1] == "after the cut 2"
    finally:
        curator.close()


def test_writers_recording_the_same_episodes_at_once_store_each_once(pg_url: str) -> None:
    """Four processes' worth of writers (each its own connection) record the same texts at
    the same moment: the write lock makes every duplicate check see the others' commits, so
    each text is stored once and every writer gets its id."""
    import threading

    from curator.api import Curator

    texts = [f"shared episode {k}" for k in range(40)]
    seen: list[dict[str, int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(order: list[str]) -> None:
        curator = Curator(pg_url)
        try:
            start.wait()
            ids: dict[str, int] = {}
            for k in range(0, len(order), 5):
                answers = curator.record_many([{"text": t} for t in order[k : k + 5]])
                for text, answer in zip(order[k : k + 5], answers, strict=True):
                    assert not isinstance(answer, CuratorError)
                    ids[text] = answer["episode_id"]
            seen.append(ids)
        except BaseException as exc:
            errors.append(exc)
        finally:
            curator.close()

    threads = [
        threading.Thread(target=writer, args=(texts[::step] + texts,)) for step in (1, -1, 2, 3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert all(ids == seen[0] for ids in seen) and len(seen) == 4
    check = Store(pg_url)
    try:
        assert check.execute("SELECT count(*) FROM episode")[0][0] == len(texts)
    finally:
        check.close()


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("postgresql:///memory", "postgresql:///memory"),
        ("postgres:///memory?host=/run/postgresql", "postgresql:///memory?host=/run/postgresql"),
        ("POSTGRES://ana@db/memory", "postgresql://ana@db/memory"),
        ("postgresql://ana@h1:5433,h2/memory", "postgresql://ana@h1:5433,h2/memory"),
        ("postgresql://ana@[::1]:5433/memory", "postgresql://ana@[::1]:5433/memory"),
    ],
)
def test_local_socket_and_multi_host_urls_are_kept_as_libpq_reads_them(
    given: str, canonical: str
) -> None:
    """Only the scheme is made canonical: an empty host (the local socket) keeps its
    ``//`` and a list of hosts is libpq's to read, not a port that is no number."""
    assert resolve_db_path(given) == canonical


@settings(max_examples=60, deadline=None)
@given(
    scheme=st.sampled_from(["postgresql", "postgres", "PostgreSQL"]),
    netloc=st.sampled_from(["", "ana@", "ana@db", "db:5432", "[::1]", "h1,h2:6432", "анна@db"]),
    path=st.text(alphabet="abc_-.", min_size=1, max_size=8),
    query=st.sampled_from(["", "?sslmode=require", "?host=/run/pg&port=6432", "?service=x"]),
)
def test_a_canonical_url_differs_only_in_its_scheme(
    scheme: str, netloc: str, path: str, query: str
) -> None:
    rest = f"://{netloc}/{path}{query}"
    assert resolve_db_path(scheme + rest) == "postgresql" + rest
    assert display_url("postgresql" + rest) == "postgresql" + rest  # nothing to hide


def test_a_commit_after_a_swallowed_cut_is_never_sent_to_a_new_connection(pg_url: str) -> None:
    """Fault injection on the real server: a write transaction's connection is cut, and
    the code inside the transaction swallows that statement's error. The COMMIT must fail
    (the transaction's writes died with the connection), never succeed on a fresh one."""
    store = Store(pg_url)
    try:
        with pytest.raises(DATABASE_ERRORS), store.write():
            store.execute("INSERT INTO setting (key, value) VALUES ('cut_probe', 'x')")
            with suppress(*DATABASE_ERRORS):
                store.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        assert store.execute("SELECT count(*) FROM setting WHERE key = 'cut_probe'")[0][0] == 0
    finally:
        store.close()


def test_watch_once_follows_a_log_on_postgresql(
    pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The follow's positions are kept on the server too: a second run reads only the
    line appended since the first."""
    log = tmp_path / "agent.jsonl"
    log.write_text("".join(json.dumps({"text": f"line {k}"}) + "\n" for k in range(5)), "utf-8")
    for appended, expected in ((0, 5), (1, 1)):
        if appended:
            with log.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"text": "line 5"}) + "\n")
        code = main(["--db", pg_url, "watch", str(log), "--once", "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert json.loads(out)["imported"] == expected

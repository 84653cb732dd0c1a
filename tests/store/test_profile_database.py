"""The database saved in the profile: what is kept, what is refused, where it ranks.

The profile's database comes after ``--db`` and ``$CURATOR_DB`` and before the default;
the command line honours it as the window does, and names it when it is missing.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.db_choice import (
    db_path_source,
    default_db_path,
    missing_database_message,
    resolve_db_path,
)
from curator.store.demo import create_demo
from curator.store.pg_url import PASSWORD_FIX
from curator.store.profile import (
    check_database,
    check_reviewer,
    profile_path,
    save_database,
    save_reviewer,
    saved_database,
    saved_reviewer,
)


def _profile_doc() -> object:
    return json.loads(profile_path().read_text(encoding="utf-8"))


@settings(deadline=None, max_examples=150)
@given(st.text(max_size=60))
@example("postgresql://ana:hunter2@db.example/memory")
@example("postgresql://ana@db.example/memory?password=hunter2")
@example("postgres://ana@db.example:5432/memory?sslmode=verify-full&sslrootcert=/x/root.crt")
@example("~/memory.sqlite")
@example("/a /")
@example("/a/\t")
@example("\ud800.sqlite")
@example("a\x00b")
@example(".")
@example("   ")
def test_a_save_keeps_exactly_what_is_valid_and_never_half_a_file(value: str) -> None:
    save_reviewer("Ana")  # another entry of the profile, which every save keeps
    save_database("/kept/before.sqlite")
    before = profile_path().read_bytes()
    try:
        expected = check_database(value)
    except CuratorError:
        with pytest.raises(CuratorError):
            save_database(value)
        assert profile_path().read_bytes() == before  # refused: nothing written
    else:
        assert save_database(value) == expected
        assert saved_database() == expected  # what was saved is what loads
        assert check_database(expected or "") == expected  # and it stays valid
        assert isinstance(_profile_doc(), dict)  # a whole JSON document
    assert saved_reviewer() == "Ana"
    assert [p.name for p in profile_path().parent.iterdir()] == ["profile.json"]


def test_a_password_is_refused_with_the_private_ways_and_tls_parameters_kept() -> None:
    for url in (
        "postgresql://ana:hunter2@db.example/memory",
        "postgresql://ana@db.example/memory?password=hunter2",
    ):
        with pytest.raises(CuratorError) as refused:
            save_database(url)
        assert PASSWORD_FIX in str(refused.value) and "hunter2" not in str(refused.value)
        assert "profile" in str(refused.value) and "\n" not in str(refused.value)
    assert not profile_path().exists()
    url = "postgres://ana@db.example:5433/memory?sslmode=verify-full&sslrootcert=/etc/r.crt"
    assert save_database(url) == "postgresql" + url.removeprefix("postgres")
    assert saved_database() == "postgresql" + url.removeprefix("postgres")


def test_a_file_is_kept_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert save_database("  sub/memory.sqlite ") == str(tmp_path / "sub" / "memory.sqlite")
    with pytest.raises(CuratorError, match="is a folder"):
        save_database(str(tmp_path))
    assert save_database("") is None and saved_database() is None
    assert "database" not in _profile_doc()  # type: ignore[operator]


def test_a_failed_write_leaves_the_previous_profile_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fault injection: the rename into place fails (a full disk, a vanished folder)."""
    save_database("/first.sqlite")
    before = profile_path().read_bytes()

    def refuse(self: Path, target: object) -> Path:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(Path, "replace", refuse)
        with pytest.raises(CuratorError, match="could not be written"):
            save_database("/second.sqlite")
    assert profile_path().read_bytes() == before
    assert [p.name for p in profile_path().parent.iterdir()] == ["profile.json"]


def test_resolve_order_is_db_then_environment_then_profile_then_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_db_path(None) == default_db_path() and db_path_source(None) == "default"
    save_database(str(tmp_path / "profile.sqlite"))
    assert resolve_db_path(None) == tmp_path / "profile.sqlite"
    assert db_path_source(None) == "the profile"
    monkeypatch.setenv("CURATOR_DB", str(tmp_path / "env.sqlite"))
    assert resolve_db_path(None) == tmp_path / "env.sqlite"
    assert db_path_source(None) == "$CURATOR_DB"
    assert resolve_db_path(str(tmp_path / "cli.sqlite")) == tmp_path / "cli.sqlite"
    assert db_path_source(str(tmp_path / "cli.sqlite")) == "--db"
    monkeypatch.delenv("CURATOR_DB")
    save_database("postgresql://ana@db.example/memory")
    assert resolve_db_path(None) == "postgresql://ana@db.example/memory"


def test_a_broken_profile_is_an_error_not_another_database() -> None:
    profile_path().parent.mkdir(parents=True)
    profile_path().write_text('{"database": "postgresql://ana:pw@h/db"}', encoding="utf-8")
    with pytest.raises(CuratorError, match="saved in the profile") as refused:
        resolve_db_path(None)
    assert "pw@" not in str(refused.value)
    profile_path().write_text("{not json", encoding="utf-8")
    with pytest.raises(CuratorError, match="not a JSON object"):
        resolve_db_path(None)
    assert saved_reviewer() is None  # the reviewer's name still falls back quietly
    os.remove(profile_path())
    assert resolve_db_path(None) == default_db_path()


def test_the_commands_open_the_profiles_database_and_name_it_when_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = tmp_path / "chosen.sqlite"
    with Store(chosen) as store:
        create_demo(store)
        episodes = store.execute("SELECT COUNT(*) FROM episode")[0][0]
    save_database(str(chosen))
    assert main(["stats", "--json"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["episodes"]["total"] == episodes
    gone = tmp_path / "gone" / "curator.sqlite"
    save_database(str(gone))
    assert main(["export", "--top", "5"]) == 2
    _, err = capsys.readouterr()
    assert missing_database_message(gone, "the profile") in err
    assert "(named by the profile" in err and not gone.parent.exists()


def test_the_window_command_is_told_what_chose_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line resolves the database before it opens the window, and passes on
    what chose it, which Settings ▸ Database shows."""
    import argparse

    from curator.cli.common import CommandContext

    def source(db: str | None) -> str:
        return CommandContext(argparse.Namespace(db=db)).db_source

    assert source(None) == "default"
    save_database(str(tmp_path / "chosen.sqlite"))
    assert source(None) == "the profile"
    assert source(str(tmp_path / "other.sqlite")) == "--db"
    monkeypatch.setenv("CURATOR_DB", str(tmp_path / "env.sqlite"))
    assert source(None) == "$CURATOR_DB"


@settings(deadline=None, max_examples=40)
@given(st.from_regex(r"[a-z][a-z0-9_./-]{0,30}", fullmatch=True).filter(lambda s: "//" not in s))
@example("rel/x.db")
@example("./curator.sqlite")
@example("../up.sqlite")
def test_a_relative_path_written_into_the_profile_is_refused(relative: str) -> None:
    """Settings saves absolute paths; a hand-written relative one would open another file
    in every folder a command starts from, so it is refused, naming the profile."""
    profile_path().parent.mkdir(parents=True, exist_ok=True)
    profile_path().write_text(json.dumps({"database": relative}), encoding="utf-8")
    with pytest.raises(CuratorError, match="relative path") as refused:
        saved_database()
    assert "saved in the profile" in str(refused.value)
    absolute = os.path.abspath(os.path.expanduser("~/" + relative))
    if not os.path.isdir(absolute):  # a folder is refused for its own reason
        profile_path().write_text(json.dumps({"database": "~/" + relative}), encoding="utf-8")
        assert saved_database() == absolute


# -- a profile that is not one, and two saves at once ------------------------------------


def _fifo() -> None:
    os.mkfifo(profile_path())


def _nested() -> None:
    profile_path().write_text("[" * 100_000, encoding="utf-8")


def _damaged() -> None:
    profile_path().write_text('{"database": "/a/b.sqlite", "reviewer": "ana",}', "utf-8")


def _huge() -> None:
    profile_path().write_text('{"x": "' + "y" * (2 << 20) + '"}', encoding="utf-8")


@pytest.mark.parametrize("make", [_fifo, _nested, _damaged, _huge])
def test_a_profile_that_is_not_one_is_said_at_once_and_never_replaced(make: Any) -> None:
    """A named pipe is never waited on, nesting never ends in a RecursionError, and a save
    never writes over what a damaged profile held (the database chosen in it)."""
    profile_path().parent.mkdir(parents=True)
    make()
    kind = os.stat(profile_path()).st_mode
    before = None if stat.S_ISFIFO(kind) else profile_path().read_bytes()
    with pytest.raises(CuratorError) as refused:
        saved_database()
    assert "\n" not in str(refused.value) and "--db" in str(refused.value)
    assert saved_reviewer() is None  # a decision still gets the next rule's name
    for save in (lambda: save_reviewer("Ana"), lambda: save_database("/tmp/x.sqlite")):
        with pytest.raises(CuratorError, match="nothing was saved"):
            save()
    if before is not None:
        assert profile_path().read_bytes() == before


def test_two_processes_saving_at_once_lose_neither_save(tmp_path: Path) -> None:
    """Each save reads, changes and writes the profile under a lock: one process's
    reviewer and another's database, 60 saves each, both last ones kept."""
    script = (
        "import sys\n"
        "from curator.store.profile import save_database, save_reviewer\n"
        "for n in range(60):\n"
        "    if sys.argv[1] == 'reviewer':\n"
        "        save_reviewer(f'ana-{n}')\n"
        "    else:\n"
        "        save_database(sys.argv[2] + f'/db-{n}.sqlite')\n"
    )
    saves = [
        subprocess.Popen([sys.executable, "-c", script, kind, str(tmp_path)])
        for kind in ("reviewer", "database")
    ]
    assert [p.wait(timeout=120) for p in saves] == [0, 0]
    assert _profile_doc() == {"reviewer": "ana-59", "database": str(tmp_path / "db-59.sqlite")}


@pytest.mark.parametrize(
    "name", ["\u202eanA", "ana\u2028bob", "ana\u200bbob", "\ufeffana", "ana\tbob", "ana\udcffbob"]
)
def test_a_reviewer_name_of_characters_that_do_not_print_is_refused(name: str) -> None:
    with pytest.raises(CuratorError, match=r"not a printable character|a lone surrogate"):
        check_reviewer(name)
    with pytest.raises(CuratorError):
        save_reviewer(name)


@pytest.mark.parametrize("name", ["\u0301\u0301", "\u3164", "\u2800", " \u3164\u0301 "])
def test_a_reviewer_name_that_shows_nothing_is_refused(name: str) -> None:
    with pytest.raises(CuratorError, match="shows nothing"):
        check_reviewer(name)


def test_a_save_waits_for_another_programs_lock_a_bounded_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another program holding the profile's lock: the save says so after the wait
    (here shortened), never hangs, and writes nothing."""
    import fcntl

    from curator.store import profile

    save_reviewer("Ana")
    before = profile_path().read_bytes()
    monkeypatch.setattr(profile, "LOCK_WAIT_S", 0.3)
    holder = os.open(profile_path().parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(CuratorError, match="another program has held the profile"):
            save_reviewer("Bob")
    finally:
        os.close(holder)
    assert profile_path().read_bytes() == before
    save_reviewer("Bob")
    assert saved_reviewer() == "Bob"

"""The follow logic on real files and a real database: every complete line once."""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.follow import CHUNK_BYTES, Follower
from curator.store.follow_state import key_of, path_of, positions
from tests.watch.conftest import append, line, texts

BOTH_ENGINES = True  # each store test on a SQLite file and a PostgreSQL database
SQLITE_ONLY = {
    # 20 MB in chunks, each committed: over two minutes on PostgreSQL on two busy cores
    "test_a_20_mb_log_is_read_in_chunks_each_committed",
}


def follow(store: Store, *paths: Path) -> tuple[Follower, list[str]]:
    said: list[str] = []
    return Follower(store, list(paths), said.append), said


def test_a_line_written_in_two_halves_is_imported_once_complete(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    whole = line("héllo wörld")
    log.write_bytes(line("first") + whole[:7])
    follower, _ = follow(store, log)
    assert follower.poll() == 1
    assert texts(store) == {"first": 1}
    append(log, whole[7:])
    assert follower.poll() == 1
    assert texts(store) == {"first": 1, "héllo wörld": 1}


def test_a_restart_resumes_from_the_committed_position(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a") + line("b"))
    follow(store, log)[0].poll()
    append(log, line("c"))
    fresh, _ = follow(store, log)  # a new process: only the database remembers
    assert fresh.poll() == 1
    assert fresh.totals.duplicates == 0  # it did not read a and b again
    assert list(positions(store)) == [(str(log), log.stat().st_size, 3)]


def test_rotation_by_rename_reads_the_old_files_tail_then_the_new_file(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1") + line("2"))
    follower, said = follow(store, log)
    follower.poll()
    append(log, line("3"))  # written after the last poll, just before the rotation
    log.rename(tmp_path / "agent.jsonl.1")
    log.write_bytes(line("4"))
    assert follower.poll() == 2
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert follower.totals.duplicates == 0
    assert any("rotated" in s for s in said)
    append(log, line("5"))
    assert follower.poll() == 1


def test_copytruncate_reads_the_copys_tail_then_the_truncated_file(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1") + line("2"))
    follower, said = follow(store, log)
    follower.poll()
    append(log, line("3"))
    shutil.copyfile(log, tmp_path / "agent.jsonl.1")
    with open(log, "r+b") as handle:
        handle.truncate(0)
    append(log, line("4"))
    assert follower.poll() == 2
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}
    assert any("truncated" in s for s in said)


def test_truncation_without_a_copy_starts_again_and_says_so(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("old 1") + line("old 2"))
    follower, said = follow(store, log)
    follower.poll()
    log.write_bytes(line("new"))  # shorter than what was read: offset beyond the size
    assert follower.poll() == 1
    assert texts(store) == {"old 1": 1, "old 2": 1, "new": 1}
    assert any("truncated" in s and "again from its start" in s for s in said)


def test_a_rewrite_as_long_as_before_is_told_by_its_head(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("aaaa"))
    follower, _ = follow(store, log)
    follower.poll()
    log.write_bytes(line("bbbb") + line("c"))  # same inode, larger, other content
    assert follower.poll() == 2
    assert texts(store) == {"aaaa": 1, "bbbb": 1, "c": 1}


def test_a_file_that_disappears_and_comes_back(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("before"))
    follower, said = follow(store, log)
    follower.poll()
    log.unlink()
    assert follower.poll() == 0
    assert follower.poll() == 0
    assert sum("not there" in s for s in said) == 1  # said once, not every poll
    log.write_bytes(line("after"))
    assert follower.poll() == 1
    assert texts(store) == {"before": 1, "after": 1}
    assert any("there again" in s for s in said)


def test_a_path_that_does_not_exist_yet_is_followed_when_it_appears(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "later.jsonl"
    follower, said = follow(store, log)
    assert follower.poll() == 0 and "not there" in said[0]
    log.write_bytes(line("x"))
    assert follower.poll() == 1


def test_new_files_in_a_watched_folder_are_followed(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(line("a"))
    (folder / "notes.txt").write_bytes(line("not a log"))
    follower, _ = follow(store, folder)
    assert follower.poll() == 1
    (folder / "b.ndjson").write_bytes(line("b"))
    append(folder / "a.jsonl", line("a2"))
    assert follower.poll() == 2
    assert texts(store) == {"a": 1, "a2": 1, "b": 1}


def test_bad_lines_are_reported_with_file_and_line_and_the_follow_goes_on(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("ok") + b"{not json\n" + b'{"text": 5}\n')
    follower, said = follow(store, log)
    follower.poll()
    append(log, b"\xff\xfe\n" + line("still ok"))
    follower.poll()
    assert texts(store) == {"ok": 1, "still ok": 1}
    errors = [str(e) for e in follower.totals.errors]
    assert [e.split(": ")[0] for e in errors] == [f"{log}:2", f"{log}:3", f"{log}:4"]
    assert "invalid UTF-8" in errors[2] and errors[2] in said


def test_records_run_together_by_a_bare_cr_are_said_as_that(store: Store, tmp_path: Path) -> None:
    """A writer that ended two records with old Mac line ends before a newline: the line
    is refused as the importer refuses it, saying why, not with a JSON error."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("ok") + line("a")[:-1] + b"\r" + line("b") + line("after"))
    follower, _ = follow(store, log)
    follower.poll()
    assert texts(store) == {"ok": 1, "after": 1}
    (error,) = follower.totals.errors
    assert error.line == 2 and "bare carriage return" in error.reason


def test_a_line_longer_than_a_chunk_is_read_whole_and_judged(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    long = "x" * (CHUNK_BYTES + 10)
    log.write_bytes(line(long)[:-1])  # not complete yet
    follower, _ = follow(store, log)
    assert follower.poll() == 0
    append(log, b"\n" + line("after"))
    assert follower.poll() == 1  # over the episode size limit: rejected, by its number
    assert texts(store) == {"after": 1}
    assert [(e.line, "limit" in e.reason) for e in follower.totals.errors] == [(1, True)]


def test_a_20_mb_log_is_read_in_chunks_each_committed(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    count = 0
    with open(log, "wb") as handle:
        while handle.tell() < 20 * 1024 * 1024:
            handle.write(line(f"episode {count} " + "lorem ipsum " * 20))
            count += 1
    follower, _ = follow(store, log)
    assert follower.poll() == count
    assert sum(texts(store).values()) == count
    assert list(positions(store)) == [(str(log), os.path.getsize(log), count)]


_pieces = st.lists(
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=8),
    min_size=1,
    max_size=12,
)
"""Texts the importer accepts (it refuses control characters in an episode)."""


@settings(deadline=None, max_examples=30)
@given(words=_pieces, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=10))
# '{"text": "0 ' is 12 bytes: then é, €, 😀 (2, 3 and 4 bytes), each cut inside
@example(words=["é€😀"], cuts=[13, 15, 16, 18, 19, 20])
def test_any_split_of_the_appends_yields_each_complete_line_once(
    tmp_path_factory: pytest.TempPathFactory, words: list[str], cuts: list[int]
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    data = b"".join(line(f"{i} {w}") for i, w in enumerate(words))
    data += line("unfinished")[:-1]  # a tail that never ends
    bounds = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    log = folder / "agent.jsonl"
    log.write_bytes(b"")
    with Store(folder / "db.sqlite") as store:
        follower, _ = follow(store, log)
        for start, end in itertools.pairwise(bounds):
            append(log, data[start:end])
            follower.poll()
            if start % 2:  # a restart now and then: only the database remembers
                follower, _ = follow(store, log)
        assert texts(store) == {f"{i} {w}": 1 for i, w in enumerate(words)}
        assert follower.totals.errors == []


def test_a_rotation_inside_a_watched_folder_makes_no_second_episode(
    store: Store, tmp_path: Path
) -> None:
    """The rotated name matches the folder's pattern too: it is read as a new file, and
    its lines are recognised by their content, so each is still one episode."""
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "agent.jsonl"
    log.write_bytes(line("1") + line("2"))
    follower, _ = follow(store, folder)
    follower.poll()
    append(log, line("3"))
    log.rename(folder / "agent.1.jsonl")
    log.write_bytes(line("4"))
    follower.poll()
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_crlf_lines_and_blank_lines_keep_their_numbers(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a").replace(b"\n", b"\r\n") + b"\n   \n" + b"oops\r\n")
    follower, _ = follow(store, log)
    follower.poll()
    assert texts(store) == {"a": 1}
    assert [e.line for e in follower.totals.errors] == [4]


def test_a_read_only_database_refuses_the_follow_and_stays_unchanged(tmp_path: Path) -> None:
    from curator.store.opening import ReadOnlyError

    Store(tmp_path / "db.sqlite").close()
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("a"))
    with Store(tmp_path / "db.sqlite", read_only=True) as store:
        follower, _ = follow(store, log)
        with pytest.raises(ReadOnlyError):
            follower.poll()
    with Store(tmp_path / "db.sqlite") as store:
        assert texts(store) == {} and list(positions(store)) == []


@settings(deadline=None, max_examples=15)
@given(name=st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b))
@example(name=b"\xff")
def test_any_file_name_in_a_watched_folder_is_followed(
    tmp_path_factory: pytest.TempPathFactory, name: bytes
) -> None:
    """File names are bytes on POSIX: one that is not UTF-8 is still followed and its
    position kept (the database holds text, so the key is an escaped form of the name)."""
    folder = tmp_path_factory.mktemp("names")
    path = os.path.join(os.fsencode(folder), name + b".jsonl")
    with open(path, "wb") as handle:
        handle.write(line("named"))
    with Store(folder / "db.sqlite") as store:
        follower, _ = follow(store, Path(os.fsdecode(folder)))
        assert follower.poll() == 1
        with open(path, "ab") as handle:
            handle.write(line("again"))
        assert follow(store, Path(os.fsdecode(folder)))[0].poll() == 1
        assert texts(store) == {"named": 1, "again": 1}


NAME = st.binary(min_size=1, max_size=10).filter(lambda b: b"/" not in b and b"\0" not in b)


@settings(deadline=None, max_examples=300)
@given(first=NAME, second=NAME)
@example(first=b"a\xff", second=b"a\\xff")
@example(first=b"\xff", second=b"bytes:\xff")
def test_two_file_names_never_share_a_position(first: bytes, second: bytes) -> None:
    """A name that is not UTF-8 is kept escaped: the escape of one name is never another
    name, with its own backslashes or not."""
    if first == second:
        return
    paths = [os.fsdecode(b"/logs/" + name) for name in (first, second)]
    assert key_of(paths[0]) != key_of(paths[1])


def test_a_name_and_the_escape_of_another_are_followed_apart(store: Store, tmp_path: Path) -> None:
    folder = os.fsencode(tmp_path / "logs")
    os.mkdir(folder)
    for name, text in ((b"a\xff.jsonl", "raw"), (b"a\\xff.jsonl", "escaped")):
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(line(text))
    follower, said = follow(store, Path(os.fsdecode(folder)))
    assert follower.poll() == 2
    assert follower.poll() == 0 and said == []  # no "new file": each kept its own place
    assert len(list(positions(store))) == 2


@settings(deadline=None, max_examples=300)
@given(name=NAME)
@example(name=b"a\\xff\xff")
@example(name=b"bytes:\\\\")
def test_a_key_gives_back_its_path(name: bytes) -> None:
    """The window keeps the logs it follows by their keys and follows them again by the
    paths the keys give back: every file name, UTF-8 or not."""
    path = os.fsdecode(b"/logs/" + name)
    assert path_of(key_of(path)) == path

"""Rotations a follower meets in the field: through a link, with the agent writing on into
the renamed file, several between two looks, and files that stop being logs. Real files,
a real database; every complete line once."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.core.regular_file import open_regular
from curator.store import follow as follow_module
from curator.store.db import Store
from curator.store.follow import CHUNK_BYTES, HEAD_BYTES, MAX_LINE_BYTES, Follower
from tests.watch.conftest import append, line, texts


def follow(store: Store, *paths: Path) -> tuple[Follower, list[str]]:
    said: list[str] = []
    return Follower(store, list(paths), said.append), said


def _copytruncate(log: Path, copy: Path) -> None:
    shutil.copyfile(log, copy)
    with open(log, "r+b") as handle:
        handle.truncate(0)


def _rotate(log: Path, how: str) -> None:
    """logrotate's way: ``.N`` becomes ``.N+1``, then the log becomes ``.1`` (``rename``:
    a new empty log is created; ``copytruncate``: the log is copied, then emptied)."""
    for older in sorted(log.parent.glob(f"{log.name}.*"), key=lambda p: -int(p.suffix[1:])):
        older.rename(f"{log}.{int(older.suffix[1:]) + 1}")
    if how == "rename":
        log.rename(f"{log}.1")
        log.write_bytes(b"")
    else:
        _copytruncate(log, Path(f"{log}.1"))


@pytest.mark.parametrize("rotation", ["rename", "copytruncate"])
def test_a_log_named_through_a_link_is_rotated_in_its_targets_folder(
    store: Store, tmp_path: Path, rotation: str
) -> None:
    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    log = real / "agent.jsonl"
    log.write_bytes(line("1") + line("2"))
    (links / "agent.jsonl").symlink_to(log)
    follower, _ = follow(store, links / "agent.jsonl")
    follower.poll()
    append(log, line("3"))  # after the last look, just before the rotation
    if rotation == "rename":
        log.rename(real / "agent.jsonl.1")
        log.write_bytes(line("4"))
    else:
        _copytruncate(log, real / "agent.jsonl.1")
        append(log, line("4"))
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_lines_the_agent_writes_on_into_the_renamed_file_are_read(
    store: Store, tmp_path: Path
) -> None:
    """logrotate renames the log and creates a new one, then tells the agent to reopen
    it: until then the agent finishes its half line, and writes more, in the old file."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1"))
    agent = open(log, "ab")  # noqa: SIM115 - the agent's descriptor, kept across the rotation
    agent.write(line("2")[:9])
    agent.flush()
    follower, _ = follow(store, log)
    follower.poll()
    log.rename(tmp_path / "agent.jsonl.1")
    log.write_bytes(line("4"))
    follower.poll()
    agent.write(line("2")[9:] + line("3"))
    agent.close()
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}
    follower.close()


def test_a_log_rotated_away_into_another_folder_is_read_to_its_end(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1"))
    (tmp_path / "old").mkdir()
    follower, _ = follow(store, log)
    follower.poll()
    append(log, line("2"))
    log.rename(tmp_path / "old" / "agent.jsonl.1")  # logrotate's olddir
    log.write_bytes(line("3"))
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1}


@pytest.mark.parametrize("rotation", ["rename", "copytruncate"])
@pytest.mark.parametrize("restarted", [False, True])
def test_two_rotations_between_two_looks_lose_no_generation(
    store: Store, tmp_path: Path, rotation: str, restarted: bool
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1"))
    follower, _ = follow(store, log)
    follower.poll()
    for generation in ("2", "3"):
        append(log, line(generation))
        _rotate(log, rotation)
    append(log, line("4"))
    if restarted:
        follower, _ = follow(store, log)
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_a_named_pipe_put_where_the_log_was_is_said_once_and_never_waited_on(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1"))
    follower, said = follow(store, log)
    follower.poll()
    log.unlink()
    os.mkfifo(log)
    for _ in range(3):
        follower.poll()  # opened without waiting for a writer: returns at once
    assert [s for s in said if "not a regular file" in s] == [
        f"{log}: not a regular file; not followed"
    ]
    log.unlink()
    log.write_bytes(line("2"))
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1}


def test_a_link_loop_is_said_once(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "agent.jsonl"
    os.symlink(tmp_path / "other", log)
    os.symlink(log, tmp_path / "other")
    follower, said = follow(store, log)
    for _ in range(4):
        follower.poll()
    assert len(said) == 1 and "cannot read it" in said[0]


def test_a_line_over_the_limit_is_skipped_without_being_held(store: Store, tmp_path: Path) -> None:
    """A sparse file: 16 MiB and more of one line, then a good line. The long line is
    one FILE:LINE error; the follow goes on with the next line."""
    log = tmp_path / "agent.jsonl"
    with open(log, "wb") as handle:
        handle.truncate(MAX_LINE_BYTES + 1)
    follower, _ = follow(store, log)
    follower.poll()  # no newline yet: waits, having read it once
    assert texts(store) == {} and follower.totals.errors == []
    append(log, b"\n" + line("after"))
    follower.poll()
    assert texts(store) == {"after": 1}
    [error] = follower.totals.errors
    assert str(error) == (
        f"{log}:1: a line of {MAX_LINE_BYTES + 2:,} bytes, over the {MAX_LINE_BYTES:,} a "
        "line may have; skipped"
    )


class _CountingFile:
    """A file whose reads are counted (the bytes a look reads)."""

    def __init__(self, handle: BinaryIO, counted: list[int]) -> None:
        self._handle, self._counted = handle, counted

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self._counted.append(len(data))
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()


def test_a_long_line_still_unfinished_is_read_on_from_where_the_last_look_stopped(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each look reads what was written since the last one (the bytes it reads are
    counted), not the whole unfinished line again; the line, once complete, is judged."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(b'{"text": "' + b"x" * (3 * CHUNK_BYTES))
    follower, _ = follow(store, log)
    follower.poll()
    counted: list[int] = []
    monkeypatch.setattr(
        follow_module, "open_regular", lambda path: _CountingFile(open_regular(path), counted)
    )
    append(log, b"y" * 10)
    follower.poll()
    assert sum(counted) < 2 * HEAD_BYTES + 10  # the heads it checks, and the new bytes
    counted.clear()
    follower.poll()
    assert sum(counted) < 2 * HEAD_BYTES
    append(log, b'"}\n')
    follower.poll()
    assert [str(e).split(": ")[0] for e in follower.totals.errors] == [f"{log}:1"]
    assert "over the 1,000,000 limit" in str(follower.totals.errors[0])


_steps = st.lists(
    st.sampled_from(["append", "poll", "restart", "rename", "copytruncate"]),
    min_size=1,
    max_size=25,
)


@settings(deadline=None, max_examples=30)
@given(steps=_steps)
@example(steps=["append", "rename", "append", "rename", "append"])
@example(steps=["append", "copytruncate", "append", "copytruncate", "restart", "append"])
def test_any_number_of_rotations_between_two_looks_loses_no_line(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """Rotations of numbered copies (``.1`` becomes ``.2``: logrotate's way) with no look
    between them, restarts of the follower anywhere: every line written is one episode.
    One look comes between a copy-truncate and lines written into a log the follower
    last saw empty: a file whose start was nothing is grown by anything, so its copy and
    truncation cannot be told from growth (README, "A followed log")."""
    folder = tmp_path_factory.mktemp("rotations")
    log = folder / "agent.jsonl"
    log.write_bytes(b"")
    written = 0
    with Store(folder / "db.sqlite") as store:
        follower = Follower(store, [log], lambda _: None)
        follower.poll()  # the first look: what was rotated away before it is not this log's
        seen_empty = True
        for step in steps:
            if step == "copytruncate" and seen_empty and log.stat().st_size:
                follower.poll()
                seen_empty = False
            if step in ("rename", "copytruncate"):
                _rotate(log, step)
            elif step == "append":
                append(log, line(f"line {written} of the log"))
                written += 1
            elif step == "poll":
                follower.poll()
                seen_empty = log.stat().st_size == 0
            else:
                follower.close()
                follower = Follower(store, [log], lambda _: None)
        follower.poll()
        follower.close()
        assert texts(store) == {f"line {i} of the log": 1 for i in range(written)}


def test_only_the_logs_rotated_copies_are_read_as_copies(store: Store, tmp_path: Path) -> None:
    """A file whose name merely starts with the log's (``agent.jsonl.debug.jsonl``) is
    another file, and a link among the copies may lead anywhere: neither is read."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(line("1"))
    (tmp_path / "agent.jsonl.debug.jsonl").write_bytes(line("foreign"))
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "private.jsonl").write_bytes(line("private"))
    (tmp_path / "agent.jsonl.7").symlink_to(tmp_path / "secret" / "private.jsonl")
    follower, _ = follow(store, log)
    follower.poll()
    log.rename(tmp_path / "agent.jsonl.1")
    log.write_bytes(line("2"))
    follower.poll()
    assert texts(store) == {"1": 1, "2": 1}


def test_a_copy_read_before_is_read_on_not_again(store: Store, tmp_path: Path) -> None:
    """Two renames, each seen: the oldest generation is not read again from its start
    (its bad line is said once)."""
    log = tmp_path / "agent.jsonl"
    log.write_bytes(b"not json\n" + line("1"))
    follower, _ = follow(store, log)
    follower.poll()
    for generation in ("2", "3"):
        _rotate(log, "rename")
        log.write_bytes(line(generation))
        follower.poll()
    assert texts(store) == {"1": 1, "2": 1, "3": 1}
    assert len(follower.totals.errors) == 1


def test_a_folder_of_many_logs_holds_no_descriptor_between_looks(
    store: Store, tmp_path: Path
) -> None:
    for day in range(40):
        (tmp_path / f"day-{day:02}.jsonl").write_bytes(line(f"day {day}"))
    follower, _ = follow(store, tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    follower.poll()
    for day in range(37):
        (tmp_path / f"day-{day:02}.jsonl").unlink()
    follower.poll()
    assert len(os.listdir("/proc/self/fd")) <= before + 1
    assert len(texts(store)) == 40


def test_a_long_line_cut_away_by_a_copy_truncate_leaves_no_stale_wait(
    store: Store, tmp_path: Path
) -> None:
    log = tmp_path / "agent.jsonl"
    log.write_bytes(b'{"text": "' + b"x" * (2 * CHUNK_BYTES))  # waiting for its end
    follower, _ = follow(store, log)
    follower.poll()
    shutil.copyfile(log, tmp_path / "agent.jsonl.1.gz")  # a copy nobody reads
    with open(log, "r+b") as handle:
        handle.truncate(0)
    append(log, b"".join(line(f"new {i}") for i in range(5)))
    follower.poll()
    assert texts(store) == {f"new {i}": 1 for i in range(5)}

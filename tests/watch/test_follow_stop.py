"""A follow asked to stop in the middle of a big log stops between two chunks.

The window's Stop following, its close, and ``curator watch``'s SIGTERM wait for the poll
under way; a poll reads a file to its end, so a 100 MB log held them for its whole read.
Each chunk is committed with its position, so stopping after any chunk loses nothing and
repeats nothing: the next poll goes on from there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.store import follow as follow_module
from curator.store.db import Store
from curator.store.follow import Follower
from curator.store.follow_state import positions
from tests.watch.conftest import line, texts


def write_log(path: Path, count: int) -> None:
    with open(path, "wb") as handle:
        for n in range(count):
            handle.write(line(f"episode {n} " + "lorem ipsum " * 5))


def test_a_stop_between_chunks_ends_the_poll_and_the_next_goes_on(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow_module, "CHUNK_BYTES", 4096)  # a big log, in small
    log = tmp_path / "big.jsonl"
    write_log(log, 500)
    asked = [False]
    follower = Follower(store, [log], lambda _m: None, should_stop=lambda: asked[0])
    asked[0] = True  # asked before the first chunk: that chunk is still read whole
    first = follower.poll()
    assert 0 < first < 500
    ((_path, offset, read),) = positions(store)
    assert read == first and offset < os.path.getsize(log)
    asked[0] = False
    assert follower.poll() == 500 - first
    assert sum(texts(store).values()) == 500 and set(texts(store).values()) == {1}


@settings(deadline=None, max_examples=20)
@example(chunk=4096, stops=[1])
@example(chunk=300, stops=[0, 0, 1, 1, 1])
@given(
    chunk=st.integers(200, 20_000),
    stops=st.lists(st.integers(0, 3), min_size=1, max_size=12),
)
def test_stops_after_any_chunks_import_each_line_once(
    tmp_path_factory: pytest.TempPathFactory, chunk: int, stops: list[int]
) -> None:
    folder = tmp_path_factory.mktemp("stops")
    log = folder / "agent.jsonl"
    write_log(log, 120)
    original = follow_module.CHUNK_BYTES
    follow_module.CHUNK_BYTES = chunk
    try:
        with Store(folder / "db.sqlite") as store:
            checks = iter(stops)
            follower = Follower(
                store, [log], lambda _m: None, should_stop=lambda: next(checks, 0) > 0
            )
            for _ in range(len(stops) + 2):
                follower.poll()
            follower = Follower(store, [log], lambda _m: None)
            follower.poll()
            assert sum(texts(store).values()) == 120 and set(texts(store).values()) == {1}
            assert [n for _p, _o, n in positions(store)] == [120]
    finally:
        follow_module.CHUNK_BYTES = original

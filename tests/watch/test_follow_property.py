"""A property over whole histories of a log: appends in pieces, rotations both ways,
restarts of the follower. Every line written is an episode exactly once."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.follow import Follower
from tests.watch.conftest import append, line, texts

_steps = st.lists(
    st.sampled_from(["append", "half", "poll", "restart", "rename", "copytruncate"]),
    min_size=1,
    max_size=25,
)


@settings(deadline=None, max_examples=30)
@given(steps=_steps)
@example(steps=["append", "half", "rename", "append", "copytruncate", "half", "restart"])
@example(steps=["half", "copytruncate", "half", "rename", "half"])
@example(steps=["poll", "half", "copytruncate"])
def test_every_line_of_any_history_is_imported_once(
    tmp_path_factory: pytest.TempPathFactory, steps: list[str]
) -> None:
    """A rotation happens at a line's end (a writer finishes its line first, then the
    log is rotated) and at most one between two polls (the follower polls before each:
    a file rotated away twice between two looks was never seen, by any follower). The
    lines are unique from their first bytes, as a real log's timestamps make them: a
    file whose only content was a fragment common to every line cannot be told from
    its successor by any content check (see README, "A followed log")."""
    folder = tmp_path_factory.mktemp("history")
    log = folder / "agent.jsonl"
    log.write_bytes(b"")
    written = 0
    pending = b""  # the second half of a line still to write
    rotations = 0
    with Store(folder / "db.sqlite") as store:
        follower = Follower(store, [log], lambda _: None)
        for step in steps:
            if step in ("rename", "copytruncate"):
                follower.poll()
                append(log, pending)
                pending = b""
                rotations += 1
                rotated = folder / f"agent.jsonl.{rotations}"
                if step == "rename":
                    log.rename(rotated)
                    log.write_bytes(b"")
                else:
                    shutil.copyfile(log, rotated)
                    with open(log, "r+b") as handle:
                        handle.truncate(0)
            elif step == "append":
                append(log, pending + line(f"line {written} é€😀"))
                pending = b""
                written += 1
            elif step == "half":
                append(log, pending)
                whole = line(f"line {written} é€😀")
                written += 1
                # cut after the line's number: what a follower saw of a file identifies
                # it (a real log starts with a timestamp or an id, not 8 common bytes)
                start = len(f'{{"text": "line {written - 1} '.encode())
                cut = start + (written * 7) % (len(whole) - start)
                append(log, whole[:cut])
                pending = whole[cut:]
            elif step == "poll":
                follower.poll()
            else:
                follower = Follower(store, [log], lambda _: None)
        append(log, pending)
        follower.poll()
        assert texts(store) == {f"line {i} é€😀": 1 for i in range(written)}
        assert follower.totals.errors == []
        assert os.path.exists(log)

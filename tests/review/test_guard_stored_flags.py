"""The guard's stored flags: any stored state lists the same way, junk never breaks a review."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from curator.core.flag_type import Flag
from curator.pipeline import review
from curator.pipeline.flagging import FlagContext
from curator.pipeline.guard_flags import GUARD_KINDS, encode, replace_kind, stored_flags
from curator.pipeline.guard_opinion import opinion_flag
from curator.store.db import Store
from curator.store.models import Candidate
from review.conftest import make_staged_run

_flags = st.builds(
    Flag,
    kind=st.sampled_from(GUARD_KINDS),
    reason=st.text(max_size=30),
    start=st.integers(0, 50),
    end=st.integers(0, 50),
    match=st.text(max_size=10),
)
_junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["kind", "reason", "start", "end", "x"]), inner)
    ),
    max_leaves=12,
)


@settings(max_examples=200)
@given(flags=st.lists(_flags, max_size=5), junk=st.lists(_junk, max_size=3), seed=st.integers())
def test_stored_flags_list_alike_in_any_stored_order_and_skip_junk(
    flags: list[Flag], junk: list[Any], seed: int
) -> None:
    raw: list[Any] = [f.to_json() for f in flags] + junk
    shuffled = list(raw)
    random.Random(seed).shuffle(shuffled)
    listed = stored_flags(raw)
    assert listed == stored_flags(shuffled)  # deterministic for a given stored set
    assert set(flags) <= set(listed) and {f.kind for f in listed} <= set(GUARD_KINDS)
    context = FlagContext((), "", frozenset())
    text = "The operator waters the plants on Mondays."
    assert context.flags(text, (), raw) == context.flags(text, (), shuffled)
    assert stored_flags(json.loads(json.dumps(encode(flags)))) == stored_flags(encode(flags))
    for kind in GUARD_KINDS:
        assert all(f.kind != kind for f in stored_flags(replace_kind(raw, kind, None)))


@given(raw=_junk)
def test_any_stored_value_reads_as_flags_or_none(raw: Any) -> None:
    assert all(isinstance(f, Flag) for f in stored_flags(raw))


def test_a_damaged_stored_value_does_not_break_the_review(store: Store) -> None:
    run = make_staged_run(store, [{"text": "The operator waters the office plants on Mondays."}])
    good = opinion_flag(0.9, 0.5)
    assert good is not None
    damaged = [{"kind": "model"}, {"kind": "learned", "reason": "x", "start": "a", "end": 0}]
    with store.write():
        Candidate.update(guard_flags=[*damaged, good.to_json(), {"kind": "instruction"}]).execute()
    (view,) = review.list_candidates(store, run.id)
    assert list(view.flags) == [good]
    # A damaged value is never a flag someone else can inject a kind with.
    with store.write():
        Candidate.update(guard_flags={"kind": "model", "reason": "x", "start": 0}).execute()
    (view,) = review.list_candidates(store, run.id)
    assert view.flags == ()

"""The write limits of ``curator mcp``: the token bucket and the client's name as source."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import Implementation

from curator import Curator
from curator.core.textsafety import NAME_BREAKERS, visible
from curator.mcp_server.ratelimit import RateLimiter
from curator.mcp_server.server import DEFAULT_CLIENT, ServerOptions, build_server

Counts = Callable[[Path], dict[str, int]]


class Clock:
    """A clock the test steps by hand: the bucket refills without a sleep."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_refills_at_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=60, burst=2, clock=clock)
    assert limiter.take("a") is None and limiter.take("a") is None
    wait = limiter.take("a")
    assert wait == pytest.approx(1.0)
    assert limiter.take("b") is None  # another client has its own bucket
    clock.now = 1.0
    assert limiter.take("a") is None
    assert limiter.take("a") is not None


def test_zero_per_minute_means_no_limit() -> None:
    limiter = RateLimiter(per_minute=0, burst=1)
    assert all(limiter.take("a") is None for _ in range(1000))


@settings(deadline=None, max_examples=200)
@given(
    per_minute=st.integers(1, 10_000),
    burst=st.integers(1, 50),
    steps=st.lists(st.floats(0, 5, allow_nan=False), max_size=200),
)
@example(per_minute=1, burst=1, steps=[0.0] * 10)
def test_never_more_than_burst_plus_what_time_refilled(
    per_minute: int, burst: int, steps: list[float]
) -> None:
    clock = Clock()
    limiter = RateLimiter(per_minute=per_minute, burst=burst, clock=clock)
    granted = 0
    for step in steps:
        clock.now += step
        if limiter.take("c") is None:
            granted += 1
        else:
            assert (limiter.take("c") or 0) > 0  # a refusal always names a wait
    assert granted <= burst + clock.now * per_minute / 60 + 1e-9


@settings(deadline=None, max_examples=50)
@given(
    per_minute=st.integers(60, 6_000),
    burst=st.integers(1, 20),
    calls=st.lists(st.tuples(st.integers(0, 3), st.floats(0, 0.05, allow_nan=False)), max_size=60),
)
def test_a_flood_under_new_names_keeps_memory_bounded_and_each_limit_exact(
    per_minute: int, burst: int, calls: list[tuple[int, float]]
) -> None:
    """Every call under a new name (the worst case for memory), mixed with calls of a few
    steady clients: buckets that refilled are dropped, so what is kept stays within the
    clients seen in one refill time plus the sweep's slack, and no steady client ever gets
    more than its burst plus what time refilled."""
    clock = Clock()
    limiter = RateLimiter(per_minute=per_minute, burst=burst, clock=clock)
    refill_s = burst / (per_minute / 60)
    seen: deque[float] = deque()  # when the flood's names were used, within a refill time
    most_recent = 0
    granted = [0] * 4
    for number in range(3_000):
        steady, step = calls[number % len(calls)] if calls else (0, 0.01)
        clock.now += step + 0.001
        limiter.take(f"flood-{number}")
        seen.append(clock.now)
        while clock.now - seen[0] > refill_s:
            seen.popleft()
        most_recent = max(most_recent, len(seen))
        if limiter.take(f"steady-{steady}") is None:
            granted[steady] += 1
        assert limiter.tracked() <= max(1024, 2 * (most_recent + 4)) + 1
    for count in granted:
        assert count <= burst + clock.now * per_minute / 60 + 1e-9


def record_as(db: Path, name: str, **arguments: Any) -> Any:
    """Call record_episode in-process as a client that calls itself ``name``."""

    async def main() -> Any:
        with Curator(db=db) as curator:
            server = build_server(curator, ServerOptions())
            info = Implementation(name=name, version="1")
            async with Client(server, client_info=info) as client:
                return await client.call_tool("record_episode", arguments)

    return anyio.run(main)


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("agent\x1b[31m-red", "agent[31m-red"),
        ("", DEFAULT_CLIENT),
        ("\x00\x07", DEFAULT_CLIENT),
        ("  spaced   out  ", "spaced out"),
        ("n" * 5000, "n" * 100),
    ],
)
def test_a_hostile_client_name_is_cleaned_not_refused(
    memory_db: Path, name: str, source: str
) -> None:
    result = record_as(memory_db, name, text=f"episode from {len(name)}")
    assert not result.is_error, result.content
    assert result.structured_content["source"] == source


#: Characters a name is made of, those a source may not hold over-weighted: drawn from
#: all of Unicode alone, a direction mark came too rarely to be found.
_NAME_CHARACTERS = st.one_of(
    st.characters(),
    st.sampled_from("\n\t\r\u0085\u2028\u2029\u061c\u200b\u200e\u200f\u202a\u202e\u2066\u2069"),
)


@settings(deadline=None, max_examples=25)
@given(name=st.text(_NAME_CHARACTERS, max_size=120))
@example(name="\u0085\u009b")
@example(name="agent\ud800")
@example(name="\u05e2\u05d5\u05d6\u05e8\u200f")  # a Hebrew name ending in a mark
@example(name="\u202eagent")
@example(name="\u200b")
def test_any_client_name_records_the_episode(tmp_path_factory: Any, name: str) -> None:
    """Whatever a client calls itself, its episode is stored under a clean, short source
    that shows something."""
    from curator.store.db import Store

    db = tmp_path_factory.mktemp("names") / "m.db"
    Store(db).close()
    result = record_as(db, name, text="hello")
    assert not result.is_error, result.content
    source = result.structured_content["source"]
    assert source and len(source) <= 100 and source == " ".join(source.split())
    assert visible(source) and NAME_BREAKERS.search(source) is None


@pytest.mark.parametrize("given", ["   ", "\u200b", "\u2060 \t"])
def test_a_source_of_blanks_or_invisible_characters_is_the_clients_name(
    memory_db: Path, given: str
) -> None:
    """``source`` names who recorded the episode; one that names nobody is no better
    than none (it was stored empty)."""
    result = record_as(memory_db, "agent-x", text="an episode with an empty source", source=given)
    assert not result.is_error, result.content
    assert result.structured_content["source"] == "agent-x"

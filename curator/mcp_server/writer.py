"""Group commit for ``record_episode``: the calls that arrive together share one commit.

Why: each call used to run its own write transaction on a worker thread of its own. The
worker threads' connections then queued for SQLite's single write lock, and SQLite's busy
handler waits by sleeping (1, 2, 5, 10 ms ...), so a handful of concurrent clients spent
most of their time asleep, and every episode paid a whole commit. Here the first call of
a burst becomes the *leader*: it takes every episode waiting, records them with
:meth:`curator.api.Curator.record_many` in one transaction on one worker thread, and hands
each caller its own answer; then the first caller that arrived meanwhile leads the next
group (a leader does not go on writing for a stream of later callers while its own client
waits). Only one transaction of this server writes at a time, so none of them sleeps in
the busy handler.

Nothing is acknowledged before it is stored: a caller is answered only after the commit
that holds its episode returned (or with the error that stored none of its group). The
leader's flush is shielded from cancellation: a leader whose client went away still
finishes the group the other callers wait on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from curator.api import Curator, RecordResult, Screening
from curator.errors import CuratorError

MAX_GROUP = 256
"""At most this many episodes share one transaction: the write lock is held briefly."""


SCREEN_ALONE_CHARS = 2_000
"""An episode longer than this is read by the detector on a thread of its own before it
joins a group (about 50 ms of detector and more); a shorter one, in its group."""


def _length(item: dict[str, Any]) -> int:
    """About how many characters the detector reads in ``item`` (0 for what it refuses)."""
    text, messages = item.get("text"), item.get("messages")
    if isinstance(text, str):
        return len(text)
    if isinstance(messages, list):  # a speaker's role or name is read as well
        fields = (v for m in messages if isinstance(m, dict) for v in m.values())
        return sum(len(v) for v in fields if isinstance(v, str))
    return 0


@dataclass
class _Waiting:
    item: dict[str, Any]
    kinds: Screening | None = None
    """The detector's reading, made before the group (a long episode), or ``None``."""
    wake: anyio.Event = field(default_factory=anyio.Event)
    """Set when the answer is in, or when this caller is to lead the next group."""
    answer: RecordResult | BaseException | None = None


class GroupWriter:
    """``await record(item)`` records one episode in a group commit (see the module).

    Lives in one event loop: its queue and flag are touched only by that loop's tasks. A
    leader writes until its own episode is committed, then hands the writing on to the
    first caller still waiting: under a steady stream of calls no caller waits for more
    than the groups ahead of it.
    """

    def __init__(self, curator: Curator, max_group: int = MAX_GROUP) -> None:
        self._curator = curator
        self._max_group = max_group
        self._waiting: list[_Waiting] = []
        self._flushing = False
        self._screening: anyio.CapacityLimiter | None = None
        """One long episode screened at a time: forty at once (anyio's threads) shared the
        interpreter with the group's writer and held a short episode for 14 s."""

    @property
    def flushing(self) -> bool:
        """Whether a leader is writing a group now (later calls join the next group)."""
        return self._flushing

    async def record(self, item: dict[str, Any]) -> RecordResult:
        """The episode's :class:`RecordResult`, once committed; raises what refused it.

        A long episode is screened first, on a thread of its own (one at a time): in the
        group, the detector's seconds on a megabyte text held every other client's
        episode (37 s)."""
        kinds = None
        if _length(item) > SCREEN_ALONE_CHARS:
            if self._screening is None:  # made in the event loop it limits
                self._screening = anyio.CapacityLimiter(1)
            kinds = await anyio.to_thread.run_sync(
                self._curator.screen, item, limiter=self._screening
            )
        mine = _Waiting(item, kinds)
        self._waiting.append(mine)
        try:
            while mine.answer is None:
                if not self._flushing:
                    await self._lead(mine)
                    # A leader whose client went away has written for the others; it
                    # answers no one.
                    await anyio.lowlevel.checkpoint_if_cancelled()
                    continue
                await mine.wake.wait()
                mine.wake = anyio.Event()
        except BaseException:
            if mine in self._waiting:  # cancelled before its group: not written at all
                self._waiting.remove(mine)
                self._hand_on()
            raise
        if isinstance(mine.answer, BaseException):
            raise mine.answer
        return mine.answer

    async def _lead(self, mine: _Waiting) -> None:
        """Write groups from the head of the queue until ``mine`` is answered."""
        self._flushing = True
        try:
            with anyio.CancelScope(shield=True):
                while mine.answer is None and self._waiting:
                    await self._write_group()
        finally:
            self._flushing = False
            self._hand_on()

    def _hand_on(self) -> None:
        """Wake the first caller still waiting to lead, if no one is writing."""
        if not self._flushing and self._waiting:
            self._waiting[0].wake.set()

    async def _write_group(self) -> None:
        group = self._waiting[: self._max_group]
        del self._waiting[: len(group)]
        answers: list[RecordResult | CuratorError] | BaseException
        try:
            answers = await anyio.to_thread.run_sync(
                self._curator.record_many, [w.item for w in group], [w.kinds for w in group]
            )
        except Exception as exc:  # the whole group failed: none of it is stored
            answers = exc
        for place, waiting in enumerate(group):
            waiting.answer = answers if isinstance(answers, BaseException) else answers[place]
            waiting.wake.set()

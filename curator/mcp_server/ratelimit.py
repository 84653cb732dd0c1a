"""A token bucket per MCP client: how many episodes a client may record, and how fast.

An agent stuck in a loop can call ``record_episode`` thousands of times a second; each
call is a pending Episode a person will have to look at. Every client name gets its own
bucket of ``burst`` tokens that refills at ``per_minute / 60`` tokens a second; a call
that finds the bucket empty is refused (nothing written) with the wait it needs.

A client names itself, so a flood can come under a new name at every call. Such a flood
must not grow the server's memory without end: a bucket that has refilled to ``burst``
is the same as no bucket, so full ones are dropped whenever the number kept has doubled
since the last sweep (amortised O(1) a call). What stays is at most the clients seen
within one refill time (``burst / rate``), and every client keeps its exact limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class RateLimiter:
    """``take(client)`` is None when the call may go on, else the seconds to wait.

    ``per_minute`` 0 turns the limit off. ``clock`` is injectable so a test can step time
    instead of sleeping.
    """

    per_minute: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _sweep_at: int = 1024  # the number of buckets at which full ones are next dropped

    def take(self, client: str) -> float | None:
        if self.per_minute <= 0:
            return None
        rate = self.per_minute / 60.0
        now = self.clock()
        with self._lock:
            if len(self._buckets) >= self._sweep_at:
                self._drop_full(now, rate)
            bucket = self._buckets.setdefault(client, _Bucket(float(self.burst), now))
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / rate

    def tracked(self) -> int:
        """How many clients' buckets are kept now."""
        with self._lock:
            return len(self._buckets)

    def _drop_full(self, now: float, rate: float) -> None:
        full = [
            name
            for name, bucket in self._buckets.items()
            if bucket.tokens + (now - bucket.stamp) * rate >= self.burst
        ]
        for name in full:
            del self._buckets[name]
        self._sweep_at = max(1024, 2 * len(self._buckets))

"""A token bucket per MCP client: how many episodes a client may record, and how fast.

An agent stuck in a loop can call ``record_episode`` thousands of times a second; each
call is a pending Episode a person will have to look at. Every client name gets its own
bucket of ``burst`` tokens that refills at ``per_minute / 60`` tokens a second; a call
that finds the bucket empty is refused (nothing written) with the wait it needs.
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

    def take(self, client: str) -> float | None:
        if self.per_minute <= 0:
            return None
        rate = self.per_minute / 60.0
        now = self.clock()
        with self._lock:
            bucket = self._buckets.setdefault(client, _Bucket(float(self.burst), now))
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * rate)
            bucket.stamp = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return None
            return (1.0 - bucket.tokens) / rate

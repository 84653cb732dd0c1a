"""Decay forecast: who leaves the prompt, when, and what it takes to push a pattern out.

The prompt carries the top K patterns by effective importance
(``importance * rate ** age``, :mod:`curator.core.scoring`). All patterns decay at the same
rate, so time alone never reorders them: a pattern leaves the prompt only when a new one
outranks it. Hence the two dates per pattern:

* ``below_floor``: when its effective importance drops below a chosen floor (it is then
  nearly worthless in the prompt, though it stays there while nothing replaces it);
* ``outranked``: from when on a *new* pattern of importance ``x`` would rank above it. A new
  pattern with the same effective importance ties, and ties go to the newer one, so the
  date is the moment the old pattern's value reaches ``x``. One such new pattern pushes out
  the K-th pattern only; ``m`` of them push out ranks ``K - m + 1 .. K``.

When fewer than K patterns are active the prompt has room: nothing leaves it, whatever
the dates say, and :class:`Forecast` says so (``prompt_full`` False).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from curator.core.scoring import (
    DEFAULT_RATE,
    as_utc,
    days_until_below,
    decay_series,
    effective_importance,
    top_k,
)

__all__ = ["Forecast", "ForecastPattern", "PatternAge", "forecast"]


@dataclass(frozen=True)
class PatternAge:
    """What the forecast needs of an active pattern."""

    id: int
    importance: float
    distilled_at: datetime
    text: str = ""


@dataclass(frozen=True)
class ForecastPattern:
    id: int
    rank: int  # 1-based, by effective importance now
    in_prompt: bool
    effective_now: float
    below_floor: datetime | None  # None: never (floor <= 0 or no decay)
    outranked: datetime | None  # None: a new pattern of that importance never outranks it
    text: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "rank": self.rank,
            "in_prompt": self.in_prompt,
            "effective_now": self.effective_now,
            "below_floor": None if self.below_floor is None else self.below_floor.isoformat(),
            "outranked": None if self.outranked is None else self.outranked.isoformat(),
            "text": self.text,
        }


@dataclass(frozen=True)
class Forecast:
    now: datetime
    k: int
    rate: float
    floor: float
    new_importance: float
    days: tuple[float, ...]
    cutoff: tuple[float, ...] | None  # the K-th pattern's value over ``days``; None: room left
    patterns: tuple[ForecastPattern, ...]
    lowest: tuple[float, ...] | None = None  # the lowest pattern in the prompt, full or not
    highest: tuple[float, ...] | None = None  # the top pattern

    @property
    def prompt_full(self) -> bool:
        return len(self.patterns) >= self.k

    @property
    def message(self) -> str:
        if not self.prompt_full:
            return (
                f"Nothing leaves the prompt while it has room: {len(self.patterns)} of "
                f"{self.k} places are used."
            )
        kth = self.patterns[self.k - 1]
        if kth.outranked is None:
            return "The prompt is full; no new pattern of that importance would enter it."
        return (
            f"The prompt is full; from {kth.outranked:%Y-%m-%d} a new pattern of importance "
            f"{self.new_importance:.2f} would replace pattern {kth.id} (rank {self.k})."
        )

    def to_json(self) -> dict[str, object]:
        return {
            "now": self.now.isoformat(),
            "k": self.k,
            "rate": self.rate,
            "floor": self.floor,
            "new_importance": self.new_importance,
            "prompt_full": self.prompt_full,
            "message": self.message,
            "days": list(self.days),
            "cutoff": None if self.cutoff is None else list(self.cutoff),
            "lowest_in_prompt": None if self.lowest is None else list(self.lowest),
            "highest": None if self.highest is None else list(self.highest),
            "patterns": [p.to_json() for p in self.patterns],
        }


def _date(now: datetime, days: float | None) -> datetime | None:
    return None if days is None else now + timedelta(days=days)


def forecast(
    patterns: Sequence[PatternAge],
    *,
    k: int,
    now: datetime,
    rate: float = DEFAULT_RATE,
    horizon_days: int = 90,
    floor: float = 0.05,
    new_importance: float = 0.5,
) -> Forecast:
    """The forecast for the active ``patterns`` at ``now`` (see the module docstring)."""
    now = as_utc(now)
    ranked = top_k(patterns, len(patterns), now=now, rate=rate)
    days = tuple(float(d) for d in range(0, max(0, horizon_days) + 1))
    rows: list[ForecastPattern] = []
    for rank, p in enumerate(ranked, start=1):
        rows.append(
            ForecastPattern(
                id=p.id,
                rank=rank,
                in_prompt=rank <= k,
                effective_now=effective_importance(p.importance, p.distilled_at, now, rate),
                below_floor=_date(
                    now, days_until_below(p.importance, p.distilled_at, floor, now, rate)
                ),
                outranked=_outranked(p, now, rate, new_importance),
                text=p.text,
            )
        )
    cutoff = lowest = highest = None
    if ranked and k > 0:

        def curve(p: PatternAge) -> tuple[float, ...]:
            values = decay_series(p.importance, p.distilled_at, np.asarray(days), now, rate)
            return tuple(float(v) for v in values)

        lowest = curve(ranked[min(k, len(ranked)) - 1])
        highest = curve(ranked[0])
        if len(ranked) >= k:
            cutoff = lowest
    return Forecast(now, k, rate, floor, new_importance, days, cutoff, tuple(rows), lowest, highest)


def _outranked(p: PatternAge, now: datetime, rate: float, new_importance: float) -> datetime | None:
    """First moment a new pattern of ``new_importance`` ties (and, being newer, wins)."""
    if new_importance <= 0.0:
        return None
    current = effective_importance(p.importance, p.distilled_at, now, rate)
    if current <= new_importance:
        return now
    wait = days_until_below(p.importance, p.distilled_at, new_importance, now, rate)
    return _date(now, wait)

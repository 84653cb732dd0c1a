"""Importance decay and the time-invariant ranking key.

A pattern's *effective* importance decays geometrically with its age:
``importance * rate ** days`` where ``days`` is the (fractional) time since it was
distilled.  Nothing here writes anything: the stored importance never changes, decay
is applied when reading.

Ranking by effective importance never changes with time alone.  For two patterns
distilled at ``t1`` and ``t2`` the ratio of their effective importances at any
``now`` after both is ``(i1 / i2) * rate ** (t2 - t1)``, which does not depend on
``now``.  Taking logarithms gives a per-pattern key

    ``rank_key = log(importance) + days_since(EPOCH) * log(1 / rate)``

that the store can keep in an indexed column: ``ORDER BY rank_key DESC, distilled_at
DESC, id ASC`` selects the same top K as sorting by effective importance at any
``now`` at or after every ``distilled_at`` (up to floating-point rounding of values
that are equal in exact arithmetic; see ``tests/core/test_scoring.py``).

Decisions documented here:

* Importance lives in [0, 1]; the store clamps on write and these functions clamp
  their result.  NaN is rejected (``ValueError``): it would poison every comparison.
* ``rate`` must satisfy ``0 < rate <= 1``; 1 means "no decay".  A rate above 1 would
  make patterns grow until clamped at 1, which no ranking key can represent.
* A ``distilled_at`` in the future (clock skew, a database written before intake
  refused such dates) counts as age 0: a pattern never gains importance beyond its
  stored value.  :func:`decay_reference` is that rule, and both the shown value
  (:func:`effective_importance`) and the order (:func:`standing_key`, :func:`top_k`,
  the store's reads) go through it, so a date far in the future can neither raise the
  value nor pin the pattern to the top of the prompt.  Intake refuses such dates
  (``curator import-knowledge``) and the commit stamps at most its own time, so a
  stored key is the standing key except for rows of an older database, which the
  store's reads rank by :func:`standing_key` instead.
* Naive datetimes are UTC.
* ``distilled_at is None`` means "never decays" for :func:`effective_importance`.
  :func:`rank_key` rejects it: a pattern that never decays overtakes decaying ones as
  time passes, so no time-invariant key can place it; the store always stamps
  ``distilled_at`` when it writes a pattern.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias, TypeVar

if TYPE_CHECKING:  # numpy is imported where it is used: the CLI's start stays cheap
    import numpy as np
    import numpy.typing as npt

    FloatArray: TypeAlias = npt.NDArray[np.float64]

__all__ = [
    "DEFAULT_RATE",
    "EPOCH",
    "ZERO_KEY",
    "Rankable",
    "as_utc",
    "clamp01",
    "days_between",
    "days_until_below",
    "decay_matrix",
    "decay_reference",
    "decay_series",
    "effective_importance",
    "merge_importance",
    "rank_key",
    "standing_key",
    "top_k",
]

DEFAULT_RATE: Final = 0.95
EPOCH: Final = datetime(2000, 1, 1, tzinfo=UTC)
_DAY: Final = timedelta(days=1)

#: Key of a zero-importance pattern.  Any positive importance has a key of at least
#: ``log(5e-324) - |days| * log(1 / rate)`` > -750 - 3.7e6 * 745 > -3e9 for every
#: datetime Python can represent and every positive float rate, so this constant
#: sorts below all of them.  It is finite so that it survives SQLite and JSON.  Zero
#: patterns tie among themselves, exactly like their effective importance (always 0),
#: and the store's tie-break columns (newer first, then id) order them.
ZERO_KEY: Final = -1e18


def as_utc(dt: datetime) -> datetime:
    """Return ``dt`` as an aware UTC datetime; a naive ``dt`` is taken to be UTC."""
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def clamp01(value: float) -> float:
    """Clamp to [0, 1]; NaN raises because it cannot be ordered."""
    if math.isnan(value):
        raise ValueError("importance is NaN")
    return min(1.0, max(0.0, value))


def _check_rate(rate: float) -> None:
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"decay rate must be in (0, 1], got {rate!r}")


def _now(now: datetime | None) -> datetime:
    return datetime.now(UTC) if now is None else as_utc(now)


def merge_importance(old: float, new: float) -> float:
    """Importance after an UPDATE: the larger of the two.

    Here, not in the dedup engine that proposes the UPDATE, so a commit preview needs
    no numpy.

    Taking the maximum is idempotent (re-running the same batch changes nothing) and
    never additive, so repeated near-duplicates cannot inflate a pattern's importance.
    """
    return max(old, new)


def days_between(start: datetime, end: datetime) -> float:
    """Fractional days from ``start`` to ``end`` (negative if ``end`` is earlier)."""
    return (as_utc(end) - as_utc(start)) / _DAY


def decay_reference(distilled_at: datetime, now: datetime | None = None) -> datetime:
    """The moment decay is counted from: ``distilled_at``, but never later than ``now``.

    A date in the future would otherwise give a negative age: a value above the stored
    importance and a ranking key that beats every real pattern.
    """
    return min(as_utc(distilled_at), _now(now))


def effective_importance(
    importance: float,
    distilled_at: datetime | None,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> float:
    """``clamp01(importance * rate ** days)``, ``days`` = age at ``now`` (default: now).

    ``distilled_at is None`` means no decay; a future ``distilled_at`` counts as age 0
    (:func:`decay_reference`), so the result never exceeds ``clamp01(importance)``.
    """
    _check_rate(rate)
    if distilled_at is None:
        return clamp01(importance)
    current_now = _now(now)
    days = days_between(decay_reference(distilled_at, current_now), current_now)
    return clamp01(importance * rate**days)


def days_until_below(
    importance: float,
    distilled_at: datetime | None,
    level: float,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> float | None:
    """Days from ``now`` until the effective importance falls below ``level``.

    Returns 0.0 if it is already below, and ``None`` if it never will: no decay
    (``distilled_at is None`` or ``rate == 1``), or ``level <= 0`` (decay approaches
    but never goes below zero).  At the returned moment the value equals ``level``;
    it is below right after.  For a future ``distilled_at`` the countdown includes the
    wait until decay starts.
    """
    _check_rate(rate)
    current_now = _now(now)
    if effective_importance(importance, distilled_at, current_now, rate) < level:
        return 0.0
    if distilled_at is None or rate == 1.0 or level <= 0.0:
        return None
    # Here 0 < level <= importance (the value is not below level), so the log is >= 0.
    age_at_level = math.log(level / importance) / math.log(rate)
    elapsed = days_between(distilled_at, current_now)
    return max(0.0, age_at_level - elapsed)


def decay_series(
    importance: float,
    distilled_at: datetime | None,
    days: Sequence[float] | FloatArray,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> FloatArray:
    """Effective importance at ``now + d`` for each ``d`` in ``days`` (negative: past).

    For the decay chart; same rules as :func:`effective_importance` at every point.
    """
    row: FloatArray = decay_matrix([importance], [distilled_at], days, now, rate)[0]
    return row


def decay_matrix(
    importances: Sequence[float] | FloatArray,
    distilled_at: Sequence[datetime | None],
    days: Sequence[float] | FloatArray,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> FloatArray:
    """Effective importances of many patterns at many offsets, shape ``(patterns, days)``.

    Vectorised with numpy so a chart of thousands of patterns stays cheap. ``days`` is one
    row of offsets for every pattern, or a row per pattern (shape ``(patterns, n)``: each
    curve sampled over its own span).
    """
    import numpy as np

    _check_rate(rate)
    weights = np.asarray(importances, dtype=np.float64)
    if weights.ndim != 1 or len(weights) != len(distilled_at):
        raise ValueError("importances and distilled_at must be 1-D and of the same length")
    if np.isnan(weights).any():
        raise ValueError("importance is NaN")
    offsets = np.asarray(days, dtype=np.float64)
    if offsets.ndim != 2:
        offsets = offsets.reshape(1, -1)
    elif offsets.shape[0] != len(weights):
        raise ValueError("a row of days per pattern, or one row for all of them")
    current_now = _now(now)
    never = np.array([when is None for when in distilled_at], dtype=bool)
    # days_between's value, with ``now`` made UTC once and a date already in UTC as it is:
    # a Ctrl+A of 5,000 patterns spent 7 of its 40 ms here calling as_utc twice a pattern
    ages = np.array(
        [
            0.0
            if when is None
            else (current_now - (when if when.tzinfo is UTC else as_utc(when))) / _DAY
            for when in distilled_at
        ],
        dtype=np.float64,
    )
    age_grid = np.maximum(ages[:, None] + offsets, 0.0)
    age_grid[never, :] = 0.0  # no decay
    decayed = weights[:, None] * np.power(rate, age_grid)
    return np.clip(decayed, 0.0, 1.0)


def rank_key(
    importance: float,
    distilled_at: datetime | None,
    rate: float = DEFAULT_RATE,
) -> float:
    """Time-invariant ranking key: ``log(importance) + days_since_EPOCH * log(1 / rate)``.

    Expects ``importance`` in [0, 1] (values outside are clamped, as the store does on
    write).  Importance 0 gives :data:`ZERO_KEY`, below every positive importance.
    ``distilled_at`` must be set (``ValueError`` otherwise; see the module docstring).
    """
    _check_rate(rate)
    if distilled_at is None:
        raise ValueError(
            "rank_key needs distilled_at: a pattern that never decays has no "
            "time-invariant rank among decaying ones"
        )
    value = clamp01(importance)
    if value == 0.0:
        return ZERO_KEY
    return math.log(value) + days_between(EPOCH, distilled_at) * -math.log(rate)


def standing_key(
    importance: float,
    distilled_at: datetime,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> float:
    """:func:`rank_key` from the :func:`decay_reference`: the order the shown value has.

    Equal to the stored key for every ``distilled_at`` at or before ``now``; for a
    future one it is the key of a pattern distilled at ``now`` with the same importance,
    which is exactly where its effective importance (frozen at the stored value) puts it.
    """
    return rank_key(importance, decay_reference(distilled_at, now), rate)


class Rankable(Protocol):
    """What :func:`top_k` needs from a pattern (a store row, a dataclass, ...)."""

    @property
    def id(self) -> int: ...

    @property
    def importance(self) -> float: ...

    @property
    def distilled_at(self) -> datetime | None: ...


T = TypeVar("T", bound=Rankable)


def _newest_first(distilled_at: datetime | None, now: datetime) -> float:
    """Sort component for "newer first" by decay reference; a missing one sorts as oldest."""
    if distilled_at is None:
        return math.inf
    return -decay_reference(distilled_at, now).timestamp()


def top_k(
    items: Iterable[T],
    k: int,
    now: datetime | None = None,
    rate: float = DEFAULT_RATE,
) -> list[T]:
    """Reference top K: effective importance desc, then newer decay reference, then id.

    The decay reference is ``distilled_at`` capped at ``now`` (:func:`decay_reference`):
    a future date ties with a pattern distilled right now, never ahead of it by date.
    Pure Python and O(n log n); the store gets the same answer from the indexed
    ``rank_key`` column.  Useful for tests and for small in-memory lists.
    """
    current_now = _now(now)
    ranked = sorted(
        items,
        key=lambda item: (
            -effective_importance(item.importance, item.distilled_at, current_now, rate),
            _newest_first(item.distilled_at, current_now),
            item.id,
        ),
    )
    return ranked[: max(0, k)]

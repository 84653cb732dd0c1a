"""When to take a backup and which backups to keep: pure functions of times, no I/O.

Backups are taken the way Anki takes them: not before every commit (undo comes from the
changesets, and a full copy per commit made every commit cost O(database)), but at most
every N minutes of use and when the window closes, and only when the database changed
since the newest backup. Old backups are thinned by age, so a mistake noticed late can
still be undone from a copy while the folder stays small:

- the ``recent`` newest backups (default 10), whatever their age;
- the newest backup of each of the last ``days`` calendar days (UTC, default 7);
- the newest backup of each of the last ``weeks`` 7-day periods (default 4, a month).

Anything else is deleted. Kept in one pure function so the rule is tested on invented
dates instead of waiting for a month of backups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex

RECENT = 10
DAYS = 7
WEEKS = 4

STAMP_FORMAT = "%Y%m%dT%H%M%S%fZ"
_STAMP = regex(r"-(\d{8}T\d{12}Z)\.sqlite$", kept_in=TEXT_PATTERNS_FILE)


def stamp_of(name: str) -> datetime | None:
    """The UTC time a backup was started, from its file name (None: not one of ours)."""
    found = _STAMP.search(name)
    if found is None:
        return None
    try:
        return datetime.strptime(found.group(1), STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def backups_to_keep(
    stamps: Iterable[datetime],
    now: datetime,
    *,
    recent: int = RECENT,
    days: int = DAYS,
    weeks: int = WEEKS,
) -> set[datetime]:
    """The stamps to keep by the age rule above; every other backup may be deleted.

    A stamp in the future (the clock was set back) counts as taken now: it is never the
    reason an older, genuine backup is dropped before its time, and it is kept among the
    newest.
    """
    newest_first = sorted(set(stamps), reverse=True)
    keep = set(newest_first[: max(recent, 0)])
    seen_days: set[int] = set()
    seen_weeks: set[int] = set()
    for stamp in newest_first:
        age_days = max((now.date() - stamp.date()).days, 0)
        if age_days < days and age_days not in seen_days:
            seen_days.add(age_days)
            keep.add(stamp)
        week = max((now - stamp).days, 0) // 7
        if week < weeks and week not in seen_weeks:
            seen_weeks.add(week)
            keep.add(stamp)
    return keep


def changed_since(modified: Sequence[float], newest_backup: datetime | None) -> bool:
    """Whether a database whose files were last written at ``modified`` (POSIX times of
    the file and its ``-wal``) changed after the newest backup was *started*.

    The start time, not the end: a write made while the backup copied is not in it, so
    it must make the next backup due. A checkpoint rewrites the file without a change of
    content; that costs one backup too many, never one too few.
    """
    if newest_backup is None:
        return True
    return any(m > newest_backup.timestamp() for m in modified)

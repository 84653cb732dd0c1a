"""Which backups are kept (the newest 10, one a day for a week, one a week for a month)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from curator.store.backup_schedule import backups_to_keep, changed_since, stamp_of

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_busy_day_keeps_the_newest_ten() -> None:
    stamps = [NOW - timedelta(minutes=30 * i) for i in range(20)]  # all today
    assert backups_to_keep(stamps, NOW) == set(stamps[:10])


def test_old_backups_thin_out_to_one_a_day_then_one_a_week() -> None:
    daily = [NOW - timedelta(days=d) for d in range(60)]  # one at noon for 60 days
    kept = backups_to_keep(daily, NOW, recent=1)
    ages = sorted((NOW - s).days for s in kept)
    # a week of days (0..6), then the newest of weeks 1, 2 and 3; a month on, nothing
    assert ages == [0, 1, 2, 3, 4, 5, 6, 7, 14, 21]


def test_the_newest_of_each_day_is_the_one_kept() -> None:
    yesterday = NOW.replace(hour=0) - timedelta(days=1)
    morning, evening = yesterday + timedelta(hours=8), yesterday + timedelta(hours=20)
    kept = backups_to_keep([NOW, morning, evening], NOW, recent=1)
    assert kept == {NOW, evening}


def test_a_backup_stamped_in_the_future_does_not_evict_real_ones() -> None:
    future = NOW + timedelta(days=3)  # the clock was set back since
    stamps = [future, NOW - timedelta(days=1), NOW - timedelta(days=2)]
    assert backups_to_keep(stamps, NOW, recent=1) == set(stamps)


@given(
    st.lists(st.integers(min_value=0, max_value=90 * 24 * 60), max_size=200, unique=True),
    st.integers(min_value=1, max_value=15),
)
def test_the_newest_are_kept_and_the_folder_stays_small(minutes: list[int], recent: int) -> None:
    stamps = [NOW - timedelta(minutes=m) for m in minutes]
    kept = backups_to_keep(stamps, NOW, recent=recent)
    assert kept <= set(stamps)
    assert set(sorted(stamps, reverse=True)[:recent]) <= kept
    assert len(kept) <= recent + 7 + 4
    assert all(NOW - s < timedelta(days=28) for s in kept - set(sorted(stamps)[-recent:]))


def test_stamps_are_read_from_our_file_names_only() -> None:
    assert stamp_of("curator-20261201T120000123456Z.sqlite") == NOW.replace(microsecond=123456)
    assert stamp_of("curator-20261201T120000123456Z.partial") is None
    assert stamp_of("notes.sqlite") is None
    assert stamp_of("curator-20261399T120000123456Z.sqlite") is None  # month 13


def test_a_change_after_the_newest_backup_started_makes_one_due() -> None:
    started = NOW - timedelta(minutes=5)
    assert changed_since([NOW.timestamp()], None)
    assert changed_since([started.timestamp() - 60, NOW.timestamp()], started)
    assert not changed_since([started.timestamp() - 60], started)

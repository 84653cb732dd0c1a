"""A relabel's progress covers the whole operation, with the phase named.

A relabel of 300,000 episodes reported "300,000/300,000" once the labels were updated,
then recorded its undo history and saved for about a minute more at 100 %. The progress
now runs over every phase (reading, updating, recording the undo history, saving) and
reaches its total only when the change is saved.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.pipeline.labels import RELABEL_PHASES, relabel, undo_last_relabel
from curator.store.db import Store
from curator.store.models import LABELS, Episode, utcnow

N = 4500


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    store = Store(tmp_path_factory.mktemp("relabel-progress") / "many.sqlite")
    now = utcnow()
    with store.write():
        rows = [
            {"content_hash": f"h{i}", "text": f"user: message {i}", "timestamp": now}
            for i in range(N)
        ]
        for start in range(0, N, 500):
            Episode.insert_many(rows[start : start + 500]).execute()
    yield store
    store.close()


def _ids() -> list[int]:
    return [int(e.id) for e in Episode.select(Episode.id).order_by(Episode.id)]


class Seen:
    """Every progress and phase report, in order, and whether the change was saved."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def progress(self, done: int, total: int) -> None:
        open_change = Episode._meta.database.in_transaction()  # type: ignore[attr-defined]
        self.events.append(("progress", done, total, open_change))

    def phase(self, name: str) -> None:
        self.events.append(("phase", name))

    def check(self) -> None:
        phases = [e[1] for e in self.events if e[0] == "phase"]
        assert phases == [p for p in RELABEL_PHASES if p in phases]  # in order
        assert phases[0] == RELABEL_PHASES[0] and phases[-1] == RELABEL_PHASES[-1]
        reports = [e for e in self.events if e[0] == "progress"]
        assert reports, "no progress at all"
        totals = {e[2] for e in reports}
        assert len(totals) == 1  # one bar for the whole operation
        dones = [e[1] for e in reports]
        assert dones == sorted(dones)
        assert dones[-1] == reports[-1][2]
        # the total is reached once only, as the last report, after the saving phase
        assert dones.count(reports[-1][2]) == 1
        assert self.events[-1][0] == "progress"
        assert not self.events[-1][3]  # the total means saved: the change is committed
        assert all(e[3] for e in reports[:-1])  # every earlier report: still writing
        saving = self.events.index(("phase", RELABEL_PHASES[-1]))
        assert all(e[0] == "progress" for e in self.events[saving + 1 :])


def test_a_large_relabel_reaches_its_total_only_when_saved(many: Store) -> None:
    seen = Seen()
    relabel(many, _ids(), "noise", progress=seen.progress, phase=seen.phase)
    seen.check()
    assert len([e for e in seen.events if e[0] == "progress"]) >= 4  # moves on the way
    seen = Seen()
    undo_last_relabel(many, progress=seen.progress, phase=seen.phase)
    seen.check()


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    size=st.integers(min_value=1, max_value=N),
    label=st.sampled_from(LABELS),
    undo=st.booleans(),
)
def test_every_relabel_and_undo_reports_whole_and_in_order(
    many: Store, size: int, label: str, undo: bool
) -> None:
    seen = Seen()
    relabel(many, _ids()[:size], label, progress=seen.progress, phase=seen.phase)
    seen.check()
    if undo:
        seen = Seen()
        undo_last_relabel(many, progress=seen.progress, phase=seen.phase)
        seen.check()

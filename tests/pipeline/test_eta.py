"""Run estimates: from measured token speeds and output budgets, and a live remaining time.

Before, a distill of 5 episodes was quoted "about 50 s" (10 s per episode, a constant)
and took 6 min 13 s: one call wrote 882 tokens of a loop within its 4,000-token budget.
The estimate now comes from this model's measured prompt and generation speeds, the
sizes of its calls, and the budgets the run will use (the worst case is quoted too); the
live remaining time converges on the truth as items finish.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.pipeline.eta import (
    BLEND_ITEMS,
    DEFAULT_FEATURES_S,
    DEFAULT_PROMPT_TOKENS_PER_S,
    DEFAULT_TOKENS_PER_S,
    UNMEASURED,
    RemainingTime,
    TokenRates,
    measured_rates,
    plan_run,
    remaining_text,
    stopped_share,
)
from curator.pipeline.progress import Progress
from curator.store.db import Store
from curator.store.models import Run, TraceStep, utcnow
from curator.store.settings import Settings


@pytest.fixture
def store(tmp_path: Path):
    db = Store(tmp_path / "eta.sqlite")
    yield db
    db.close()


def _traced_run(
    store: Store,
    path: str,
    kind: str,
    calls: list[tuple[str, int, int, float]],
    stats: dict[str, int] | None = None,
):
    end = utcnow()
    with store.write():
        run = Run.create(
            kind=kind,
            status="staged" if kind == "distill" else "done",
            started_at=end - timedelta(seconds=60),
            finished_at=end,
            model_path=path,
            stats=stats
            or ({"episodes": 10, "batches": 2} if kind == "distill" else {"classified": 1}),
        )
        for step, t_in, t_out, seconds in calls:
            TraceStep.create(
                run=run.id, step=step, tokens_in=t_in, tokens_out=t_out, seconds=seconds
            )


def test_nothing_measured_says_so_and_uses_the_defaults(store: Store) -> None:
    rates = measured_rates(store, "/m/a.gguf")
    assert rates.calls == 0
    assert (rates.prompt_per_s, rates.generate_per_s) == (
        DEFAULT_PROMPT_TOKENS_PER_S,
        DEFAULT_TOKENS_PER_S,
    )
    assert UNMEASURED in rates.source().lower()


def test_speeds_are_measured_from_this_model_s_calls(store: Store) -> None:
    # 200 prompt tokens/s and 10 tokens/s exactly: seconds = in/200 + out/10
    calls = [
        ("extract", 2000, 400, 2000 / 200 + 400 / 10),
        ("refine", 600, 300, 600 / 200 + 300 / 10),
        ("importance", 400, 40, 400 / 200 + 40 / 10),
        ("classify", 800, 0, 800 / 200),
    ]
    _traced_run(store, "/m/a.gguf", "distill", calls[:3])
    _traced_run(store, "/m/a.gguf", "classify", calls[3:])
    _traced_run(store, "/m/b.gguf", "classify", [("classify", 800, 0, 80.0)])  # another model
    rates = measured_rates(store, "/m/a.gguf")
    assert rates.calls == 4
    assert rates.prompt_per_s == pytest.approx(200.0)
    assert rates.generate_per_s == pytest.approx(10.0)
    assert rates.output_tokens["extract"] == pytest.approx(400)
    assert rates.episodes_per_batch == pytest.approx(5.0)
    assert "last 4 calls" in rates.source()


def test_the_plan_counts_three_calls_per_batch_and_bounds_them_by_the_budgets() -> None:
    rates = TokenRates(
        100.0,
        10.0,
        3,
        {"extract": 1000.0, "refine": 500.0, "importance": 200.0, "classify": 300.0},
        {"extract": 200.0, "refine": 100.0, "importance": 20.0, "classify": 0.0},
        5.0,
    )
    settings = Settings(max_output_tokens=1000, n_ctx=4096)
    plan = plan_run("distill", 10, rates, settings)
    assert plan.calls == 6  # two batches of five, three calls each
    per_batch = (1000 + 500 + 200) / 100 + (200 + 100 + 20) / 10
    assert plan.seconds == pytest.approx(2 * per_batch)
    worst_batch = (1000 + 500 + 200) / 100 + (1000 + 1000 + 1000) / 10  # extract: n_ctx/4
    assert plan.worst_seconds == pytest.approx(2 * worst_batch)
    assert plan.speeds() == "100 prompt tokens/s, 10.0 tokens/s"
    classify = plan_run("classify", 7, rates, settings)
    assert classify.calls == 7
    assert classify.speeds() == "3.0 s each"
    features = 7 * DEFAULT_FEATURES_S  # classify's features phase, at its default pace
    assert classify.seconds == classify.worst_seconds == pytest.approx(7 * 3.0 + features)
    assert plan_run("distill", 0, rates, settings).seconds == 0


def test_a_typical_call_never_writes_more_than_its_budget() -> None:
    rates = TokenRates(output_tokens={"extract": 5000.0, "refine": 0, "importance": 0})
    plan = plan_run("distill", 1, rates, Settings(max_output_tokens=100))
    assert plan.seconds == pytest.approx(plan.worst_seconds - 2 * 100 / rates.generate_per_s)


def _at_completions(n: int, per_item: float, prior: float | None) -> list[float | None]:
    """The remaining time at the start and as each of ``n`` items finishes at a constant
    speed (the moments the live estimate is re-anchored)."""
    tracker = RemainingTime(prior)
    out = [tracker.update(Progress("classify", 0, n), 0.0)]
    for k in range(1, n + 1):
        out.append(tracker.update(Progress("classify", k, n), k * per_item))
    return out


def test_before_the_first_report_the_estimate_is_the_time_left() -> None:
    assert RemainingTime(42.0).remaining(100.0) == 42.0
    assert RemainingTime(None).remaining(100.0) is None


def test_with_a_right_prior_the_remaining_time_is_exact_throughout() -> None:
    seen = _at_completions(5, 2.0, 10.0)
    assert seen == pytest.approx([10.0, 8.0, 6.0, 4.0, 2.0, 0.0])


def test_without_a_prior_nothing_is_said_before_the_first_item() -> None:
    seen = _at_completions(4, 3.0, None)
    assert seen[0] is None
    assert seen[1:] == pytest.approx([9.0, 6.0, 3.0, 0.0])


def test_between_completions_it_counts_down_but_not_below_the_items_not_started() -> None:
    tracker = RemainingTime(40.0)  # 4 items of 10 s
    tracker.update(Progress("extract", 0, 4), 0.0)
    assert tracker.update(Progress("refine", 0, 4, within=0.5), 6.0) == pytest.approx(34.0)
    assert tracker.update(Progress("importance", 0, 4, within=0.9), 25.0) == pytest.approx(30.0)


def test_a_new_phase_starts_over_without_the_run_s_prior() -> None:
    tracker = RemainingTime(10.0)
    tracker.update(Progress("classify", 0, 2), 0.0)
    tracker.update(Progress("classify", 2, 2), 10.0)
    assert tracker.update(Progress("features", 0, 3), 10.0) is None
    assert tracker.update(Progress("features", 1, 3), 11.0) == pytest.approx(2.0)


@settings(deadline=None)
@given(
    n=st.integers(min_value=1, max_value=200),
    per_item=st.floats(min_value=0.01, max_value=600.0),
    prior_factor=st.floats(min_value=0.01, max_value=100.0),
)
@example(n=5, per_item=70.0, prior_factor=1 / 7)  # quoted 50 s, took 6 min
def test_with_a_wrong_prior_the_error_shrinks_and_vanishes(
    n: int, per_item: float, prior_factor: float
) -> None:
    seen = _at_completions(n, per_item, n * per_item * prior_factor)
    errors = []
    for k, value in enumerate(seen):
        assert value is not None
        errors.append(abs(value - (n - k) * per_item))
    for before, after in itertools.pairwise(errors):
        assert after <= before + 1e-9 * max(1.0, before)
    for k in range(min(BLEND_ITEMS, n), n + 1):
        assert errors[k] == pytest.approx(0.0, abs=1e-6 * n * per_item)


def test_remaining_text() -> None:
    assert remaining_text(None) == ""
    assert remaining_text(150.0) == "about 2 min left"
    assert remaining_text(0.0) == "finishing"


@settings(deadline=None)
@given(
    total=st.integers(min_value=1, max_value=100_000),
    data=st.data(),
)
@example(total=5, data=None)
def test_a_stopped_run_s_share_is_the_one_its_text_names(total: int, data) -> None:
    """Distill's last report is the importance call of the batch that then finished
    (0 of 5, 90 % into it) while the run says "after 1 of 5 batches": the bar says 20 %."""
    if data is None:
        done, behind = 1, 1
    else:
        done = data.draw(st.integers(min_value=0, max_value=total))
        behind = data.draw(st.integers(min_value=0, max_value=done))
    last = Progress("importance", done - behind, total, within=0.9)
    message = f"cancelled after {done:,} of {total:,} batches (3 candidates kept)"
    assert stopped_share(message, last) == pytest.approx(done / total)
    assert stopped_share("cancelled while measuring", last) == pytest.approx(
        (done - behind) / total
    )
    assert stopped_share("", None) == 0.0


def test_classify_s_features_phase_is_measured_and_counted_in_the_estimate(store: Store) -> None:
    """At 300,000 episodes a classify of 80 was quoted 5 min and took 12: its features
    phase (embedding each classified episode) took a third of the run and was not in
    the estimate. Now the phase's measured pace per episode is part of it."""
    assert measured_rates(store, "/m/a.gguf").features_per_episode_s == DEFAULT_FEATURES_S
    call = [("classify", 800, 0, 4.0)]
    _traced_run(store, "/m/a.gguf", "classify", call, {"classified": 10, "features_ms": 20_000})
    _traced_run(store, "/m/a.gguf", "classify", call, {"classified": 30, "features_ms": 100_000})
    _traced_run(store, "/m/a.gguf", "classify", call, {"classified": 0, "features_ms": 9_000})
    _traced_run(store, "/m/b.gguf", "classify", call, {"classified": 1, "features_ms": 99_000})
    rates = measured_rates(store, "/m/a.gguf")
    assert rates.features_per_episode_s == pytest.approx(120.0 / 40)
    plan = plan_run("classify", 8, rates, Settings())
    assert plan.later_seconds == pytest.approx(8 * 3.0)
    assert plan.seconds == pytest.approx(8 * 4.0 + 8 * 3.0)
    assert plan.speeds() == "4.0 s each"  # the calls' pace, without the features phase
    assert plan_run("distill", 8, rates, Settings()).later_seconds == 0.0


def test_the_remaining_time_counts_the_later_phase_and_then_takes_it_as_its_prior() -> None:
    tracker = RemainingTime(30.0, later_seconds=10.0)  # 2 episodes of 10 s, then features
    assert tracker.remaining(0.0) == pytest.approx(30.0)
    assert tracker.update(Progress("classify", 0, 2), 0.0) == pytest.approx(30.0)
    assert tracker.update(Progress("classify", 1, 2), 10.0) == pytest.approx(20.0)
    assert tracker.update(Progress("classify", 2, 2), 20.0) == pytest.approx(10.0)
    assert tracker.update(Progress("features", 0, 5), 20.0) == pytest.approx(10.0)
    assert tracker.update(Progress("features", 5, 5), 30.0) == 0.0


@settings(deadline=None)
@given(
    n=st.integers(min_value=1, max_value=50),
    per_item=st.floats(min_value=0.01, max_value=100.0),
    later=st.floats(min_value=0.0, max_value=1000.0),
)
@example(n=1, per_item=1.0, later=0.0)
def test_with_a_right_two_phase_estimate_the_time_left_is_exact(
    n: int, per_item: float, later: float
) -> None:
    tracker = RemainingTime(n * per_item + later, later_seconds=later)
    for k in range(n + 1):
        left = tracker.update(Progress("classify", k, n), k * per_item)
        assert left == pytest.approx((n - k) * per_item + later)


def test_the_speeds_follow_the_newest_calls_more_than_the_older_ones(store: Store) -> None:
    """60 calls at a busy load (8 s each), then 20 at an idle one (2 s each): the next
    run is quoted nearer the idle pace than the plain mean of all 80 (6.5 s) would be.
    Before, 80 calls at load 12 quoted a run at load 1.8 as 3 min; it took 48 s."""
    _traced_run(store, "/m/a.gguf", "classify", [("classify", 800, 0, 8.0)] * 60)
    _traced_run(store, "/m/a.gguf", "classify", [("classify", 800, 0, 2.0)] * 20)
    each = plan_run("classify", 1, measured_rates(store, "/m/a.gguf"), Settings()).seconds
    each -= DEFAULT_FEATURES_S
    assert 2.0 < each < 4.5


@settings(deadline=None)
@given(seconds=st.floats(min_value=0.01, max_value=1000.0), calls=st.integers(1, 60))
@example(seconds=3.0, calls=1)
def test_calls_all_of_one_pace_are_fitted_to_that_pace(seconds: float, calls: int) -> None:
    """Weighing by recency changes nothing when every call took the same time."""
    from curator.pipeline.eta import _fit

    fitted = _fit([(800.0, 0.0, seconds)] * calls)
    assert fitted is not None and fitted[0] * 800 == pytest.approx(seconds)

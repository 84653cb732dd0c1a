"""How long a run will take: before it starts, and while it goes.

Before a run, the estimate is built from what the run will ask of the model: how many
calls (classify: one prompt per episode; distill: extract, refine and importance per
batch of episodes), how many prompt tokens each evaluates, how many tokens each writes
(typically, and at most: the output budgets the run will use), and the speeds at which
this model evaluates prompts and generates tokens *on this machine*. Those speeds and
typical sizes are measured from the trace of the model's earlier runs (every call's
tokens in, tokens out and seconds are recorded there), so the quoted figure follows the
machine, the model and the settings rather than a per-episode constant that a single
looping call could make six times too short. Before any call of the model was traced
the estimate says so and starts from documented defaults.

While a run goes, :class:`RemainingTime` turns progress reports into "about 3 min left":
the remaining items times the measured mean seconds per item, blended with the prior
estimate while only a few items are done, so it converges on the truth as items finish.

Qt-free: the window and tests use the same arithmetic.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from curator.core.wording import plural
from curator.pipeline.distill import EXPECTED_TOKENS, MAX_BATCH_EPISODES, STEP_ORDER
from curator.pipeline.progress import Progress
from curator.pipeline.run_history import FEATURES_MS, FINISHED_STATUSES, format_duration
from curator.store.db import Store
from curator.store.models import Run, TraceStep
from curator.store.settings import Settings
from curator.store.snapshot import tuples

DEFAULT_PROMPT_TOKENS_PER_S = 150.0
"""Prompt evaluation before anything is measured: a 7-9B model on a laptop CPU."""

DEFAULT_TOKENS_PER_S = 8.0
"""Generation before anything is measured: the same model and machine."""

DEFAULT_FEATURES_S = 0.3
"""Seconds a classify run's features phase takes per classified episode (embedding it)
before measured: the demo model's embedding of a short episode on a laptop CPU."""

MAX_FEATURES_S = 600.0
"""A features pace beyond this many seconds per episode is a damaged stat, not a measure
(embedding one episode takes well under a second even on a slow CPU)."""

FEATURE_RUNS = 5
"""The newest finished classify runs whose features phase makes up its measured pace."""

DEFAULT_PROMPT_TOKENS: dict[str, float] = {
    "classify": 600.0,
    "extract": 2000.0,
    "refine": 700.0,
    "importance": 500.0,
}
"""Prompt tokens one call evaluates (instructions, identity, the episodes) before measured."""

DEFAULT_OUTPUT_TOKENS: dict[str, float] = {"classify": 0.0, "importance": 60.0, **EXPECTED_TOKENS}
"""Tokens one call typically writes before measured (classify scores labels: none)."""

TRACE_SAMPLE = 400
"""The newest calls of the model that make up its measured speeds and sizes."""

RECENCY = 0.95
"""The weight of a traced call relative to the next newer one in the speed fit (half of
the weight lies in the newest 14 calls): speeds follow the machine's present load."""

BLEND_ITEMS = 3
"""Items after which the live estimate is the measured pace alone (before: blended)."""

UNMEASURED = "no run measured yet for this model: first estimate from a default"


@dataclass(frozen=True)
class TokenRates:
    """This model's measured speeds on this machine, and the typical size of its calls."""

    prompt_per_s: float = DEFAULT_PROMPT_TOKENS_PER_S
    generate_per_s: float = DEFAULT_TOKENS_PER_S
    calls: int = 0
    """How many traced calls they were measured on (0: the defaults)."""
    prompt_tokens: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_PROMPT_TOKENS))
    output_tokens: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_OUTPUT_TOKENS))
    episodes_per_batch: float = float(MAX_BATCH_EPISODES)
    features_per_episode_s: float = DEFAULT_FEATURES_S
    """Classify's features phase, seconds per classified episode (see :data:`FEATURES_MS`)."""

    def call_seconds(self, prompt_tokens: float, output_tokens: float) -> float:
        return prompt_tokens / self.prompt_per_s + output_tokens / self.generate_per_s

    def source(self) -> str:
        if not self.calls:
            return f"{UNMEASURED[0].upper()}{UNMEASURED[1:]}."
        return f"Measured on this machine from this model's last {plural(self.calls, 'call')}."


def _fit(samples: list[tuple[float, float, float]]) -> tuple[float, float] | None:
    """Seconds per prompt token and per generated token, least squares and non-negative,
    from (prompt tokens, output tokens, seconds) of traced calls, newest first; None when
    unfit. Each call weighs :data:`RECENCY` times the next newer one: the machine's speed
    moves with its load, and 80 calls made at load 12 quoted a run at an idle load 1.8
    four times too long, weighed as much as the 20 calls just before it."""
    weights = [RECENCY**k for k in range(len(samples))]
    weighted = [(w, p, o, s) for w, (p, o, s) in zip(weights, samples, strict=True)]
    spp = sum(w * p * p for w, p, _, _ in weighted)
    soo = sum(w * o * o for w, _, o, _ in weighted)
    spo = sum(w * p * o for w, p, o, _ in weighted)
    sps = sum(w * p * s for w, p, _, s in weighted)
    sos = sum(w * o * s for w, _, o, s in weighted)
    det = spp * soo - spo * spo
    if det > 1e-9 * max(spp * soo, 1.0):
        a = (sps * soo - sos * spo) / det
        b = (sos * spp - sps * spo) / det
        if a > 0 and b > 0:
            return a, b
    # Collinear or a negative share: the one-variable fits, the better of them.
    options = []
    if spp > 0:
        options.append((sps / spp, 0.0))
    if soo > 0:
        options.append((0.0, sos / soo))
    if not options:
        return None

    def error(ab: tuple[float, float]) -> float:
        return sum(w * (ab[0] * p + ab[1] * o - s) ** 2 for w, p, o, s in weighted)

    return min(options, key=error)


def measured_rates(store: Store, model_path: str) -> TokenRates:
    """The model's speeds and call sizes from the trace of its runs (defaults where unknown).

    Every traced call is ``seconds = prompt tokens / prompt speed + output / generation
    speed``; both speeds come out of one least-squares fit over the newest calls, so a
    distill-only history still separates reading from writing. A speed the history cannot
    tell (classify calls write nothing) keeps its default.
    """
    with store.read():
        rows = tuples(
            TraceStep.select(
                TraceStep.step,
                TraceStep.tokens_in,
                TraceStep.cached_tokens,
                TraceStep.tokens_out,
                TraceStep.seconds,
            )
            .join(Run)
            .where((Run.model_path == model_path) & (TraceStep.seconds > 0))
            .order_by(TraceStep.id.desc())
            .limit(TRACE_SAMPLE)
        )
        batches = _finished_runs("distill", model_path, 5)
        classify_runs = _finished_runs("classify", model_path, FEATURE_RUNS)
    features = _features_pace(classify_runs)
    if not rows:
        return TokenRates(features_per_episode_s=features)
    samples = [
        (float(max(0, (t_in or 0) - (cached or 0))), float(t_out or 0), float(sec))
        for _, t_in, cached, t_out, sec in rows
    ]
    fitted = _fit(samples)
    prompt_per_s, generate_per_s = DEFAULT_PROMPT_TOKENS_PER_S, DEFAULT_TOKENS_PER_S
    if fitted is not None:
        a, b = fitted
        prompt_per_s = 1.0 / a if a > 0 else prompt_per_s
        generate_per_s = 1.0 / b if b > 0 else generate_per_s
    prompt_tokens = dict(DEFAULT_PROMPT_TOKENS)
    output_tokens = dict(DEFAULT_OUTPUT_TOKENS)
    for step in DEFAULT_PROMPT_TOKENS:
        mine = [(p, o) for (name, *_), (p, o, _) in zip(rows, samples, strict=True) if name == step]
        if mine:
            prompt_tokens[step] = sum(p for p, _ in mine) / len(mine)
            output_tokens[step] = sum(o for _, o in mine) / len(mine)
    sizes = [
        (r.stats or {}).get("episodes", 0) / (r.stats or {}).get("batches", 0)
        for r in batches
        if isinstance((r.stats or {}).get("batches"), int) and (r.stats or {}).get("batches")
    ]
    per_batch = sum(sizes) / len(sizes) if sizes else float(MAX_BATCH_EPISODES)
    return TokenRates(
        prompt_per_s,
        generate_per_s,
        len(rows),
        prompt_tokens,
        output_tokens,
        max(1.0, per_batch),
        features,
    )


def _finished_runs(kind: str, model_path: str, newest: int) -> list[Run]:
    """The stats of this model's ``newest`` finished runs of ``kind``, newest first."""
    return list(
        Run.select(Run.stats)
        .where(
            (Run.kind == kind) & (Run.model_path == model_path) & Run.status.in_(FINISHED_STATUSES)
        )
        .order_by(Run.id.desc())
        .limit(newest)
    )


def _features_pace(runs: list[Run]) -> float:
    """Seconds of the features phase per classified episode over ``runs`` (their stats
    name both); the default when none timed it. A model server that cannot embed gives a
    pace near zero, measured like any other. A run whose figures are not a plausible
    measure (a bool, infinite, negative, or beyond :data:`MAX_FEATURES_S` an episode:
    stats are JSON anyone may have edited) is left out rather than quoted as "inf days"."""
    spent = classified = 0.0
    for run in runs:
        stats = run.stats if isinstance(run.stats, dict) else {}
        ms, count = stats.get(FEATURES_MS), stats.get("classified")
        if isinstance(ms, bool) or isinstance(count, bool):
            continue
        if not (isinstance(ms, int | float) and isinstance(count, int) and count > 0):
            continue
        if 0 <= ms <= 1000.0 * MAX_FEATURES_S * count:  # false for NaN and infinity too
            spent += ms / 1000.0
            classified += count
    return spent / classified if classified else DEFAULT_FEATURES_S


@dataclass(frozen=True)
class RunPlan:
    """What a run of ``episodes`` will ask of the model, and how long that takes."""

    kind: str
    episodes: int
    calls: int
    seconds: float
    """Typical: each call writes what this model's calls of that step wrote so far."""
    worst_seconds: float
    """Every call writes its whole output budget (the bound a looping call runs into)."""
    rates: TokenRates
    later_seconds: float = 0.0
    """The part of both figures spent after the calls' phase: classify's features."""

    def speeds(self) -> str:
        """The pace the figure rests on. Classify: seconds a call (its prompt is mostly a
        cached prefix, and scoring the labels costs evaluations of their own, so a
        "prompt tokens/s" would read far slower than the model is); distill: the two
        token speeds its generating calls are made of."""
        if self.kind == "classify":
            each = (self.seconds - self.later_seconds) / self.calls if self.calls else 0.0
            return f"{each:.1f} s each" if each < 10 else f"{each:.0f} s each"
        prompt = f"{self.rates.prompt_per_s:.0f} prompt tokens/s"
        return f"{prompt}, {self.rates.generate_per_s:.1f} tokens/s"


def output_budgets(settings: Settings) -> dict[str, int]:
    """The most tokens each step's call may write under ``settings`` (as distill caps them)."""
    top = settings.max_output_tokens
    return {
        "classify": 0,
        "extract": min(top, settings.n_ctx // 4),
        "refine": top,
        "importance": top,
    }


def plan_run(kind: str, episodes: int, rates: TokenRates, settings: Settings) -> RunPlan:
    """The calls a run makes and their typical and worst-case seconds (see module doc)."""
    budgets = output_budgets(settings)
    if kind == "classify":
        steps: tuple[str, ...] = ("classify",)
        units = episodes
    else:
        steps = STEP_ORDER
        units = math.ceil(episodes / rates.episodes_per_batch) if episodes > 0 else 0
    typical = worst = 0.0
    for step in steps:
        prompt = rates.prompt_tokens.get(step, DEFAULT_PROMPT_TOKENS["classify"])
        written = min(rates.output_tokens.get(step, 0.0), budgets[step])
        typical += rates.call_seconds(prompt, written)
        worst += rates.call_seconds(prompt, budgets[step])
    later = episodes * rates.features_per_episode_s if kind == "classify" else 0.0
    return RunPlan(
        kind,
        episodes,
        units * len(steps),
        units * typical + later,
        units * worst + later,
        rates,
        later,
    )


def _family(step: str) -> str:
    """Distill's steps (extract, refine, importance, stage) are one phase: its batches."""
    return "distill" if step in {*STEP_ORDER, "stage"} else step


class RemainingTime:
    """The live "about N min left" of a running run (see module doc).

    ``prior_seconds`` is the estimate of the whole run made before it started (None:
    none). Each :meth:`update` takes a progress report and the time; the answer is the
    remaining items times the seconds per item, where that is the measured mean
    (elapsed until the latest finished item over the items finished) blended with the
    prior's share per item while fewer than :data:`BLEND_ITEMS` are done, less the time
    already spent on the current item (but never below the items not yet started).
    A report of another step or total (classify's features after its episodes) starts
    the measurement over, with ``later_seconds`` (the estimate's share for what follows
    the first phase, included in ``prior_seconds``) as its prior, or none.
    """

    def __init__(self, prior_seconds: float | None, later_seconds: float = 0.0) -> None:
        later = later_seconds if prior_seconds is not None else 0.0
        self.prior_seconds = None if prior_seconds is None else max(0.0, prior_seconds - later)
        self._later = max(0.0, later)
        self._phase: tuple[str, int] | None = None
        self._start = 0.0
        self._done = 0
        self._done_at = 0.0

    def update(self, progress: Progress, now: float) -> float | None:
        phase = (_family(progress.step), progress.total)
        if phase != self._phase:
            if self._phase is not None:  # a new phase: the estimate's share for it, if any
                self.prior_seconds = self._later or None
                self._later = 0.0
            self._phase = phase
            self._start = self._done_at = now
            self._done = 0
        done = min(max(progress.done, 0), progress.total)
        if done > self._done:
            self._done, self._done_at = done, now
        return self.remaining(now)

    def per_item(self) -> float | None:
        total = self._phase[1] if self._phase else 0
        prior = self.prior_seconds / total if self.prior_seconds is not None and total else None
        if self._done == 0:
            return prior
        measured = (self._done_at - self._start) / self._done
        if prior is None:
            return measured
        weight = min(1.0, self._done / BLEND_ITEMS)
        return weight * measured + (1.0 - weight) * prior

    def remaining(self, now: float) -> float | None:
        """Seconds left at ``now`` (None before anything can be said)."""
        if self._phase is None:  # not started yet (the model loads): the estimate
            return None if self.prior_seconds is None else self.prior_seconds + self._later
        left = self._phase[1] - self._done
        if left <= 0:  # this phase is done (or had nothing to do, a total of 0)
            return self._later
        per_item = self.per_item()
        if per_item is None:
            return None
        since = max(0.0, now - self._done_at)
        return max((left - 1) * per_item, left * per_item - since) + self._later


def remaining_text(seconds: float | None) -> str:
    """ "about 3 min left", or "" when nothing can be said yet."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    if seconds <= 0:
        return "finishing"
    return f"about {format_duration(seconds)} left"


_STOPPED = re.compile(r"after ([\d,]+) of ([\d,]+)")


def stopped_share(message: str, last: Progress | None) -> float:
    """The share of a stopped run the bar shows: the one its text names.

    A cancelled run's message says where it stopped ("cancelled after 1 of 5 batches");
    the last progress report may be a step behind it (distill's importance call of the
    batch that then finished) or count differently (classify's skipped episodes), so the
    bar follows the figures of the text, and the last report only when the text has none.
    """
    found = _STOPPED.search(message or "")
    if found:
        done, total = (int(g.replace(",", "")) for g in found.groups())
        if total > 0:
            return min(max(done / total, 0.0), 1.0)
    if last is None or last.total <= 0:
        return 0.0
    return min(max(last.done / last.total, 0.0), 1.0)

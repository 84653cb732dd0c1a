"""Steps 1-3: distil labelled episodes into a *staged* run of candidate patterns.

Per category (constitutional, uncategorized; noise never) the episodes not yet distilled
are packed into batches that fit the context, and each batch goes through three
single-task calls:

1. extract  - "- " lines: what keeps happening (system prompt: identity and axioms),
   grammar-bounded to ``extract_max_lines`` lines (default 12) of at most 300
   characters, so a batch ends when its list does;
2. refine   - a JSON array of strings, grammar-constrained, so it always parses;
3. importance - a JSON array of exactly N numbers in [0, 1] (a grammar generated for N).

Then the quality gate (settings ``min_chars``/``min_words``, and ``drop_degenerate``:
loops and debris, :mod:`curator.core.degenerate`; every drop is traced with its reasons
and counted by kind) and the dedup gate against the active patterns decide SKIP / UPDATE / ADD.
Before a batch's candidates are written, the guard judges them (:mod:`curator.pipeline
.guard`: the configured model's yes/no second opinion, one scored call each, and the
guard learned from the reviewer's rejections); its flags are stored with them. The result
is Candidate rows with their source episodes; nothing in Knowledge changes until a person
reviews and commits the run.

Decisions (documented here because the review and the window rely on them):

* A generating call that ends in a loop is stopped there (``stop_reason`` ``loop``, the
  trace's ``loop`` says what repeated; counted in ``loops_stopped``), and extract keeps
  one copy of the looping unit: the copies would only be refined into repeats.
* The quality gate runs before the importance call (not after): it only looks at the
  text, so the surviving candidates are the same, and the model scores only those.
* Which episodes a run takes, and how they are batched: :mod:`curator.pipeline.distill_plan`.
* Candidate sources: every episode of the candidate's batch (the model does not say
  which episode a pattern came from).
* The dedup pool grows over the run (:mod:`curator.pipeline.distill_pool`): a batch is
  gated against the active patterns plus the candidates ADDed by earlier batches of the
  same run. A SKIP/UPDATE whose best match is such an earlier candidate keeps its
  computed ``proposed_action`` but has ``proposed_target`` NULL (it is not a Pattern
  yet); the matched candidate's ordinal is in the ``dedup`` trace step.
* A run that processed episodes ends ``staged`` even with zero candidates (reviewing it
  marks those episodes distilled); a run with nothing to distill ends ``done``.
* Staged candidates are written in one transaction at the end of each batch, so a
  cancelled run keeps its finished batches (status ``cancelled``); a batch whose refine
  or importance output could not be used even after one retry is skipped and counted in
  ``failed_batches`` (its trace says why), never half-staged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from curator.core.dedup import Decision, gate
from curator.core.degenerate import COUNT_KEYS
from curator.core.parsing import ParseError, parse_number_array, parse_string_array
from curator.core.quality import QualityGate, count_kinds
from curator.core.textsafety import pattern_line
from curator.core.wording import plural
from curator.errors import CuratorError
from curator.llm.backend import Backend, Completion, StopRequested, require_finite
from curator.llm.grammars import (
    bullet_list_grammar,
    number_array_grammar,
    number_array_max_tokens,
    string_array_grammar,
)
from curator.llm.prompts import PromptTemplate, load_prompt, numbered
from curator.pipeline.distill_plan import (
    MAX_BATCH_EPISODES,
    TOKEN_MARGIN,
    Batch,
    plan_batches,
    render_prefix,
)
from curator.pipeline.distill_pool import Pool, stage_rows
from curator.pipeline.guard import StagingGuard, staging_guard
from curator.pipeline.progress import Cancelled, GenerationRate, Progress, TaskState
from curator.pipeline.runlog import (
    RunResult,
    TraceRecord,
    add_trace,
    one_line,
    recorded_run,
    trace_fields,
)
from curator.store.db import Store
from curator.store.identity import Identity, current_identity
from curator.store.models import (
    DISTILLABLE_LABELS,
    Candidate,
    CandidateEpisode,
    Pattern,
    Run,
    TraceStep,
)
from curator.store.settings import Settings, load_settings
from curator.store.snapshot import tuples

__all__ = ["RunResult", "distill"]

RETRY_TEMPERATURE = 0.7
EXTRACT_REPEAT_PENALTY = 1.15
"""Free text only: greedy decoding of a small model otherwise loops on one line."""
PAD_IMPORTANCE = 0.5

STEP_ORDER = ("extract", "refine", "importance")
"""The generating calls of one batch, in order (a batch's progress moves a third per step)."""

EXPECTED_TOKENS = {"extract": 400, "refine": 300}
"""About what one call writes (12 observation lines; their JSON rewrite), for the progress
bar only; importance is bounded by its grammar's own maximum."""


class _Distiller:
    """The state of one distillation run (one instance per call of :func:`distill`)."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        state: TaskState,
        run_id: int,
        prompts: dict[str, PromptTemplate],
        identity: Identity,
        settings: Settings,
        n_batches: int,
    ) -> None:
        self.store = store
        self.backend = backend
        self.state = state
        self.run_id = run_id
        self.prompts = prompts
        self.identity = identity
        self.settings = settings
        self.n_batches = n_batches
        self.batches_done = 0
        self.max_out = settings.max_output_tokens
        self.seed = settings.seed
        self.quality = QualityGate(settings.min_chars, settings.min_words, settings.drop_degenerate)
        self.counts: dict[str, int] = {
            "episodes": 0,
            "batches": 0,
            "candidates": 0,
            "dropped_quality": 0,
            **dict.fromkeys(COUNT_KEYS.values(), 0),
            "loops_stopped": 0,
            "ADD": 0,
            "UPDATE": 0,
            "SKIP": 0,
            "failed_batches": 0,
            "repaired": 0,
            "retries": 0,
            "tokens_out": 0,
            "guard_flagged": 0,
        }
        self.guard = StagingGuard(None, None)  # distill() sets the run's guard
        self.episode_ids: list[int] = []
        self.next_ordinal = 1
        active = (
            Pattern.select(Pattern.id, Pattern.text, Pattern.revision)
            .where(Pattern.status == "active")
            .order_by(Pattern.id)
        )
        rows = tuples(active)
        self.pool = Pool([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    # -- one LLM call ----------------------------------------------------------------------

    def _prefix(self, name: str, category: str) -> str:
        return render_prefix(self.backend, self.prompts[name], self.identity, category)

    def _room(self, prefix: str, item: str) -> int:
        """Output tokens left in the context after this prompt (an upper estimate)."""
        used = len(self.backend.tokenize(prefix)) + len(self.backend.tokenize(item))
        return self.backend.n_ctx - used - TOKEN_MARGIN

    def _call(
        self,
        step: str,
        batch: Batch,
        prefix: str,
        item: str,
        max_tokens: int,
        grammar: str | None,
        attempt: int,
        repeat_penalty: float = 1.0,
        stop_loops: bool = True,
    ) -> Completion:
        state = self.state
        rate = GenerationRate()  # from the first token: the prompt's time is not generation
        produced = 0
        label = f"batch {batch.index + 1}/{self.n_batches} ({batch.category}): {step}"
        # The batch's share done: its finished steps, plus this step's tokens against what
        # it is expected to write (capped below the next step: the real length is unknown).
        index = STEP_ORDER.index(step)
        expected = max(1, min(max_tokens, EXPECTED_TOKENS.get(step, max_tokens)))

        def report(per_s: float = 0.0) -> None:
            within = (index + min(produced / expected, 0.95)) / len(STEP_ORDER)
            message = f"{label}, {produced:,} tokens" if produced else label
            state.report(
                Progress(step, self.batches_done, self.n_batches, per_s, message, within=within)
            )

        report()

        def on_token(text: str) -> None:
            nonlocal produced
            produced += 1
            state.token(text)
            rate.token()
            # Every token: the receiver throttles (the window repaints ~10 times a second).
            report(rate.per_s)

        completion = self.backend.complete(
            prefix,
            item,
            max_tokens=max(1, max_tokens),
            grammar=grammar,
            on_token=on_token,
            should_stop=lambda: state.cancelled,
            temperature=None if attempt == 1 else RETRY_TEMPERATURE,
            seed=self.seed + attempt - 1,
            repeat_penalty=repeat_penalty,
            stop_loops=stop_loops,
        )
        self.counts["tokens_out"] += completion.tokens_out
        self.counts["loops_stopped"] += completion.loop is not None
        if completion.stop_reason == "cancelled":
            self._trace(step, batch, completion, attempt, None, "cancelled")
            raise Cancelled
        return completion

    def _trace(
        self, step: str, batch: Batch, c: Completion, attempt: int, parsed: Any, error: str
    ) -> None:
        details = {
            "result": parsed,
            "stop_reason": c.stop_reason,
            "input_truncated": c.truncated,
            "episode_ids": batch.episode_ids,
        }
        if c.loop is not None:
            details["loop"] = f"stopped after {c.tokens_out:,} tokens: {c.loop.describe()}"
        add_trace(
            self.store,
            self.run_id,
            TraceRecord(
                step=step,
                batch=batch.index,
                category=batch.category,
                prompt=self.prompts[step],
                raw_output=c.text,
                parsed=details,
                tokens_in=c.tokens_in,
                tokens_out=c.tokens_out,
                cached_tokens=c.cached_tokens,
                seconds=c.seconds,
                attempt=attempt,
                error=error,
            ),
        )

    # -- the three steps -------------------------------------------------------------------

    def extract(self, batch: Batch) -> str:
        prefix = self._prefix("extract", batch.category)
        # The batches were planned to leave this much room; a single episode too long for
        # it is truncated by the backend to leave it too.
        budget = min(self.max_out, self.backend.n_ctx // 4)
        grammar = bullet_list_grammar(self.settings.extract_max_lines)
        c = self._call(
            "extract", batch, prefix, batch.item, budget, grammar, 1, EXTRACT_REPEAT_PENALTY
        )
        notes = (c.text[: c.loop.start] + c.loop.unit if c.loop else c.text).strip()
        self._trace("extract", batch, c, 1, None, "" if notes else "empty output")
        return notes

    def refine(self, batch: Batch, notes: str) -> list[str] | None:
        prefix = self._prefix("refine", batch.category)
        budget = min(self.max_out, max(1, self._room(prefix, notes)))
        grammar = string_array_grammar(budget)
        for attempt in (1, 2):
            c = self._call("refine", batch, prefix, notes, budget, grammar, attempt)
            try:
                items = [pattern_line(text) for text in parse_string_array(c.text)]
            except ParseError as exc:
                self._trace("refine", batch, c, attempt, None, one_line(exc))
                self.counts["retries"] += attempt == 1
                continue
            items = [text for text in items if text]
            self._trace("refine", batch, c, attempt, items, "")
            return items
        return None

    def importance(self, batch: Batch, texts: list[str]) -> list[float] | None:
        prefix = self._prefix("importance", batch.category)
        item = numbered(texts)
        n = len(texts)
        budget = min(self.max_out, number_array_max_tokens(n), max(1, self._room(prefix, item)))
        grammar = number_array_grammar(n)
        for attempt in (1, 2):
            # a list of numbers repeats its shape by design: no loop stop
            c = self._call("importance", batch, prefix, item, budget, grammar, attempt, 1.0, False)
            try:
                scores = parse_number_array(c.text, expected_len=n)
            except ParseError as exc:
                error = one_line(exc)
                if attempt == 2:
                    repaired = self._repair(c.text, n)
                    if repaired is not None:
                        scores, note = repaired
                        self.counts["repaired"] += 1
                        self._trace("importance", batch, c, attempt, scores, note)
                        return scores
                self._trace("importance", batch, c, attempt, None, error)
                self.counts["retries"] += attempt == 1
                continue
            self._trace("importance", batch, c, attempt, scores, "")
            return scores
        return None

    @staticmethod
    def _repair(text: str, n: int) -> tuple[list[float], str] | None:
        """Pad or cut a wrong-length score list, with a note for the trace (never silent)."""
        try:
            got = parse_number_array(text)
        except ParseError:
            return None
        if len(got) < n:
            note = (
                f"repaired: {plural(len(got), 'score')} for {plural(n, 'pattern')}, "
                f"padded with {PAD_IMPORTANCE}"
            )
            return got + [PAD_IMPORTANCE] * (n - len(got)), note
        return got[
            :n
        ], f"repaired: {plural(len(got), 'score')} for {plural(n, 'pattern')}, extra ones dropped"

    # -- gates and staging -----------------------------------------------------------------

    def run_batch(self, batch: Batch) -> None:
        self.state.check()
        notes = self.extract(batch)
        texts: list[str] = []
        if notes:
            refined = self.refine(batch, notes)
            if refined is None:
                self.counts["failed_batches"] += 1
                self._finish_batch(batch, [], [], [])
                return
            texts = refined
        kept, dropped = self.quality.filter(texts)
        quality = TraceRecord(
            step="quality",
            batch=batch.index,
            category=batch.category,
            parsed={
                "kept": kept,
                "dropped": [{"text": r.text, "reasons": list(r.reasons)} for r in dropped],
            },
        )
        self.counts["dropped_quality"] += len(dropped)
        for kind, n in count_kinds(dropped).items():
            self.counts[COUNT_KEYS[kind]] += n
        scores: list[float] = []
        if kept:
            found = self.importance(batch, kept)
            if found is None:
                self.counts["failed_batches"] += 1
                self._finish_batch(batch, [], [], [quality])
                return
            scores = found
        decisions = self._gate(kept)
        self._finish_batch(batch, kept, list(zip(scores, decisions, strict=True)), [quality])

    def _gate(self, texts: list[str]) -> list[Decision]:
        if not texts:
            return []
        return gate(
            texts,
            self.pool.texts(),
            skip=self.settings.skip_threshold,
            update=self.settings.update_threshold,
        )

    def _finish_batch(
        self,
        batch: Batch,
        texts: list[str],
        scored: list[tuple[float, Decision]],
        extra_trace: list[TraceRecord],
    ) -> None:
        """Stage the batch's candidates, links and gate traces in ONE transaction."""
        require_finite("importance scores", [importance for importance, _ in scored])
        staged = stage_rows(
            self.pool,
            run_id=self.run_id,
            category=batch.category,
            first_ordinal=self.next_ordinal,
            texts=texts,
            scored=scored,
        )
        rows = staged.rows
        traces = list(extra_trace)
        guarded = self._guard_flags(batch, rows, traces)
        if rows:
            traces.append(
                TraceRecord(
                    step="dedup",
                    batch=batch.index,
                    category=batch.category,
                    parsed=staged.dedup_trace,
                )
            )
        self.episode_ids.extend(batch.episode_ids)
        self.counts["episodes"] += len(batch.episode_ids)
        self.counts["batches"] += 1
        with self.store.write():
            for row, flags in zip(rows, guarded, strict=True):
                candidate = Candidate.create(**row, guard_flags=flags)
                CandidateEpisode.insert_many(
                    [{"candidate": candidate.id, "episode": e} for e in batch.episode_ids]
                ).execute()
            for record in traces:
                TraceStep.create(**trace_fields(self.run_id, record))
            Run.update(stats=self.stats()).where(Run.id == self.run_id).execute()
        # Only now (the rows exist) do this batch's ADDs join the pool of later batches.
        self.pool.join(staged.added)
        self.next_ordinal += len(rows)
        self.counts["candidates"] += len(rows)
        for row in rows:
            self.counts[row["proposed_action"]] += 1
        self.batches_done += 1
        self.state.report(
            Progress(
                "stage",
                self.batches_done,
                self.n_batches,
                message=(
                    f"batch {batch.index + 1}/{self.n_batches}: {plural(len(rows), 'candidate')}"
                ),
            )
        )

    def _guard_flags(
        self, batch: Batch, rows: list[dict[str, Any]], traces: list[TraceRecord]
    ) -> list[list[dict[str, Any]] | None]:
        """The guard's flags of the batch's candidates (:mod:`curator.pipeline.guard`);
        each model call's trace is added to ``traces``."""
        try:
            flags, calls = self.guard.judge(
                [row["text"] for row in rows], should_stop=lambda: self.state.cancelled
            )
        except StopRequested:
            raise Cancelled("cancelled during the guard's second opinion") from None
        if calls:  # one per candidate when the model was asked, else none
            for row, call in zip(rows, calls, strict=True):
                parsed = {"ordinal": row["ordinal"], **call.parsed}
                traces.append(
                    dataclasses.replace(
                        call, batch=batch.index, category=batch.category, parsed=parsed
                    )
                )
        self.counts["guard_flagged"] += sum(f is not None for f in flags)
        return flags

    def stats(self) -> dict[str, Any]:
        """The run's counters, plus the tokens the model wrote per staged candidate."""
        candidates = self.counts["candidates"]
        per_candidate = self.counts["tokens_out"] / candidates if candidates else None
        return {
            **self.counts,
            "tokens_per_candidate": per_candidate,
            "episode_ids": list(self.episode_ids),
        }


def distill(
    store: Store,
    backend: Backend,
    state: TaskState,
    *,
    categories: Sequence[str] = DISTILLABLE_LABELS,
    limit: int | None = None,
) -> RunResult:
    """Distil the pending episodes of ``categories`` into a staged run (see module doc).

    Returns normally when cancelled (status ``cancelled``, finished batches kept); any
    other failure marks the run ``failed`` and is re-raised.
    """
    for category in categories:
        if category not in DISTILLABLE_LABELS:
            raise CuratorError(
                f"cannot distill {category!r}: choose from {', '.join(DISTILLABLE_LABELS)}"
            )
    settings = load_settings(store)
    identity = current_identity(store)
    prompts = {name: load_prompt(name) for name in ("extract", "refine", "importance")}
    guard = staging_guard(store, settings, backend)
    if guard.opinion is not None:
        prompts["guard"] = guard.opinion.prompt
    max_out = settings.max_output_tokens
    out_reserve = min(max_out, backend.n_ctx // 4)
    batches = plan_batches(
        store, backend, prompts["extract"], identity, categories, limit, out_reserve
    )
    params: dict[str, Any] = {
        "categories": list(categories),
        "limit": limit,
        "batches": len(batches),
        "n_ctx": backend.n_ctx,
        "max_output_tokens": max_out,
        "extract_max_tokens": out_reserve,
        "max_batch_episodes": MAX_BATCH_EPISODES,
        "guard": guard.params,
        **{
            k: getattr(settings, k)
            for k in (
                "min_chars",
                "min_words",
                "skip_threshold",
                "update_threshold",
                "seed",
                "temperature",
            )
        },
    }
    with recorded_run(
        store,
        "distill",
        backend=backend,
        prompts=prompts,
        identity=identity,
        params=params,
        state=state,
    ) as run:
        worker = _Distiller(
            store, backend, state, run.id, prompts, identity, settings, len(batches)
        )
        worker.guard = guard
        run.stats = worker.stats()
        run.cancel_message = lambda: (
            f"cancelled after {worker.batches_done:,} of "
            f"{plural(len(batches), 'batch', 'batches')} "
            f"({plural(worker.counts['candidates'], 'candidate')} kept)"
        )
        state.report(
            Progress("extract", 0, len(batches), message=plural(len(batches), "batch", "batches"))
        )
        try:
            for batch in batches:
                worker.run_batch(batch)
        finally:
            run.stats = worker.stats()
        if not batches:
            run.finish("done", "nothing to distill: no labelled episode is waiting")
        else:
            from curator.pipeline.review import record_proposals

            with store.write():  # the proposals' audit events and the status change together
                record_proposals(store, run.id)
                run.finish("staged", "")
    counts = dict(worker.counts)
    if run.status == "staged":
        return RunResult(run.id, "staged", counts, _summary(counts))
    return RunResult(run.id, run.status, counts, run.message)


def _summary(counts: dict[str, int]) -> str:
    text = (
        f"staged {plural(counts['candidates'], 'candidate')} from "
        f"{plural(counts['episodes'], 'episode')} in "
        f"{plural(counts['batches'], 'batch', 'batches')} "
        f"(ADD {counts['ADD']}, UPDATE {counts['UPDATE']}, "
        f"SKIP {counts['SKIP']:,}; {counts['dropped_quality']:,} dropped by the quality gate"
    )
    kinds = [f"{counts[key]} {kind}" for kind, key in COUNT_KEYS.items() if counts.get(key)]
    if kinds:
        text += f": {', '.join(kinds)}"
    if counts.get("loops_stopped"):
        loops = counts["loops_stopped"]
        text += f"; {plural(loops, 'generation')} stopped in a loop"
    if counts["failed_batches"]:
        failed = counts["failed_batches"]
        text += f"; {plural(failed, 'batch', 'batches')} failed, see the trace"
    return text + ")"

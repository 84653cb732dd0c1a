"""Steps 1-3 on the real demo model: a staged run whose candidates passed both gates."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from curator.core.quality import QualityGate
from curator.errors import CuratorError
from curator.llm.backend import Completion
from curator.llm.prompts import load_prompt
from curator.pipeline.distill import distill
from curator.pipeline.distill_plan import distillable_episode_ids
from curator.pipeline.labels import relabel
from curator.pipeline.progress import TaskState
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import (
    ACTIONS,
    Candidate,
    CandidateEpisode,
    DecisionEvent,
    Episode,
    Pattern,
    Run,
    TraceStep,
)
from curator.store.settings import set_setting
from tests.conftest import LLM_TEST_SETTINGS

pytestmark = pytest.mark.llm


def knowledge_dump(store: Store) -> list[tuple[Any, ...]]:
    return store.execute("SELECT * FROM pattern ORDER BY id") + store.execute(
        "SELECT * FROM pattern_episode ORDER BY pattern_id, episode_id"
    )


LABEL_COLUMNS = ("model_label", "model_confidence", "human_label", "label", "label_by")


def classified_on_postgres(source: Path, url: str) -> Store:
    """The classified demo on PostgreSQL: the demo data, the tests' LLM settings, and the
    labels the session's classification gave each episode (matched by content)."""
    with Store(source, read_only=True) as sqlite:
        columns = ", ".join(LABEL_COLUMNS)
        labels = sqlite.execute(f"SELECT content_hash, {columns} FROM episode")
    store = Store(url)
    create_demo(store)
    for key, value in LLM_TEST_SETTINGS.items():
        set_setting(store, key, value)
    assignments = ", ".join(f"{c} = ?" for c in LABEL_COLUMNS)
    with store.write():
        for content_hash, *values in labels:
            store.execute(
                f"UPDATE episode SET {assignments} WHERE content_hash = ?",
                (*values, content_hash),
            )
    return store


@pytest.fixture
def engine() -> str:
    """SQLite, unless a test is parametrised over both engines."""
    return "sqlite"


@pytest.fixture
def classified_store(classified_demo, tmp_path: Path, engine: str, request):
    if engine == "sqlite":
        store = Store(classified_demo.copy_to(tmp_path))
    else:
        store = classified_on_postgres(classified_demo.path, request.getfixturevalue("pg_url"))
    yield store
    store.close()


def keep_one_episode_pending(store: Store) -> None:
    """Only the oldest constitutional episode is left to distil; a person labels the others
    noise. One batch of it shows the whole mechanism (the demo model, greedy, makes a
    candidate of it) at a fraction of the model's work for every pending episode."""
    pending = [
        i for c in ("constitutional", "uncategorized") for i in distillable_episode_ids(store, c)
    ]
    keep = distillable_episode_ids(store, "constitutional")[:1]
    relabel(store, [i for i in pending if i not in keep], "noise")


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_distill_stages_gated_candidates_with_sources(classified_store: Store, demo_backend):
    store = classified_store
    keep_one_episode_pending(store)
    before = knowledge_dump(store)
    eligible = {
        cat: set(distillable_episode_ids(store, cat)) for cat in ("constitutional", "uncategorized")
    }
    assert sum(len(ids) for ids in eligible.values()) > 0

    tokens: list[str] = []
    result = distill(store, demo_backend, TaskState(on_token=tokens.append))
    run = Run.get_by_id(result.run_id)
    assert (result.status, run.status, run.kind) == ("staged", "staged", "distill")
    assert tokens  # the steps streamed their output

    candidates = list(Candidate.select().where(Candidate.run == run.id).order_by(Candidate.ordinal))
    assert candidates, result.message
    assert [c.ordinal for c in candidates] == list(range(1, len(candidates) + 1))
    gate = QualityGate(min_chars=30, min_words=3)
    active = {p.id: p for p in Pattern.select().where(Pattern.status == "active")}
    for c in candidates:
        assert gate.check(c.text).ok, c.text
        assert c.proposed_action in ACTIONS and c.action is None
        assert 0.0 <= c.importance <= 1.0 and 0.0 <= c.proposed_ratio <= 1.0
        target = c.proposed_target_id
        if target is not None:
            assert c.proposed_action in ("SKIP", "UPDATE")
            assert c.target_revision == active[target].revision
        sources = [
            ce.episode.id
            for ce in CandidateEpisode.select().where(CandidateEpisode.candidate == c.id)
        ]
        assert sources and set(sources) <= eligible[c.category]
    assert result.counts["candidates"] == len(candidates)
    assert sum(result.counts[a] for a in ACTIONS) == len(candidates)
    # the pipeline's proposals open the audit trail
    assert DecisionEvent.select().join(Candidate).where(
        (Candidate.run == run.id) & (DecisionEvent.kind == "propose")
    ).count() == len(candidates)

    # the trace: every LLM call with its prompt hash, output, parse result and timings
    steps = list(TraceStep.select().where(TraceStep.run == run.id).order_by(TraceStep.id))
    hashes = {name: load_prompt(name).sha256 for name in ("extract", "refine", "importance")}
    for step in steps:
        if step.step in hashes:
            assert step.prompt_sha256 == hashes[step.step]
            assert step.tokens_in > 0 and step.seconds > 0
    assert run.prompts.keys() == hashes.keys()
    refine = [s for s in steps if s.step == "refine"]
    importance = [s for s in steps if s.step == "importance"]
    assert refine and importance
    # the grammar makes refine parse unless the call was stopped in a loop (then retried)
    assert all(
        (not s.error and isinstance(s.parsed["result"], list)) or s.parsed["stop_reason"] == "loop"
        for s in refine
    )
    assert all(not s.error for s in importance)  # the grammar makes them parse first time
    quality = {s.batch: s.parsed for s in steps if s.step == "quality"}
    for s in importance:
        assert len(s.parsed["result"]) == len(quality[s.batch]["kept"])

    # nothing reached Knowledge; the processed episodes are listed for the commit
    assert knowledge_dump(store) == before
    processed = set(run.stats["episode_ids"])
    # the extract notes are "- " lines (grammar-bounded), and the cost per candidate is kept
    extracts = [s for s in steps if s.step == "extract"]
    assert extracts and all(
        line.startswith("- ") for s in extracts for line in s.raw_output.splitlines()
    )
    per_candidate = run.stats["tokens_per_candidate"]
    assert per_candidate == run.stats["tokens_out"] / len(candidates) > 0
    assert processed == set().union(*eligible.values())
    assert Episode.select().where(Episode.distilled_at.is_null(False)).count() == 0

    # A second run finds nothing: the staged run has claimed those episodes.
    again = distill(store, demo_backend, TaskState())
    assert again.status == "done" and again.counts["candidates"] == 0
    assert "nothing to distill" in again.message
    assert TraceStep.select().where(TraceStep.run == again.run_id).count() == 0


def test_cancel_from_another_thread_stops_at_the_next_token(
    classified_store: Store, demo_backend
) -> None:
    """Counted in tokens, not seconds (a loaded machine stretches seconds): after the
    cancel at most the token already on its way arrives, and no other call starts."""
    first_token = threading.Event()
    tokens: list[str] = []
    at_cancel: list[int] = []

    def token(text: str) -> None:
        tokens.append(text)
        first_token.set()

    state = TaskState(on_token=token)

    def canceller() -> None:
        if first_token.wait(120):
            at_cancel.append(len(tokens))
            state.cancel()

    thread = threading.Thread(target=canceller)
    thread.start()
    try:
        # One episode: the cancel comes at the first token, the other episodes never matter.
        result = distill(classified_store, demo_backend, state, limit=1)
    finally:
        state.cancel()
        thread.join(10)
    assert at_cancel, "no token was generated"
    assert len(tokens) - at_cancel[0] <= 1
    assert result.status == "cancelled"
    run = Run.get_by_id(result.run_id)
    assert run.status == "cancelled" and run.finished_at is not None
    last = TraceStep.select().where(TraceStep.run == run.id).order_by(TraceStep.id.desc()).get()
    assert last.error == "cancelled"
    # A cancelled run does not claim its episodes: the next run may take them again.
    assert distillable_episode_ids(classified_store, "uncategorized") or distillable_episode_ids(
        classified_store, "constitutional"
    )


def test_noise_is_never_distilled(classified_store: Store, demo_backend) -> None:
    runs = Run.select().count()
    with pytest.raises(CuratorError, match="cannot distill 'noise'"):
        distill(classified_store, demo_backend, TaskState(), categories=("noise",))
    assert Run.select().count() == runs


class FaultInjectingBackend:
    """The real backend, with canned outputs for chosen steps (to provoke bad output).

    ``outputs[step]`` is a list of texts returned by successive calls of that step; a
    step is recognised by its prompt's system text inside the prefix.
    """

    def __init__(self, real, outputs: dict[str, list[str]]) -> None:
        self.real = real
        self.outputs = {k: list(v) for k, v in outputs.items()}
        self.calls: list[str] = []
        self.n_ctx = real.n_ctx
        self.model_info = real.model_info
        self.offload = real.offload
        self.remote = real.remote
        self.scoring_method = real.scoring_method
        self.markers = {name: load_prompt(name).system[:40] for name in ("refine", "importance")}

    def close(self) -> None:
        """The real backend belongs to the session fixture: it stays open."""

    def chat_prefix(self, system: str, user_start: str) -> str:
        return self.real.chat_prefix(system, user_start)

    def tokenize(self, text: str) -> list[int]:
        return self.real.tokenize(text)

    def classify(self, prefix: str, item: str, labels: Sequence[str], **kwargs: Any):
        return self.real.classify(prefix, item, labels, **kwargs)

    def complete(self, prefix: str, item: str = "", **kwargs: Any) -> Completion:
        step = next((n for n, m in self.markers.items() if m in prefix), "extract")
        self.calls.append(step)
        canned = self.outputs.get(step)
        if canned:
            text = canned.pop(0)
            return Completion(text, 100, 10, 0, 0.01, "stop")
        return self.real.complete(prefix, item, **kwargs)


NOTES = (
    "- Ines from operations pings the bot after every restart to check the reply pipeline.\n"
    "- People on the allotment group keep asking Wren about brown patches on tomatoes.\n"
)


def test_unusable_refine_output_is_retried_then_reported(
    classified_store: Store, demo_backend
) -> None:
    backend = FaultInjectingBackend(
        demo_backend, {"extract": [NOTES], "refine": ["not json at all", '{"no": 1}']}
    )
    result = distill(classified_store, backend, TaskState(), limit=2)  # type: ignore[arg-type]
    assert backend.calls == ["extract", "refine", "refine"]
    assert result.status == "staged" and result.counts["failed_batches"] == 1
    assert result.counts["candidates"] == 0 and "1 batch failed" in result.message
    steps = list(
        TraceStep.select()
        .where((TraceStep.run == result.run_id) & (TraceStep.step == "refine"))
        .order_by(TraceStep.id)
    )
    assert [s.attempt for s in steps] == [1, 2]
    assert all("expected" in s.error for s in steps)


def test_wrong_number_of_scores_is_repaired_with_a_note(
    classified_store: Store, demo_backend
) -> None:
    too_many = "[" + ", ".join(["0.9"] * 13) + "]"
    backend = FaultInjectingBackend(
        demo_backend,
        {
            "extract": [NOTES],
            "refine": [
                '["Ines pings the bot after every restart to test the replies.", '
                '"People keep asking Wren about brown patches on their tomatoes."]'
            ],
            "importance": [too_many, too_many],
        },
    )
    result = distill(classified_store, backend, TaskState(), limit=2)  # type: ignore[arg-type]
    assert result.status == "staged" and result.counts["repaired"] == 1
    candidates = list(Candidate.select().where(Candidate.run == result.run_id))
    assert len(candidates) == 2 and all(c.importance == 0.9 for c in candidates)
    steps = list(
        TraceStep.select()
        .where((TraceStep.run == result.run_id) & (TraceStep.step == "importance"))
        .order_by(TraceStep.id)
    )
    assert [s.attempt for s in steps] == [1, 2]
    assert "2 numbers" in steps[0].error or "13 numbers" in steps[0].error
    assert steps[1].error.startswith("repaired: 13 scores for 2 patterns")


def test_an_episode_longer_than_the_context_is_truncated_not_starved(
    tmp_path: Path, demo_model: Path
) -> None:
    import json as jsonlib

    from curator.llm.backend import BackendSettings
    from curator.llm.llama_cpp_backend import load_backend
    from curator.store.importer import import_files
    from curator.store.settings import set_setting

    store = Store(tmp_path / "c.sqlite")
    small = load_backend(BackendSettings(model_path=demo_model, n_ctx=1024), validate=False)
    try:
        source = tmp_path / "long.jsonl"
        text = "Every Tuesday Ines restarts the server and pings the bot to test it. " * 120
        source.write_text(jsonlib.dumps({"id": "long", "content": text}) + "\n", "utf-8")
        import_files(store, [source])
        with store.write():
            Episode.update(label="uncategorized", label_by="human").execute()
        set_setting(store, "max_output_tokens", 16)  # room to answer, however little
        result = distill(store, small, TaskState(), categories=("uncategorized",))
        assert result.status == "staged" and result.counts["batches"] == 1
        extract = TraceStep.get((TraceStep.run == result.run_id) & (TraceStep.step == "extract"))
        assert extract.parsed["input_truncated"]
        assert extract.tokens_in <= small.n_ctx
        assert extract.tokens_out > 1  # the answer keeps its room
    finally:
        small.close()
        store.close()

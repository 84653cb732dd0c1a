"""Step 0 on the real demo model: every episode gets exactly one of the three labels."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from curator.llm.backend import LabelScores
from curator.llm.prompts import load_prompt
from curator.pipeline.calibrate import CONTENT_FREE_INPUTS
from curator.pipeline.classify import classify_episodes, pending_episode_ids
from curator.pipeline.progress import Progress, TaskState
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.importer import import_files
from curator.store.models import LABELS, Episode, Run, TraceStep

pytestmark = pytest.mark.llm


@pytest.fixture
def demo_store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "curator.sqlite")
    create_demo(store)
    yield store
    store.close()


class FaultInjectingBackend:
    """The real backend, except that classify raises on the call numbered ``fail_on``."""

    def __init__(self, real, fail_on: int) -> None:
        self.real = real
        self.fail_on = fail_on
        self.calls = 0
        self.n_ctx = real.n_ctx
        self.model_info = real.model_info
        self.offload = real.offload
        self.remote = real.remote
        self.scoring_method = real.scoring_method

    def close(self) -> None:
        """The real backend belongs to the session fixture: it stays open."""

    def chat_prefix(self, system: str, user_start: str) -> str:
        return self.real.chat_prefix(system, user_start)

    def tokenize(self, text: str) -> list[int]:
        return self.real.tokenize(text)

    def complete(self, *args, **kwargs):
        return self.real.complete(*args, **kwargs)

    def classify(self, prefix: str, item: str, labels: Sequence[str], **kwargs: Any) -> LabelScores:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("injected failure: llama_decode returned -3")
        return self.real.classify(prefix, item, labels, **kwargs)


def test_twenty_demo_episodes_get_one_of_three_labels(classified_demo, tmp_path: Path) -> None:
    store = Store(classified_demo.copy_to(tmp_path))
    try:
        run = Run.get_by_id(classified_demo.run_id)
        assert (run.kind, run.status, run.status_reason) == ("classify", "done", "")
        assert run.finished_at is not None and run.finished_at >= run.started_at
        # provenance: the model file's hash and name, the prompt's version and hash
        model = Path(run.model_path)
        assert run.model_sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
        assert run.model_name and run.model_metadata["quantization"] == "Q4_1"
        prompt = load_prompt("classify")
        assert run.prompts == {"classify": {"version": prompt.version, "sha256": prompt.sha256}}
        assert run.identity_version is not None

        labelled = list(Episode.select().where(Episode.model_run == run.id))
        assert len(labelled) == 20
        oldest = list(Episode.select().order_by(Episode.timestamp, Episode.id).limit(20))
        assert {e.id for e in labelled} == {e.id for e in oldest}
        for episode in labelled:
            assert episode.model_label in LABELS
            assert 1 / 3 <= episode.model_confidence <= 1.0
            assert (episode.label, episode.label_by) == (episode.model_label, "model")
            assert episode.label_at is not None

        steps = list(TraceStep.select().where(TraceStep.run == run.id).order_by(TraceStep.id))
        assert len(steps) == 20
        assert all(s.step == "classify" and not s.error for s in steps)  # nothing to parse
        assert all(s.prompt_sha256 == prompt.sha256 for s in steps)
        by_episode = {e.id: e for e in labelled}
        for step in steps:
            episode = by_episode[step.episode_id]
            assert step.raw_output == step.parsed["label"] == episode.model_label
            assert sum(step.parsed["probabilities"].values()) == pytest.approx(1.0)
        # the shared prefix was evaluated once and then reused
        assert all(s.cached_tokens > 500 for s in steps[1:])
        counts = classified_demo.counts
        assert sum(counts[label] for label in LABELS) == counts["classified"] == 20
        assert run.stats == counts
        # The features phase is timed for the next run's estimate (eta.measured_rates).
        assert counts["features_ms"] > 0 and counts["embedded"] == 20
    finally:
        store.close()


def test_human_labels_win_and_are_not_classified(demo_store: Store, demo_backend) -> None:
    first, second, third = pending_episode_ids(demo_store, limit=3)
    with demo_store.write():
        Episode.update(human_label="noise", label="noise", label_by="human").where(
            Episode.id.in_([first, second])
        ).execute()
    result = classify_episodes(demo_store, demo_backend, TaskState(), limit=1)
    assert result.status == "done" and result.counts["classified"] == 1
    for episode_id in (first, second):
        episode = Episode.get_by_id(episode_id)
        assert episode.model_label is None and episode.label == "noise"
        assert episode.label_by == "human"
    assert Episode.get_by_id(third).model_run.id == result.run_id
    # Explicit ids re-classify, but still never a human-labelled episode.
    again = classify_episodes(demo_store, demo_backend, TaskState(), episode_ids=[first, third])
    assert again.counts["classified"] == 1
    assert Episode.get_by_id(third).model_run.id == again.run_id
    assert Episode.get_by_id(first).model_label is None


def test_cancel_keeps_the_labels_done_so_far(demo_store: Store, demo_backend) -> None:
    reports: list[Progress] = []

    def on_progress(progress: Progress) -> None:
        reports.append(progress)
        if progress.done == 2:
            state.cancel()

    state = TaskState(on_progress=on_progress)
    result = classify_episodes(demo_store, demo_backend, state, limit=6)
    assert result.status == "cancelled" and result.counts["classified"] == 2
    run = Run.get_by_id(result.run_id)
    assert run.status == "cancelled" and "2 of 6" in run.status_reason
    assert run.finished_at is not None
    assert Episode.select().where(Episode.model_run == run.id).count() == 2
    assert [p.done for p in reports] == [0, 1, 2]
    assert all(p.total == 6 and p.step == "classify" for p in reports)
    assert reports[-1].prompt_tokens_per_s > 0 and reports[-1].tokens_per_s == 0


def test_long_episodes_are_truncated_and_say_so(tmp_path: Path, demo_model: Path) -> None:
    from curator.llm.backend import BackendSettings
    from curator.llm.llama_cpp_backend import load_backend

    store = Store(tmp_path / "c.sqlite")
    # The smallest context the classify prompt fits (427 tokens) with room for an item:
    # the long episode is evaluated up to n_ctx, so a larger one only costs time. The
    # episode (641 tokens) is longer than the context but shorter than the embedding's
    # 1,024: its features cost no more tokens than the truncation needs.
    small = load_backend(BackendSettings(model_path=demo_model, n_ctx=512), validate=False)
    try:
        source = tmp_path / "long.jsonl"
        rows = [
            {"id": "short", "timestamp": "2026-01-01T00:00:00Z", "content": "ping"},
            {
                "id": "long",
                "timestamp": "2026-01-02T00:00:00Z",
                "content": "We talked about seedlings and frost again. " * 80,
            },
        ]
        source.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        import_files(store, [source])
        result = classify_episodes(store, small, TaskState())
        assert result.counts["truncated"] == 1 and "truncated" in result.message
        long = Episode.get(Episode.external_id == "long")
        short = Episode.get(Episode.external_id == "short")
        assert long.classify_truncated and not short.classify_truncated
        step = TraceStep.get(TraceStep.episode == long.id)
        assert step.parsed["truncated"] and step.parsed["item_tokens"] > small.n_ctx
    finally:
        small.close()
        store.close()


def test_a_failure_marks_the_run_failed(demo_store: Store, demo_backend) -> None:
    # the run first measures the label bias on the content-free inputs, then classifies
    backend = FaultInjectingBackend(demo_backend, fail_on=len(CONTENT_FREE_INPUTS) + 2)
    with pytest.raises(RuntimeError, match="injected failure"):
        classify_episodes(demo_store, backend, TaskState(), limit=3)  # type: ignore[arg-type]
    run = Run.select().order_by(Run.id.desc()).get()
    assert run.status == "failed" and "injected failure" in run.status_reason
    assert Episode.select().where(Episode.model_run == run.id).count() == 1


def test_nothing_pending_is_a_done_run(demo_store: Store, demo_backend) -> None:
    with demo_store.write():
        Episode.update(human_label="noise").execute()
    result = classify_episodes(demo_store, demo_backend, TaskState())
    assert result.status == "done" and result.counts["classified"] == 0

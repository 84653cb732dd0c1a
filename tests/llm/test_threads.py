"""Threads chosen by measurement: measured on first load, saved per model and machine."""

from __future__ import annotations

import json
from pathlib import Path

import llama_cpp
import pytest

from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.threads import (
    cached_tuning,
    candidate_counts,
    choose_threads,
    forget_tuning,
    physical_cores,
    tuning_cache_file,
)

pytestmark = pytest.mark.llm


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_first_load_measures_and_saves_then_later_loads_reuse_it(
    demo_model: Path, cache_dir: Path
) -> None:
    assert cached_tuning(demo_model) is None
    backend = load_backend(BackendSettings(model_path=demo_model, n_ctx=512), validate=False)
    try:
        tuning = backend.tuning
        assert tuning is not None
        counts = [int(c) for c in tuning.generate_s]
        assert counts == candidate_counts() and tuning.prompt_s.keys() == tuning.generate_s.keys()
        generate = {int(c): t for c, t in tuning.generate_s.items()}
        floor = min(2, physical_cores())
        assert tuning.n_threads == choose_threads(generate, floor=floor, idle=tuning.idle)
        assert int(llama_cpp.llama_n_threads(backend.llm.ctx)) == tuning.n_threads
        assert int(llama_cpp.llama_n_threads_batch(backend.llm.ctx)) == tuning.n_threads_batch
        prefix = backend.chat_prefix("You are helpful.", "")
        assert backend.complete(prefix, "Say hi.", max_tokens=4).tokens_out > 0
    finally:
        backend.close()
    assert tuning_cache_file().parent == cache_dir
    assert cached_tuning(demo_model) == tuning

    again = load_backend(BackendSettings(model_path=demo_model, n_ctx=512), validate=False)
    try:
        assert again.tuning == tuning  # read from the cache, not measured again
        assert int(llama_cpp.llama_n_threads(again.llm.ctx)) == tuning.n_threads
    finally:
        again.close()
    forget_tuning(demo_model)
    assert cached_tuning(demo_model) is None


def test_a_fixed_thread_count_is_not_measured(demo_model: Path, cache_dir: Path) -> None:
    backend = load_backend(
        BackendSettings(model_path=demo_model, n_ctx=512, n_threads=1), validate=False
    )
    try:
        assert backend.tuning is None
        assert int(llama_cpp.llama_n_threads(backend.llm.ctx)) == 1
    finally:
        backend.close()
    assert not tuning_cache_file().exists()


def test_a_damaged_cache_is_measured_again(demo_model: Path, cache_dir: Path) -> None:
    tuning_cache_file().parent.mkdir(parents=True, exist_ok=True)
    tuning_cache_file().write_text("{not json", encoding="utf-8")
    assert cached_tuning(demo_model) is None
    backend = load_backend(BackendSettings(model_path=demo_model, n_ctx=512), validate=False)
    try:
        assert backend.tuning is not None
    finally:
        backend.close()
    assert json.loads(tuning_cache_file().read_text(encoding="utf-8"))


def test_candidate_counts() -> None:
    assert candidate_counts(1) == [1]
    assert candidate_counts(2) == [1, 2]
    assert candidate_counts(32) == [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 28, 32]
    assert candidate_counts(10)[-1] == 10

"""Prompt heads kept on disk between processes (curator.llm.prompt_states), with the
real demo model: a new backend restores the head instead of evaluating it, and its
scores and generations are the same to the last bit as a backend that evaluated it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.core import derived_cache
from curator.llm import prompt_states
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import LlamaCppBackend, load_backend
from curator.llm.prompt_states import KEEP, MIN_TOKENS
from curator.llm.prompts import load_prompt, numbered
from curator.resources_path import resource_path
from curator.store.models import LABELS

pytestmark = pytest.mark.llm

EPISODE = "@maya: can you remind me which fern needs the shade? / assistant: The maidenhair."


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own: no state of another test is found."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def load(demo_model: Path, cache: Path) -> Iterator[object]:
    """Loads backends on the demo model (fixed threads: no thread measurement)."""
    loaded: list[LlamaCppBackend] = []

    def make(n_ctx: int = 1024, n_batch: int = BackendSettings.n_batch) -> LlamaCppBackend:
        settings = BackendSettings(model_path=demo_model, n_ctx=n_ctx, n_threads=2, n_batch=n_batch)
        backend = load_backend(settings, validate=False)
        loaded.append(backend)
        return backend

    yield make
    for backend in loaded:
        backend.close()


def _classify_prefix(backend: LlamaCppBackend) -> str:
    axioms = json.loads(resource_path("demo", "axioms.json").read_text(encoding="utf-8"))
    system, user_start = load_prompt("classify").render(
        {"axioms": numbered(axioms), "identity": ""}
    )
    return backend.chat_prefix(system, user_start)


def _short_prefix(backend: LlamaCppBackend) -> str:
    """A head just above the kept minimum: the mechanism, at a tenth of the classify
    prompt's evaluation."""
    return backend.chat_prefix("Label the text. " + "Answer with one word only. " * 9, "Text:\n")


def _states(cache: Path) -> list[Path]:
    return sorted(cache.glob("prompt-state-*.bin"))


def test_a_new_backend_restores_the_head_and_scores_the_same(load, cache: Path) -> None:
    plain = load()
    plain.prompt_states = None  # evaluates every prompt whole, keeps nothing
    prefix = _classify_prefix(plain)
    head = plain.count_prompt_tokens(prefix) - len(plain._tail)
    assert head >= MIN_TOKENS
    expected = plain.classify(prefix, EPISODE, LABELS)
    assert expected.cached_tokens == 0 and not _states(cache)

    first = load()  # no state yet: evaluates the head alone, keeps it, then the rest
    kept = first.classify(prefix, EPISODE, LABELS)
    assert kept.cached_tokens == 0
    assert len(_states(cache)) == 1
    assert kept.logprobs == expected.logprobs

    second = load()  # a new process, as far as llama.cpp is concerned
    restored = second.classify(prefix, EPISODE, LABELS)
    assert second.prompt_states is not None and second.prompt_states.restored == 1
    assert restored.cached_tokens == head
    assert restored.logprobs == expected.logprobs
    assert restored.probabilities == expected.probabilities


def test_a_generation_after_a_restored_head_is_the_same(load, cache: Path) -> None:
    plain = load()
    plain.prompt_states = None
    prefix = _short_prefix(plain)
    expected = plain.complete(prefix, EPISODE, max_tokens=24, temperature=0.0)
    load().complete(prefix, EPISODE, max_tokens=24, temperature=0.0)  # keeps the head
    again = load()
    got = again.complete(prefix, EPISODE, max_tokens=24, temperature=0.0)
    assert again.prompt_states is not None and again.prompt_states.restored == 1
    assert got.text == expected.text
    assert got.tokens_out == expected.tokens_out


def test_other_context_settings_never_restore_the_state(load, cache: Path) -> None:
    first = load(n_ctx=1024)
    prefix = _short_prefix(first)
    first.classify(prefix, EPISODE, LABELS)
    for kept, other in enumerate((load(n_ctx=2048), load(n_batch=96)), start=2):
        scores = other.classify(prefix, EPISODE, LABELS)
        assert other.prompt_states is not None and other.prompt_states.restored == 0
        assert scores.cached_tokens == 0
        assert len(_states(cache)) == kept  # one per computation


def test_a_file_that_is_not_a_signed_state_is_never_handed_to_llama_cpp(load, cache: Path) -> None:
    first = load()
    prefix = _short_prefix(first)
    expected = first.classify(prefix, EPISODE, LABELS)
    (path,) = _states(cache)
    path.write_bytes(b"\x00" * 64 + path.read_bytes()[64:])  # damaged: the signature fails
    damaged = load()
    scores = damaged.classify(prefix, EPISODE, LABELS)
    assert damaged.prompt_states is not None and damaged.prompt_states.restored == 0
    assert scores.cached_tokens == 0 and scores.logprobs == expected.logprobs


def test_a_signed_state_llama_cpp_refuses_is_dropped_and_the_head_evaluated(
    load, cache: Path
) -> None:
    """Fault injection: a state signed with this cache's secret but cut short (as a full
    disk could leave one) is refused by llama.cpp; the context is left empty, the file
    is deleted and the head evaluated, with the same scores."""
    first = load()
    prefix = _short_prefix(first)
    expected = first.classify(prefix, EPISODE, LABELS)
    states = first.prompt_states
    assert states is not None
    head = first._prefix_tokens(prefix)
    key = states._key(head)
    (path,) = _states(cache)
    whole = derived_cache.load(path.name, key)
    assert whole is not None
    derived_cache.store(path.name, key, whole[: len(whole) // 3])

    cut = load()
    scores = cut.classify(prefix, EPISODE, LABELS)
    assert cut.prompt_states is not None and cut.prompt_states.restored == 0
    assert scores.cached_tokens == 0 and scores.logprobs == expected.logprobs
    assert derived_cache.load(path.name, key) == whole  # evaluated again and kept whole


def test_only_the_most_recently_used_states_are_kept(
    load, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert KEEP >= 16  # what one person's heads need (see KEEP): the rule, tested below
    keep = 4  # the same rule with fewer heads to evaluate
    monkeypatch.setattr(prompt_states, "KEEP", keep)
    backend = load()
    heads = [
        backend.chat_prefix(
            f"Variant {i}: label the text. " + "Be brief and exact. " * 12, "Text:\n"
        )
        for i in range(keep + 2)
    ]
    for prefix in heads:
        assert backend.count_prompt_tokens(prefix) - len(backend._tail) >= MIN_TOKENS
        backend.classify(prefix, "ping", LABELS)
    assert len(_states(cache)) == keep
    # the newest head is still kept: a new backend restores it
    later = load()
    later.classify(heads[-1], "ping", LABELS)
    assert later.prompt_states is not None and later.prompt_states.restored == 1

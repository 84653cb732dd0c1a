"""Prompt heads kept on disk (curator.llm.prompt_states) at the edges of the batch
split, with the real demo model and real files: whatever the lengths of the head and of
the rest, a kept or restored head gives the same logits, to the last bit, as a backend
that keeps nothing and evaluates the prompt whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.core import derived_cache
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import LlamaCppBackend, load_backend
from curator.llm.prompt_states import MIN_TOKENS

pytestmark = pytest.mark.llm

N_CTX = 2048


@pytest.fixture(scope="module")
def plain(demo_model: Path) -> Iterator[LlamaCppBackend]:
    """A backend that keeps and restores nothing: the reference."""
    backend = load_backend(
        BackendSettings(model_path=demo_model, n_ctx=N_CTX, n_threads=2), validate=False
    )
    backend.prompt_states = None
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def text(plain: LlamaCppBackend) -> list[int]:
    """Plenty of ordinary tokens to cut prompts from."""
    return plain.tokenize(" ".join(f"word{i} is here, then" for i in range(800)))


def _load(model: Path) -> LlamaCppBackend:
    return load_backend(BackendSettings(model_path=model, n_ctx=N_CTX, n_threads=2), validate=False)


def _last_logits(backend: LlamaCppBackend, tokens: list[int], head: int) -> npt.NDArray[np.float32]:
    backend.llm.n_tokens = 0  # an empty context, as in a new process
    backend._sync(tokens, None, head)
    return np.array(backend.logits(backend._last_index))


def _check(plain: LlamaCppBackend, model: Path, cache: Path, tokens: list[int], head: int) -> None:
    """Keeping and restoring ``tokens[:head]`` gives the logits of evaluating them whole."""
    expected = _last_logits(plain, tokens, 0)
    keeper = _load(model)
    try:
        kept = _last_logits(keeper, tokens, head)
    finally:
        keeper.close()
    restorer = _load(model)
    try:
        restored = _last_logits(restorer, tokens, head)
    finally:
        restorer.close()
    assert np.array_equal(kept, expected)
    assert np.array_equal(restored, expected)


@pytest.mark.parametrize(
    ("head", "rest"),
    [
        (64, 513),  # the rest is one token past n_batch: alone only after a kept head
        (511, 2),  # the whole prompt is one past n_batch: its last token alone without one
        (513, 2),  # the head alone is one past n_batch: one of its tokens alone
    ],
)
def test_a_kept_head_never_changes_which_token_is_evaluated_alone(
    plain: LlamaCppBackend,
    text: list[int],
    demo_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    head: int,
    rest: int,
) -> None:
    """llama.cpp computes a batch of one token by another path; the head's own batches
    must not add one, nor take away the one the whole prompt has."""
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(tmp_path / "cache"))
    _check(plain, demo_model, tmp_path / "cache", text[: head + rest], head)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    head=st.one_of(st.integers(MIN_TOKENS, 600), st.sampled_from([510, 511, 512, 513, 514])),
    rest=st.one_of(st.integers(0, 520), st.sampled_from([0, 1, 2, 3, 511, 512, 513, 514])),
)
def test_any_split_into_head_and_rest_scores_as_the_whole_prompt(
    plain: LlamaCppBackend,
    text: list[int],
    demo_model: Path,
    tmp_path_factory: pytest.TempPathFactory,
    head: int,
    rest: int,
) -> None:
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(derived_cache.CACHE_ENV, str(folder))
        _check(plain, demo_model, folder, text[: head + rest], head)

"""Prompt heads kept on disk (curator.llm.prompt_states) at the edges of the batch
split, with the real demo model and real files: whatever the lengths of the head and of
the rest, a kept or restored head gives the same logits, to the last bit, as a backend
that keeps nothing and evaluates the prompt whole.

The edges are multiples of the batch size, so most cases load the model with batches of
:data:`SMALL_BATCH` tokens: the same edges with prompts about a fifth as long (the prompt
evaluation is what these tests spend their time on). One case keeps the product's 512."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.core import derived_cache
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import LlamaCppBackend, _Stopped, load_backend
from curator.llm.prompt_states import MIN_TOKENS

pytestmark = pytest.mark.llm

N_CTX = 2048
SMALL_BATCH = 96
"""Above MIN_TOKENS, so a head can end on either side of a batch edge."""
PRODUCT_BATCH = BackendSettings.n_batch
assert MIN_TOKENS < SMALL_BATCH < PRODUCT_BATCH


def _load(model: Path, n_batch: int = SMALL_BATCH) -> LlamaCppBackend:
    return load_backend(
        BackendSettings(model_path=model, n_ctx=N_CTX, n_threads=2, n_batch=n_batch),
        validate=False,
    )


@pytest.fixture(scope="module")
def plains(demo_model: Path) -> Iterator[dict[int, LlamaCppBackend]]:
    """Backends that keep and restore nothing, the reference, one per batch size."""
    loaded: dict[int, LlamaCppBackend] = {}
    for n_batch in (SMALL_BATCH, PRODUCT_BATCH):
        loaded[n_batch] = _load(demo_model, n_batch)
        loaded[n_batch].prompt_states = None
    yield loaded
    for backend in loaded.values():
        backend.close()


@pytest.fixture(scope="module")
def plain(plains: dict[int, LlamaCppBackend]) -> LlamaCppBackend:
    """The reference with batches of SMALL_BATCH tokens."""
    return plains[SMALL_BATCH]


@pytest.fixture(scope="module")
def text(plain: LlamaCppBackend) -> list[int]:
    """Plenty of ordinary tokens to cut prompts from."""
    return plain.tokenize(" ".join(f"word{i} is here, then" for i in range(800)))


def _last_logits(backend: LlamaCppBackend, tokens: list[int], head: int) -> npt.NDArray[np.float32]:
    backend.llm.n_tokens = 0  # an empty context, as in a new process
    backend._sync(tokens, None, head)
    return np.array(backend.logits(backend._last_index))


def _check(plain: LlamaCppBackend, model: Path, cache: Path, tokens: list[int], head: int) -> None:
    """Keeping and restoring ``tokens[:head]`` gives the logits of evaluating them whole
    (with ``plain``'s batch size)."""
    expected = _last_logits(plain, tokens, 0)
    n_batch = plain.llm.n_batch
    keeper = _load(model, n_batch)
    try:
        kept = _last_logits(keeper, tokens, head)
    finally:
        keeper.close()
    restorer = _load(model, n_batch)
    try:
        restored = _last_logits(restorer, tokens, head)
    finally:
        restorer.close()
    assert np.array_equal(kept, expected)
    assert np.array_equal(restored, expected)


@pytest.mark.parametrize(
    ("n_batch", "head", "rest"),
    [
        (SMALL_BATCH, 64, SMALL_BATCH + 1),  # the rest one past n_batch: alone after a head
        (SMALL_BATCH, SMALL_BATCH - 1, 2),  # the prompt one past n_batch: its last token alone
        (SMALL_BATCH, SMALL_BATCH + 1, 2),  # the head one past n_batch: one of its tokens alone
        (PRODUCT_BATCH, PRODUCT_BATCH - 1, 2),  # the same edge at the product's batch size
    ],
)
def test_a_kept_head_never_changes_which_token_is_evaluated_alone(
    plains: dict[int, LlamaCppBackend],
    text: list[int],
    demo_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    n_batch: int,
    head: int,
    rest: int,
) -> None:
    """llama.cpp computes a batch of one token by another path; the head's own batches
    must not add one, nor take away the one the whole prompt has."""
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(tmp_path / "cache"))
    _check(plains[n_batch], demo_model, tmp_path / "cache", text[: head + rest], head)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    head=st.one_of(
        st.integers(MIN_TOKENS, 2 * SMALL_BATCH + 8),
        st.sampled_from([SMALL_BATCH + d for d in (-2, -1, 0, 1, 2)]),
    ),
    rest=st.one_of(
        st.integers(0, SMALL_BATCH + 8),
        st.sampled_from([0, 1, 2, 3, *(SMALL_BATCH + d for d in (-1, 0, 1, 2))]),
    ),
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


def test_a_cancel_in_the_middle_of_the_head_keeps_no_state_and_changes_no_score(
    plain: LlamaCppBackend,
    text: list[int],
    demo_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """should_stop turns true while the head is evaluated alone: nothing is kept, and
    the next call (the rest of the head from where it stopped) and a later backend
    restoring what that call kept score as a backend that keeps nothing."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(cache))
    tokens = text[:300]
    head = 250  # three pieces (16 tokens, then at most a batch each) end inside it
    expected = _last_logits(plain, tokens, 0)
    backend = _load(demo_model)
    try:
        checks = iter(range(100))
        backend.llm.n_tokens = 0

        def stop() -> bool:
            return next(checks) == 3  # after three pieces of the head: in its middle

        with pytest.raises(_Stopped), backend._exclusive():
            backend._sync(tokens, stop, head)
        assert 0 < backend.llm.n_tokens < head
        assert not list(cache.glob("prompt-state-*.bin"))
        backend._sync(tokens, lambda: False, head)
        assert np.array_equal(np.array(backend.logits(backend._last_index)), expected)
        assert len(list(cache.glob("prompt-state-*.bin"))) == 1
    finally:
        backend.close()
    later = _load(demo_model)
    try:
        assert np.array_equal(_last_logits(later, tokens, head), expected)
        assert later.prompt_states is not None and later.prompt_states.restored == 1
    finally:
        later.close()


def _keep_one(model: Path, tokens: list[int], head: int, cache: Path) -> Path:
    backend = _load(model)
    try:
        _last_logits(backend, tokens, head)
    finally:
        backend.close()
    (path,) = cache.glob("prompt-state-*.bin")
    return path


def test_a_state_file_replaced_by_a_link_to_a_pipe_is_not_waited_on(
    plain: LlamaCppBackend,
    text: list[int],
    demo_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept state is a plain file written by this program: a link in its place (to a
    pipe nobody writes, to a device) is not followed, so a classification never hangs
    on it nor reads without end; the head is evaluated, with the same scores."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(cache))
    tokens, head = text[:80], 70
    expected = _last_logits(plain, tokens, 0)
    path = _keep_one(demo_model, tokens, head, cache)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    path.unlink()
    path.symlink_to(pipe)
    backend = _load(demo_model)
    got: list[npt.NDArray[np.float32]] = []
    worker = threading.Thread(target=lambda: got.append(_last_logits(backend, tokens, head)))
    worker.start()
    worker.join(20)
    hung = worker.is_alive()
    if hung:  # let the read end, so the test ends
        fd = os.open(pipe, os.O_WRONLY)
        os.close(fd)
        worker.join()
    backend.close()
    assert not hung, "the restore waited on a pipe"
    assert np.array_equal(got[0], expected)


def test_a_writer_killed_while_it_wrote_a_state_leaves_no_file_for_ever(
    text: list[int], demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Test double: the part file a process killed (SIGKILL, the OOM killer) in the
    middle of writing a state leaves is made by hand, an hour old. The cache stays
    bounded: the next state kept removes it; a part being written now is left alone."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(cache))
    cache.mkdir()
    old = cache / f".prompt-state-{'ab' * 16}.bin.999999.1.part"
    old.write_bytes(b"\0" * 1_000_000)
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    fresh = cache / f".prompt-state-{'cd' * 16}.bin.999998.1.part"
    fresh.write_bytes(b"\0" * 1000)
    _keep_one(demo_model, text[:80], 70, cache)
    assert not old.exists()
    assert fresh.exists()

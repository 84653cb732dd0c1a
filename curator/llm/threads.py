"""Threads chosen by measurement, once per model and machine.

The fastest thread count depends on the model, the CPU and what else runs on it: half
the logical CPUs (llama.cpp's guess at the physical cores) is one thread on a two-core
machine, a third slower than two there; on a busy machine one thread more than the free
cores makes ggml's spinning workers wait on each other.  So on the first load of a model
(and on "Re-tune" in Settings) a short prompt evaluation and a short generation are timed
with each thread count from 1 to the number of CPUs, the fastest count of each is kept
(llama.cpp has separate counts for prompt batches and for generation) and saved in the
user cache directory (``$CURATOR_CACHE_DIR`` overrides it), keyed by the model's SHA-256
and the machine.  It costs about a second for the demo model.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curator.llm.model_file import hash_cache_file, model_sha256

__all__ = [
    "Tuning",
    "cached_tuning",
    "candidate_counts",
    "forget_tuning",
    "measure",
    "tuning_cache_file",
]

PROMPT_TOKENS = 32
"""Tokens of the timed prompt evaluation (one batch)."""
GENERATED_TOKENS = 8
"""Single-token decode steps of the timed generation."""
ROUNDS = 2
"""Passes over all thread counts; each count keeps its best time (noise only slows)."""


@dataclass(frozen=True)
class Tuning:
    """The measured choice: threads for generation and for prompt batches."""

    n_threads: int
    n_threads_batch: int
    generate_s: dict[str, float] = field(default_factory=dict)  # per count, best time
    prompt_s: dict[str, float] = field(default_factory=dict)
    measured_at: str = ""

    def describe(self) -> str:
        """One line for the Settings pane."""
        return (
            f"measured: {self.n_threads} for generation, {self.n_threads_batch} for prompts "
            f"({self.measured_at[:16].replace('T', ' ')} UTC)"
        )


def tuning_cache_file() -> Path:
    """The JSON file of measured thread counts (next to the model-hash cache)."""
    return hash_cache_file().parent / "thread-tuning.json"


def _machine() -> str:
    return f"{platform.node()}|{platform.machine()}|{platform.processor()}|{os.cpu_count()}"


def _key(model_path: str | os.PathLike[str]) -> str:
    return f"{model_sha256(model_path)}|{_machine()}"


def _known_key(model_path: str | os.PathLike[str]) -> str | None:
    """:func:`_key` when the model's digest is already cached (never hashes the file)."""
    with contextlib.suppress(OSError, ValueError):
        p = Path(model_path).expanduser().resolve()
        st = p.stat()
        entry = json.loads(hash_cache_file().read_text(encoding="utf-8")).get(str(p))
        if (
            isinstance(entry, dict)
            and entry.get("size") == st.st_size
            and entry.get("mtime_ns") == st.st_mtime_ns
            and isinstance(entry.get("sha256"), str)
        ):
            return f"{entry['sha256']}|{_machine()}"
    return None


def _read() -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(tuning_cache_file().read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            return loaded
    return {}


def _write(cache: dict[str, Any]) -> None:
    path = tuning_cache_file()
    with contextlib.suppress(OSError):  # a read-only cache dir only costs a re-measure
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".thread-tuning-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(cache, out, indent=1, sort_keys=True)
        os.replace(tmp, path)


def cached_tuning(model_path: str | os.PathLike[str], *, hash_file: bool = True) -> Tuning | None:
    """The saved choice for this model on this machine, if any (and well-formed).

    ``hash_file=False`` (the GUI thread): only if the model's digest is cached already,
    so a multi-gigabyte file is never read here.
    """
    key = _key(model_path) if hash_file else _known_key(model_path)
    entry = _read().get(key) if key is not None else None
    try:
        tuning = Tuning(**entry) if isinstance(entry, dict) else None
    except TypeError:
        return None
    if tuning is None or tuning.n_threads < 1 or tuning.n_threads_batch < 1:
        return None
    return tuning


def forget_tuning(model_path: str | os.PathLike[str]) -> None:
    """Drop the saved choice, so that the next load measures again."""
    cache = _read()
    if cache.pop(_key(model_path), None) is not None:
        _write(cache)


def candidate_counts(cpus: int | None = None) -> list[int]:
    """1..cpus; above 8 CPUs only 1-8, then every fourth and ``cpus`` (keeps it cheap)."""
    cpus = max(1, cpus or os.cpu_count() or 1)
    counts = set(range(1, min(cpus, 8) + 1)) | set(range(12, cpus + 1, 4)) | {cpus}
    return sorted(counts)


def measure(llm: Any, model_path: str | os.PathLike[str], counts: list[int]) -> Tuning:
    """Time prompt evaluation and generation per thread count on a loaded ``Llama``.

    The context is emptied before and after (the caller's KV cache is not kept); the
    chosen counts are applied to the context and saved for this model and machine.
    """
    import llama_cpp

    text = b"The quick brown fox jumps over the lazy dog while the agent reviews its logs. "
    tokens = list(llm.tokenize(text * 8, add_bos=False))[:PROMPT_TOKENS]
    prompt: dict[int, float] = {}
    generate: dict[int, float] = {}

    def run(count: int) -> tuple[float, float]:
        llama_cpp.llama_set_n_threads(llm.ctx, count, count)
        llm.reset()
        start = time.perf_counter()
        llm.eval(tokens)
        middle = time.perf_counter()
        for token in tokens[:GENERATED_TOKENS]:
            llm.eval([token])
        return middle - start, time.perf_counter() - middle

    try:
        run(counts[0])  # warm-up: first decodes allocate
        for _ in range(ROUNDS):
            for count in counts:
                p, g = run(count)
                prompt[count] = min(p, prompt.get(count, p))
                generate[count] = min(g, generate.get(count, g))
    finally:
        llm.reset()
    tuning = Tuning(
        n_threads=min(counts, key=lambda c: (generate[c], c)),
        n_threads_batch=min(counts, key=lambda c: (prompt[c], c)),
        generate_s={str(c): round(t, 6) for c, t in generate.items()},
        prompt_s={str(c): round(t, 6) for c, t in prompt.items()},
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    llama_cpp.llama_set_n_threads(llm.ctx, tuning.n_threads, tuning.n_threads_batch)
    cache = _read()
    cache[_key(model_path)] = asdict(tuning)
    _write(cache)
    return tuning

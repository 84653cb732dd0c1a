"""Threads chosen by measurement, once per model and machine.

The fastest thread count depends on the model, the CPU and what else runs on it: half
the logical CPUs (llama.cpp's guess at the physical cores) is one thread on a two-core
machine, a third slower than two there; on a busy machine one thread more than the free
cores makes ggml's spinning workers wait on each other.  So on the first load of a model
(and on "Re-tune" in Settings) a short prompt evaluation and a short generation are timed
with each thread count from 1 to the number of CPUs this process may use, the fastest
count of each is kept (llama.cpp has separate counts for prompt batches and for
generation) and saved in the user cache directory (``$CURATOR_CACHE_DIR`` overrides it),
keyed by the model's SHA-256 and the machine.  It costs about a second for the demo model.

A measurement says what was fastest *while it ran*. On a machine busy with other work,
fewer threads win because the others are taken, and that choice would stay long after
the other work ended (one thread chosen on a two-core machine). So the measurement also
records how much CPU the rest of the machine used meanwhile (``/proc/stat`` less this
process's own time): unless the machine was idle (:data:`IDLE_SHARE`), the choice is
never below ``min(2, physical cores)``. Before any measurement, and where a count must be
guessed, it is the number of physical cores (:func:`physical_cores`), not half the
logical CPUs: those agree with hyper-threading, but not on a machine without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curator.llm.json_cache import change_entry, read_entries
from curator.llm.model_file import hash_cache_file, model_sha256

__all__ = [
    "Tuning",
    "cached_tuning",
    "candidate_counts",
    "choose_threads",
    "default_threads",
    "forget_tuning",
    "machine_busy_seconds",
    "measure",
    "physical_cores",
    "tuning_cache_file",
    "usable_cpus",
]

PROMPT_TOKENS = 32
"""Tokens of the timed prompt evaluation (one batch)."""
GENERATED_TOKENS = 8
"""Single-token decode steps of the timed generation."""
ROUNDS = 2
"""Passes over all thread counts; each count keeps its best time (noise only slows)."""
IDLE_SHARE = 0.10
"""The machine counts as idle during a measurement when the other processes used less
than this share of its CPUs meanwhile."""
RULE = 2
"""The version of the choosing rule; choices saved under an older rule are measured
again (rule 1 took the fastest count even on a busy machine)."""
SYSFS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class Tuning:
    """The measured choice: threads for generation and for prompt batches."""

    n_threads: int
    n_threads_batch: int
    generate_s: dict[str, float] = field(default_factory=dict)  # per count, best time
    prompt_s: dict[str, float] = field(default_factory=dict)
    measured_at: str = ""
    others_share: float | None = None  # the other processes' CPU share meanwhile; None: unknown
    rule: int = 1

    @property
    def idle(self) -> bool:
        return self.others_share is not None and self.others_share < IDLE_SHARE

    def describe(self) -> str:
        """One line for the Settings pane."""
        busy = "" if self.idle else ", the machine busy"
        return (
            f"measured: {self.n_threads} for generation, {self.n_threads_batch} for prompts "
            f"({self.measured_at[:16].replace('T', ' ')} UTC{busy})"
        )


def usable_cpus() -> list[int]:
    """The logical CPUs this process may run on (its affinity; all of them elsewhere)."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def physical_cores(cpus: list[int] | None = None, sysfs: Path = SYSFS_CPU) -> int:
    """The physical cores among ``cpus`` (default :func:`usable_cpus`).

    Read from Linux's topology files (distinct package and core ids), so hyper-threaded
    siblings count once; where those are missing, every logical CPU counts as a core.
    """
    cpus = usable_cpus() if cpus is None else cpus
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text(encoding="ascii").strip()
            core = (topology / "core_id").read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return max(1, len(cpus))
        cores.add((package, core))
    return max(1, len(cores))


def default_threads() -> int:
    """The thread count before (or without) a measurement: the physical cores."""
    return physical_cores()


def choose_threads(seconds: dict[int, float], *, floor: int, idle: bool) -> int:
    """The fastest count of ``seconds`` (the smaller on a tie); not below ``floor``
    unless ``idle`` (see the module docstring), when a count that high was measured."""
    counts = sorted(seconds)
    allowed = counts if idle else [c for c in counts if c >= floor] or counts
    return min(allowed, key=lambda c: (seconds[c], c))


def machine_busy_seconds() -> float | None:
    """CPU seconds all processes have used since boot (``/proc/stat``), None elsewhere."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
        if fields[0] != "cpu":
            return None
        # user nice system idle iowait irq softirq steal: all but idle and iowait
        ticks = sum(int(v) for i, v in enumerate(fields[1:9]) if i not in (3, 4))
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class _OthersMeter:
    """The share of the machine's CPUs that other processes used while it ran."""

    def __enter__(self) -> _OthersMeter:
        self.share: float | None = None
        self._busy = machine_busy_seconds()
        self._own = time.process_time()  # every thread of this process, ggml's included
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        busy = machine_busy_seconds()
        wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return
        others = (busy - self._busy) - (time.process_time() - self._own)
        self.share = round(max(0.0, others) / (wall * (os.cpu_count() or 1)), 4)


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
    return read_entries(tuning_cache_file())


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
    return tuning if tuning.rule >= RULE else None  # chosen by an older rule: measure again


def forget_tuning(model_path: str | os.PathLike[str]) -> None:
    """Drop the saved choice, so that the next load measures again."""
    change_entry(tuning_cache_file(), _key(model_path), None)


def candidate_counts(cpus: int | None = None) -> list[int]:
    """1..cpus (default: the usable CPUs); above 8 CPUs only 1-8, then every fourth and
    ``cpus`` (keeps it cheap)."""
    cpus = max(1, cpus or len(usable_cpus()))
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
        with _OthersMeter() as others:
            for _ in range(ROUNDS):
                for count in counts:
                    p, g = run(count)
                    prompt[count] = min(p, prompt.get(count, p))
                    generate[count] = min(g, generate.get(count, g))
    finally:
        llm.reset()
    floor = min(2, physical_cores())
    idle = others.share is not None and others.share < IDLE_SHARE
    tuning = Tuning(
        n_threads=choose_threads(generate, floor=floor, idle=idle),
        n_threads_batch=choose_threads(prompt, floor=floor, idle=idle),
        generate_s={str(c): round(t, 6) for c, t in generate.items()},
        prompt_s={str(c): round(t, 6) for c, t in prompt.items()},
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
        others_share=others.share,
        rule=RULE,
    )
    llama_cpp.llama_set_n_threads(llm.ctx, tuning.n_threads, tuning.n_threads_batch)
    # a read-only cache dir only costs a measure next time
    change_entry(tuning_cache_file(), _key(model_path), asdict(tuning))
    return tuning

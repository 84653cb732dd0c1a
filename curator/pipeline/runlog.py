"""Recording LLM runs: the Run row, its provenance, and one TraceStep per call.

Locking rule: the SQLite write lock is never held while the model generates. The Run row
is written first in its own short transaction (status ``running``), each trace step in
its own short transaction right after its call, and results in one transaction per item
or batch. A reader (the window, another command) therefore always sees a consistent
state, and a run killed halfway leaves a ``running`` row with the trace so far, which the next start
marks ``abandoned`` (see :mod:`curator.store.liveness`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from curator.llm.backend import Backend
from curator.llm.model_file import model_sha256
from curator.llm.prompts import PromptTemplate
from curator.pipeline.progress import Cancelled, TaskState
from curator.store.db import Store
from curator.store.identity import Identity
from curator.store.liveness import Heartbeat, owner_fields
from curator.store.models import IdentityVersion, Run, TraceStep, utcnow


@dataclass(frozen=True)
class RunResult:
    """What a pipeline function returns: the run, how it ended, and its counts."""

    run_id: int
    status: str
    counts: dict[str, int]
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "counts": dict(self.counts),
            "message": self.message,
        }


@dataclass
class TraceRecord:
    """The fields of one TraceStep (see :class:`curator.store.models.TraceStep`)."""

    step: str
    batch: int = 0
    category: str = ""
    episode_id: int | None = None
    prompt: PromptTemplate | None = None
    raw_output: str = ""
    parsed: Any = None
    tokens_in: int = 0
    tokens_out: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    attempt: int = 1
    error: str = ""


def model_provenance(backend: Backend) -> dict[str, Any]:
    """Run.model_* fields: path, name, file hash and metadata of the backend's model.

    The hash is computed once per loaded model (``model_sha256`` also caches it on disk)
    and kept on the backend's ``model_info`` for the runs that follow. A backend without a
    local file (a model server) records what it says about itself in ``remote``: the
    server's URL without credentials as the path, its model id as the name.
    """
    info = backend.model_info
    if info is None:
        remote = dict(backend.remote)
        return {
            "model_path": str(remote.get("url", "")),
            "model_name": str(remote.get("model", "")),
            "model_sha256": "",
            "model_metadata": {
                "remote": remote,
                "offload": backend.offload,
                "n_ctx": backend.n_ctx,
            },
        }
    digest = info.sha256
    if digest is None:
        digest = model_sha256(info.path)
        backend.model_info = info.with_sha256(digest)
    metadata = {
        "gguf": info.metadata,
        "architecture": info.architecture,
        "quantization": info.quantization,
        "size_bytes": info.size_bytes,
        "context_length": info.context_length,
        "offload": backend.offload,
        "n_ctx": backend.n_ctx,
    }
    return {
        "model_path": str(info.path),
        "model_name": info.name,
        "model_sha256": digest,
        "model_metadata": metadata,
    }


def start_run(
    store: Store,
    kind: str,
    *,
    backend: Backend,
    prompts: Mapping[str, PromptTemplate],
    identity: Identity,
    params: Mapping[str, Any],
) -> int:
    """Insert the Run row (status ``running``) in its own transaction; returns its id."""
    provenance = model_provenance(backend)
    identity_row = None
    if identity.version > 0:
        identity_row = IdentityVersion.get_or_none(IdentityVersion.version == identity.version)
    with store.write():
        run = Run.create(
            kind=kind,
            status="running",
            params=dict(params),
            prompts={name: p.provenance for name, p in prompts.items()},
            identity_version=identity_row,
            **provenance,
            **owner_fields(),
        )
    return int(run.id)


def add_trace(store: Store, run_id: int, record: TraceRecord) -> None:
    """One TraceStep in its own short transaction."""
    with store.write():
        TraceStep.create(**trace_fields(run_id, record))


def trace_fields(run_id: int, record: TraceRecord) -> dict[str, Any]:
    """The column values of a TraceStep row (for writing inside a larger transaction)."""
    return {
        "run": run_id,
        "step": record.step,
        "batch": record.batch,
        "category": record.category,
        "episode": record.episode_id,
        "prompt_name": record.prompt.name if record.prompt else "",
        "prompt_sha256": record.prompt.sha256 if record.prompt else "",
        "raw_output": record.raw_output,
        "parsed": record.parsed,
        "tokens_in": record.tokens_in,
        "tokens_out": record.tokens_out,
        "cached_tokens": record.cached_tokens,
        "seconds": round(record.seconds, 6),
        "attempt": record.attempt,
        "error": record.error,
    }


def finish_run(
    store: Store, run_id: int, status: str, reason: str = "", stats: Mapping[str, Any] | None = None
) -> None:
    """Set the final status, reason, finish time and stats in one transaction."""
    values: dict[str, Any] = {"status": status, "status_reason": reason, "finished_at": utcnow()}
    if stats is not None:
        values["stats"] = dict(stats)
    with store.write():
        Run.update(**values).where(Run.id == run_id).execute()


def one_line(exc: BaseException) -> str:
    """An exception as one short line for Run.status_reason / TraceStep.error."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class RecordedRun:
    """A run in progress, as :func:`recorded_run` hands it to the pipeline's body.

    ``stats`` (kept current by the body) is stored whichever way the run ends;
    ``cancel_message`` says, when a cancel arrives, how far the run got. The body may
    :meth:`finish` the run itself (e.g. ``staged`` inside the transaction that records the
    proposals); otherwise a normal exit records ``done``.
    """

    store: Store
    id: int
    stats: dict[str, Any] = field(default_factory=dict)
    cancel_message: Callable[[], str] = lambda: "cancelled"
    status: str = "running"
    message: str = ""

    def finish(self, status: str, message: str = "") -> None:
        finish_run(self.store, self.id, status, message, stats=self.stats)
        self.status, self.message = status, message


@contextmanager
def recorded_run(
    store: Store,
    kind: str,
    *,
    backend: Backend,
    prompts: Mapping[str, PromptTemplate],
    identity: Identity,
    params: Mapping[str, Any],
    state: TaskState,
    stats: dict[str, Any] | None = None,
) -> Iterator[RecordedRun]:
    """Start a run, keep its heartbeat, and record how it ended (see the module docstring).

    A :class:`Cancelled` raised in the body is absorbed: the run is ``cancelled`` and the
    code after the ``with`` block sees ``run.status == "cancelled"``.
    """
    run_id = start_run(
        store, kind, backend=backend, prompts=prompts, identity=identity, params=params
    )
    run = RecordedRun(store, run_id, stats if stats is not None else {})
    state.tick = Heartbeat(store, run_id)
    try:
        yield run
    except Cancelled:
        run.finish("cancelled", run.cancel_message())
        return
    except BaseException as exc:
        run.finish("failed", one_line(exc))
        raise
    finally:
        state.tick = None
    if run.status == "running":
        run.finish("done")

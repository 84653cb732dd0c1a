"""Pipeline subcommands: classify, distill, runs, run.

``classify`` and ``distill`` validate the model (header, then a trial load in a child
process) *before* anything is written, so an unusable model file is a one-line error with
exit code 2 and an unchanged database. Progress goes to stderr (a redrawn bar on a
terminal, plain lines otherwise); stdout carries only the result, one JSON document with
``--json``. The first Ctrl-C, SIGTERM or SIGHUP cancels the run cleanly (it is recorded as
``cancelled``, finished work is kept, exit code 130, 143 or 129); a second one aborts at
once.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from curator.cli.common import CommandContext, integer
from curator.core.textsafety import escape_controls
from curator.core.wording import agree, plural
from curator.errors import CuratorError
from curator.llm.backend import backend_settings
from curator.pipeline.progress import Progress, TaskState, speed_text
from curator.pipeline.review import list_candidates
from curator.pipeline.run_history import (
    get_run,
    recent_runs,
    run_seconds,
    run_trace,
    scoring_method_text,
)
from curator.pipeline.runlog import RunResult
from curator.store.models import DISTILLABLE_LABELS, Run
from curator.store.settings import load_settings


def add_server_args(group: Any) -> None:
    """``--server``, ``--server-model`` and ``--api-key``: a model server instead of a file."""
    group.add_argument(
        "--server",
        metavar="URL",
        help="an OpenAI-compatible model server, e.g. http://127.0.0.1:8080 "
        "(default: $CURATOR_SERVER, then the server chosen in Settings; without any, "
        "the model file is loaded in-process)",
    )
    group.add_argument(
        "--server-model", metavar="ID", help="the server's model id (default: its first)"
    )
    group.add_argument(
        "--api-key",
        metavar="KEY",
        help="the server's API key (default: $CURATOR_API_KEY, then the system keyring; "
        "never stored in the database; given here it shows in the process list)",
    )


def model_parser() -> argparse.ArgumentParser:
    """The model options shared by the commands that load a model."""
    model = argparse.ArgumentParser(add_help=False)
    group = model.add_argument_group("model")
    group.add_argument(
        "--model",
        metavar="PATH",
        help="GGUF model file (default: $CURATOR_MODEL, the saved setting, the demo model)",
    )
    group.add_argument(
        "--n-gpu-layers", type=integer, metavar="N", help="layers on the GPU (-1 all)"
    )
    group.add_argument("--n-ctx", type=integer, metavar="N", help="context size in tokens")
    group.add_argument("--threads", type=integer, metavar="N", help="CPU threads")
    add_server_args(group)
    return model


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the pipeline subcommands."""
    model = model_parser()
    p = subparsers.add_parser(
        "classify",
        parents=[common, model],
        description="Classify the episodes that have neither a model nor a human label, "
        "oldest first. Exit code 130 when cancelled with Ctrl-C, 143 on SIGTERM, 129 on SIGHUP "
        "(labels so far are kept).",
    )
    p.add_argument("--limit", type=integer, metavar="N", help="classify at most N episodes")
    p.add_argument(
        "--relearn",
        action="store_true",
        help="retrain on the human labels and re-predict, and the learned guard on the "
        "committed review decisions; loads no model",
    )
    p.set_defaults(handler=cmd_classify)

    p = subparsers.add_parser(
        "distill",
        parents=[common, model],
        description="Extract, refine and score patterns from the episodes not yet distilled, "
        "gate them, and stage them for review (curator review RUN). Nothing reaches "
        "Knowledge before a commit.",
    )
    p.add_argument(
        "--category",
        choices=DISTILLABLE_LABELS,
        action="append",
        metavar="C",
        help="constitutional or uncategorized (repeatable; default both)",
    )
    p.add_argument("--limit", type=integer, metavar="N", help="use at most N episodes")
    p.set_defaults(handler=cmd_distill)

    p = subparsers.add_parser("runs", parents=[common])
    p.add_argument("--limit", type=integer, default=30, metavar="N", help="newest N (default 30)")
    p.set_defaults(handler=cmd_runs)

    p = subparsers.add_parser("run", parents=[common])
    p.add_argument("run_id", type=integer, metavar="ID")
    p.add_argument("--full", action="store_true", help="do not shorten the raw outputs")
    p.set_defaults(handler=cmd_run)


# -- progress on stderr ----------------------------------------------------------------------


class ProgressPrinter:
    """A ``\\r`` bar on a terminal; one line per finished item otherwise (e.g. in a log)."""

    WIDTH = 24

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_key: tuple[str, int] | None = None
        self._drawn = False
        self.silent = False  # after SIGHUP: the terminal is gone

    def __call__(self, p: Progress) -> None:
        if self.silent:
            return
        if self.tty:
            filled = round(p.fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            speed = f" {speed_text(p):>16}" if speed_text(p) else ""
            line = f"{p.step:<10} [{bar}] {p.done}/{p.total}{speed}  {escape_controls(p.message)}"
            self.stream.write("\r" + line[:118].ljust(118))
            self._drawn = True
        else:
            key = (p.step, p.done)
            if key == self._last_key:
                return  # token-rate updates of the same step: only on a terminal
            self._last_key = key
            speed = f" ({speed_text(p)})" if speed_text(p) else ""
            message = escape_controls(p.message)
            self.stream.write(f"{p.step} {p.done}/{p.total}{speed} {message}".rstrip() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self._drawn and not self.silent:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


# -- shared ----------------------------------------------------------------------------------


def _load_backend(ctx: CommandContext) -> Any:
    """Resolve, validate and load the model; nothing is written to the database."""
    from curator.llm.llama_cpp_backend import load_backend
    from curator.llm.model_file import resolve_model_path

    args = ctx.args
    server = _server_choice(ctx)
    if server is not None:
        return _load_server(ctx, server)
    overrides = {
        key: value
        for key, value in (
            ("n_gpu_layers", args.n_gpu_layers),
            ("n_ctx", args.n_ctx),
            ("n_threads", args.threads),
        )
        if value is not None
    }
    # The same validation as the window's Settings pane: same bounds, same messages.
    settings = load_settings(ctx.store).with_changes(overrides)
    path = resolve_model_path(args.model, settings.model_path)
    backend = load_backend(backend_settings(settings, path))
    info = backend.model_info
    name = f"{info.name} ({info.quantization}, {info.architecture})" if info else str(path)
    ctx.info(f"model: {name}, {backend.offload}, n_ctx {backend.n_ctx}")
    return backend


def _server_choice(ctx: CommandContext) -> Any:
    """The server to use (flags, then the environment, then Settings), or None for a file."""
    from curator.llm.server_choice import choose_server

    args = ctx.args
    saved = load_settings(ctx.store)
    return choose_server(
        saved.backend,
        saved.server_url,
        saved.server_model,
        url=getattr(args, "server", None),
        model=getattr(args, "server_model", None),
        api_key=getattr(args, "api_key", None),
        use_saved=getattr(args, "model", None) is None,
    )


def _load_server(ctx: CommandContext, server: Any) -> Any:
    """The model behind ``server``; its key comes from the flag, the environment or the
    system keyring (see :mod:`curator.llm.server_choice`), never from the database."""
    args = ctx.args
    settings = load_settings(ctx.store)
    n_ctx = getattr(args, "n_ctx", None) or settings.n_ctx
    backend = server.open(int(n_ctx))  # a key or model it refuses: the one error said
    if getattr(args, "api_key", None):
        ctx.info(
            "curator: note: a key given by --api-key shows in the process list and the "
            "shell history; $CURATOR_API_KEY or the system keyring keeps it private"
        )
    for note in getattr(backend, "notes", ()):
        ctx.info(f"curator: note: {note}")
    ctx.info(f"model: {backend.model} on {backend.offload}, n_ctx {backend.n_ctx}")
    return backend


class _StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP all cancel the run cleanly; a second one aborts at once.

    The run is then recorded as ``cancelled`` (finished work kept) and the exit code is
    128 + the signal's number, as a shell reports a process ended by it: 130 for Ctrl-C,
    143 for SIGTERM (``kill``, a service manager stopping us), 129 for SIGHUP (the
    terminal was closed; from then on nothing more is written to it).
    """

    SIGNALS = tuple(
        getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
    )

    def __init__(self, ctx: CommandContext, state: TaskState, printer: ProgressPrinter) -> None:
        self.ctx = ctx
        self.state = state
        self.printer = printer
        self.signum: int | None = None
        self.hung_up = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.state.cancelled:
            raise KeyboardInterrupt
        self.signum = signum
        self.state.cancel()
        if hasattr(signal, "SIGHUP") and signum == signal.SIGHUP:
            self.hung_up = True
            self.printer.silent = True
            return
        self.printer.close()
        how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        with contextlib.suppress(OSError):
            self.ctx.info(f"cancelling on {how} (a second one aborts at once) ...")

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum if self.signum is not None else signal.SIGINT)


def _run_with_signals(
    ctx: CommandContext, work: Callable[[TaskState], Any]
) -> tuple[Any, _StopSignals]:
    """Run ``work`` with a TaskState whose cancel is bound to Ctrl-C, SIGTERM and SIGHUP."""
    printer = ProgressPrinter()
    state = TaskState(on_progress=printer)
    stops = _StopSignals(ctx, state, printer)
    previous = {signum: signal.signal(signum, stops) for signum in stops.SIGNALS}
    try:
        return work(state), stops
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        with contextlib.suppress(OSError):
            printer.close()


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise CuratorError("--limit must be at least 1")


def _finish(ctx: CommandContext, outcome: tuple[Any, _StopSignals], human: str) -> int:
    result, stops = outcome
    if stops.hung_up:
        with contextlib.suppress(OSError):  # the terminal may be gone
            ctx.emit(result.as_dict(), human)
    else:
        ctx.emit(result.as_dict(), human)
    return stops.exit_code if result.status == "cancelled" else 0


def cmd_classify(ctx: CommandContext) -> int:
    from curator.pipeline.classify import classify_episodes

    if ctx.args.relearn:
        from curator.cli.review import relearn_document
        from curator.pipeline.guard_learn import relearn_guard
        from curator.pipeline.learn import relearn

        report = relearn(ctx.store)
        guard = relearn_guard(ctx.store)
        document, summary = relearn_document(ctx, report)
        ctx.emit({**document, "guard": dataclasses.asdict(guard)}, f"{summary}\n{guard.summary()}")
        return 0
    _check_limit(ctx.args.limit)
    backend = _load_backend(ctx)
    try:
        outcome = _run_with_signals(
            ctx, lambda state: classify_episodes(ctx.store, backend, state, limit=ctx.args.limit)
        )
    finally:
        backend.close()
    result = outcome[0]
    return _finish(ctx, outcome, f"run {result.run_id} {result.status}: {result.message}")


def cmd_distill(ctx: CommandContext) -> int:
    from curator.pipeline.distill import distill

    _check_limit(ctx.args.limit)
    categories = tuple(dict.fromkeys(ctx.args.category or DISTILLABLE_LABELS))
    backend = _load_backend(ctx)
    try:
        outcome = _run_with_signals(
            ctx,
            lambda state: distill(
                ctx.store, backend, state, categories=categories, limit=ctx.args.limit
            ),
        )
    finally:
        backend.close()
    return _finish(ctx, outcome, distill_outcome(outcome[0]))


def distill_outcome(result: RunResult) -> str:
    """The human summary of a distill run and the next step that fits it.

    A staged run is sent to review only when it has candidates. A run that read
    episodes but kept no candidate is still staged (see :mod:`curator.pipeline.distill`):
    its commit marks those episodes distilled, so they are not tried again; a staged run
    that read none (every batch failed) has only its trace to show.
    """
    run_id, counts = result.run_id, result.counts
    human = f"run {run_id} {result.status}: {result.message}"
    if result.status != "staged":
        return human
    episodes = counts.get("episodes", 0)
    if counts.get("candidates", 0) > 0:
        return human + f"\nreview it with: curator review {run_id}"
    if episodes > 0:
        read = plural(episodes, "episode")
        them = agree(episodes, "it", "them")
        return human + (
            f"\nnothing to review: no candidate came out of {read}; "
            f"`curator commit {run_id}` marks {them} distilled, not to be tried again"
        )
    return human + f"\nnothing to review; the trace says why: curator run {run_id}"


# -- runs and traces -------------------------------------------------------------------------


def _run_doc(run: Run) -> dict[str, Any]:
    stats = dict(run.stats or {})
    stats.pop("episode_ids", None)  # can be long; `curator run ID --json` has it in full
    seconds = run_seconds(run)
    return {
        "id": run.id,
        "kind": run.kind,
        "status": run.status,
        "status_reason": run.status_reason,
        "started_at": run.started_at.isoformat(),
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "seconds": round(seconds, 3) if seconds is not None else None,
        "model_name": run.model_name,
        "model_path": run.model_path,
        "model_sha256": run.model_sha256,
        "method": scoring_method_text(run),
        "prompts": run.prompts,
        "stats": stats,
    }


def cmd_runs(ctx: CommandContext) -> int:
    if ctx.args.limit < 1:
        raise CuratorError("--limit must be at least 1")
    runs = recent_runs(ctx.store, ctx.args.limit)  # the Runs pane's list too
    docs = [_run_doc(r) for r in runs]

    def human() -> str:
        if not docs:
            return "no runs yet"
        lines = []
        for d in docs:
            took = f"{d['seconds']:.1f}s" if d["seconds"] is not None else "-"
            counts = ", ".join(
                f"{k} {v}" for k, v in d["stats"].items() if isinstance(v, int) and v
            )
            lines.append(
                f"{d['id']:>4}  {d['kind']:<8} {d['status']:<9} {d['started_at'][:19]}  "
                f"{took:>7}  {counts}"
            )
        return "\n".join(lines)

    ctx.emit({"runs": docs}, human)
    return 0


def _shorten(text: str, full: bool, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if full or len(flat) <= width else flat[: width - 3] + "..."


def cmd_run(ctx: CommandContext) -> int:
    run = get_run(ctx.store, ctx.args.run_id)
    if run is None:
        raise CuratorError(f"no run {ctx.args.run_id}")
    doc = _run_doc(run)
    doc["stats"] = run.stats
    doc["params"] = run.params
    doc["model_metadata"] = run.model_metadata
    steps = run_trace(ctx.store, run.id)
    doc["trace"] = [
        {
            "id": s.id,
            "step": s.step,
            "batch": s.batch,
            "category": s.category,
            "episode_id": s.episode_id,
            "prompt_name": s.prompt_name,
            "prompt_sha256": s.prompt_sha256,
            "raw_output": s.raw_output,
            "parsed": s.parsed,
            "tokens_in": s.tokens_in,
            "tokens_out": s.tokens_out,
            "cached_tokens": s.cached_tokens,
            "seconds": s.seconds,
            "attempt": s.attempt,
            "error": s.error,
        }
        for s in steps
    ]
    # The review engine's view of each candidate: the same document `curator review` prints.
    doc["candidates"] = [view.to_json() for view in list_candidates(ctx.store, run.id)]
    full = bool(ctx.args.full)

    def human() -> str:
        lines = [
            f"run {run.id}: {run.kind}, {run.status}"
            + (f" ({run.status_reason})" if run.status_reason else ""),
            f"model: {run.model_name} sha256 {run.model_sha256[:16]}  {run.model_path}",
            "prompts: "
            + ", ".join(
                f"{name} v{p.get('version')} {str(p.get('sha256'))[:12]}"
                for name, p in sorted((run.prompts or {}).items())
            ),
        ]
        for t in doc["trace"]:
            where = (
                f"episode {t['episode_id']}"
                if t["episode_id"]
                else (f"batch {t['batch']} {t['category']}")
            )
            lines.append(
                f"  #{t['id']} {t['step']:<10} {where}  attempt {t['attempt']}  "
                f"in {t['tokens_in']} (cached {t['cached_tokens']}) out {t['tokens_out']}  "
                f"{t['seconds']:.2f}s" + (f"  ERROR {t['error']}" if t["error"] else "")
            )
            if t["raw_output"]:
                lines.append("      " + _shorten(t["raw_output"], full))
        for c in doc["candidates"]:
            target = f" -> pattern {c['proposed_target_id']}" if c["proposed_target_id"] else ""
            lines.append(
                f"  candidate {c['ordinal']}: {c['proposed_action']}{target} "
                f"(ratio {c['proposed_ratio']:.2f}, importance {c['importance']:.2f}) "
                + _shorten(c["text"], full, 100)
            )
        return "\n".join(lines)

    ctx.emit(doc, human)
    return 0

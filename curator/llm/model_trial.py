"""The trial load: a model file loaded once by llama.cpp in a short-lived child process.

llama.cpp *aborts the whole process* on some malformed files (failed asserts in its
loader), which would take the command line or the window down with it. So a file that
passed the header check (:func:`curator.llm.model_file.read_gguf_info`) is loaded and
made to evaluate one token in a child first; only a file that survived both is loaded in
this process. A file that passed unchanged with the same llama.cpp is not tried again
(:mod:`curator.llm.model_check_cache`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from curator.llm.model_check_cache import passed_before, remember_pass, trial
from curator.llm.model_file import ModelFileError, ModelInfo, _shown, read_gguf_info

_CHECK_MARKER = "CURATOR-MODEL-CHECK "
"""What starts the child's one line of result (the JSON after it)."""
CHECK_OPTION = "--check-model"
"""The hidden command-line option that runs :func:`run_child_check` (the child's side)."""
CHECK_ERRORS_ENV = "CURATOR_CHECK_ERRORS"
"""Set by the parent: the child copies llama.cpp's error lines to its stderr (see
:func:`run_child_check`); a person running ``--check-model`` sees only the result line."""


def validate_model_file(path: str | os.PathLike[str], timeout_s: float = 120) -> ModelInfo:
    """Header check, then a trial load by llama.cpp in a child process.

    Returns the header's :class:`ModelInfo` (with what the trial load learned under
    ``metadata["llama.cpp"]``). The header is read every time; the trial load is skipped
    for a file that passed it unchanged with the same llama.cpp
    (:mod:`curator.llm.model_check_cache`). Raises :class:`ModelFileError` with a
    one-line reason when the file is unusable, including when llama.cpp aborts or hangs
    while loading.
    """
    info = read_gguf_info(path)
    kept = passed_before(info.path)  # this very file passed with this llama.cpp before
    if kept is not None:
        return replace(info, metadata={**info.metadata, "llama.cpp": kept})
    with trial(info.path) as tried:  # the child loads the very file stamped here
        command, env = child_check_command(tried.target)
        try:
            proc = subprocess.run(
                command,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout_s,
                check=False,
                pass_fds=tried.pass_fds,
            )
        except subprocess.TimeoutExpired as exc:
            raise ModelFileError(
                f"{info.path}: llama.cpp did not finish loading it within {timeout_s:g} s"
            ) from exc
    result: dict[str, Any] | None = None
    for line in proc.stdout.splitlines():
        if line.startswith(_CHECK_MARKER):
            with contextlib.suppress(ValueError):
                result = json.loads(line[len(_CHECK_MARKER) :])
    if proc.returncode == 0 and result is not None and result.get("ok"):
        loaded = {k: v for k, v in result.items() if k != "ok"}
        remember_pass(info.path, loaded, tried)
        return replace(info, metadata={**info.metadata, "llama.cpp": loaded})
    # llama.cpp's log names the cause ("unknown model architecture: 'x'"); the Python
    # exception only says that loading failed, so the log line is preferred.
    reason = _reason_from_log(proc.stderr) or (result or {}).get("reason") or ""
    reason = reason.replace(str(tried.target), str(info.path))  # the name, not the descriptor
    if proc.returncode < 0:
        try:
            signame = signal.Signals(-proc.returncode).name
        except ValueError:
            signame = f"signal {-proc.returncode}"
        reason = f"llama.cpp crashed while loading it ({signame})" + (
            f": {reason}" if reason else ""
        )
    raise ModelFileError(f"{info.path}: llama.cpp cannot load it ({reason or 'unknown error'})")


def _reason_from_log(log: str) -> str:
    """The most telling line of llama.cpp's log, shortened to one line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for line in lines:
        if "error loading model:" in line:
            return line.split("error loading model:", 1)[1].strip()[:300]
    for line in lines:
        if "error" in line.lower() or "failed" in line.lower():
            return line[:300]
    return ""


def child_check_command(path: Path) -> tuple[list[str], dict[str, str]]:
    """The command line (and environment) of the child that trial-loads ``path``.

    The child is this same program started with the hidden ``--check-model PATH`` option
    (see :func:`curator.cli.main`). In a frozen application (PyInstaller) ``sys.executable``
    is the application itself, which understands no ``-c``/``-m``, so it is run directly;
    otherwise it is the interpreter, asked for ``-m curator``. ``-P`` keeps the current
    directory off the child's import path, and the folder holding the ``curator`` package
    this process imported goes first on ``PYTHONPATH``, so the child runs the same code even
    from a source checkout that is not installed.
    """
    env = {**os.environ, CHECK_ERRORS_ENV: "1"}
    if getattr(sys, "frozen", False):
        return [sys.executable, CHECK_OPTION, str(path)], env
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-P", "-m", "curator", CHECK_OPTION, str(path)], env


def run_child_check(path: str) -> int:
    """Run in the child: load the model fully, evaluate one token, report as JSON.

    The entry point of ``curator --check-model PATH``; its exit status is 0 when the model
    loaded and evaluated a token, 1 when llama.cpp refused it. Its output is one line,
    the marker and the JSON (the reason: llama.cpp's own when its log names one); the log
    itself stays in memory (:mod:`curator.llm.llama_log`). Started by the parent
    (:data:`CHECK_ERRORS_ENV`), it copies llama.cpp's error lines to stderr too, so that
    the parent still learns why when loading crashes the child.
    """
    sink = None
    try:
        # llama.cpp would block for ever opening a FIFO (or a device) that nobody writes
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ModelFileError(f"{_shown(Path(path))} is not a regular file")
        # The parent has NumPy loaded when it loads the model, and the order in which
        # shared libraries arrive can decide whether llama.cpp's load crashes (seen with
        # a CUDA build: it crashed after NumPy, never without it). The trial load
        # arrives in the parent's order, so such a crash ends this child, not the window.
        import numpy  # noqa: F401

        from curator.llm.llama_log import silence

        sink = silence(echo_errors=os.environ.get(CHECK_ERRORS_ENV) == "1")
        import llama_cpp

        llm = llama_cpp.Llama(model_path=path, n_ctx=64, n_batch=64, n_gpu_layers=0, verbose=False)
        tokens = llm.tokenize(b"Hello", add_bos=False) or [llm.token_bos()]
        llm.eval(tokens[:1])
        out: dict[str, Any] = {
            "ok": True,
            "n_params": int(llama_cpp.llama_model_n_params(llm.model)),
            "n_layer": int(llama_cpp.llama_model_n_layer(llm.model)),
            "n_ctx_train": int(llama_cpp.llama_model_n_ctx_train(llm.model)),
        }
        llm.close()
    except Exception as exc:  # reported to the parent as data
        told = _reason_from_log(sink.text()) if sink is not None else ""
        out = {"ok": False, "reason": told or " ".join(str(exc).split())[:300]}
    sys.stdout.write(_CHECK_MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0 if out["ok"] else 1

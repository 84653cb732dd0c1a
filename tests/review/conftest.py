"""Fixtures for the review engine: a real SQLite file with patterns, episodes, staged runs.

Staged runs are built directly with the models, the way the distillation pipeline leaves
them (Run.status "staged", Candidate rows with the dedup gate's proposal, CandidateEpisode
links), so these tests do not need the language model.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from curator.core.dedup import gate
from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.models import Candidate, CandidateEpisode, Episode, Pattern, Run, utcnow

REPO_ROOT = Path(__file__).resolve().parents[2]

PATTERN_TEXTS = (
    "The operator prefers short status updates in the morning before standup.",
    "Retry network calls to the billing API with exponential backoff and jitter.",
    "Never delete user files without an explicit confirmation from the operator.",
    "Weekly reports go out on Friday afternoon, summarised in five bullet points.",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A module that sets ``BOTH_ENGINES = True`` runs each of its ``store`` tests on a
    SQLite file and on a PostgreSQL database (the same test, not a copy of it)."""
    if "store" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_ENGINES", False):
        metafunc.parametrize("engine", ["sqlite", "postgresql"])


@pytest.fixture
def engine() -> str:
    """The engine of the ``store`` fixture: SQLite unless the module asks for both."""
    return "sqlite"


@pytest.fixture
def store(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A new database; ``store.location`` names it for ``--db`` on either engine."""
    if engine == "sqlite":
        db = Store(tmp_path / "curator.sqlite")
    else:
        db = Store(request.getfixturevalue("pg_url"))
    yield db
    db.close()


def make_episode(store: Store, text: str | None = None, **fields: Any) -> int:
    """One imported episode (unique content)."""
    del store
    body = text or f"episode {uuid.uuid4().hex}: the agent did some work"
    episode = Episode.create(
        content_hash=uuid.uuid4().hex,
        text=body,
        timestamp=fields.pop("timestamp", utcnow() - timedelta(days=1)),
        **fields,
    )
    return int(episode.id)


def make_pattern(
    store: Store,
    text: str,
    importance: float = 0.5,
    *,
    distilled_at: datetime | None = None,
    status: str = "active",
) -> int:
    """An active Knowledge pattern with a consistent rank key."""
    del store
    when = distilled_at or (utcnow() - timedelta(days=3))
    pattern = Pattern.create(
        text=text,
        importance=importance,
        distilled_at=when,
        rank_key=rank_key(importance, when),
        status=status,
    )
    return int(pattern.id)


def make_patterns(store: Store) -> list[int]:
    return [make_pattern(store, t, 0.4 + 0.1 * i) for i, t in enumerate(PATTERN_TEXTS)]


def make_staged_run(store: Store, candidates: Sequence[dict[str, Any]]) -> Run:
    """A staged distillation run with the given candidates.

    Each candidate dict needs ``text``; optional: ``importance`` (0.5), ``category``,
    ``episodes`` (ids; default: one new episode each), and ``action``/``target``/``ratio``
    to force a proposal. Without them the proposal is the real dedup gate's against the
    active patterns (a match with an earlier candidate of the batch becomes ADD here).
    """
    with store.write():
        run = Run.create(kind="distill", status="staged")
        active = list(Pattern.select().where(Pattern.status == "active").order_by(Pattern.id))
        unforced = [c["text"] for c in candidates if "action" not in c]
        gated = iter(gate(unforced, [p.text for p in active]) if unforced else [])
        for ordinal, spec in enumerate(candidates):
            target: int | None
            if "action" in spec:
                action, target, ratio = spec["action"], spec.get("target"), spec.get("ratio", 0.0)
                revision = None
                if target is not None:
                    revision = Pattern.get_by_id(target).revision
                _add_candidate(store, run, ordinal, spec, action, target, ratio, revision)
                continue
            decision = next(gated)
            if decision.target is not None and decision.target < len(active):
                action, target = decision.action, active[decision.target].id
                ratio = decision.ratio
            else:
                action, target, ratio = "ADD", None, decision.ratio
            revision = None
            if target is not None:
                revision = Pattern.get_by_id(target).revision
            _add_candidate(store, run, ordinal, spec, action, target, ratio, revision)
    return run


def _add_candidate(
    store: Store,
    run: Run,
    ordinal: int,
    spec: dict[str, Any],
    action: str,
    target: int | None,
    ratio: float,
    revision: int | None,
) -> None:
    candidate = Candidate.create(
        run=run.id,
        ordinal=ordinal,
        text=spec["text"],
        importance=spec.get("importance", 0.5),
        category=spec.get("category", "uncategorized"),
        proposed_action=action,
        proposed_target=target,
        proposed_ratio=ratio,
        target_revision=revision,
    )
    episodes = spec.get("episodes")
    if episodes is None:
        episodes = [make_episode(store)]
    for episode_id in episodes:
        CandidateEpisode.create(candidate=candidate.id, episode=episode_id)


def candidate_ids(run: Run) -> list[int]:
    return [
        c.id for c in Candidate.select().where(Candidate.run == run.id).order_by(Candidate.ordinal)
    ]


def python_env() -> dict[str, str]:
    """Environment for child interpreters: the package importable from the checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=python_env(),
        cwd=REPO_ROOT,
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """``curator ARGV`` in-process: exit code, stdout (parsed with ``--json``) and stderr."""
    import json

    from curator.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    doc = json.loads(out) if "--json" in argv and out.strip() else out
    return code, doc, err


def database_dump(path: str | Path) -> Any:
    """Every table of the database at ``path``, to compare before and after a refusal."""
    from curator.store.snapshot import logical_dump

    store = Store(path)
    try:
        return logical_dump(store)
    finally:
        store.close()

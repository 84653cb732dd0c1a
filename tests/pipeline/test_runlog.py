"""recorded_run(): the one run lifecycle (done, cancelled, failed) and remote provenance."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curator.llm.model_file import ModelInfo
from curator.pipeline.progress import Cancelled, TaskState
from curator.pipeline.runlog import recorded_run
from curator.store.db import Store
from curator.store.identity import current_identity
from curator.store.models import Run


class RemoteLike:
    """Test double: the provenance side of a backend without a local file (a server).

    Only ``recorded_run`` is exercised; no text is generated.
    """

    model_info: ModelInfo | None = None
    offload = "server test at http://127.0.0.1:1"
    n_ctx = 2048

    @property
    def remote(self) -> dict[str, Any]:
        return {"url": "http://127.0.0.1:1", "model": "m", "kind": "test"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "runs.sqlite")
    yield s
    s.close()


def _run(store: Store, body: Any) -> tuple[Any, Run]:
    state = TaskState()
    with recorded_run(
        store,
        "classify",
        backend=RemoteLike(),  # type: ignore[arg-type]
        prompts={},
        identity=current_identity(store),
        params={"p": 1},
        state=state,
        stats={"n": 0},
    ) as run:
        assert state.tick is not None  # the heartbeat runs while the body does
        body(run)
    assert state.tick is None
    return run, Run.get_by_id(run.id)


def test_a_normal_exit_is_done_with_the_stats_and_the_server_as_provenance(store: Store) -> None:
    def body(run: Any) -> None:
        run.stats["n"] = 3

    run, row = _run(store, body)
    assert (run.status, row.status, row.stats) == ("done", "done", {"n": 3})
    assert (row.model_path, row.model_name) == ("http://127.0.0.1:1", "m")
    assert row.model_metadata["remote"]["kind"] == "test"


def test_a_cancel_is_absorbed_and_recorded_with_its_message(store: Store) -> None:
    def body(run: Any) -> None:
        run.cancel_message = lambda: "cancelled after 1 of 2"
        raise Cancelled

    run, row = _run(store, body)
    assert run.status == row.status == "cancelled"
    assert row.status_reason == "cancelled after 1 of 2"


def test_a_failure_is_recorded_on_one_line_and_raised(store: Store) -> None:
    def body(run: Any) -> None:
        raise RuntimeError("the server\nwent away")

    with pytest.raises(RuntimeError):
        _run(store, body)
    row = Run.select().get()
    assert row.status == "failed" and row.status_reason == "the server went away"


def test_a_body_may_finish_the_run_itself(store: Store) -> None:
    run, row = _run(store, lambda run: run.finish("staged", ""))
    assert run.status == row.status == "staged"

"""Children that a test kills with SIGKILL at a random moment of a commit or an import.

Each child is a real process of its own, forked by a fork server that imported the store,
the commit and the importer once: a child starts working at once instead of paying a
fresh interpreter's imports (before, most of each kill's time). The child reports START
(the store is open, the work begins) and DONE through a pipe; each message is one write,
so a kill leaves either the whole message or none of it.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from curator.pipeline.commit import commit_run
from curator.store.db import Store
from curator.store.importer import import_files

#: What the fork server imports before it forks the first child. The commit's guard
#: relearning (after its transaction) imports scikit-learn on first use: imported in every
#: child, that was most of a child's time, so most kills landed after the transaction.
PRELOAD = [
    "curator.store.db",
    "curator.store.importer",
    "curator.pipeline.commit",
    "sklearn.feature_extraction.text",
    "sklearn.linear_model",
    __name__,
]


def commit(path: str, run_id: int, report: Connection) -> None:
    """Open the store, say START, commit the run, say DONE."""
    store = Store(path)
    report.send("START")
    commit_run(store, run_id)
    report.send("DONE")
    store.close()


def import_episodes(path: str, files: list[str], report: Connection) -> None:
    """Open the store, say START, import the files, say DONE."""
    store = Store(path)
    report.send("START")
    import_files(store, files)
    report.send("DONE")
    store.close()


def run_killed(
    work: Callable[..., None], args: tuple[object, ...], kill_after: float | None
) -> tuple[bool, float]:
    """Run ``work(*args, pipe)`` in a child; SIGKILL it ``kill_after`` s after its START.

    Returns (whether the child had said DONE, seconds from START to the end). Without
    ``kill_after`` the child must finish and exit 0.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    receive, send = multiprocessing.Pipe(duplex=False)
    child = context.Process(target=work, args=(*args, send))
    child.start()
    send.close()
    try:
        try:
            first = receive.recv() if receive.poll(300) else None
        except EOFError:  # the child ended before it started
            first = None
        assert first == "START", f"the child did not start (exit {child.join(5) or child.exitcode})"
        started = time.perf_counter()
        if kill_after is not None:
            time.sleep(kill_after)
            child.kill()
        child.join(300)
        elapsed = time.perf_counter() - started
        try:
            finished = receive.poll() and receive.recv() == "DONE"
        except EOFError:  # killed before DONE: the pipe closed with nothing in it
            finished = False
    finally:
        receive.close()
        if child.is_alive():  # a failed check above: leave no child behind
            child.kill()
            child.join()
    if kill_after is None:
        assert child.exitcode == 0 and finished, f"exit {child.exitcode}"
    return finished, elapsed

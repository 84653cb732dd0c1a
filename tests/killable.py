"""The commit a kill test runs in a child process (see test_review_kill).

Kept apart from the test module so a fork server can import it, with the store and the
commit, once: each child is then forked with everything imported and starts committing at
once, instead of paying a fresh interpreter's imports (most of each kill's time before).
"""

from __future__ import annotations

from multiprocessing.connection import Connection

from curator.pipeline.commit import commit_run
from curator.store.db import Store

#: What the fork server imports before it forks the first child.
PRELOAD = ["curator.store.db", "curator.pipeline.commit", __name__]


def commit_in_child(path: str, run_id: int, report: Connection) -> None:
    """Open the store, say START, commit the run, say DONE (nothing after a SIGKILL)."""
    store = Store(path)
    report.send("START")
    commit_run(store, run_id)
    report.send("DONE")
    store.close()

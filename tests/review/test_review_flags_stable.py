"""``curator review`` shows the same flags, in the same order, in every fresh process.

Three reviews in a row once alternated between "an API key (sk-…)" and "a long
random-looking string" for one text (the reason kept for a span depended on the string
hash seed), and ``decide`` recorded whichever appeared.
"""

from __future__ import annotations

import json
import subprocess
import sys

from curator.store.db import Store
from review.conftest import REPO_ROOT, make_staged_run, python_env

KEYED = "Billing calls use sk-proj-abcdefghijklmnop1234567890XY; the password is Hunter2!x."


def test_review_flags_are_identical_across_processes(store: Store) -> None:
    run = make_staged_run(store, [{"text": KEYED}])
    store.close()
    docs = []
    for seed in ("1", "2", "3", "5"):
        env = {**python_env(), "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", "import sys; from curator.cli import main; "
             "sys.exit(main(sys.argv[1:]))",
             "--db", str(store.path), "review", str(run.id), "--json"],
            capture_output=True, text=True, timeout=120, env=env, cwd=REPO_ROOT,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        docs.append(json.loads(out.stdout)["candidates"][0]["flags"])
    assert all(doc == docs[0] for doc in docs)
    assert next(f["reason"] for f in docs[0] if f["kind"] == "secret") == "an API key (sk-…)"

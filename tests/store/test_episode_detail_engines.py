"""An episode's detail reads the same on both engines, whatever its metadata holds.

The detail query read the import provenance with SQLite's ``json_extract``, which
PostgreSQL has no function of: the window's detail panel said "could not be read" for
every episode there. The query now asks the engine's dialect; this property feeds it any
JSON an import file may carry, and a guard keeps SQLite-only functions out of the
application's SQL (they belong in :mod:`curator.store.engine`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.episode_queries import fetch_detail
from curator.store.models import Episode, utcnow

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

_serial = iter(range(10**9))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(provenance=JSON)
@example(provenance={"file": "chat.jsonl", "line": 3})
@example(provenance={"note": "a NUL \x00 inside"})
@example(provenance="not an object")
def test_the_import_provenance_reads_back_on_both_engines(db_url: str, provenance: Any) -> None:
    with Store(db_url) as store:
        with store.write():
            episode = Episode.create(
                content_hash=f"detail-{next(_serial)}",
                text="user: hello",
                timestamp=utcnow(),
                metadata={"import": provenance, "other": 1},
            )
        detail = fetch_detail(store, episode.id)
    assert detail is not None
    expected = json.loads(json.dumps(provenance))
    assert detail.imported == (expected if isinstance(expected, dict) else None)


SQLITE_ONLY = re.compile(
    r"(?<![.`\w])(json_extract|json_each|group_concat|julianday|strftime|ifnull)\("
    # SQLite's replace: peewee's conflict helper and a model's replace() are refused on
    # PostgreSQL ("only ignore or update"); an upsert names its conflict target
    r"|on_conflict_replace\(|\b[A-Z][A-Za-z]*\.replace(_many)?\(|INSERT OR (REPLACE|IGNORE)"
)


def test_the_application_sql_names_no_sqlite_only_function() -> None:
    """Outside the engine's module (and the migrations it translates), SQL is written
    once for both engines: a SQLite-only function or conflict clause there breaks
    PostgreSQL (the window's list of followed logs was saved with one)."""
    root = Path(__file__).resolve().parents[2] / "curator"
    allowed = {root / "store" / "engine.py", root / "store" / "migrations.py"}
    found = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path not in allowed
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SQLITE_ONLY.search(line)
    ]
    assert found == []

"""An episode's detail reads the same on both engines, whatever its metadata holds.

The detail query read the import provenance with SQLite's ``json_extract``, which
PostgreSQL has no function of: the window's detail panel said "could not be read" for
every episode there. The query now asks the engine's dialect; this property feeds it any
JSON an import file may carry, and a guard keeps SQLite-only functions out of the
application's SQL (they belong in :mod:`curator.store.engine`).
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.episode_queries import fetch_detail
from curator.store.models import ALL_MODELS, Episode, utcnow

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


SQLITE_ONLY_SQL = re.compile(
    r"(?<![.`\w])(json_extract|json_each|group_concat|julianday|strftime|ifnull)\("
    # SQLite's conflict clauses: PostgreSQL has neither (an upsert names its target)
    r"|\binsert\s+or\s+(replace|ignore|abort|fail|rollback)\b|\breplace\s+into\b",
    re.IGNORECASE,
)
"""In the application's SQL: the string literals of its code."""

MODEL_NAMES = "|".join(model.__name__ for model in ALL_MODELS)
SQLITE_ONLY_CALL = re.compile(
    # peewee's ways to SQLite's replace, which it refuses on PostgreSQL ("only ignore or
    # update"): the conflict helper, the action spelled out, a model's replace()
    r"\.on_conflict_replace\(|\.on_conflict\(\s*(action\s*=\s*)?[\'\"]replace"
    rf"|\b(?-i:{MODEL_NAMES})\.replace(_many)?\(",  # a model's name as it is spelled
    re.IGNORECASE,
)
"""In the application's code, its comments left out."""


def sqlite_only(source: str) -> list[int]:
    """The lines of ``source`` whose SQL or peewee calls only SQLite speaks."""
    found: set[int] = set()
    code: dict[int, list[str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.STRING and SQLITE_ONLY_SQL.search(token.string):
            found.add(token.start[0])
        if token.type != tokenize.COMMENT:
            code.setdefault(token.start[0], []).append(token.string)
    found.update(n for n, parts in code.items() if SQLITE_ONLY_CALL.search("".join(parts)))
    return sorted(found)


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ('sql = "insert  or REPLACE into setting values (?, ?)"', True),
        ("sql = 'REPLACE INTO setting VALUES (?, ?)'", True),
        ('sql = "SELECT ifnull(a, 0) FROM t"', True),
        ("Setting.insert(k).on_conflict_replace().execute()", True),
        ("Setting.insert(k).on_conflict('replace').execute()", True),
        ("Setting.insert(k).on_conflict(action='REPLACE').execute()", True),
        ("Setting.replace(key=k, value=v).execute()", True),
        ("Episode.replace_many(rows).execute()", True),
        ("# PostgreSQL has no INSERT OR REPLACE: an upsert instead", False),
        ("TEMPLATE.replace('{name}', name)", False),
        ("candidate.replace(' ', '')", False),
        ("Setting.insert(k).on_conflict(conflict_target=[Setting.key], preserve=[v])", False),
        ('sql = "INSERT INTO s VALUES (?) ON CONFLICT (key) DO NOTHING"', False),
    ],
)
def test_the_guard_knows_sqlite_only_sql_when_it_sees_it(source: str, flagged: bool) -> None:
    assert bool(sqlite_only(source + "\n")) is flagged


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
        for n in sqlite_only(path.read_text(encoding="utf-8"))
    ]
    assert found == []

"""Rows as plain dicts: what a changeset records, and the logical dump tests compare.

A changeset stores each touched row's state before and after as JSON. The states are the
raw SQLite column values (text, integer, real or NULL), read with plain SQL rather than
through the models, so that writing them back restores the row bit for bit: no datetime
or JSON round trip can reformat a value, and a float survives JSON exactly.

Only the columns a commit owns are tracked for episodes and runs. A commit sets an
episode's ``distilled_at``/``distilled_run_id`` and a run's status; tracking the whole row
would make a later relabel of a source episode look like a conflicting change and refuse
the undo of an unrelated commit. Patterns, provenance links and candidates are tracked
whole, so a deleted one can be re-created from its dict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from curator.errors import CuratorError
from curator.store.change_marker import CHANGE_COUNTER_KEY
from curator.store.db import Store
from curator.store.engine import in_chunks

Row = dict[str, Any]
Key = tuple[Any, ...]


@dataclass(frozen=True)
class TableSpec:
    """How a changeset tracks one table."""

    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...] | None  # None: every column (the row can be re-created)


SPECS: dict[str, TableSpec] = {
    "run": TableSpec("run", ("id",), ("status", "status_reason")),
    "pattern": TableSpec("pattern", ("id",), None),
    "pattern_episode": TableSpec("pattern_episode", ("pattern_id", "episode_id"), None),
    "episode": TableSpec("episode", ("id",), ("distilled_at", "distilled_run_id")),
    "candidate": TableSpec("candidate", ("id",), None),
}

PARENTS_FIRST = ("run", "pattern", "episode", "candidate", "pattern_episode")
"""Order for (re)inserting rows so foreign keys always point at existing rows."""

DUMP_TABLES = (
    "identity_version",
    "run",
    "episode",
    "pattern",
    "pattern_episode",
    "candidate",
    "candidate_episode",
    "trace_step",
    "setting",
)
"""Everything but the audit trail (decision/label events, changesets), which only grows."""


def tuples(query: Any) -> list[tuple[Any, ...]]:
    """A select's rows as plain tuples."""
    return [tuple(row) for row in query.tuples()]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_columns(store: Store, table: str) -> tuple[str, ...]:
    """The table's columns in schema order."""
    return store.dialect.columns(store.db, table)


def tracked_columns(store: Store, table: str) -> tuple[str, ...]:
    """Key columns followed by the tracked ones."""
    spec = SPECS[table]
    if spec.columns is None:
        return table_columns(store, table)
    return spec.key + tuple(c for c in spec.columns if c not in spec.key)


def key_of(table: str, row: Mapping[str, Any]) -> Key:
    return tuple(row[column] for column in SPECS[table].key)


def key_dict(table: str, key: Key) -> dict[str, Any]:
    """The JSON form of a key stored in ``ChangeRow.key``."""
    return dict(zip(SPECS[table].key, key, strict=True))


def key_from_dict(table: str, value: Mapping[str, Any]) -> Key:
    return tuple(value[column] for column in SPECS[table].key)


def _select_by_key(
    store: Store, table: str, columns: tuple[str, ...], keys: list[Key]
) -> Iterable[Row]:
    """The rows of ``keys`` (by the key's first column, a chunk of them per statement),
    each with ``columns``; the caller keeps only the keys it asked for."""
    select = ", ".join(_q(c) for c in columns)
    first = SPECS[table].key[0]
    firsts = list(dict.fromkeys(k[0] for k in keys))
    for chunk in in_chunks(firsts):
        marks = ", ".join("?" for _ in chunk)
        sql = f"SELECT {select} FROM {_q(table)} WHERE {_q(first)} IN ({marks})"
        for values in store.execute(sql, tuple(chunk)):
            yield dict(zip(columns, values, strict=True))


def read_rows(store: Store, table: str, keys: Iterable[Key]) -> dict[Key, Row | None]:
    """The tracked state of each requested row (None: the row does not exist)."""
    wanted = list(dict.fromkeys(keys))
    result: dict[Key, Row | None] = dict.fromkeys(wanted)
    if not wanted:
        return result
    for row in _select_by_key(store, table, tracked_columns(store, table), wanted):
        key = key_of(table, row)
        if key in result:
            result[key] = row
    return result


def write_rows(
    store: Store, table: str, states: Iterable[tuple[Key, Mapping[str, Any] | None]]
) -> None:
    """Make each row's tracked state the one given: delete it (None), update it, or
    re-create it; in the order given, as one statement per row would.

    A few statements for the whole list, whatever its length: which rows exist is read in
    chunks of keys, and consecutive writes of the same shape are one ``executemany``
    (psycopg pipelines it to PostgreSQL). The undo of a commit of a few hundred
    candidates writes a thousand rows and more; one statement each would be as many round
    trips to a server. Must run inside ``store.write()``; the caller orders the tables so
    foreign keys hold.
    """
    spec = SPECS[table]
    items = list(states)
    where = " AND ".join(f"{_q(c)} = ?" for c in spec.key)
    kept = [key for key, state in items if state is not None]
    present = (
        {key_of(table, r) for r in _select_by_key(store, table, spec.key, kept)} if kept else set()
    )
    batches: list[tuple[str, list[tuple[Any, ...]]]] = []

    def add(sql: str, params: tuple[Any, ...]) -> None:
        if batches and batches[-1][0] == sql:
            batches[-1][1].append(params)
        else:
            batches.append((sql, [params]))

    for key, state in items:
        if state is None:
            add(f"DELETE FROM {_q(table)} WHERE {where}", key)
            present.discard(key)
            continue
        if key in present:
            values = {c: v for c, v in state.items() if c not in spec.key}
            if values:
                assignments = ", ".join(f"{_q(c)} = ?" for c in values)
                add(f"UPDATE {_q(table)} SET {assignments} WHERE {where}", (*values.values(), *key))
            continue
        if spec.columns is not None:
            raise CuratorError(
                f"cannot restore {table} {key_dict(table, key)}: the row no longer exists"
            )
        columns = list(state)
        add(
            f"INSERT INTO {_q(table)} ({', '.join(_q(c) for c in columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})",
            tuple(state[c] for c in columns),
        )
        present.add(key)
    for sql, params in batches:
        if len(params) == 1:
            store.db.execute_sql(sql, params[0])
        else:
            store.db.cursor().executemany(sql, params)


def logical_dump(store: Store) -> dict[str, list[Row]]:
    """Every row of the Identity, Knowledge, provenance, episode and review tables.

    Two dumps are equal when the memory the agent gets and everything the review shows are
    the same; the audit trail is left out because undo adds to it by design, and so is the
    change counter (:mod:`curator.store.change_marker`), which every write bumps.
    """
    dump: dict[str, list[Row]] = {}
    for table in DUMP_TABLES:
        columns = table_columns(store, table)
        select = ", ".join(_q(c) for c in columns)
        where = f" WHERE \"key\" != '{CHANGE_COUNTER_KEY}'" if table == "setting" else ""
        rows = store.execute(f"SELECT {select} FROM {_q(table)}{where} ORDER BY 1, 2")
        dump[table] = [dict(zip(columns, values, strict=True)) for values in rows]
    return dump

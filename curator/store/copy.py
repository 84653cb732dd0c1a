"""Copying a whole database to another one, between SQLite and PostgreSQL either way.

``curator copy`` moves a curator from a laptop's SQLite file to a shared PostgreSQL
database (and back, or file to file, server to server); a PostgreSQL backup without
``pg_dump`` is such a copy into a SQLite file (:mod:`curator.store.pg_backup`).

- **Every table.** The tables are the models' (:data:`curator.store.models.ALL_MODELS`),
  parents before children (their foreign keys decide, :func:`copied_tables`); a source
  whose schema holds a content table the models do not name is refused rather than copied
  in part. Every column is copied as stored, ids included, so labels keep who set them,
  changesets keep their undo history and runs their traces. A self-reference
  (``changeset.undone_by_id`` names a later changeset) is written once every row of its
  table exists. PostgreSQL's id sequences are then moved past the copied ids.
- **Not the database's own bookkeeping.** The change counter and the backup identity
  (:data:`LOCAL_SETTING_KEYS`) describe one database, not its content: the destination
  keeps its own, so its backups stay its own.
- **Verified.** Every table's rows are counted and hashed (:func:`table_digest`: read back
  in key order, values normalised the same way on both engines) on the source while they
  are read and on the destination before the transaction commits; a difference fails the
  copy.
- **All or nothing.** The whole copy, the emptying of ``force`` included, is one write
  transaction of the destination: any failure (a value the destination refuses, a lost
  connection, a failed check, a stop asked by ``progress``) leaves it as it was. The
  source is read in one snapshot and never written.
- **Never over content by accident.** A destination holding rows is refused unless
  ``force``, which empties it first (inside the same transaction).
"""

from __future__ import annotations

import graphlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from peewee import AutoField, CompositeKey, ForeignKeyField

from curator.core.wording import plural
from curator.errors import ConflictError, CuratorError
from curator.store.backup_identity import DATABASE_ID_KEY
from curator.store.db import Store
from curator.store.db_errors import DATABASE_ERRORS, commit_outcome_unknown
from curator.store.engine import CHANGE_COUNTER_KEY
from curator.store.models import ALL_MODELS, BaseModel, Setting

LOCAL_SETTING_KEYS = (CHANGE_COUNTER_KEY, DATABASE_ID_KEY)
"""``setting`` rows that belong to one database, not to its content: never copied,
hashed or counted, and kept by a destination that is emptied."""

PAGE_ROWS = 1000
"""Rows read and written per statement: memory stays flat on a large database."""

ProgressFn = Callable[[str, int, int], None]
"""``progress(table, rows_done, rows_total)`` after every page (and once per table)."""


class CopyError(CuratorError):
    """The copy failed or did not verify; the destination was left as it was."""

    exit_code = 1


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class CopiedTable:
    """One table as the copy walks it: its key (the read order), the id the engine
    generates (None: none), the columns naming its own rows (written last) and the rows
    left out (the setting table's own bookkeeping)."""

    name: str
    key: tuple[str, ...]
    generated_id: str | None = None
    self_refs: tuple[str, ...] = ()
    skip_keys: tuple[str, ...] = ()

    def where(self, extra: str = "") -> tuple[str, list[Any]]:
        """The WHERE clause (with ``extra`` ANDed) leaving out the skipped rows."""
        parts = [f"({extra})"] if extra else []
        params: list[Any] = []
        if self.skip_keys:
            marks = ", ".join("?" for _ in self.skip_keys)
            parts.append(f"{_q(self.key[0])} NOT IN ({marks})")
            params += list(self.skip_keys)
        return (" WHERE " + " AND ".join(parts) if parts else ""), params


def _spec(model: type[BaseModel]) -> CopiedTable:
    meta = model._meta
    pk: Any = meta.primary_key
    if isinstance(pk, CompositeKey):
        key = tuple(meta.fields[name].column_name for name in pk.field_names)
    else:
        key = (pk.column_name,)
    generated = pk.column_name if isinstance(pk, AutoField) else None
    self_refs = tuple(
        f.column_name
        for f in meta.sorted_fields
        if isinstance(f, ForeignKeyField) and f.rel_model is model
    )
    skip = LOCAL_SETTING_KEYS if model is Setting else ()
    return CopiedTable(meta.table_name, key, generated, self_refs, skip)


def copied_tables() -> tuple[CopiedTable, ...]:
    """Every model's table, each after the tables its foreign keys name (so rows are
    inserted parents first and deleted children first)."""
    order = graphlib.TopologicalSorter[type[BaseModel]]()
    for model in ALL_MODELS:
        meta = model._meta
        parents = {
            f.rel_model
            for f in meta.sorted_fields
            if isinstance(f, ForeignKeyField) and f.rel_model is not model
        }
        order.add(model, *parents)
    return tuple(_spec(model) for model in order.static_order())


# -- the content hash -------------------------------------------------------------------------


def _normal(value: Any) -> Any:
    """One value as both engines return it: a flag as its integer, a BYTEA's memoryview
    as bytes, -0.0 as 0.0 (SQLite stores a negative zero as zero; PostgreSQL keeps its
    sign, and the two are one number); text, integers, other floats and NULL as they are."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def _pages(
    store: Store, table: CopiedTable, columns: tuple[str, ...], page_rows: int = PAGE_ROWS
) -> Iterator[list[tuple[Any, ...]]]:
    """The table's rows in key order, ``page_rows`` at a time (keyset paging: each
    page starts after the last key read, so no page rereads the table from the start)."""
    select = ", ".join(_q(c) for c in columns)
    order = ", ".join(_q(c) for c in table.key)
    positions = [columns.index(c) for c in table.key]
    after: tuple[Any, ...] | None = None
    while True:
        extra = ""
        params: list[Any] = []
        if after is not None:
            if len(table.key) == 1:
                extra = f"{_q(table.key[0])} > ?"
            else:
                marks = ", ".join("?" for _ in table.key)
                extra = f"({order}) > ({marks})"
            params = list(after)
        where, more = table.where(extra)
        rows = store.execute(
            f"SELECT {select} FROM {_q(table.name)}{where} ORDER BY {order} LIMIT {int(page_rows)}",
            tuple(params + more),
        )
        if not rows:
            return
        page = [tuple(_normal(v) for v in row) for row in rows]
        yield page
        if len(rows) < page_rows:
            return
        after = tuple(page[-1][i] for i in positions)


def _hash_rows(digest: Any, rows: list[tuple[Any, ...]]) -> None:
    for row in rows:
        digest.update(repr(row).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")


def table_digest(
    store: Store, table: CopiedTable, columns: tuple[str, ...], page_rows: int = PAGE_ROWS
) -> tuple[int, str]:
    """``(rows, sha256)`` of a table: its rows read in key order, values normalised
    (:func:`_normal`) and written out with ``repr``, the same on both engines."""
    digest = hashlib.sha256(repr(columns).encode("utf-8"))
    count = 0
    for page in _pages(store, table, columns, page_rows):
        count += len(page)
        _hash_rows(digest, page)
    return count, digest.hexdigest()


def _count(store: Store, table: CopiedTable) -> int:
    where, params = table.where()
    rows = store.execute(f"SELECT count(*) FROM {_q(table.name)}{where}", tuple(params))
    return int(rows[0][0])


# -- the copy ---------------------------------------------------------------------------------


@dataclass
class CopyReport:
    """A verified copy: rows and content hash per table (equal on both sides)."""

    source: str
    dest: str
    tables: dict[str, tuple[int, str]] = field(default_factory=dict)
    replaced_rows: int = 0  # rows ``force`` emptied out of the destination
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(n for n, _ in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dest": self.dest,
            "rows": self.rows,
            "replaced_rows": self.replaced_rows,
            "seconds": round(self.seconds, 3),
            "tables": {
                name: {"rows": n, "sha256": digest} for name, (n, digest) in self.tables.items()
            },
        }

    def describe(self) -> str:
        replaced = f", replacing {plural(self.replaced_rows, 'row')}" if self.replaced_rows else ""
        return (
            f"copied {plural(self.rows, 'row')} in {len(self.tables)} tables from {self.source} to "
            f"{self.dest}{replaced} ({self.seconds:.2f} s); counts and content hashes match"
        )


def schema_problem(store: Store, tables: tuple[CopiedTable, ...]) -> str | None:
    """Why ``store``'s schema cannot be copied table by table (None: it can)."""
    known = {t.name for t in tables}
    present = store.dialect.content_tables(store.db)
    unknown = sorted(present - known)
    if unknown:
        return f"{store.location} holds tables the copy does not know ({', '.join(unknown)})"
    missing = sorted(known - present)
    if missing:
        return f"{store.location} lacks the tables {', '.join(missing)}"
    return None


def occupied(store: Store, tables: tuple[CopiedTable, ...] | None = None) -> dict[str, int]:
    """The destination's non-empty tables and their row counts (bookkeeping left out)."""
    counts = {t.name: _count(store, t) for t in tables or copied_tables()}
    return {name: n for name, n in counts.items() if n}


def copy_database(
    source: Store,
    dest: Store,
    *,
    force: bool = False,
    progress: ProgressFn | None = None,
    page_rows: int = PAGE_ROWS,
) -> CopyReport:
    """Copy every row of ``source`` into ``dest`` (see the module docstring).

    ``page_rows`` rows are read and written per statement (small in tests, so that the
    paging itself is exercised). Raises ConflictError for a destination that holds rows
    without ``force``, CopyError
    when the copy fails or does not verify; the destination is then as it was.
    """
    if dest.read_only:
        raise CuratorError(f"read-only: {dest.location} cannot be written; nothing was copied")
    started = time.perf_counter()
    tables = copied_tables()
    report = CopyReport(source.location, dest.location)
    if source.dialect is dest.dialect and source.dialect.same_database(source.db, dest.db):
        raise CuratorError(
            f"SOURCE and DEST are the same database ({dest.location}); nothing was copied"
        )
    for store in (source, dest):
        problem = schema_problem(store, tables)
        if problem is not None:
            raise CopyError(f"{problem}; nothing was copied")
    try:
        with source.read(), dest.write():
            held = occupied(dest, tables)
            if held and not force:
                shown = ", ".join(f"{name} {n:,}" for name, n in held.items())
                raise ConflictError(
                    f"{dest.location} already holds rows ({shown}); nothing was copied: "
                    "pass --force to replace its content"
                )
            report.replaced_rows = sum(held.values())
            for table in reversed(tables):
                if table.name in held:
                    where, params = table.where()
                    dest.db.execute_sql(f"DELETE FROM {_q(table.name)}{where}", tuple(params))
            for table in tables:
                report.tables[table.name] = _copy_table(source, dest, table, progress, page_rows)
            for table in tables:
                if table.generated_id is not None:
                    dest.dialect.advance_ids(dest.db, table.name, table.generated_id)
            for table in tables:
                columns = source.dialect.columns(source.db, table.name)
                copied = table_digest(dest, table, columns, page_rows)
                if copied != report.tables[table.name]:
                    raise CopyError(
                        f"the copy of {table.name} does not match its source "
                        f"({plural(copied[0], 'row')} against {report.tables[table.name][0]:,}, or "
                        "different content); nothing was copied"
                    )
    except CuratorError:
        raise
    except DATABASE_ERRORS as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if commit_outcome_unknown(exc) is not None:  # the copy may be in DEST, whole
            raise CopyError(
                f"the copy from {source.location} to {dest.location} may have been "
                f"applied: {reason}; look at {dest.location} before copying again"
            ) from exc
        raise CopyError(
            f"the copy from {source.location} to {dest.location} failed: {reason}; "
            f"{dest.location} was left as it was"
        ) from exc
    report.seconds = time.perf_counter() - started
    return report


def _copy_table(
    source: Store,
    dest: Store,
    table: CopiedTable,
    progress: ProgressFn | None,
    page_rows: int,
) -> tuple[int, str]:
    """Copy one table page by page; its ``(rows, sha256)`` as read from the source."""
    columns = source.dialect.columns(source.db, table.name)
    wanted = set(dest.dialect.columns(dest.db, table.name))
    if set(columns) != wanted:
        raise CopyError(
            f"the table {table.name} has other columns in {dest.location} than in "
            f"{source.location}; nothing was copied"
        )
    total = _count(source, table)
    if progress is not None:
        progress(table.name, 0, total)
    names = ", ".join(_q(c) for c in columns)
    marks = ", ".join("?" for _ in columns)
    insert = f"INSERT INTO {_q(table.name)} ({names}) VALUES ({marks})"
    deferred = [columns.index(c) for c in table.self_refs]
    keys = [columns.index(c) for c in table.key]
    later: list[tuple[Any, ...]] = []  # (self-reference values..., key...)
    digest = hashlib.sha256(repr(columns).encode("utf-8"))
    done = 0
    for page in _pages(source, table, columns, page_rows):
        _hash_rows(digest, page)
        rows = page
        if deferred:
            rows = []
            for row in page:
                refs = tuple(row[i] for i in deferred)
                if any(r is not None for r in refs):
                    later.append(refs + tuple(row[i] for i in keys))
                rows.append(tuple(None if i in deferred else v for i, v in enumerate(row)))
        dest.db.cursor().executemany(insert, rows)
        done += len(page)
        if progress is not None:
            progress(table.name, done, total)
    if later:
        sets = ", ".join(f"{_q(columns[i])} = ?" for i in deferred)
        where = " AND ".join(f"{_q(c)} = ?" for c in table.key)
        dest.db.cursor().executemany(f"UPDATE {_q(table.name)} SET {sets} WHERE {where}", later)
    return done, digest.hexdigest()


def open_apart(location: str | os.PathLike[str], **options: Any) -> Store:
    """A second store opened without taking the models from the store they are bound to.

    Opening a store binds the models to it; a command working on two databases at once
    (the copy, a backup through a copy) keeps them bound to the one it opened first.
    """
    bound = ALL_MODELS[0]._meta.database
    store = Store(location, **options)
    if bound is not None:
        bound.bind(ALL_MODELS, bind_refs=False, bind_backrefs=False)
    return store

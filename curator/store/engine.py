"""What differs between the two database engines, SQLite and PostgreSQL, in one place.

The rest of the application writes SQL once, in SQLite's dialect with ``?`` parameters,
and asks the store's :class:`Dialect` for the few things that cannot be written once:

- where the schema version lives (SQLite's ``PRAGMA user_version``; a one-row
  ``curator_schema`` table on PostgreSQL) and the migrations' column types (PostgreSQL
  gets ``BIGINT`` identities, ``DOUBLE PRECISION``, ``BYTEA`` and byte-wise ``"C"``
  collated text, so text sorts and compares as in SQLite);
- episode search: SQLite's external-content FTS5 trigram index narrows ``LIKE``; on
  PostgreSQL a ``pg_trgm`` GIN index serves ``ILIKE`` on the ``"C"``-collated text
  column, which folds ASCII letters only: exactly SQLite's ``LIKE``, so both engines
  return the same episodes in the same order (tests/store/test_pg_engine.py checks it on
  the search tests' cases and a generated property; ``tsvector`` was rejected because it
  matches words, not substrings such as ``snake_case`` or ``50%``);
- the write lock: SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL every write transaction
  takes one transaction-scoped advisory lock first, so writers queue exactly as on SQLite
  (a commit's checks and its writes see one state) and ``lock_timeout`` plays the busy
  timeout; reads are ``REPEATABLE READ`` snapshots, as SQLite's deferred transactions;
- a table's columns, the change counter's upsert, how a failure is named.

The PostgreSQL driver (psycopg 3) is imported only when a ``postgresql://`` URL is opened
(:mod:`curator.store.pg_driver`), and its cursor takes the application's ``?``
parameters (:func:`qmark_to_format`), so no query is written twice. The connection
itself (reconnecting, error codes) is :mod:`curator.store.pg_connection`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import peewee

from curator.core.derived_cache import TEXT_PATTERNS_FILE, regex
from curator.store.migrations import MIGRATIONS
from curator.store.pg_url import is_postgres_url

CHANNEL = "curator_changes"
"""The PostgreSQL notification channel of the store's writes (one per database; the
watchers of :mod:`curator.store.changes` listen on it)."""

CHANGE_COUNTER_KEY = "change_counter"


def read_change_counter(db: peewee.Database) -> int:
    """The counter every write of the application bumps (:mod:`change_marker`): the same
    number from every connection, of either engine (0 before the first write)."""
    row = db.execute_sql(
        'SELECT "value" FROM "setting" WHERE "key" = ?', (CHANGE_COUNTER_KEY,)
    ).fetchone()
    return counter_value(row)


def counter_value(row: Sequence[Any] | None) -> int:
    """The change counter from its ``setting`` row (none yet, or not a number: 0)."""
    try:
        return int(row[0]) if row is not None else 0
    except (TypeError, ValueError):
        return 0


"""The ``setting`` row every write transaction bumps (:mod:`curator.store.change_marker`)."""

SCHEMA_TABLE = "curator_schema"
"""PostgreSQL's schema version: one row; SQLite keeps it in ``PRAGMA user_version``."""

WRITE_LOCK_KEY = 0x6375726174  # "curat": the advisory lock every write transaction takes

IN_LIST_SIZE = 400
"""Keys per ``IN (...)`` list (and rows per multi-row ``INSERT``): one bound parameter
each (a row: one per column), so a long list of ids is read or written a chunk at a time.

Both engines cap the parameters of one statement: SQLite at ``SQLITE_MAX_VARIABLE_NUMBER``
(32,766 since 3.32; 999 before), PostgreSQL at 65,535 (the wire protocol's 16-bit count).
400 keys stay under even the old SQLite limit, and 400 rows of a few columns under the
current one; a chunk is still large enough that a list of thousands costs a handful of
statements, not one round trip to a server per key."""

_T = TypeVar("_T")


def in_chunks(items: Sequence[_T], size: int = IN_LIST_SIZE) -> Iterator[Sequence[_T]]:
    """``items`` in consecutive slices of at most ``size`` (:data:`IN_LIST_SIZE`), in order;
    nothing for an empty sequence."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- parameters ---------------------------------------------------------------------------

_PARAM_TOKENS = regex(r"""("(?:[^"]|"")*"|'(?:[^']|'')*')|(\?)|(%)""", kept_in=TEXT_PATTERNS_FILE)


@functools.lru_cache(maxsize=512)
def qmark_to_format(sql: str) -> str:
    """SQLite's ``?`` parameters as psycopg's ``%s`` (a literal ``%`` doubled).

    Quoted names and string literals are left as written (their ``%`` doubled too:
    psycopg reads the whole text for placeholders).
    """

    def swap(match: re.Match[str]) -> str:
        quoted = match.group(1)
        if quoted is not None:
            return quoted.replace("%", "%%")
        return "%s" if match.group(2) else "%%"

    return _PARAM_TOKENS.sub(swap, sql)


# -- the dialects -------------------------------------------------------------------------


SchemaObjects = tuple[frozenset[str], frozenset[str]]
"""A database's tables and extensions (:meth:`Dialect.schema_objects`)."""


class Dialect:
    """SQLite: the dialect the application's SQL is written in."""

    name = "SQLite"
    is_file = True
    reuses_ids = True
    """A removed row's id is given to the next row when it was the highest (an INTEGER
    PRIMARY KEY without AUTOINCREMENT): an id kept elsewhere may come to name another row."""

    def schema_version(self, db: peewee.Database) -> int:
        return int(db.execute_sql("PRAGMA user_version").fetchone()[0])

    def set_schema_version(self, db: peewee.Database, version: int) -> None:
        # PRAGMA takes no parameters; version is an int we computed.
        db.execute_sql(f"PRAGMA user_version = {int(version)}")

    def migration(self, version: int) -> tuple[str, ...]:
        """The statements that bring the schema from ``version - 1`` to ``version``."""
        return MIGRATIONS[version - 1]

    def columns(self, db: peewee.Database, table: str) -> tuple[str, ...]:
        """The table's columns in schema order."""
        quoted = '"' + table.replace('"', '""') + '"'
        return tuple(str(row[1]) for row in db.execute_sql(f"PRAGMA table_info({quoted})"))

    # episode search -----------------------------------------------------------------------

    text_condition = "text LIKE ? ESCAPE '\\'"
    """The condition that defines a text search's result (ASCII letters folded)."""

    narrows_text = True
    """Whether a text search adds the index's candidates as a condition of its own
    (SQLite's FTS5 table is apart from the episodes; PostgreSQL's index serves ILIKE)."""

    def candidates(self, phrase: str, like: str) -> tuple[str, list[Any]]:
        """A sub-select of the ids the text index offers for a query (a superset)."""
        return "SELECT rowid FROM episode_fts WHERE episode_fts MATCH ?", [phrase]

    def indexed_by(self, index: str) -> str:
        """The hint that makes a walk follow the sort column's index."""
        return f" INDEXED BY {index}"

    def no_table_scan(self, db: peewee.Database) -> contextlib.AbstractContextManager[None]:
        """Around search statements that must read an index, never the table whole: a
        text search (SQLite asks its FTS5 table) and a walk along a sort column's index
        (SQLite's ``INDEXED BY``). Nothing to do on SQLite."""
        return contextlib.nullcontext()

    def ranked(self, phrase: str, like: str) -> tuple[str, list[Any]]:
        """``rid, score`` of the matches, lower scores better (SQLite's bm25)."""
        return (
            "SELECT rowid AS rid, bm25(episode_fts) AS score FROM episode_fts "
            "WHERE episode_fts MATCH ?",
            [phrase],
        )

    # bookkeeping ----------------------------------------------------------------------------

    bump_sql = (
        'INSERT INTO "setting" ("key", "value") VALUES (?, \'1\') '
        'ON CONFLICT ("key") DO UPDATE SET "value" = CAST('
        'CASE WHEN CAST("value" AS INTEGER) BETWEEN 0 AND 999999999999999 '
        'THEN CAST("value" AS INTEGER) + 1 ELSE 1 END AS TEXT)'
    )
    """The change counter's bump (:mod:`curator.store.change_marker`): one statement; an
    edited value that is no number, or one so big that adding 1 would no longer grow it,
    starts again at 1."""

    read_isolation = "DEFERRED"
    """The transaction kind of a consistent read that takes no write lock."""

    def schema_objects(self, db: peewee.Database) -> SchemaObjects:
        """What a schema set up in an empty database may add (PostgreSQL's: tables and
        extensions). A SQLite file holds nothing else: the file itself is taken back
        (:mod:`curator.store.take_back`), so nothing is recorded here."""
        del db
        return frozenset(), frozenset()

    def take_back(self, db: peewee.Database, before: SchemaObjects) -> None:
        """Drop what was added since ``before`` (:meth:`schema_objects`)."""
        del db, before

    def sort(self, column: str, descending: bool, nullable: bool = True) -> str:
        """``column`` in an ORDER BY, empty values where SQLite puts them: first going up,
        last going down (SQLite's own order, so nothing is added here). ``nullable``
        False: a NOT NULL column, which gets no NULLS clause (PostgreSQL would not walk
        its index in an order spelled with one)."""
        return f"{column} {'DESC' if descending else 'ASC'}"

    def json_value(self, column: str, key: str) -> str:
        """SQL for the value at ``key`` of the JSON text in ``column`` (names we write).

        A string that spells a NUL character (``\\u0000``, which a model's output may
        hold) reads up to that character, as SQLite's ``json_extract`` returns it; the
        stored text keeps the whole document on both engines."""
        return f"json_extract({column}, '$.{key}')"

    def set_wait(self, db: peewee.Database, milliseconds: int) -> None:
        """How long this connection's writes wait for another's write lock."""
        db.execute_sql(f"PRAGMA busy_timeout = {int(milliseconds):d}")

    def data_version(self, db: peewee.Database) -> int:
        """A number that changes when another connection commits (cheap polling)."""
        return int(db.execute_sql("PRAGMA data_version").fetchone()[0])

    def integrity_check(self, db: peewee.Database) -> str:
        rows = db.execute_sql("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    # copying between engines ------------------------------------------------------------

    def content_tables(self, db: peewee.Database) -> set[str]:
        """The tables that hold the database's content: not SQLite's own, not the search
        index (an FTS5 table and its shadow tables, rebuilt by triggers from episodes)."""
        rows = db.execute_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        ).fetchall()
        virtual = [str(n) for n, sql in rows if str(sql or "").upper().startswith("CREATE VIRTUAL")]
        return {
            str(n)
            for n, _ in rows
            if str(n) not in virtual and not any(str(n).startswith(v + "_") for v in virtual)
        }

    def advance_ids(self, db: peewee.Database, table: str, column: str) -> None:
        """Make the next generated ``column`` value follow the largest one written with an
        explicit id (SQLite's INTEGER PRIMARY KEY does by itself)."""

    def same_database(self, db: peewee.Database, other: peewee.Database) -> bool:
        """Whether two open connections reach one database, however it was named (a
        link, a second path, another spelling of a server's address)."""
        files = [_main_file(each) for each in (db, other)]
        if not all(files):  # an in-memory database: only itself
            return db is other
        try:
            return os.path.samefile(*files)
        except OSError:
            return os.path.realpath(files[0]) == os.path.realpath(files[1])

    def announce(self, db: peewee.Database) -> None:
        """Tell watchers of other connections what this write transaction changed
        (inside it, before COMMIT). SQLite's watchers poll ``data_version`` instead
        (:mod:`curator.store.changes`): nothing to send."""


def _main_file(db: peewee.Database) -> str:
    """The file of a connection's main database, as the file system names it: read as
    bytes, since a name that is not UTF-8 cannot be read as text (empty: in memory)."""
    connection = db.connection()
    text_factory = connection.text_factory
    connection.text_factory = bytes
    try:
        raw = connection.execute("PRAGMA database_list").fetchone()[2]
    finally:
        connection.text_factory = text_factory
    return os.fsdecode(raw) if raw else ""


class PostgresDialect(Dialect):
    """PostgreSQL: its schema version table, column types, trigram search, advisory lock."""

    name = "PostgreSQL"
    is_file = False
    reuses_ids = False  # a sequence never gives an id twice

    def same_database(self, db: peewee.Database, other: peewee.Database) -> bool:
        """Asked of the server, not of the URLs (``localhost`` and ``127.0.0.1``, a port
        in the host list or a socket folder name one database many ways): a session
        lock one connection holds, which the other cannot take, is held in its database
        (an advisory lock belongs to one database of a server)."""
        key = secrets.randbits(62)
        db.execute_sql("SELECT pg_advisory_lock(?)", (key,))
        try:
            taken = bool(other.execute_sql("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()[0])
            if taken:
                other.execute_sql("SELECT pg_advisory_unlock(?)", (key,))
        finally:
            db.execute_sql("SELECT pg_advisory_unlock(?)", (key,))
        return not taken

    def schema_version(self, db: peewee.Database) -> int:
        found = db.execute_sql(
            "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() "
            "AND tablename = ?",
            (SCHEMA_TABLE,),
        ).fetchone()
        if found is None:
            return 0
        row = db.execute_sql(f'SELECT max("version") FROM "{SCHEMA_TABLE}"').fetchone()
        return int(row[0] or 0)

    def set_schema_version(self, db: peewee.Database, version: int) -> None:
        db.execute_sql(f'CREATE TABLE IF NOT EXISTS "{SCHEMA_TABLE}" ("version" INTEGER NOT NULL)')
        db.execute_sql(f'DELETE FROM "{SCHEMA_TABLE}"')
        db.execute_sql(f'INSERT INTO "{SCHEMA_TABLE}" ("version") VALUES (?)', (int(version),))

    def tables(self, db: peewee.Database) -> set[str]:
        rows = db.execute_sql(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
        return {str(r[0]) for r in rows}

    def schema_objects(self, db: peewee.Database) -> SchemaObjects:
        """The tables of the current schema and the database's extensions, now."""
        extensions = db.execute_sql("SELECT extname FROM pg_catalog.pg_extension").fetchall()
        return frozenset(self.tables(db)), frozenset(str(r[0]) for r in extensions)

    def take_back(self, db: peewee.Database, before: SchemaObjects) -> None:
        """Drop, in one transaction, the tables and extensions added since ``before``
        (:meth:`schema_objects`); what was there before is not touched."""
        tables, extensions = self.schema_objects(db)
        with db.atomic():
            for table in sorted(tables - before[0]):
                db.execute_sql(f'DROP TABLE IF EXISTS "{table}" CASCADE')
            for extension in sorted(extensions - before[1]):
                db.execute_sql(f'DROP EXTENSION IF EXISTS "{extension}"')

    def migration(self, version: int) -> tuple[str, ...]:
        special = _PG_MIGRATIONS.get(version)
        if special is not None:
            return special
        return tuple(pg_statement(s) for s in MIGRATIONS[version - 1])

    def columns(self, db: peewee.Database, table: str) -> tuple[str, ...]:
        rows = db.execute_sql(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return tuple(str(r[0]) for r in rows)

    # The text column is collated "C": ILIKE folds ASCII letters only, as SQLite's LIKE.
    text_condition = "text ILIKE ? ESCAPE '\\'"
    narrows_text = False

    def candidates(self, phrase: str, like: str) -> tuple[str, list[Any]]:
        return "SELECT id FROM episode WHERE text ILIKE ? ESCAPE '\\'", [like]

    def indexed_by(self, index: str) -> str:
        return ""  # no hints: no_table_scan keeps the planner on an index

    @contextlib.contextmanager
    def no_table_scan(self, db: peewee.Database) -> Iterator[None]:
        """Sequential scans priced out for the statements inside, in a read snapshot.

        With a LIMIT the planner prices a scan that stops early as cheap, and it guesses
        a substring's matches from statistics that know nothing of substrings: the first
        page's probe and the full list of a rare phrase read the whole table where the
        trigram index answers at once (measured at 20,000 episodes: the probe 11 ms
        scanned, 4.6 ms indexed, the list 23 ms and 8 ms; common and 3-letter terms were
        as quick or quicker indexed; a ``MATERIALIZED`` CTE still scans), and a walk's
        bound 5,000 entries along the source index sorted the whole table instead. The
        setting is transaction-local and restored at once: later statements of an
        enclosing read are planned as usual."""
        with db.transaction(self.read_isolation):
            before = db.execute_sql(
                "SELECT current_setting('enable_seqscan'), "
                "set_config('enable_seqscan', 'off', true)"
            ).fetchone()[0]
            restore = "SELECT set_config('enable_seqscan', ?, true)"
            try:
                yield
            except BaseException:
                with contextlib.suppress(Exception):  # an aborted transaction: rolled back
                    db.execute_sql(restore, (before,))
                raise
            db.execute_sql(restore, (before,))

    def ranked(self, phrase: str, like: str) -> tuple[str, list[Any]]:
        text = phrase[1:-1].replace('""', '"')
        return (
            "SELECT id AS rid, -word_similarity(?, text) AS score FROM episode "
            "WHERE text ILIKE ? ESCAPE '\\'",
            [text, like],
        )

    bump_sql = (
        'INSERT INTO "setting" ("key", "value") VALUES (?, \'1\') '
        'ON CONFLICT ("key") DO UPDATE SET "value" = CAST('
        'CASE WHEN "setting"."value" ~ \'^[0-9]{1,15}$\' '
        'THEN CAST("setting"."value" AS BIGINT) + 1 ELSE 1 END AS TEXT)'
    )

    read_isolation = "REPEATABLE READ"

    def sort(self, column: str, descending: bool, nullable: bool = True) -> str:
        if not nullable:
            return super().sort(column, descending, nullable)
        # PostgreSQL puts NULLs last going up: said, so both engines list alike
        return f"{column} {'DESC NULLS LAST' if descending else 'ASC NULLS FIRST'}"

    def json_value(self, column: str, key: str) -> str:
        # jsonb refuses a \u0000 escape (its text holds no NUL): such a document has each
        # string cut at its first NUL first, which is what SQLite's json_extract reads.
        readable = (
            f"CASE WHEN strpos({column}, '\\u0000') = 0 THEN {column} "
            f"ELSE regexp_replace({column}, '{_NUL_TO_STRING_END}', '\\1\"', 'g') END"
        )
        return f"(({readable})::jsonb ->> '{key}')"  # text: the callers convert it

    def set_wait(self, db: peewee.Database, milliseconds: int) -> None:
        db.execute_sql(f"SET lock_timeout = {int(milliseconds):d}")

    def data_version(self, db: peewee.Database) -> int:
        """The change counter every write transaction bumps (one indexed row)."""
        return read_change_counter(db)

    def integrity_check(self, db: peewee.Database) -> str:
        return "ok"  # the server keeps its pages checksummed; nothing to walk from here

    def content_tables(self, db: peewee.Database) -> set[str]:
        return self.tables(db) - {SCHEMA_TABLE}

    def advance_ids(self, db: peewee.Database, table: str, column: str) -> None:
        """Only ever forward: ``setval`` is not undone by a rollback, so a copy that fails
        after it (its check, a signal, a lost connection) leaves the sequence where it
        put it while the rows come back. Set back to the copied rows' largest id, every
        later insert collided with a row the rollback restored."""
        quoted = '"' + table.replace('"', '""') + '"'
        sequence = db.execute_sql("SELECT pg_get_serial_sequence(?, ?)", (quoted, column))
        name = sequence.fetchone()[0]  # schema-qualified and quoted by the server
        last, called = db.execute_sql(f"SELECT last_value, is_called FROM {name}").fetchone()
        following = int(last) + 1 if called else int(last)
        # is_called false: the next value is the one set itself
        db.execute_sql(
            f'SELECT setval(?, GREATEST(COALESCE(max("{column}"), 0) + 1, ?), false) FROM {quoted}',
            (name, following),
        )

    announce_sql = (
        "WITH written AS (SELECT string_agg(relname, ',' ORDER BY relname) AS names "
        "FROM pg_catalog.pg_stat_xact_user_tables "
        "WHERE schemaname = current_schema() AND n_tup_ins + n_tup_upd + n_tup_del > 0) "
        "SELECT {flush}(SELECT pg_notify(?, names) FROM written WHERE names IS NOT NULL)"
    )
    """One ``NOTIFY`` naming the tables this transaction wrote rows of (the server's own
    per-transaction counts: no bookkeeping of ours), none when it wrote no row. The
    server delivers it at COMMIT and drops it with a ROLLBACK.

    The counts are the connection's pending statistics, which the server flushes at most
    once a second: without ``pg_stat_force_next_flush()`` (PostgreSQL 15 and later) the
    next transaction of the same connection would still count this one's rows and name
    its tables too (the change counter's ``setting`` every time), so the flush is asked
    for by every write transaction, one that wrote no row included (its bump counts).
    Before 15 the names are such a superset: a reader refreshes a little more, never
    less."""

    def announce(self, db: peewee.Database) -> None:
        version = int(db.connection().info.server_version)
        flush = "pg_stat_force_next_flush(), " if version >= 150000 else ""
        db.execute_sql(self.announce_sql.format(flush=flush), (CHANNEL,))


_NUL_TO_STRING_END = r'(?<!\\)((?:\\\\)*)\\u0000(?:[^"\\]|\\.)*"'
"""A ``\\u0000`` escape (one not preceded by an escaped backslash) and the rest of its
JSON string, closing quote included; a PostgreSQL regular expression."""

SQLITE = Dialect()
POSTGRES = PostgresDialect()


def dialect_for(location: str | os.PathLike[str]) -> Dialect:
    return POSTGRES if is_postgres_url(location) else SQLITE


# -- PostgreSQL's schema ------------------------------------------------------------------

_QUOTED_OR_WORD = regex(
    r"""("(?:[^"]|"")*"|'(?:[^']|'')*')"""
    r"|\b(INTEGER NOT NULL PRIMARY KEY|INTEGER|REAL|BLOB|TEXT)\b",
    kept_in=TEXT_PATTERNS_FILE,
)
_PG_TYPES = {
    "INTEGER NOT NULL PRIMARY KEY": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    "INTEGER": "BIGINT",
    "REAL": "DOUBLE PRECISION",
    "BLOB": "BYTEA",
    "TEXT": 'TEXT COLLATE "C"',
}


def pg_statement(statement: str) -> str:
    """A migration statement of SQLite's with PostgreSQL's column types."""

    def swap(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        return _PG_TYPES[match.group(2)]

    return _QUOTED_OR_WORD.sub(swap, statement)


_PG_MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 5: the zero-padding repair (PostgreSQL spells instr strpos)
    5: (
        'UPDATE "episode" SET "timestamp" = substr(\'000\', 1, 5 - strpos("timestamp", \'-\')) '
        '|| "timestamp" WHERE strpos("timestamp", \'-\') BETWEEN 2 AND 4',
    ),
    # 7: episode search: a trigram GIN index serves ILIKE (pg_trgm is a trusted extension:
    # the database's owner may create it)
    7: (
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        'CREATE INDEX "episode_text_trgm" ON "episode" USING gin ("text" gin_trgm_ops)',
    ),
    # 14: the label sort's order (Dialect.sort: NULLs first going up), walked as SQLite
    # walks its "episode_label" index
    14: ('CREATE INDEX "episode_label_order" ON "episode" ("label" ASC NULLS FIRST, "id")',),
}


# -- PostgreSQL's connection --------------------------------------------------------------

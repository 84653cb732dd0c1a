"""Filtering, sorting and paging episodes in SQL, for the Episodes table.

The table shows up to hundreds of thousands of episodes. Sorting or filtering them in
Python (a sort proxy over fully loaded rows) would load every row into memory before the
first paint; instead the filtered, sorted list of ids comes from one indexed query and the
visible rows are fetched a page at a time. This module is Qt-free so the CLI, tests and
benchmarks can use the same queries.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from curator.store.db import Store
from curator.store.engine import SQLITE, Dialect
from curator.store.models import LABELS

LABEL_FILTERS: tuple[str, ...] = ("all", *LABELS, "model", "human", "unlabelled", "uncertain")
"""The label filter choices: everything, a label in force, who labelled, or no label;
``uncertain`` is the queue of episodes without a human label whose predicted label is
least certain first (``curator.pipeline.learn.uncertain_episode_ids``' order)."""

SORT_KEYS: dict[str, str] = {
    "time": "timestamp",
    "source": "source",
    "label": "label",
    "model_label": "model_label",
    "model_confidence": "model_confidence",
    "human_label": "human_label",
    "preview": "text",
}
"""Sortable columns by key; values are column names written by us, never user input."""

NOT_NULL_SORT_KEYS = frozenset({"time", "source", "preview"})
"""Sort keys whose column is never empty: ordered as they are, so PostgreSQL walks
their index (the others say where their empty values go: :meth:`Dialect.sort`)."""


def _sort(store: Store, key: str, descending: bool) -> str:
    """The ORDER BY term of a sort key, empty values placed alike on both engines."""
    return store.dialect.sort(SORT_KEYS[key], descending, key not in NOT_NULL_SORT_KEYS)


RELEVANCE = "relevance"
"""Sort key: best bm25 match first (with a text query of :data:`MIN_INDEXED_CHARS`+
characters; otherwise newest first)."""

MIN_INDEXED_CHARS = 3
"""Shorter queries have no trigram to look up: they scan with LIKE alone."""


@dataclass(frozen=True)
class EpisodeFilter:
    """What the Episodes table shows. ``None``/empty fields do not filter."""

    label: str = "all"
    source: str | None = None
    date_from: date | None = None
    date_to: date | None = None  # inclusive
    text: str = ""
    ids: tuple[int, ...] | None = None  # only these episodes (e.g. one Insights matrix cell)

    def __post_init__(self) -> None:
        # A NUL (pasted) ends SQLite's LIKE pattern early, so "\0" matched every episode,
        # and it ends FTS5's query text inside the phrase's quotes, an error: a search
        # is for characters one can type, and the NULs are dropped.
        if "\x00" in self.text:
            object.__setattr__(self, "text", self.text.replace("\x00", ""))


@dataclass(frozen=True)
class EpisodeSort:
    key: str = "time"
    descending: bool = True


@dataclass(frozen=True)
class EpisodeRow:
    """What one table row needs; the full text is fetched only for the selected episode."""

    id: int
    timestamp: str  # stored ISO 8601 UTC text
    source: str
    label: str | None
    label_by: str | None
    model_label: str | None
    model_confidence: float | None
    human_label: str | None
    preview: str  # first non-empty line of the text
    distilled: bool


@dataclass(frozen=True)
class EpisodeDetail:
    """The selected episode in full, for the side panel."""

    row: EpisodeRow
    text: str
    messages: list[dict[str, Any]] | None
    classify_truncated: bool
    imported: dict[str, Any] | None = None
    """Where a chat export's episode came from (``metadata.import``); None otherwise."""


def escape_like(text: str) -> str:
    """Escape LIKE wildcards so a search for ``50%`` or ``snake_case`` matches literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _day_start(day: date) -> str:
    """Stored-text form of midnight UTC of ``day`` (timestamps sort correctly as text)."""
    return f"{day.isoformat()}T00:00:00.000000+00:00"


def match_expression(text: str) -> str:
    """``text`` as one FTS5 phrase: with the trigram tokenizer, "contains this substring"."""
    return '"' + text.replace('"', '""') + '"'


def indexed(text: str) -> bool:
    """Whether a search for ``text`` can use the trigram index."""
    return len(text.strip()) >= MIN_INDEXED_CHARS


def where_clause(
    flt: EpisodeFilter, *, use_index: bool = True, dialect: Dialect = SQLITE
) -> tuple[str, list[Any]]:
    """SQL ``WHERE`` text and parameters for ``flt`` (``"1=1"`` when nothing filters).

    A text query always keeps its ``LIKE`` condition, which defines the result (ASCII
    letters case-insensitive, ``%`` and ``_`` literal).  For 3+ characters the trigram
    index narrows the rows first: it matches case-insensitively for every script, so
    its rows are a superset of LIKE's and LIKE only checks those few. On PostgreSQL the
    condition is an ``ILIKE`` that its trigram index serves by itself
    (:class:`curator.store.engine.PostgresDialect`).
    """
    parts: list[str] = []
    params: list[Any] = []
    if flt.label in LABELS:
        parts.append("label = ?")
        params.append(flt.label)
    elif flt.label == "model":
        parts.append("label_by = 'model'")
    elif flt.label == "human":
        parts.append("human_label IS NOT NULL")
    elif flt.label == "unlabelled":
        parts.append("label IS NULL")
    elif flt.label == "uncertain":
        parts.append("human_label IS NULL AND predicted_margin IS NOT NULL")
    elif flt.label != "all":
        raise ValueError(f"unknown label filter {flt.label!r}")
    if flt.source is not None:
        parts.append("source = ?")
        params.append(flt.source)
    if flt.date_from is not None:
        parts.append("timestamp >= ?")
        params.append(_day_start(flt.date_from))
    if flt.date_to is not None:
        # The last instant of the day, not the next midnight: 9999-12-31 has no next day.
        parts.append("timestamp <= ?")
        params.append(f"{flt.date_to.isoformat()}T23:59:59.999999+00:00")
    text = flt.text.strip()
    if text and use_index and indexed(text) and dialect.narrows_text:
        sub, sub_params = dialect.candidates(match_expression(text), f"%{escape_like(text)}%")
        parts.append(f"id IN ({sub})")
        params.extend(sub_params)
    if text:
        parts.append(dialect.text_condition)
        params.append(f"%{escape_like(text)}%")
    if flt.ids is not None:
        # Integers we produced, written literally: an id list may exceed SQLite's
        # parameter limit, and ints cannot inject anything.
        parts.append(f"id IN ({','.join(str(int(i)) for i in flt.ids)})" if flt.ids else "1=0")
    return (" AND ".join(parts) if parts else "1=1"), params


def query_ids(store: Store, flt: EpisodeFilter, sort: EpisodeSort) -> list[int]:
    """The ids of the matching episodes in display order, in one query."""
    return _ordered_ids(store, flt, sort, None)


def _ordered_ids(
    store: Store, flt: EpisodeFilter, sort: EpisodeSort, limit: int | None
) -> list[int]:
    """The matching ids in display order, the first ``limit`` of them (None: all)."""
    cap = "" if limit is None else f" LIMIT {int(limit)}"
    if sort.key == RELEVANCE:
        if indexed(flt.text):
            return _by_relevance(store, flt, sort.descending, cap)
        sort = EpisodeSort("time", True)  # nothing to rank by
    column = SORT_KEYS.get(sort.key)
    if column is None:
        raise ValueError(f"unknown sort key {sort.key!r}")
    direction = "DESC" if sort.descending else "ASC"
    where, params = where_clause(flt, dialect=store.dialect)
    order = f"{_sort(store, sort.key, sort.descending)}, id {direction}"
    if flt.label == "uncertain":  # a queue: its order is the point, not the clicked column
        order = "predicted_margin ASC, id ASC"  # never empty in the queue: its index walks
    sql = f"SELECT id FROM episode WHERE {where} ORDER BY {order}{cap}"
    with _text_index(store, flt.text):
        return [int(r[0]) for r in store.execute(sql, tuple(params))]


def _text_index(store: Store, text: str) -> contextlib.AbstractContextManager[None]:
    """A search for ``text`` reads the text index, as SQLite's always does: PostgreSQL's
    planner guesses a substring's matches badly and would read a rare phrase's episodes
    from the whole table (:meth:`~curator.store.engine.Dialect.no_table_scan`)."""
    return store.dialect.no_table_scan(store.db) if indexed(text) else contextlib.nullcontext()


FIRST_PAGE = 200
"""Ids the Episodes table asks for first: a screenful and then some (see
:func:`query_first_ids`)."""

WALK_ABOVE = 2_000
"""Index candidates above which the first page walks the sort column's index instead of
fetching every candidate (see :func:`query_first_ids`)."""

WALK_STEPS = 50_000
"""How far along the sort index a walk goes before it gives up (see
:func:`query_first_ids`): about 5 ms at 1,000,000 episodes."""

DENSE_STEPS = 5_000
"""How far along the sort index a walk that checks every episode with LIKE goes (see
:func:`query_first_ids`); it is tried only when the index's candidates are dense enough
to fill the page within half of it."""

SORT_INDEXES: dict[str, str] = {
    "time": "episode_timestamp",
    "source": "episode_source",
}
"""The index that holds a (NOT NULL) sort column in order; its entries end with the id,
which breaks ties as :func:`query_ids` does."""


def first_page_is_quicker(flt: EpisodeFilter, sort: EpisodeSort) -> bool:
    """Whether :func:`query_first_ids` can answer well before :func:`query_ids`: a text
    query the index narrows, or an order an index holds (label included: SQLite walks
    ``episode_label`` for ``ORDER BY label``). Sorted by a column without an index, both
    read the whole table, and the first page would only add a second read. (The
    ``uncertain`` queue has an order of its own, which ``episode_predicted_margin``
    holds.)"""
    return indexed(flt.text) or flt.label == "uncertain" or sort.key in (*SORT_INDEXES, "label")


def query_first_ids(
    store: Store,
    flt: EpisodeFilter,
    sort: EpisodeSort,
    limit: int = FIRST_PAGE,
    *,
    walk_above: int = WALK_ABOVE,
    walk_steps: int = WALK_STEPS,
    dense_steps: int = DENSE_STEPS,
) -> list[int]:
    """``query_ids(store, flt, sort)[:limit]``, without finding every match when it can.

    The full list costs time in proportion to the matches: each one is fetched from the
    table, checked with LIKE and sorted (3-7 us each at 1,000,000 episodes). So a text
    query first asks the trigram index for up to ``walk_above`` + 1 candidates (the
    index stops early; PostgreSQL's planner would rather scan the table under that
    LIMIT, so the dialect prices scans out for the probe:
    :meth:`~curator.store.engine.Dialect.no_table_scan`). Few candidates: only those
    are fetched, by id.

    Many, and a sort column with an index: that index is walked in display order until
    ``limit`` matched. When the candidates are dense (the probe's ids say how many of
    the episodes it passed were candidates; a term in nearly every episode, where the
    index narrows nothing), the walk checks each episode it passes with LIKE alone, up
    to ``dense_steps`` entries (0: never): asking the index for every candidate would
    cost time in proportion to the table (136 ms at 300,000 episodes for a 15-word
    vocabulary), while a page of a term in 10 % of the episodes is full within about
    2,000 steps. Otherwise, with no other filter than the text (and dates, sorted by
    time), only the episodes it passes that are index candidates are fetched (a term in
    1 % of the episodes fills a page of 200 within about 20,000 steps). That walk stops
    after ``walk_steps`` entries: candidates that LIKE rejects (the index folds ``É`` to
    ``é``, LIKE does not) or that all lie far down the order (a term of last year's
    episodes, newest first) would make it pass the whole table, 400-600 ms at 1,000,000
    episodes. A walk short of a full page by its bound hands over to the next way, and
    the full list decides last.
    """
    text = flt.text.strip()
    column = SORT_KEYS.get(sort.key)
    if column is None or flt.label == "uncertain" or not indexed(text):
        return _ordered_ids(store, flt, sort, limit)
    sub, sub_params = store.dialect.candidates(match_expression(text), f"%{escape_like(text)}%")
    with store.dialect.no_table_scan(store.db):
        probe = sorted(store.execute(f"{sub} LIMIT {int(walk_above) + 1}", tuple(sub_params)))
    direction = "DESC" if sort.descending else "ASC"
    order = f"ORDER BY {_sort(store, sort.key, sort.descending)}, id {direction}"
    if len(probe) <= walk_above:
        # every candidate is known: LIKE decides among them (ints we read, written
        # literally, as where_clause does with an id list)
        where, params = where_clause(flt, use_index=False, dialect=store.dialect)
        known = ",".join(str(int(r[0])) for r in probe) or "NULL"
        sql = f"SELECT id FROM episode WHERE {where} AND id IN ({known}) {order} LIMIT {int(limit)}"
        return [int(r[0]) for r in store.execute(sql, tuple(params))]
    index = SORT_INDEXES.get(sort.key)
    dated = flt.date_from is not None or flt.date_to is not None
    if index is None or (dated and sort.key != "time"):
        return _ordered_ids(store, flt, sort, limit)
    walk = _Walk(store, flt, sort, column, index, order, limit)
    if dense_steps > 0 and _dense(store, probe, limit, dense_steps):
        found = walk.run(dense_steps, use_index=False)
        if found is not None:
            return found
    others = flt.label != "all" or flt.source is not None or flt.ids is not None
    if not others:
        found = walk.run(walk_steps, use_index=True)
        if found is not None:
            return found
    return _ordered_ids(store, flt, sort, limit)


def _dense(store: Store, probe: list[tuple[Any, ...]], limit: int, steps: int) -> bool:
    """Whether index candidates are dense enough for a walk that checks every episode
    it passes to fill ``limit`` within half of ``steps``: the probe's rowids come in
    ascending order, so its candidates are ``len(probe)`` of the episodes from the
    first id to its last one (fewer where episodes were deleted: a low guess, on the
    safe side)."""
    first = store.execute("SELECT min(id) FROM episode")[0][0]
    if first is None or not probe:
        return False
    passed = max(int(probe[-1][0]) - int(first) + 1, len(probe))
    return limit * passed <= len(probe) * (steps // 2)


@dataclass(frozen=True)
class _Walk:
    """A walk along the sort column's index in display order (see
    :func:`query_first_ids`)."""

    store: Store
    flt: EpisodeFilter
    sort: EpisodeSort
    column: str
    index: str
    order: str
    limit: int

    def run(self, steps: int, *, use_index: bool) -> list[int] | None:
        """The first ``limit`` matches, or None when ``steps`` index entries (among the
        dates asked for) held fewer; ``use_index``: only index candidates are fetched."""
        dialect = self.store.dialect
        hint = dialect.indexed_by(self.index)
        span, span_params = where_clause(
            EpisodeFilter(date_from=self.flt.date_from, date_to=self.flt.date_to), dialect=dialect
        )
        # an index, as INDEXED BY makes SQLite's walk: PostgreSQL's planner would rather
        # sort the whole table for a bound thousands of entries along
        with dialect.no_table_scan(self.store.db):
            last = self.store.execute(
                f"SELECT {self.column}, id FROM episode{hint} WHERE {span} "
                f"{self.order} LIMIT 1 OFFSET {max(int(steps), 1) - 1}",
                tuple(span_params),
            )
            where, params = where_clause(self.flt, use_index=use_index, dialect=dialect)
            if last:
                where += f" AND ({self.column}, id) {'>=' if self.sort.descending else '<='} (?, ?)"
                params += list(last[0])
            sql = f"SELECT id FROM episode{hint} WHERE {where} {self.order} LIMIT {int(self.limit)}"
            found = [int(r[0]) for r in self.store.execute(sql, tuple(params))]
        if len(found) < self.limit and last:  # gave up before the page was full
            return None
        return found


def _by_relevance(store: Store, flt: EpisodeFilter, best_first: bool, cap: str) -> list[int]:
    """Matching ids by score (SQLite's bm25; PostgreSQL's trigram word similarity; lower
    is better), ties by id."""
    where, params = where_clause(flt, use_index=False, dialect=store.dialect)
    direction = "ASC" if best_first else "DESC"
    text = flt.text.strip()
    ranked, ranked_params = store.dialect.ranked(match_expression(text), f"%{escape_like(text)}%")
    sql = (
        f"WITH ranked AS ({ranked}) "
        f"SELECT id FROM episode JOIN ranked ON ranked.rid = episode.id WHERE {where} "
        f"ORDER BY ranked.score {direction}, id {direction}{cap}"
    )
    with _text_index(store, text):
        rows = store.execute(sql, (*ranked_params, *params))
    return [int(r[0]) for r in rows]


def highlight_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Where ``query`` occurs in ``text`` as the search matches it: (start, end) pairs.

    ASCII letters case-insensitive, everything else exact (LIKE's rule), left to right
    without overlaps.
    """
    needle = _ascii_lower(query.strip())
    if not needle:
        return []
    haystack = _ascii_lower(text)
    spans: list[tuple[int, int]] = []
    start = haystack.find(needle)
    while start >= 0:
        spans.append((start, start + len(needle)))
        start = haystack.find(needle, start + len(needle))
    return spans


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def count_episodes(store: Store) -> int:
    """All episodes, whatever the filter (for "N episodes (M shown)")."""
    return int(store.execute("SELECT count(*) FROM episode")[0][0])


def count_pending(store: Store) -> int:
    """Episodes waiting for classification: neither a person nor the model labelled them
    (what ``classify`` picks up; see :func:`curator.pipeline.classify.pending_episode_ids`)."""
    sql = "SELECT count(*) FROM episode WHERE human_label IS NULL AND model_label IS NULL"
    return int(store.execute(sql)[0][0])


def date_range(store: Store) -> tuple[date, date] | None:
    """First and last episode day (UTC), to preset the date filter; None when empty."""
    low, high = store.execute("SELECT min(timestamp), max(timestamp) FROM episode")[0]
    if low is None or high is None:
        return None
    try:
        return date.fromisoformat(str(low)[:10]), date.fromisoformat(str(high)[:10])
    except ValueError:  # a value written by another tool: no preset rather than no window
        return None


def distinct_sources(store: Store) -> list[str]:
    return [str(r[0]) for r in store.execute("SELECT DISTINCT source FROM episode ORDER BY 1")]


_ROW_COLUMNS = (
    "id, timestamp, source, label, label_by, model_label, model_confidence, human_label, "
    "substr(text, 1, 400), distilled_at IS NOT NULL"
)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _row(values: tuple[Any, ...]) -> EpisodeRow:
    return EpisodeRow(
        id=int(values[0]),
        timestamp=str(values[1]),
        source=str(values[2] or ""),
        label=values[3],
        label_by=values[4],
        model_label=values[5],
        model_confidence=None if values[6] is None else float(values[6]),
        human_label=values[7],
        preview=_first_line(str(values[8] or "")),
        distilled=bool(values[9]),
    )


def fetch_rows(store: Store, ids: list[int]) -> dict[int, EpisodeRow]:
    """The rows of ``ids`` (one page), keyed by id; deleted episodes are simply absent."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = store.execute(f"SELECT {_ROW_COLUMNS} FROM episode WHERE id IN ({marks})", tuple(ids))
    return {int(r[0]): _row(r) for r in rows}


def fetch_detail(store: Store, episode_id: int) -> EpisodeDetail | None:
    found = store.execute(
        # metadata whole, read here: one episode's, and PostgreSQL's JSON functions refuse
        # a \u0000 that an import file's metadata may hold (SQLite's would not)
        f"SELECT {_ROW_COLUMNS}, text, messages, classify_truncated, metadata "
        "FROM episode WHERE id = ?",
        (episode_id,),
    )
    if not found:
        return None
    values = found[0]
    messages = json.loads(values[11]) if values[11] else None
    try:  # metadata is the file's own object: "import" may be anything there
        metadata = json.loads(values[13]) if isinstance(values[13], str) else None
    except ValueError:
        metadata = None
    imported = metadata.get("import") if isinstance(metadata, dict) else None
    return EpisodeDetail(
        row=_row(values[:10]),
        text=str(values[10]),
        messages=messages if isinstance(messages, list) else None,
        classify_truncated=bool(values[12]),
        imported=imported if isinstance(imported, dict) else None,
    )

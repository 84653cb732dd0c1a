"""The stable Python API: what an agent's own code (and the MCP server) may do.

``from curator import Curator`` → ``Curator(db=path)``. The API keeps the curator's gate
intact: an agent *reads only committed Knowledge* (:meth:`Curator.knowledge`,
:meth:`Curator.search_knowledge`) and *writes only pending Episodes*
(:meth:`Curator.record`, :meth:`Curator.record_many`), which a person classifies, distils,
reviews and commits like any imported log. Nothing here creates, changes or retires a pattern.

Stable means: these names, parameters and the keys of the documents they return keep their
meaning across releases; new keys may be added. Every refusal is a
:class:`curator.errors.CuratorError` with one readable sentence, and a refused call writes
nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import peewee
from peewee import fn

from curator.api_checks import (
    MAX_MESSAGES,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    check_db,
    check_flag,
    check_query,
    check_top_k,
    episode_items,
    parse_episode,
)
from curator.core.flags import detect
from curator.core.scoring import effective_importance
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.engine import in_chunks
from curator.store.episode_queries import count_episodes, count_pending
from curator.store.episode_records import ParsedEpisode, detector_text
from curator.store.identity import Identity, current_identity
from curator.store.knowledge import (
    PatternRow,
    export_json,
    export_markdown,
    standing_order,
    top_k_patterns,
)
from curator.store.models import (
    Candidate,
    Changeset,
    Episode,
    Pattern,
    Run,
    format_utc,
    to_utc,
    utcnow,
)
from curator.store.settings import load_settings
from curator.store.snapshot import tuples

#: Scores equal to this many decimals are a tie, broken by the prompt's order.
SCORE_DECIMALS = 12

__all__ = ["MAX_MESSAGES", "MAX_QUERY_CHARS", "MAX_TOP_K", "Curator", "RecordResult", "Screening"]

_WORD = re.compile(r"\w+", re.UNICODE)


class RecordResult(dict[str, Any]):
    """What :meth:`Curator.record` did: ``{"episode_id", "created", "flags", "source"}``.

    ``created`` is False when the same content was recorded before (the call is idempotent);
    ``flags`` are the poisoned-memory detector's findings at intake (kinds only).
    """


@dataclass(frozen=True)
class _Scored:
    row: PatternRow
    relevance: float
    score: float


#: Marks that combine with the letter before them, and the invisible format characters
#: (zero-width space, soft hyphen, word joiner, ...) that split or hide a word's letters.
_UNSEEN = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)


def _words(text: str) -> set[str]:
    """The words of ``text``, compared in one form: case-folded, in compatibility form
    (full-width letters and ligatures are plain letters), without accents or invisible
    characters. "İzmir", "IZMIR" and "izmir" are one word; so are "café" typed with a
    combining accent (as macOS writes it) and "cafe", and "of\u200bfice" and "office"."""
    if text.isascii():
        return set(_WORD.findall(text.lower()))
    folded = unicodedata.normalize("NFKD", text.casefold())
    return set(_WORD.findall(_UNSEEN.sub("", folded)))


def relevance(query: str, text: str) -> float:
    """The share of the query's distinct words the text contains, in [0, 1].

    A lexical measure (no model needed, the same answer every time): 1.0 when every word of
    the query is in the pattern, 0.0 when none is.
    """
    wanted = _words(query)
    if not wanted:
        return 0.0
    return len(wanted & _words(text)) / len(wanted)


@dataclass(frozen=True, slots=True)
class Screening:
    """That :meth:`Curator.screen` read one episode: pass it on to
    :meth:`Curator.record_many` so the text is not read again.

    It carries no verdict a caller could change: the Curator that made it keeps the
    detector's kinds itself, keyed by the content and the identity they were read
    against, and ``record_many`` takes only what it kept (a copy, a changed or made-up
    Screening, one from another Curator or database, or one read against another
    identity just means the text is read again). ``kinds`` is for the caller to look at."""

    content_hash: str
    kinds: tuple[str, ...]


_KEPT_SCREENINGS = 4096
"""Screenings a Curator keeps for ``record_many`` (a caller that screens and never
records does not grow it beyond this)."""


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _explained(
    method: Callable[Concatenate[Curator, _P], _T],
) -> Callable[Concatenate[Curator, _P], _T]:
    """A database that fails under a call is one sentence, as every refusal is, not the
    driver's error, and says the real cause as the command line does
    (:func:`~curator.store.db_errors.explain_database_error`): damaged in place while
    open ("database disk image is malformed"), busy, full, or a connection lost at
    COMMIT, after which the call may have been applied (it said "nothing was written"
    and sent the caller to restore a backup). A read-only read that met another
    program's rewrite of the file (see :meth:`Store.changed_under_read`) is made again,
    once: it was called damaged."""

    @functools.wraps(method)
    def call(self: Curator, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        what = f"{method.__name__}() call"
        try:
            return method(self, *args, **kwargs)
        except peewee.DatabaseError as exc:
            if not self.store.changed_under_read(exc):
                raise self.store.explain(exc, what, "was not done") from exc
        try:  # a read-only read met another program's rewrite of the file: read anew, once
            return method(self, *args, **kwargs)
        except peewee.DatabaseError as exc:
            raise self.store.explain(exc, what, "was not done") from exc

    return call


class Curator:
    """One curator database, opened for an agent: read Knowledge, record Episodes.

    ``read_only=True`` opens the database without ever writing it (``record`` is then
    refused). A missing or empty database (zero bytes, or SQLite without a table) is
    refused unless ``create=True``.
    """

    def __init__(
        self, db: str | os.PathLike[str], *, read_only: bool = False, create: bool = False
    ) -> None:
        db = check_db(db)
        self._closed = False
        self._screenings: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()
        self.store = Store(
            db,
            read_only=check_flag(read_only, "read_only"),
            create=check_flag(create, "create"),
            empty_message=f"{db} is empty (no database in it); nothing was written: "
            "Curator(db, create=True) starts a new database in it",
        )

    @classmethod
    def over(cls, store: Store) -> Curator:
        """A Curator on a store the caller has opened (and closes): the CLI's own."""
        curator = cls.__new__(cls)
        curator.store = store
        curator._closed = False
        curator._screenings = OrderedDict()
        return curator

    def close(self) -> None:
        """Close the database; every later call is refused (it reopened it before)."""
        self._closed = True
        self.store.dispose()

    def __enter__(self) -> Curator:
        return self

    def _open(self, doing: str = "read") -> Store:
        """The store, refusing a closed Curator, and a database file deleted, moved or
        replaced since it was opened (reads answered from the unlinked file before);
        ``doing`` ("read", "written") is what the refusal says did not happen."""
        if self._closed:
            raise CuratorError("this Curator is closed: open the database again")
        self.store.check_same_file(doing)
        self.store.see_outside_writes()  # a read-only one reads what was committed since
        return self.store

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------

    @_explained
    def knowledge(self, top_k: int | None = None, query: str | None = None) -> dict[str, Any]:
        """The knowledge block the agent receives: ``{"text", "patterns", "count"}``.

        Without ``query`` it is exactly what ``curator export`` prints (the top K by effective
        importance ``importance × decay_rate ** days``; K defaults to the setting ``top_k``).
        With ``query`` the top K are ranked by Generative Agents' retrieval score without its
        separate recency term, which effective importance already holds:
        ``score = relevance(query, pattern) × effective importance``, where relevance is the
        share of the query's words the pattern contains (:func:`relevance`); patterns with
        no word of the query are left out. Each pattern then also carries ``relevance`` and
        ``score``, and its ``rank`` is its place in this answer.
        """
        store = self._open()
        k = None if top_k is None else check_top_k(top_k)
        if query is None:
            with store.read():
                rows = top_k_patterns(self.store, k=k)
            return {
                "text": export_markdown(rows),
                "patterns": export_json(rows),
                "count": len(rows),
            }
        scored = self._ranked(check_query(query, _words), k or self._top_k())
        rows = [s.row for s in scored]
        patterns = export_json(rows)
        for doc, s in zip(patterns, scored, strict=True):
            doc["relevance"] = round(s.relevance, 6)
            doc["score"] = round(s.score, 6)
        return {"text": export_markdown(rows), "patterns": patterns, "count": len(rows)}

    def search_knowledge(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Active patterns matching ``query``, best first (the ranking of :meth:`knowledge`).

        The query is required here (``None`` is refused as any other non-string is: it
        would have meant the unranked block of :meth:`knowledge`)."""
        checked = check_query(query, _words)
        return list(self.knowledge(top_k=check_top_k(limit, "limit"), query=checked)["patterns"])

    def _top_k(self) -> int:
        return load_settings(self.store).top_k

    def _ranked(self, query: str, k: int) -> list[_Scored]:
        """Score every active pattern on its text alone, then build rows for the matches.

        Only (id, text, ...) tuples are read; equal scores keep the prompt's order
        (:func:`standing_order`); effective importance is computed for matching patterns only.
        A pattern's ``rank`` here is its place in this answer.
        """
        wanted = _words(query)
        rate = load_settings(self.store).decay_rate
        now = utcnow()
        columns = (Pattern.id, Pattern.text, Pattern.importance, Pattern.distilled_at)
        extra = (Pattern.category, Pattern.status, Pattern.revision)
        with self.store.read():
            found = tuples(Pattern.select(*columns, *extra).where(Pattern.status == "active"))
        matches: list[tuple[float, float, float, tuple[Any, ...]]] = []
        for values in found:
            rel = len(wanted & _words(values[1])) / len(wanted)
            if rel > 0:
                effective = effective_importance(values[2], values[3], now=now, rate=rate)
                matches.append((rel * effective, rel, effective, values))
        # Equal scores in the prompt's own order (a stored key ranks a future date wrongly).
        # Equal as shown, to 12 decimals: 0.3 x 1/3 and 0.1 x 1 differ in the last bit.
        matches.sort(
            key=lambda m: (
                -round(m[0], SCORE_DECIMALS),
                *standing_order(m[3][2], m[3][3], m[3][0], now, rate),
            )
        )
        scored = []
        for place, (score, rel, effective, values) in enumerate(matches[:k], 1):
            pattern_id, text, importance, distilled_at, category, status, revision = values
            row = PatternRow(
                id=pattern_id,
                text=text,
                importance=importance,
                effective=effective,
                distilled_at=distilled_at,
                category=category,
                status=status,
                revision=revision,
                rank=place,
                in_top_k=True,
                sources=0,
            )
            scored.append(_Scored(row, rel, score))
        return scored

    @_explained
    def identity(self) -> dict[str, Any]:
        """The current identity text and its axioms (version 0: none saved yet)."""
        identity = current_identity(self._open())
        return {
            "version": identity.version,
            "identity": identity.identity_text,
            "axioms": list(identity.axioms),
        }

    @_explained
    def status(self) -> dict[str, Any]:
        """Counts an agent (or its operator) may want: what is stored and what waits.

        ``episodes``, ``pending_classification`` (neither labelled by a person nor the
        model), ``candidates_waiting`` (staged, undecided), ``patterns_active``,
        ``last_commit`` (the newest committed changeset's time, or None) and
        ``knowledge_changed`` (the last time Knowledge was written, by a commit, an undo,
        a retirement or an edit, or None: an agent that keeps the block refreshes it when
        this moves; decay, and a new ``top_k`` or decay rate in Settings, change the block
        without moving it).
        """
        store = self._open()
        with store.read():
            last = (
                Changeset.select(Changeset.created_at)
                .where(Changeset.kind == "commit")
                .order_by(Changeset.created_at.desc())
                .first(store.db)
            )
            changed = [
                Changeset.select(fn.MAX(Changeset.created_at)).scalar(),
                Pattern.select(fn.MAX(Pattern.updated_at)).scalar(),
            ]
            # SQLite answers MAX with the stored text, PostgreSQL with a datetime
            times = [
                to_utc(t) if isinstance(t, datetime) else Changeset.created_at.python_value(t)
                for t in changed
                if t is not None
            ]
            return {
                "episodes": count_episodes(store),
                "pending_classification": count_pending(store),
                "candidates_waiting": candidates_waiting(store),
                "patterns_active": Pattern.select().where(Pattern.status == "active").count(),
                "last_commit": None if last is None else format_utc(last.created_at),
                "knowledge_changed": format_utc(max(times)) if times else None,
            }

    # -- writing -------------------------------------------------------------------------------

    def record(
        self,
        text: str | None = None,
        messages: Sequence[dict[str, Any]] | None = None,
        source: str | None = None,
        timestamp: str | datetime | None = None,
    ) -> RecordResult:
        """Insert one pending Episode (never Knowledge); idempotent by content.

        Give ``text`` or ``messages`` (a list of ``{"role", "content", "name"?}``), not both.
        The episode is validated like an imported line (size at most
        :data:`MAX_EPISODE_CHARS` characters, no control characters, an ISO 8601
        ``timestamp``), and checked by the poisoned-memory detector at intake: its flags'
        kinds are stored in the episode's metadata under ``"flags"``, so a reviewer sees at
        once that the text tried, say, to override an axiom. Recording the same content
        (body, source and timestamp) again returns the stored episode, ``created`` False.
        """
        answer = self.record_many(
            [{"text": text, "messages": messages, "source": source, "timestamp": timestamp}]
        )[0]
        if isinstance(answer, CuratorError):
            raise answer
        return answer

    @_explained
    def screen(self, item: Mapping[str, Any]) -> Screening | None:
        """The detector's reading of one of :meth:`record_many`'s items, checked as it
        checks them (a refused item raises its :class:`CuratorError`), against the current
        identity, without writing anything; ``None`` for content stored already, which
        :meth:`record_many` answers with its stored flags (a resent megabyte text is not
        read again).

        For a caller that records long episodes beside short ones: the MCP server screens
        a long one on a thread of its own before it joins a group commit, so that the
        detector's seconds on a megabyte text hold up only the client that sent it."""
        self._open("written")
        parsed = parse_episode(item)
        if self._stored_hashes([parsed.content_hash]):
            return None
        identity = current_identity(self.store)
        kinds = tuple(_flag_kinds(parsed, identity))
        kept = self._screenings  # what this Curator read: record_many trusts only this
        with _SCREENINGS_LOCK:
            kept[parsed.content_hash] = (_identity_key(identity), kinds)
            while len(kept) > _KEPT_SCREENINGS:
                kept.popitem(last=False)
        return Screening(parsed.content_hash, kinds)

    @_explained
    def record_many(
        self, items: Sequence[Mapping[str, Any]], screened: Sequence[Screening | None] = ()
    ) -> list[RecordResult | CuratorError]:
        """Record several episodes in one write transaction: one answer per item, in order.

        Each item holds :meth:`record`'s keyword arguments and gets the answer a lone
        ``record`` call would give: its :class:`RecordResult`, or the
        :class:`CuratorError` that refused it (a refused item writes nothing and does not
        stop the others). Why one transaction: a commit costs more than an insert, and
        writers of one database queue for its single write lock, so an MCP server that
        collects the calls arriving together and commits them at once (group commit)
        records many times more episodes a second. Every result is returned only after the
        commit, so nothing is acknowledged that is not stored; a failed commit raises and
        stores none of the group. The detector reads only content not stored yet (a resent
        episode is answered with its stored flags), before the write lock is taken.
        ``screened`` holds :meth:`screen`'s answers: an item whose content this Curator
        screened against the current identity is not read again (see :class:`Screening`).
        """
        self._open("written")
        items = episode_items(items)
        wanted = _screened_hashes(screened)
        answers: list[RecordResult | CuratorError] = []
        parsed_items: list[tuple[int, ParsedEpisode]] = []
        for place, item in enumerate(items):
            try:
                parsed_items.append((place, parse_episode(item)))
            except CuratorError as exc:
                answers.append(exc)
                continue
            answers.append(CuratorError("not recorded"))  # replaced below
        if not parsed_items:
            return answers
        stored = self._stored_hashes([parsed.content_hash for _, parsed in parsed_items])
        identity = current_identity(self.store)
        checked: list[tuple[int, ParsedEpisode, list[str] | None]] = []
        for place, parsed in parsed_items:
            kinds = None  # stored already: its stored flags are the answer
            if parsed.content_hash not in stored:
                kinds = self._take_screening(parsed.content_hash, wanted, identity)
                if kinds is None:
                    kinds = _flag_kinds(parsed, identity)
            checked.append((place, parsed, kinds))
        with self.store.write():
            for place, parsed, found_kinds in checked:
                answers[place] = self._insert(parsed, found_kinds, identity)
        return answers

    def _take_screening(
        self, content_hash: str, wanted: set[str], identity: Identity
    ) -> list[str] | None:
        """The kinds this Curator's ``screen`` kept for the content, if the caller passed
        its Screening and the identity is the one it was read against."""
        if content_hash not in wanted:
            return None
        with _SCREENINGS_LOCK:
            kept = self._screenings.pop(content_hash, None)
        if kept is None or kept[0] != _identity_key(identity):
            return None
        return list(kept[1])

    def _stored_hashes(self, hashes: Sequence[str]) -> set[str]:
        """Which of ``hashes`` are stored already (read before the write: the detector
        then reads only new content, and outside the write lock)."""
        found: set[str] = set()
        distinct = sorted(set(hashes))
        with self.store.read():
            for chunk in in_chunks(distinct):
                marks = ", ".join("?" * len(chunk))
                rows = self.store.execute(
                    f"SELECT content_hash FROM episode WHERE content_hash IN ({marks})",
                    tuple(chunk),
                )
                found.update(str(row[0]) for row in rows)
        return found

    def _insert(
        self, parsed: ParsedEpisode, kinds: list[str] | None, identity: Identity | None = None
    ) -> RecordResult:
        """Insert one checked episode inside the caller's write transaction (or find it).

        ``kinds`` None means the content was stored when the group was read: should it be
        gone by now (a person deleted it meanwhile), it is read by the detector here."""
        # Three columns by the unique index: building the whole model's SELECT cost more
        # than the rest of the call.
        found = self.store.execute(
            "SELECT id, source, metadata FROM episode WHERE content_hash = ?",
            (parsed.content_hash,),
        )
        if found:
            episode_id, stored_source, stored_metadata = found[0]
            return RecordResult(
                episode_id=int(episode_id),
                created=False,
                flags=list(json.loads(stored_metadata or "{}").get("flags", [])),
                source=stored_source,
            )
        if kinds is None:
            kinds = _flag_kinds(parsed, identity or current_identity(self.store))
        metadata: dict[str, Any] = {"flags": kinds} if kinds else {}
        values = (
            parsed.content_hash,
            parsed.text,
            parsed.messages,
            parsed.timestamp,
            parsed.source,
            metadata,
            utcnow(),
            False,
        )
        params = tuple(f.db_value(v) for f, v in zip(_INSERT_FIELDS, values, strict=True))
        # PostgreSQL's driver has no lastrowid: the id comes back by RETURNING there.
        returning = bool(self.store.db.returning_clause)
        cursor = self.store.db.execute_sql(_insert_sql(returning), params)
        new_id = cursor.fetchone()[0] if returning else cursor.lastrowid
        return RecordResult(episode_id=int(new_id), created=True, flags=kinds, source=parsed.source)


def _flag_kinds(parsed: ParsedEpisode, identity: Identity) -> list[str]:
    """The detector's flag kinds for an episode, as stored in its metadata: of its text,
    or for a chat of :func:`~curator.store.episode_records.detector_text` (its messages without
    the speakers the curator itself writes)."""
    text = parsed.text if not parsed.messages else detector_text(parsed.messages)
    return sorted({f.kind for f in detect(text, identity.axioms, identity.identity_text)})


_SCREENINGS_LOCK = threading.Lock()


def _identity_key(identity: Identity) -> str:
    """What a screening was read against: the identity's text and axioms themselves (a
    version number repeats after a restore)."""
    return hashlib.sha256(repr((identity.identity_text, identity.axioms)).encode()).hexdigest()


def _screened_hashes(screened: Any) -> set[str]:
    """The contents ``record_many``'s caller says were screened (a hint: see Screening)."""
    if isinstance(screened, Screening):
        screened = [screened]
    if not isinstance(screened, list | tuple):
        raise CuratorError("screened must be a list of Curator.screen's answers")
    return {s.content_hash for s in screened if type(s) is Screening}


_INSERT_FIELDS: tuple[peewee.Field, ...] = (
    Episode.content_hash,
    Episode.text,
    Episode.messages,
    Episode.timestamp,
    Episode.source,
    Episode.metadata,
    Episode.imported_at,
    Episode.classify_truncated,
)
"""Every column a recorded episode sets (the model's defaulted ones included)."""


@functools.cache
def _insert_sql(returning: bool) -> str:
    """The INSERT for :data:`_INSERT_FIELDS`, built by peewee once per kind (the model is
    bound to a database by then; both engines take the same ``?`` text), ``returning``
    the new id where the engine reports it only so. Building the query per episode cost
    twice the insert itself."""
    query = Episode.insert({f: None for f in _INSERT_FIELDS})
    if returning:
        query = query.returning(Episode.id)
    return str(query.sql()[0])


def candidates_waiting(store: Store) -> int:
    """Candidates of staged runs that no one has decided yet (the review queue)."""
    return int(
        Candidate.select()
        .join(Run)
        .where((Run.status == "staged") & Candidate.action.is_null())
        .count()
    )

"""The gold set as JSONL: human-labelled episodes and reviewed candidates, to share.

Export writes one header line, then one line per human-labelled episode (its body,
timestamp, source and human label) and one per candidate a person decided (the gate's
proposal and ratio, the decision, the source episodes by content hash). Import reads such
a file back into another database:

* an episode already present (same content hash) gets the human label if it has none
  (one relabel batch for the whole file, so one Edit > Undo relabel takes it back);
  a different human label already there is kept and reported as a conflict, never
  overwritten;
* a missing episode is added with its label;
* candidates go into one run of kind ``gold`` (status ``done``: never committed to
  Knowledge), so Insights counts them with the other reviewed decisions; a candidate
  already in the database (every field the export writes but its source episodes, the
  same decision taken twice counted twice) is not added again, so exporting a gold set
  and importing it into the same database, or into another and back, adds nothing.

An episode line is matched by its content, never by what the file claims: its identity
is the episode importer's own hash of the line's body, source and timestamp
(:func:`curator.store.episode_records.content_hash`), and a ``content_hash`` in the line must be
that hash (or the same hash without the timestamp, the form of an episode that was
imported undated), else the line is an error. So a line can only label the episode whose
content it holds, and the same content is never added twice.

What is refused as a whole (nothing imported, exit 2): a file that cannot be read, an
empty one, one whose first line is not a gold set header, and one of a newer format
version than :data:`VERSION`. Otherwise every bad line is one ``FILE:LINE: reason`` error
(invalid UTF-8, invalid or truncated JSON, wrong types, a label not among
:data:`~curator.store.models.LABELS`, a hash that is not the line's, an episode over the
importer's size limit, the same episode repeated: with one label the first line counts,
with different labels none does), and the good lines are imported in one transaction,
like the episode importer. A BOM and CRLF line ends are read as written.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from curator.core.textsafety import control_problem
from curator.core.whatif import GATE_DECISIONS
from curator.errors import CuratorError
from curator.pipeline.labels import relabel_each
from curator.store.db import Store
from curator.store.engine import in_chunks
from curator.store.episode_records import ParsedEpisode, content_hash, episode_from_object
from curator.store.json_source import (
    BARE_CR,
    LineError,
    _BadLine,
    _check_depth_and_text,
    _decode,
    _loads_line,
    _open_regular,
    _type_name,
    _Unreadable,
)
from curator.store.models import (
    ACTIONS,
    LABELS,
    MAX_PATTERN_CHARS,
    Candidate,
    CandidateEpisode,
    Episode,
    Run,
    format_utc,
    utcnow,
)

__all__ = ["GoldReport", "export_gold", "import_gold"]

FORMAT = "memory-curator gold set"
VERSION = 1
ACTOR = "gold import"


def _episode_lines(store: Store) -> Iterator[dict[str, Any]]:
    rows = store.execute(
        "SELECT content_hash, external_id, text, messages, timestamp, source, metadata, "
        "human_label FROM episode WHERE human_label IS NOT NULL ORDER BY timestamp, id"
    )
    for chash, ext, text, messages, stamp, source, metadata, human in rows:
        doc: dict[str, Any] = {"kind": "episode", "content_hash": chash}
        if ext is not None:
            doc["id"] = ext
        if messages:
            doc["messages"] = json.loads(messages)
        else:
            doc["text"] = text
        doc.update(
            timestamp=stamp,
            source=source,
            metadata=json.loads(metadata) if metadata else {},
            human_label=human,
        )
        yield doc


def _candidate_lines(store: Store, *, sources: bool = True) -> Iterator[dict[str, Any]]:
    """The decided candidates as the file writes them; ``sources=False`` leaves out their
    source episodes (the import's identity of a decision does not read them)."""
    rows = store.execute(
        "SELECT c.id, c.text, c.category, c.importance, c.proposed_action, c.proposed_ratio, "
        "c.action, c.final_text FROM candidate c WHERE c.action IS NOT NULL "
        "AND c.state != 'pending' "
        "AND COALESCE(c.decided_via, c.decided_by) NOT IN ('model', 'cli --accept-all') "
        "ORDER BY c.run_id, c.ordinal"
    )
    linked: dict[int, list[str]] = defaultdict(list)
    if sources:
        for cid, chash in store.execute(
            "SELECT ce.candidate_id, e.content_hash FROM candidate_episode ce "
            "JOIN episode e ON e.id = ce.episode_id ORDER BY ce.candidate_id, e.id"
        ):
            linked[int(cid)].append(str(chash))
    for cid, text, category, importance, proposed, ratio, action, final_text in rows:
        yield {
            "kind": "candidate",
            "text": text,
            "category": category,
            "importance": importance,
            "proposed_action": proposed,
            "proposed_ratio": ratio,
            "decision": action,
            "final_text": final_text,
            "episodes": linked.get(int(cid), []),
        }


def export_gold(store: Store, out: TextIO) -> dict[str, int]:
    """Write the gold set as JSONL to ``out``; returns the counts written."""
    out.write(
        json.dumps({"format": FORMAT, "version": VERSION, "exported_at": format_utc(utcnow())})
    )
    out.write("\n")
    counts = {"episodes": 0, "candidates": 0}
    for doc in _episode_lines(store):
        out.write(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n")
        counts["episodes"] += 1
    for doc in _candidate_lines(store):
        out.write(json.dumps(doc, ensure_ascii=False, allow_nan=False) + "\n")
        counts["candidates"] += 1
    return counts


@dataclass
class GoldReport:
    episodes_added: int = 0
    labels_set: int = 0
    labels_same: int = 0
    conflicts: list[str] = field(default_factory=list)
    candidates_added: int = 0
    candidates_present: int = 0
    errors: list[str] = field(default_factory=list)
    run_id: int | None = None
    sources_missing: int = 0  # candidates' source episodes not in this database

    def as_dict(self) -> dict[str, Any]:
        return {
            "episodes_added": self.episodes_added,
            "labels_set": self.labels_set,
            "labels_already_there": self.labels_same,
            "conflicts": self.conflicts,
            "candidates_added": self.candidates_added,
            "candidates_already_there": self.candidates_present,
            "errors": self.errors,
            "run_id": self.run_id,
            "sources_missing": self.sources_missing,
        }


def _check_candidate(doc: dict[str, Any]) -> dict[str, Any]:
    text = doc.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _BadLine("a candidate needs a non-empty 'text'")
    _check_depth_and_text(doc, "the candidate")
    for name in ("text", "final_text", "category"):
        value = doc.get(name)
        problem = control_problem(value, f"'{name}'") if isinstance(value, str) else None
        if problem is not None:
            raise _BadLine(problem)
        if name != "category" and isinstance(value, str) and len(value) > MAX_PATTERN_CHARS:
            # the limit of every other way a pattern's text comes in
            raise _BadLine(
                f"'{name}' is {len(value):,} characters, over the {MAX_PATTERN_CHARS:,} "
                "a pattern may have"
            )
    for name, allowed in (("proposed_action", ACTIONS), ("decision", GATE_DECISIONS)):
        if not isinstance(doc.get(name), str) or doc[name] not in allowed:
            raise _BadLine(f"'{name}' must be one of {', '.join(allowed)}")
    for name in ("category", "final_text"):
        value = doc.get(name)
        if value is not None and not isinstance(value, str):
            raise _BadLine(f"'{name}' must be a string, not {_type_name(value)}")
    ratio = doc.get("proposed_ratio", 0.0)
    importance = doc.get("importance", 0.5)
    for name, value in (("proposed_ratio", ratio), ("importance", importance)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise _BadLine(f"'{name}' must be a number between 0 and 1")
    episodes = doc.get("episodes", [])
    if not isinstance(episodes, list) or not all(isinstance(e, str) for e in episodes):
        raise _BadLine("'episodes' must be a list of content hashes")
    return doc


@dataclass(frozen=True)
class _GoldEpisode:
    """One good episode line: the episode as the importer parsed it, its human label and
    the hashes under which the same content may already be stored."""

    parsed: ParsedEpisode
    label: str
    where: str
    identities: tuple[str, ...]


def _episode_line(doc: dict[str, Any], where: str, number: int, now: datetime) -> _GoldEpisode:
    """Validate an episode line; its identity comes from its content, not from the file.

    The importer hashes an episode's body, source and timestamp, leaving the timestamp
    out when the file had none (the episode is then dated at import time). An exported
    line always carries a timestamp, so its ``content_hash`` may be either form; any
    other value belongs to other content (another episode's, or none) and is an error.
    """
    label = doc.get("human_label")
    if not isinstance(label, str) or label not in LABELS:
        raise _BadLine(f"'human_label' must be one of {', '.join(LABELS)}")
    body = {k: doc[k] for k in _EPISODE_KEYS if k in doc}
    parsed = episode_from_object(body, number, now)
    undated = content_hash(
        parsed.messages if parsed.messages is not None else parsed.text, parsed.source, None
    )
    possible = tuple(dict.fromkeys((parsed.content_hash, undated)))
    claimed = doc.get("content_hash")
    if claimed is None:
        return _GoldEpisode(parsed, label, where, possible)
    if not isinstance(claimed, str):
        raise _BadLine(f"'content_hash' must be a string, not {_type_name(claimed)}")
    if claimed not in possible:
        raise _BadLine("'content_hash' is not the hash of this line's text, source and timestamp")
    return _GoldEpisode(replace(parsed, content_hash=claimed), label, where, (claimed,))


_EPISODE_KEYS = ("id", "content", "text", "messages", "timestamp", "source", "metadata")
"""The fields of an episode line the episode importer reads (the others are the gold
set's own: kind, content_hash, human_label)."""


def _read_header(path: Path, first: bytes) -> None:
    """Refuse, as a whole, a file that is not a gold set this version can read."""
    try:
        text = _decode(first.rstrip(b"\r\n"), True)
        header = _loads_line(text)
    except _BadLine as exc:
        if str(exc) == BARE_CR:  # every line in one: said as such, not "not a gold set"
            raise CuratorError(f"{path}:1: {BARE_CR}") from None
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CuratorError(f"{path} is not a gold set (line 1 is not its header)")
    version = header.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CuratorError(
            f"{path}: the gold set header's 'version' must be a whole number from 1 "
            f"(found {json.dumps(version)[:20]}); nothing was imported"
        )
    if version > VERSION:
        raise CuratorError(
            f"{path} is a gold set of format version {version}, newer than this curator "
            f"reads (up to {VERSION}); nothing was imported"
        )


def _read_lines(path: Path) -> list[bytes]:
    try:
        with _open_regular(path) as handle:
            lines = handle.read().split(b"\n")
    except _Unreadable as exc:
        raise CuratorError(f"cannot read {path}: {exc}") from None
    except OSError as exc:
        raise CuratorError(f"cannot read {path}: {exc.strerror or exc}") from None
    if lines and not lines[-1]:
        lines.pop()
    if not any(line.strip() for line in lines):
        raise CuratorError(f"{path} is empty, not a gold set")
    if not lines[0].strip():
        raise CuratorError(f"{path} is not a gold set (line 1 is blank, not its header)")
    return lines


def _parse_lines(
    lines: list[bytes], errors: dict[int, str]
) -> tuple[list[_GoldEpisode], list[dict[str, Any]]]:
    """The good episode and candidate lines; every bad line goes to ``errors`` by number."""
    now = utcnow()
    episodes: list[_GoldEpisode] = []
    candidates: list[dict[str, Any]] = []
    for number, raw in enumerate(lines[1:], start=2):
        try:
            text = _decode(raw.rstrip(b"\r"), False)
            if not text.strip():
                continue
            doc = _loads_line(text)
            if not isinstance(doc, dict):
                raise _BadLine(f"expected a JSON object, found {_type_name(doc)}")
            kind = doc.get("kind")
            if kind == "episode":
                episodes.append(_episode_line(doc, f"line {number}", number, now))
            elif kind == "candidate":
                candidates.append(_check_candidate(doc))
            else:
                raise _BadLine("'kind' must be 'episode' or 'candidate'")
        except _BadLine as exc:
            errors[number] = str(exc)
    return _without_repeats(episodes, errors), candidates


def _without_repeats(episodes: list[_GoldEpisode], errors: dict[int, str]) -> list[_GoldEpisode]:
    """Lines naming the same content more than once: with one label the first counts and
    the repeats are errors; with different labels none is trusted, all are errors."""
    groups: dict[str, list[_GoldEpisode]] = defaultdict(list)
    for episode in episodes:
        groups[episode.identities[0]].append(episode)
    kept: list[_GoldEpisode] = []
    for group in groups.values():
        first = group[0]
        if len({e.label for e in group}) > 1:
            lines = ", ".join(str(e.parsed.line) for e in group)
            for e in group:
                errors[e.parsed.line] = (
                    f"the same episode is on lines {lines}, with another label on each; "
                    "none of them was imported"
                )
            continue
        kept.append(first)
        for e in group[1:]:
            errors[e.parsed.line] = f"repeats line {first.parsed.line} (the same episode)"
    return sorted(kept, key=lambda e: e.parsed.line)


def import_gold(store: Store, path: Path) -> GoldReport:
    """Read a gold JSONL file into ``store`` (see the module docstring)."""
    lines = _read_lines(path)
    _read_header(path, lines[0])
    report = GoldReport()
    errors: dict[int, str] = {}
    episodes, candidates = _parse_lines(lines, errors)
    with store.write():  # one transaction: every good line is imported, or none
        _import_episodes(store, episodes, errors, report)
        _import_candidates(store, candidates, path, report)
    report.errors = [str(LineError(str(path), n, errors[n])) for n in sorted(errors)]
    return report


_Stored = tuple[int, str, str, str | None]
"""An episode row as the import needs it: id, text, source, human label."""


def _stored_rows(store: Store, hashes: Iterable[str]) -> dict[str, _Stored]:
    """The episodes stored under any of ``hashes``, by hash (one query per chunk: a query
    per line cost milliseconds each)."""
    found: dict[str, _Stored] = {}
    unique = list(dict.fromkeys(hashes))
    for chunk in in_chunks(unique):
        marks = ",".join("?" * len(chunk))
        for eid, chash, text, source, human in store.execute(
            "SELECT id, content_hash, text, source, human_label FROM episode "
            f"WHERE content_hash IN ({marks})",
            tuple(chunk),
        ):
            found[str(chash)] = (int(eid), str(text), str(source), human)
    return found


def _import_episodes(
    store: Store, episodes: list[_GoldEpisode], errors: dict[int, str], report: GoldReport
) -> None:
    """Match each line to its stored episode (or add it), then set the labels."""
    stored = _stored_rows(store, (h for e in episodes for h in e.identities))
    adding: dict[str, _GoldEpisode] = {}  # identity -> the line that adds its episode
    matched: list[tuple[_GoldEpisode, str]] = []  # a line and the hash of its episode
    for episode in episodes:
        parsed = episode.parsed
        found = next((h for h in episode.identities if h in stored or h in adding), None)
        if found is None:
            for identity in episode.identities:
                adding.setdefault(identity, episode)
            matched.append((episode, parsed.content_hash))
        elif found in adding:  # the same hash: the same content, added by an earlier line
            matched.append((episode, adding[found].parsed.content_hash))
        elif stored[found][1:3] != (parsed.text, parsed.source):
            # a row stored under a hash that is not its content's (never by this
            # version): matching it would label an episode the line does not hold
            errors[parsed.line] = (
                f"episode {stored[found][0]} is stored under this content's hash but holds "
                "other text; nothing was changed for this line"
            )
        else:
            matched.append((episode, found))
    new = list({id(e): e for e in adding.values()}.values())
    for chunk in in_chunks(new):
        Episode.insert_many(
            [
                {
                    "external_id": e.parsed.external_id,
                    "content_hash": e.parsed.content_hash,
                    "text": e.parsed.text,
                    "messages": e.parsed.messages,
                    "timestamp": e.parsed.timestamp,
                    "source": e.parsed.source,
                    "metadata": e.parsed.metadata,
                    "classify_truncated": False,
                }
                for e in chunk
            ]
        ).execute()
    report.episodes_added += len(new)
    stored.update(_stored_rows(store, (e.parsed.content_hash for e in new)))
    _set_labels(store, matched, stored, report)


def _set_labels(
    store: Store,
    matched: list[tuple[_GoldEpisode, str]],
    stored: dict[str, _Stored],
    report: GoldReport,
) -> None:
    """A label only where the episode has none; a different one already there (or set by
    an earlier line of this file) is a conflict, kept and listed."""
    in_force: dict[int, str | None] = {}
    to_set: dict[int, str] = {}  # episode -> label: one batch, one undo
    for episode, chash in matched:
        eid, _text, _source, human = stored[chash]
        current = in_force.get(eid, human)
        if current == episode.label:
            report.labels_same += 1
        elif current is not None:
            report.conflicts.append(
                f"{episode.where}: episode {eid} is labelled {current} here, "
                f"{episode.label} in the file (kept)"
            )
        else:
            in_force[eid] = episode.label
            to_set[eid] = episode.label
    if to_set:
        relabel_each(store, to_set, actor=ACTOR)
        report.labels_set += len(to_set)


def _candidate_key(doc: dict[str, Any]) -> str:
    """A decided candidate's fields as stored (the file's defaults filled in), without its
    source episodes: a database that lacks some of them links fewer, and its export of
    the same decision must still be the same decision."""
    return json.dumps(
        [
            doc["text"],
            doc.get("final_text"),
            str(doc.get("category") or "uncategorized"),
            float(doc.get("importance", 0.5)) + 0.0,  # -0.0 is stored, and read, as 0.0
            doc["proposed_action"],
            float(doc.get("proposed_ratio", 0.0)) + 0.0,
            doc["decision"],
        ]
    )


def _import_candidates(
    store: Store, docs: list[dict[str, Any]], path: Path, report: GoldReport
) -> None:
    if not docs:
        return
    # Every decided candidate the export would write, as a multiset of its fields: a
    # file exported from this database (or from one imported from it) adds nothing, and
    # two decisions that differ in any field, or the same decision taken twice, stay apart.
    present = Counter(_candidate_key(line) for line in _candidate_lines(store, sources=False))
    with store.write():
        run: Run | None = None
        for ordinal, doc in enumerate(docs):
            key = _candidate_key(doc)
            if present[key] > 0:
                present[key] -= 1
                report.candidates_present += 1
                continue
            if run is None:
                run = Run.create(
                    kind="gold", status="done", params={"file": path.name}, finished_at=utcnow()
                )
            c = Candidate.create(
                run=run.id,
                ordinal=ordinal,
                text=doc["text"],
                importance=float(doc.get("importance", 0.5)),
                category=str(doc.get("category") or "uncategorized"),
                proposed_action=doc["proposed_action"],
                proposed_ratio=float(doc.get("proposed_ratio", 0.0)),
                action=doc["decision"],
                final_text=doc.get("final_text"),
                decided_by=ACTOR,
                decided_via=ACTOR,
                decided_at=utcnow(),
                state="reviewed",
            )
            hashes = set(doc.get("episodes", []))
            if hashes:
                found = [
                    e.id for e in Episode.select(Episode.id).where(Episode.content_hash.in_(hashes))
                ]
                if found:
                    CandidateEpisode.insert_many(
                        [{"candidate": c.id, "episode": e} for e in found]
                    ).execute()
                # a source the file names but does not hold (not human-labelled where it
                # came from), and this database lacks: the link cannot be kept; said so
                report.sources_missing += len(hashes) - len(found)
            report.candidates_added += 1
        if run is not None:
            report.run_id = int(run.id)

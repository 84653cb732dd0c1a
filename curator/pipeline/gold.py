"""The gold set as JSONL: human-labelled episodes and reviewed candidates, to share.

Export writes one header line, then one line per human-labelled episode (its body,
timestamp, source and human label) and one per candidate a person decided (the gate's
proposal and ratio, the decision, the source episodes by content hash). Import reads such
a file back into another database:

* an episode already present (same content hash) gets the human label if it has none
  (through :func:`curator.pipeline.labels.relabel`, so Edit > Undo relabel takes it back);
  a different human label already there is kept and reported as a conflict, never
  overwritten;
* a missing episode is added with its label;
* candidates go into one run of kind ``gold`` (status ``done``: never committed to
  Knowledge), so Insights counts them with the other reviewed decisions; a candidate
  already imported (same text, proposal and decision) is not added twice.

Every bad line is reported with its line number and the good lines are still imported,
like the episode importer.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from curator.core.textsafety import control_problem
from curator.core.whatif import GATE_DECISIONS
from curator.errors import CuratorError
from curator.pipeline.labels import relabel
from curator.store.db import Store
from curator.store.importer import episode_from_object
from curator.store.models import (
    ACTIONS,
    LABELS,
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


def _candidate_lines(store: Store) -> Iterator[dict[str, Any]]:
    rows = store.execute(
        "SELECT c.id, c.text, c.category, c.importance, c.proposed_action, c.proposed_ratio, "
        "c.action, c.final_text FROM candidate c WHERE c.action IS NOT NULL "
        "AND c.state != 'pending' AND c.decided_by NOT IN ('model', 'cli --accept-all') "
        "ORDER BY c.run_id, c.ordinal"
    )
    sources: dict[int, list[str]] = defaultdict(list)
    for cid, chash in store.execute(
        "SELECT ce.candidate_id, e.content_hash FROM candidate_episode ce "
        "JOIN episode e ON e.id = ce.episode_id ORDER BY ce.candidate_id, e.id"
    ):
        sources[int(cid)].append(str(chash))
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
            "episodes": sources.get(int(cid), []),
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
        }


class _Bad(ValueError):
    pass


def _check_candidate(doc: dict[str, Any]) -> dict[str, Any]:
    text = doc.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _Bad("a candidate needs a non-empty 'text'")
    for name in ("text", "final_text", "category"):
        value = doc.get(name)
        problem = control_problem(value, f"'{name}'") if isinstance(value, str) else None
        if problem is not None:
            raise _Bad(problem)
    if doc.get("proposed_action") not in ACTIONS:
        raise _Bad(f"'proposed_action' must be one of {', '.join(ACTIONS)}")
    if doc.get("decision") not in GATE_DECISIONS:
        raise _Bad(f"'decision' must be one of {', '.join(GATE_DECISIONS)}")
    ratio = doc.get("proposed_ratio", 0.0)
    importance = doc.get("importance", 0.5)
    for name, value in (("proposed_ratio", ratio), ("importance", importance)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise _Bad(f"'{name}' must be a number between 0 and 1")
    episodes = doc.get("episodes", [])
    if not isinstance(episodes, list) or not all(isinstance(e, str) for e in episodes):
        raise _Bad("'episodes' must be a list of content hashes")
    return doc


def import_gold(store: Store, path: Path) -> GoldReport:
    """Read a gold JSONL file into ``store`` (see the module docstring)."""
    report = GoldReport()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CuratorError(f"cannot read {path}: {exc}") from exc
    if not lines:
        raise CuratorError(f"{path} is empty, not a gold set")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CuratorError(f"{path} is not a gold set (line 1 is not its header)")
    now = utcnow()
    labels: dict[str, list[tuple[str, str]]] = defaultdict(list)  # label -> (hash, where)
    candidates: list[dict[str, Any]] = []
    new_episodes: list[tuple[Any, str]] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise _Bad("expected a JSON object")
            if doc.get("kind") == "episode":
                if doc.get("human_label") not in LABELS:
                    raise _Bad(f"'human_label' must be one of {', '.join(LABELS)}")
                body = {
                    k: doc[k]
                    for k in ("id", "text", "messages", "timestamp", "source", "metadata")
                    if k in doc
                }
                parsed = episode_from_object(body, number, now)
                chash = doc.get("content_hash")
                if chash is not None:
                    # the identity in the exporting database (its hash rule saw the
                    # original file, e.g. a missing timestamp), so a re-import matches
                    if not isinstance(chash, str) or not chash.strip():
                        raise _Bad("'content_hash' must be a non-empty string")
                    parsed = replace(parsed, content_hash=chash)
                new_episodes.append((parsed, str(doc["human_label"])))
            elif doc.get("kind") == "candidate":
                candidates.append(_check_candidate(doc))
            else:
                raise _Bad("'kind' must be 'episode' or 'candidate'")
        except (json.JSONDecodeError, ValueError) as exc:
            report.errors.append(f"line {number}: {exc}")

    with store.write():
        for parsed, label in new_episodes:
            row = Episode.get_or_none(Episode.content_hash == parsed.content_hash)
            if row is None:
                Episode.create(
                    external_id=parsed.external_id,
                    content_hash=parsed.content_hash,
                    text=parsed.text,
                    messages=parsed.messages,
                    timestamp=parsed.timestamp,
                    source=parsed.source,
                    metadata=parsed.metadata,
                    classify_truncated=False,
                )
                report.episodes_added += 1
            labels[label].append((parsed.content_hash, f"line {parsed.line}"))
    for label, items in labels.items():
        ids: list[int] = []
        for chash, where in items:
            ep = Episode.get(Episode.content_hash == chash)
            if ep.human_label == label:
                report.labels_same += 1
            elif ep.human_label is not None:
                report.conflicts.append(
                    f"{where}: episode {ep.id} is labelled {ep.human_label} here, "
                    f"{label} in the file (kept)"
                )
            else:
                ids.append(int(ep.id))
        if ids:
            relabel(store, ids, label, actor=ACTOR)
            report.labels_set += len(ids)
    _import_candidates(store, candidates, path, report)
    return report


def _import_candidates(
    store: Store, docs: list[dict[str, Any]], path: Path, report: GoldReport
) -> None:
    if not docs:
        return
    present = {
        (str(t), str(p), str(a))
        for t, p, a in store.execute(
            "SELECT c.text, c.proposed_action, c.action FROM candidate c JOIN run r "
            "ON r.id = c.run_id WHERE r.kind = 'gold'"
        )
    }
    with store.write():
        run: Run | None = None
        for ordinal, doc in enumerate(docs):
            key = (doc["text"], doc["proposed_action"], doc["decision"])
            if key in present:
                report.candidates_present += 1
                continue
            present.add(key)
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
                decided_at=utcnow(),
                state="reviewed",
            )
            hashes = list(doc.get("episodes", []))
            if hashes:
                found = Episode.select(Episode.id).where(Episode.content_hash.in_(hashes))
                CandidateEpisode.insert_many(
                    [{"candidate": c.id, "episode": e.id} for e in found]
                ).execute()
            report.candidates_added += 1
        if run is not None:
            report.run_id = int(run.id)

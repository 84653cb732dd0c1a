"""The demo database: the shipped episodes, identity and axioms of a fictional agent.

``make run`` creates it on first start so the window opens on something real to curate.
If the demo folder also holds ``patterns.json`` (knowledge distilled earlier), those
patterns are added with their original dates, so the Knowledge pane and its decay chart
have history to show and new candidates meet existing patterns in the dedup gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from curator.core.scoring import clamp01, rank_key
from curator.resources_path import resource_path
from curator.store.db import Store
from curator.store.identity import current_identity, save_identity
from curator.store.importer import ImportReport, import_file
from curator.store.models import Episode, Pattern, to_utc
from curator.store.settings import load_settings


@dataclass(frozen=True)
class DemoReport:
    created: bool
    episodes: int
    patterns: int
    identity_version: int


def is_empty(store: Store) -> bool:
    return not Episode.select().exists(store.db) and not Pattern.select().exists(store.db)


def create_demo(store: Store) -> DemoReport:
    """Fill an empty database with the demo data (a no-op on a database that has data).

    One transaction: a failure part-way leaves the database empty, so a later call can
    still build the demo (``is_empty`` would refuse a half-built one).
    """
    with store.write():
        if not is_empty(store):
            return DemoReport(False, Episode.select().count(), Pattern.select().count(), 0)
        demo = resource_path("demo")
        report: ImportReport = import_file(store, demo / "episodes.jsonl")
        if report.errors:  # shipped data must be clean; fail loudly in tests
            raise ValueError(f"demo episodes have errors: {report.errors[:3]}")
        identity = current_identity(store)
        if identity.version == 0:
            axioms = json.loads((demo / "axioms.json").read_text(encoding="utf-8"))
            identity = save_identity(
                store,
                (demo / "identity.md").read_text(encoding="utf-8").strip(),
                list(axioms),
                note="demo identity",
            )
        rows = []
        patterns_file = demo / "patterns.json"
        if patterns_file.is_file():
            rate = load_settings(store).decay_rate
            for item in json.loads(patterns_file.read_text(encoding="utf-8")):
                distilled = to_utc(datetime.fromisoformat(item["distilled_at"]))
                importance = clamp01(float(item["importance"]))
                rows.append(
                    {
                        "text": item["text"],
                        "importance": importance,
                        "distilled_at": distilled,
                        "rank_key": rank_key(importance, distilled, rate=rate),
                        "category": item.get("category", "uncategorized"),
                        "created_at": distilled,
                        "updated_at": distilled,
                    }
                )
            if rows:
                Pattern.insert_many(rows).execute()
    return DemoReport(True, report.imported, len(rows), identity.version)

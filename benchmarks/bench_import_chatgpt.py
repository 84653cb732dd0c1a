"""``curator import`` of a large ChatGPT ``conversations.json``: time, memory, episodes.

Usage: ``python benchmarks/bench_import_chatgpt.py [MEGABYTES] [--seed S]`` (default 100).

The export is generated in the shape of a real one: conversations of 4-40 turns, each
turn a user prompt and an assistant answer (a few sentences to a few paragraphs, some
non-Latin text and emoji), one answer in five regenerated (an abandoned branch beside the
current one), a system node under the root, timestamps per message. It is imported into
a fresh database (one episode per conversation, the default), then imported again (all
duplicates). Prints the file size, conversations, wall time of each import, MB/s and the
peak resident memory of the process.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.chat_formats import ChatImport
from curator.store.db import Store
from curator.store.importer import import_file

WORDS = (
    "the",
    "agent",
    "retried",
    "deploy",
    "cache",
    "token",
    "budget",
    "user",
    "asked",
    "summary",
    "plan",
    "memory",
    "review",
    "файл",
    "ошибка",
    "日本語",
    "テスト",
    "données",
    "🚀",
    "✅",
    "error",
    "timeout",
    "schema",
    "migration",
    "rollback",
)


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _node(node_id: str, parent: str | None, role: str | None, text: str, t: float) -> dict:
    message = None
    if role is not None:
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": t,
            "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": {"model_slug": "gpt-4o", "finish_details": {"type": "stop"}},
            "recipient": "all",
        }
    return {"id": node_id, "message": message, "parent": parent, "children": []}


def conversation(rng: random.Random, number: int) -> dict[str, Any]:
    t = 1_650_000_000 + number * 3600.0
    mapping: dict[str, Any] = {"root": _node("root", None, None, "", t)}
    mapping["sys"] = _node("sys", "root", "system", "", t)
    mapping["root"]["children"].append("sys")
    last = "sys"
    for turn in range(rng.randint(2, 20)):
        for role, (low, high) in (("user", (5, 60)), ("assistant", (40, 400))):
            node_id = f"{role[0]}{turn}"
            if role == "assistant" and rng.random() < 0.2:  # an abandoned regeneration
                old = f"{node_id}-old"
                mapping[old] = _node(old, last, role, _text(rng, low, high), t)
                mapping[last]["children"].append(old)
            t += rng.randint(5, 300)
            mapping[node_id] = _node(node_id, last, role, _text(rng, low, high), t)
            mapping[last]["children"].append(node_id)
            last = node_id
    return {
        "title": _text(rng, 2, 6),
        "create_time": 1_650_000_000 + number * 3600.0,
        "update_time": t,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": last,
        "plugin_ids": None,
        "conversation_id": f"conv-{number}",
        "id": f"conv-{number}",
    }


def make_export(path: Path, megabytes: float, seed: int) -> int:
    rng = random.Random(seed)
    target = int(megabytes * 1024 * 1024)
    written = 0
    count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        while written < target:
            chunk = json.dumps(conversation(rng, count), ensure_ascii=False)
            out.write(("," if count else "") + chunk)
            written += len(chunk.encode("utf-8")) + 1
            count += 1
        out.write("]")
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("megabytes", nargs="?", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        export = Path(folder) / "conversations.json"
        count = make_export(export, args.megabytes, args.seed)
        size = export.stat().st_size / (1024 * 1024)
        print(f"export: {size:.1f} MB, {count:,} conversations")
        store = Store(Path(folder) / "bench.sqlite")
        try:
            for label in ("first import", "re-import"):
                start = time.perf_counter()
                report = import_file(store, export, chat=ChatImport())
                took = time.perf_counter() - start
                print(
                    f"{label}: {took:.1f} s ({size / took:.1f} MB/s), {report.imported:,} "
                    f"imported, {report.duplicates:,} duplicates, {len(report.errors)} errors"
                )
        finally:
            store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

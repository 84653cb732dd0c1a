"""A file's episodes are all parsed before the one transaction that writes them: what each
holds until then is bounded, and what is written is what the model writes."""

from __future__ import annotations

import csv
import json
import random
import tracemalloc
from pathlib import Path

import pytest

from curator.chat_formats import ChatImport
from curator.store import importer
from curator.store.db import Store
from curator.store.models import Episode


def _short_rows(path: Path, count: int) -> None:
    rng = random.Random(2)
    words = ["ok", "yes", "no", "deploy", "note", "reply", "agent", "user", "done", "later"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["content", "conversation"])
        for i in range(count):
            writer.writerow([" ".join(rng.choices(words, k=5)), f"c{i // 20}"])


def test_a_parsed_episode_of_a_short_row_holds_under_a_kilobyte(tmp_path: Path) -> None:
    """A CSV row of about 30 characters: its parsed episode took 1,170 bytes while its
    message list and metadata were held as dicts and lists, 660 as their JSON text."""
    path = tmp_path / "short.csv"
    _short_rows(path, 3_000)
    tracemalloc.start()
    try:
        _name, episodes, errors, _last, _ = importer._parse(path, None, None, None, ChatImport())
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(episodes) == 3_000 and not errors
    assert held / len(episodes) < 900


@pytest.mark.parametrize(
    "line",
    [
        {"content": "plain"},
        {"content": "with metadata", "metadata": {"b": ["é", 1, None], "a": {"z": "\u2028"}}},
        {"content": "empty metadata", "metadata": {}},
        {"content": "null metadata", "metadata": None},
        {
            "messages": [
                {"role": "user", "content": "ünïcode \U0001f600", "name": "ana"},
                {"role": "assistant", "content": "<b>&amp;</b>"},
            ]
        },
    ],
)
def test_what_an_import_writes_is_what_the_model_writes(tmp_path: Path, line: dict) -> None:
    """Messages and metadata are packed as their stored text: byte for byte the text the
    model's own fields make of them, read back as the values given."""
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    store = Store(tmp_path / "db.sqlite")
    try:
        (report,) = importer.import_files(store, [path])
        assert report.imported == 1
        raw = store.execute("SELECT messages, metadata FROM episode")[0]
        episode = Episode.get()
        assert raw[0] == Episode.messages.db_value(episode.messages)
        assert raw[1] == Episode.metadata.db_value(episode.metadata)
        assert episode.metadata == (line.get("metadata") or {})
        if "messages" in line:
            assert episode.messages == line["messages"]
    finally:
        store.close()

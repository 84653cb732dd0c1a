"""Records with the same words, source and time but other ids are other records.

Two events of a log ("ping" at one second, ids evt-1 and evt-2) were one episode: the
second was counted "already present" and lost. Identity is still the content (a file
imported again adds nothing); only a repeat of a content under another id is told apart.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from curator.store.db import Store
from curator.store.importer import import_file
from curator.store.models import Episode

Record = tuple[str, str | None]


def _write(path: Path, records: list[Record]) -> Path:
    lines = []
    for text, external in records:
        item: dict[str, str] = {"content": text, "timestamp": "2024-01-01T00:00:00Z"}
        if external is not None:
            item["id"] = external
        lines.append(json.dumps(item) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _expected(records: list[Record]) -> set[Record]:
    """The episodes the rule keeps: a content's first record names it; a later record of
    it with an id of its own is one more; a later one without an id is the same."""
    first: dict[str, str | None] = {}
    kept: set[Record] = set()
    for text, external in records:
        named = first.setdefault(text, external)
        if external is None or named == external:
            kept.add((text, named))
        else:
            kept.add((text, external))
    return kept


def _stored(store: Store) -> list[Record]:
    with store.read():
        return [(e.text, e.external_id) for e in Episode.select(Episode.text, Episode.external_id)]


def test_a_log_s_two_events_alike_but_for_their_ids_are_both_kept(tmp_path: Path) -> None:
    records: list[Record] = [("ping", "evt-1"), ("ping", "evt-2"), ("ok", None), ("ok", "b")]
    path = _write(tmp_path / "log.jsonl", [*records, ("ping", None), ("ping", "evt-2")])
    store = Store(tmp_path / "c.sqlite")
    try:
        report = import_file(store, path)
        assert (report.imported, report.duplicates) == (4, 2)
        assert sorted(_stored(store), key=str) == sorted(records, key=str)
        again = import_file(store, path)
        assert (again.imported, again.duplicates) == (0, 6)
        # a record with an id of its own after an id-less one of its content, stored
        # earlier: kept (before, the id-less one named the content and it was lost)
        later = import_file(store, _write(tmp_path / "later.jsonl", [("ok", "c")]))
        assert later.imported == 1
    finally:
        store.close()


_RECORDS = st.lists(
    st.tuples(st.sampled_from(["ping", "ok", "done"]), st.sampled_from([None, "1", "2", "3"])),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(records=_RECORDS, cut=st.integers(min_value=0, max_value=12))
def test_one_file_or_two_in_order_keep_the_same_records_and_again_add_nothing(
    records: list[Record], cut: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        whole = Store(tmp / "whole.sqlite")
        split = Store(tmp / "split.sqlite")
        try:
            import_file(whole, _write(tmp / "all.jsonl", records))
            import_file(split, _write(tmp / "a.jsonl", records[:cut]))
            import_file(split, _write(tmp / "b.jsonl", records[cut:]))
            assert set(_stored(whole)) == _expected(records)
            assert sorted(_stored(split), key=str) == sorted(_stored(whole), key=str)
            assert len(_stored(whole)) == len(_expected(records))  # none twice
            assert import_file(whole, tmp / "all.jsonl").imported == 0
            assert import_file(split, tmp / "all.jsonl").imported == 0
        finally:
            whole.close()
            split.close()

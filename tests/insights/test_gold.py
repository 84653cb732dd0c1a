"""Gold set JSONL: export, import into another database, idempotent, conflicts kept."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from curator.cli import main
from curator.errors import CuratorError
from curator.pipeline.gold import export_gold, import_gold
from curator.pipeline.insights import compute_insights
from curator.pipeline.labels import relabel, undo_last_relabel
from curator.store.db import Store
from curator.store.models import Episode
from tests.insights.conftest import CANDIDATES, Reviewed


def _export(store: Store, path: Path) -> None:
    buffer = io.StringIO()
    export_gold(store, buffer)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def test_round_trip_into_a_fresh_database(reviewed: tuple[Store, Reviewed], tmp_path: Path) -> None:
    source, _ = reviewed
    gold = tmp_path / "gold.jsonl"
    _export(source, gold)
    lines = [json.loads(line) for line in gold.read_text().splitlines()]
    assert sum(d.get("kind") == "episode" for d in lines) == 16
    assert sum(d.get("kind") == "candidate" for d in lines) == len(CANDIDATES)
    original = compute_insights(source)
    source.close()

    target = Store(tmp_path / "other.sqlite")
    try:
        report = import_gold(target, gold)
        assert (report.episodes_added, report.labels_set, report.candidates_added) == (16, 16, 6)
        assert report.errors == [] and report.conflicts == []
        copied = compute_insights(target)
        assert copied.gate.counts.tolist() == original.gate.counts.tolist()
        assert [(o.proposed, o.human, o.ratio) for o in copied.overrides] == [
            (o.proposed, o.human, o.ratio) for o in original.overrides
        ]
        humans = sorted(e.human_label for e in Episode.select())
        assert humans == sorted(d["human_label"] for d in lines if d.get("kind") == "episode")
        again = import_gold(target, gold)  # a re-import adds nothing
        assert (again.episodes_added, again.labels_set, again.candidates_added) == (0, 0, 0)
        assert (again.labels_same, again.candidates_present) == (16, 6)
    finally:
        target.close()


def test_conflicts_are_kept_and_labels_undoable(
    reviewed: tuple[Store, Reviewed], tmp_path: Path
) -> None:
    store, r = reviewed
    gold = tmp_path / "gold.jsonl"
    _export(store, gold)
    first = r.episode_ids[0]  # human: constitutional
    relabel(store, [first], "noise")
    second = r.episode_ids[5]
    with store.write():
        Episode.update(human_label=None, label="noise", label_by="model").where(
            Episode.id == second
        ).execute()
    report = import_gold(store, gold)
    assert (
        len(report.conflicts) == 1 and f"episode {first} is labelled noise" in report.conflicts[0]
    )
    assert Episode.get_by_id(first).human_label == "noise"  # kept, not overwritten
    assert report.labels_set == 1 and Episode.get_by_id(second).human_label == "noise"
    assert undo_last_relabel(store) == [second]
    assert Episode.get_by_id(second).human_label is None


def test_bad_lines_are_reported_and_good_ones_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    header = {"format": "memory-curator gold set", "version": 1}
    good = {
        "kind": "episode",
        "text": "the agent kept its promise",
        "timestamp": "2026-01-02T03:04:05Z",
        "human_label": "constitutional",
    }
    lines = [
        header,
        good,
        {"kind": "episode", "text": "x", "human_label": "spam"},
        {"kind": "nope"},
    ]
    gold.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n", encoding="utf-8")
    db = tmp_path / "g.sqlite"
    assert main(["--db", str(db), "gold", "import", str(gold), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["episodes_added"] == 1 and doc["labels_set"] == 1
    assert [e.removeprefix(f"{gold}:").split(":")[0] for e in doc["errors"]] == ["3", "4", "5"]


def test_not_a_gold_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "episodes.jsonl"
    other.write_text('{"text": "hello"}\n', encoding="utf-8")
    assert main(["--db", str(tmp_path / "g.sqlite"), "gold", "import", str(other)]) == 2
    assert "is not a gold set" in capsys.readouterr().err


def test_cli_export_refuses_to_overwrite(
    reviewed: tuple[Store, Reviewed], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, r = reviewed
    out = tmp_path / "gold.jsonl"
    assert main(["--db", str(r.path), "gold", "export", str(out)]) == 0
    before = out.read_bytes()
    assert main(["--db", str(r.path), "gold", "export", str(out)]) == 2
    assert out.read_bytes() == before
    assert "exists" in capsys.readouterr().err


def test_every_rejected_line_is_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plain report listed the first 20 of 30 bad lines, on stdout, with no word of
    the rest; the other imports write every bad line to stderr."""
    gold = tmp_path / "gold.jsonl"
    header = json.dumps({"format": "memory-curator gold set", "version": 1})
    gold.write_text("\n".join([header, *["{not json"] * 30]) + "\n", encoding="utf-8")
    assert main(["--db", str(tmp_path / "g.sqlite"), "gold", "import", str(gold)]) == 1
    out, err = capsys.readouterr()
    assert "30 lines rejected" in out and str(gold) not in out
    assert [line.removeprefix(f"{gold}:").split(":")[0] for line in err.splitlines()] == [
        str(n) for n in range(2, 32)
    ]


def test_a_blank_first_line_is_not_called_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = tmp_path / "gold.jsonl"
    header = json.dumps({"format": "memory-curator gold set", "version": 1})
    gold.write_text(f"\n{header}\n", encoding="utf-8")
    assert main(["--db", str(tmp_path / "g.sqlite"), "gold", "import", str(gold)]) == 2
    assert "line 1 is blank, not its header" in capsys.readouterr().err


def test_an_export_that_cannot_be_written_names_the_file_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It named the hidden part file it writes first ('.x.jsonl.23ee001e.part')."""
    db = str(tmp_path / "g.sqlite")
    target = tmp_path / "no-such-folder" / "x.jsonl"
    assert main(["--db", db, "--create", "gold", "export", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {target}: No such file or directory" in err and ".part" not in err


def test_one_undo_takes_back_every_label_a_gold_import_set(
    reviewed: tuple[Store, Reviewed], tmp_path: Path
) -> None:
    """The labels went in one batch per label value: three undos for one import."""
    source, _ = reviewed
    gold = tmp_path / "gold.jsonl"
    _export(source, gold)
    source.close()
    target = Store(tmp_path / "other.sqlite")
    try:
        report = import_gold(target, gold)
        labelled = sorted(e.id for e in Episode.select().where(Episode.human_label.is_null(False)))
        assert report.labels_set == len(labelled) == 16
        assert len({e.human_label for e in Episode.select()}) == 3
        assert sorted(undo_last_relabel(target)) == labelled
        assert Episode.select().where(Episode.human_label.is_null(False)).count() == 0
    finally:
        target.close()


def test_a_gold_set_with_bare_cr_line_ends_says_so(
    reviewed: tuple[Store, Reviewed], tmp_path: Path
) -> None:
    """Every line of a gold set ended by old Mac line ends is one line: "not a gold set"
    sent its person looking for another file, where the fix is to convert the line ends.
    One record's CR inside a line keeps that line's own error."""
    source, _ = reviewed
    gold = tmp_path / "gold.jsonl"
    _export(source, gold)
    whole = gold.read_bytes()
    crs = tmp_path / "gold-cr.jsonl"
    crs.write_bytes(whole.replace(b"\n", b"\r"))
    with pytest.raises(CuratorError, match=r"gold-cr\.jsonl:1: records on this line end in a bare"):
        import_gold(source, crs)
    first, _, rest = whole.partition(b"\n")
    spaced = tmp_path / "gold-spaced.jsonl"
    spaced.write_bytes(first + b"\n" + b'{"kind": "episode",\r"kind": "episode"}\n' + rest)
    report = import_gold(source, spaced)
    assert [e.split(": ", 1)[1] for e in map(str, report.errors)] == ["duplicate key 'kind'"]

"""The command line: exit codes, one JSON document with --json, one-line errors."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from curator.cli import main
from curator.core.scoring import rank_key
from curator.store.db import Store
from curator.store.migrations import LATEST_VERSION
from curator.store.models import Pattern


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def episodes_file(tmp_path: Path) -> Path:
    path = tmp_path / "eps.jsonl"
    lines = [
        json.dumps({"content": f"episode number {i} about rate limits", "source": "timeline"})
        for i in range(5)
    ]
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def test_import_json_output_and_exit_zero(
    tmp_path: Path, episodes_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    code, out, err = run_cli(capsys, "--db", db, "import", str(episodes_file), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["imported"] == 5 and doc["rejected"] == 0
    code, out, _ = run_cli(capsys, "--json", "--db", db, "import", str(episodes_file))
    assert code == 0 and json.loads(out)["duplicates"] == 5


def test_import_with_bad_lines_exits_one_and_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"content": "a good episode line"}\n{"content": 1}\nnot json\n', "utf-8")
    code, out, err = run_cli(capsys, "--db", str(tmp_path / "c.sqlite"), "import", str(path))
    assert code == 1
    assert f"{path}:2: 'content' must be a string" in err
    assert f"{path}:3: invalid JSON" in err
    assert "1 imported" in out


def test_an_import_of_only_unreadable_files_leaves_no_new_database(
    tmp_path: Path, episodes_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new" / "c.sqlite"
    missing, folder = str(tmp_path / "missing.jsonl"), str(tmp_path)
    code, out, err = run_cli(capsys, "--db", str(db), "import", missing, folder)
    assert code == 1 and "missing.jsonl: no such file" in err and "is a directory" in err
    assert "0 imported" in out
    assert not (tmp_path / "new").exists()  # neither the file nor the folder made for it
    # one readable file among them: the database is made and keeps it
    code, out, _ = run_cli(capsys, "--db", str(db), "import", missing, str(episodes_file))
    assert code == 1 and "5 imported" in out and db.exists()
    # an existing database is never taken back, whatever the import met
    code, _, _ = run_cli(capsys, "--db", str(db), "import", missing)
    assert code == 1 and db.exists()
    code, out, _ = run_cli(capsys, "--db", str(db), "--json", "stats")
    assert code == 0 and json.loads(out)["episodes"]["total"] == 5


@pytest.mark.parametrize("verb", ["import", "import-knowledge", "gold import"])
def test_each_importing_verb_given_a_missing_file_leaves_no_new_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    db = tmp_path / "new" / "c.sqlite"
    code, _, err = run_cli(capsys, "--db", str(db), *verb.split(), str(tmp_path / "gone.txt"))
    assert code in (1, 2) and "no such file" in err
    assert not (tmp_path / "new").exists()


def test_stats_and_export(
    tmp_path: Path, episodes_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.sqlite"
    run_cli(capsys, "--db", str(db), "import", str(episodes_file))
    store = Store(db)
    now = datetime.now(UTC)
    for i in range(60):
        distilled = now - timedelta(days=i)
        importance = 0.2 + (i % 7) / 10
        Pattern.create(
            text=f"pattern {i:02d} keeps happening in threads",
            importance=importance,
            distilled_at=distilled,
            rank_key=rank_key(importance, distilled),
        )
    store.close()

    code, out, _ = run_cli(capsys, "--db", str(db), "stats", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["episodes"]["total"] == 5
    assert doc["episodes"]["by_label"]["unlabelled"] == 5
    assert doc["patterns"]["active"] == 60

    code, out, _ = run_cli(capsys, "--db", str(db), "export", "--json")
    exported = json.loads(out)["patterns"]
    assert code == 0 and len(exported) == 50
    effective = [p["effective_importance"] for p in exported]
    assert effective == sorted(effective, reverse=True)

    code, out, _ = run_cli(capsys, "--db", str(db), "export", "--top", "3", "--format", "markdown")
    assert code == 0
    assert out.startswith("## Knowledge")
    assert out.count("\n- ") == 3
    assert exported[0]["text"] in out


def test_usage_errors_exit_two_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--db", str(tmp_path / "c.sqlite"), "import"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error" in err
    code, _, err = run_cli(capsys, "--db", str(tmp_path / "c.sqlite"), "export", "--top", "0")
    assert code == 2 and err.count("\n") == 1


def test_newer_database_is_one_line_error_without_traceback(tmp_path: Path) -> None:
    db = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    conn.commit()
    conn.close()
    proc = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(db), "stats"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "newer" in proc.stderr


def test_demo_command_fills_an_empty_database_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "demo.sqlite")
    code, out, _ = run_cli(capsys, "--db", db, "demo", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["created"] and doc["episodes"] >= 150 and doc["patterns"] >= 10
    code, out, _ = run_cli(capsys, "--db", db, "demo", "--if-missing", "--json")
    assert code == 0 and not json.loads(out)["created"]
    code, _, err = run_cli(capsys, "--db", db, "demo")
    assert code == 2 and "already has data" in err


def test_damaged_database_is_refused_and_restored_on_request(
    tmp_path: Path, episodes_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.sqlite"
    assert run_cli(capsys, "--db", str(db), "import", str(episodes_file))[0] == 0
    assert run_cli(capsys, "--db", str(db), "backup")[0] == 0
    raw = bytearray(db.read_bytes())
    page = int.from_bytes(raw[16:18], "big")
    for start in range(page, len(raw), page):  # scribble over every b-tree page header
        raw[start : start + 12] = b"\xde\xad\xbe\xef" * 3
    db.write_bytes(bytes(raw))
    code, _, err = run_cli(capsys, "--db", str(db), "stats")
    assert code == 2 and "damaged" in err and "backups" in err and "curator restore" in err
    assert db.read_bytes() == bytes(raw)  # refused, not replaced
    assert not list(tmp_path.glob("c.sqlite.damaged-*"))

    code, out, _ = run_cli(capsys, "--db", str(db), "restore")
    assert code == 0 and "restored" in out
    assert next(iter(tmp_path.glob("c.sqlite.damaged-*"))).read_bytes() == bytes(raw)
    code, out, _ = run_cli(capsys, "--db", str(db), "--json", "stats")
    assert code == 0 and json.loads(out)["episodes"]["total"] > 0


def test_window_without_display_is_a_one_line_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    proc = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(tmp_path / "c.sqlite")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "QT_QPA_PLATFORM=offscreen" in proc.stderr


def test_the_window_program_takes_the_command_lines_arguments(tmp_path: Path) -> None:
    """``curator-gui`` (the program without a console, for desktops) is ``curator``: its
    own entry took no arguments, so ``curator-gui --db FILE`` opened the default database
    instead of FILE, and said nothing."""
    program = Path(sys.executable).with_name("curator-gui")
    db = tmp_path / "named.sqlite"
    done = subprocess.run(
        [str(program), "--db", str(db), "stats"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert f"no database at {db} (named by --db)" in done.stderr


def test_a_failed_import_through_a_link_to_nothing_leaves_nothing_behind(
    tmp_path: Path, episodes_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite follows the link and makes the file it names: that file is what a failure
    takes back (the link itself was there before, and stays)."""
    target, link = tmp_path / "target.sqlite", tmp_path / "link.sqlite"
    link.symlink_to(target.name)
    code, _, err = run_cli(capsys, "--db", str(link), "import", str(tmp_path / "gone.jsonl"))
    assert code == 1 and "no such file" in err
    assert not target.exists() and link.is_symlink()
    code, out, _ = run_cli(capsys, "--db", str(link), "import", str(episodes_file))
    assert code == 0 and "5 imported" in out and target.is_file()

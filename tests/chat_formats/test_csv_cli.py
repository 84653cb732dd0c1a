"""CSV with a column mapping, and ``curator import`` with --format, --per and --map."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from curator.cli import main
from tests.chat_formats.exports import (
    chatgpt_export,
    claude_export,
    discord_export,
    telegram_chat,
    write_json,
    write_slack_folder,
    write_slack_zip,
)

CSV = (
    "sent_at,channel,author,body,thread\r\n"
    '2024-05-01T10:00:00Z,ops,Ann,"deploy, then wait",t1\r\n'
    '1714557660,ops,Бо,"multi\nline 🚀",t1\r\n'
    ",,,,\r\n"
    "2024-05-01T11:00:00+02:00,dev,Kim,日本語,t2\r\n"
)
MAP = "content=body,timestamp=sent_at,source=channel,name=author"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rows(db: Path) -> list[tuple[str, str, str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT text, source, timestamp, metadata FROM episode ORDER BY id"
        ).fetchall()


def test_csv_with_a_mapping_per_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "log.csv"
    path.write_text(CSV, "utf-8", newline="")
    db = tmp_path / "c.sqlite"
    code, out, err = run(capsys, "--db", str(db), "--json", "import", str(path), "--map", MAP)
    assert (code, err) == (0, f"{path}: left out or only named: 1 empty rows\n")
    doc = json.loads(out)
    assert doc["imported"] == 3
    assert doc["files"][0]["format"] == "csv"
    assert doc["files"][0]["left_out"] == {"empty rows": 1}
    got = rows(db)
    assert [(text, source) for text, source, *_ in got] == [
        ("Ann: deploy, then wait", "ops"),
        ("Бо: multi\nline 🚀", "ops"),
        ("Kim: 日本語", "dev"),
    ]
    assert got[1][2].startswith("2024-05-01T10:01:00")  # epoch seconds
    assert got[2][2].startswith("2024-05-01T09:00:00")  # +02:00 in UTC
    assert json.loads(got[0][3])["import"]["message_ids"] == ["line 2"]
    # Conversations by the thread column.
    code, out, _ = run(
        capsys, "--db", str(db), "--json", "import", str(path), "--map",
        MAP + ",conversation=thread", "--per", "conversation",
    )  # fmt: skip
    doc = json.loads(out)
    # Thread t2 is one message: the same episode as its per-message import.
    assert (code, doc["imported"], doc["duplicates"]) == (0, 1, 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sent_at,body\r\n2024-01-01,ok\r\n2024-01-02\r\n", ":3: has 1 cells, the header has 2"),
        ("sent_at,body\r\n2024-01-01,\r\n", ":2: the content cell is empty"),
        ("sent_at,body\r\nlater,hello\r\n", ":2: 'timestamp' 'later' is not an ISO 8601 time"),
        ("sent_at,body\r\n2024-01-01,a\x1b[2Kb\r\n", ":2: the content contains"),
    ],
)
def test_csv_bad_rows_are_reported_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "log.csv"
    path.write_text(text, "utf-8", newline="")
    db = tmp_path / "c.sqlite"
    code, _, err = run(
        capsys, "--db", str(db), "import", str(path), "--map", "content=body,timestamp=sent_at"
    )
    assert code == 1
    assert f"{path}{message}" in err
    assert "Traceback" not in err


def test_csv_mapping_to_a_missing_column_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.csv"
    path.write_text(CSV, "utf-8", newline="")
    db = tmp_path / "c.sqlite"
    code, _, err = run(
        capsys, "--db", str(db), "import", str(path), "--format", "csv", "--map", "content=text"
    )
    assert code == 1
    assert "no column 'text' in the header" in err
    assert not db.exists()  # the database it created for nothing is taken back


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--per", "window"], "--per: window needs a size"),
        (["--per", "window:0"], "--per: window needs a size"),
        (["--per", "day"], "--per: 'day' is not message, conversation or window:N"),
        (["--map", "body"], "--map: 'body' is not FIELD=COLUMN"),
        (["--map", "colour=x"], "--map: 'colour' is not one of content"),
        (["--map", "content=a,content=b"], "--map: 'content' is mapped twice"),
        (["--format", "chatgpt", "--map", "content=a"], "--map applies to CSV files"),
    ],
)
def test_bad_options_are_usage_errors_and_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = write_json(tmp_path / "c.json", chatgpt_export())
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path), *args)
    assert code == 2
    assert err.startswith("curator: error: ") and message in err
    assert err.count("\n") == 1


def test_forcing_a_format_on_stdin_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path):
    code, _, err = run(capsys, "--db", str(tmp_path / "c.sqlite"), "import", "-", "--format", "csv")
    assert code == 2 and "--format csv reads files, not standard input" in err


def test_every_format_is_recognised_by_content_in_one_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """File names say nothing: the content decides (and the own JSONL still works)."""
    files = [
        write_json(tmp_path / "a.data", chatgpt_export()),
        write_json(tmp_path / "b.data", claude_export()),
        write_json(tmp_path / "c.data", telegram_chat()),
        write_json(tmp_path / "d.data", discord_export()),
        write_slack_zip(tmp_path / "e.data"),
        write_slack_folder(tmp_path / "f"),
        tmp_path / "g.data",
        tmp_path / "h.data",
    ]
    files[6].write_text('{"content": "own episode", "source": "x"}\n', "utf-8")
    files[7].write_text("when,content\n2024-01-01T00:00:00Z,a csv row\n", "utf-8")
    db = tmp_path / "c.sqlite"
    code, out, err = run(capsys, "--db", str(db), "--json", "import", *map(str, files))
    assert code == 0, err
    doc = json.loads(out)
    assert [f["format"] for f in doc["files"]] == [
        "chatgpt", "claude", "telegram", "discord", "slack", "slack", "jsonl", "csv",
    ]  # fmt: skip
    assert [f["imported"] for f in doc["files"]] == [2, 2, 1, 1, 2, 0, 1, 1]
    assert [f["duplicates"] for f in doc["files"]][5] == 2  # the folder is the zip's content


def test_a_forced_format_that_does_not_fit_is_one_error_exit_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path / "c.json", claude_export())
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path), "--format", "discord")
    assert code == 1
    assert "not a readable discord export: it is a Claude export, not a Discord" in err
    assert "Traceback" not in err and not db.exists()


def test_a_truncated_export_in_auto_mode_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cut-off file is recognised by the keys at its start and reported once, instead
    of every line being read as a bad JSON Lines line."""
    text = json.dumps(telegram_chat(), indent=2)
    path = tmp_path / "result.json"
    path.write_text(text[: len(text) // 2], "utf-8")
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path))
    assert code == 1
    assert err.count("\n") == 1
    assert "not a readable telegram export: invalid JSON" in err
    assert "(file cut off?)" in err


def test_jsonl_format_reads_a_chat_export_as_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format jsonl is the importer's own reader, whatever the content looks like."""
    path = write_json(tmp_path / "c.json", chatgpt_export())
    code, _, err = run(
        capsys, "--db", str(tmp_path / "c.sqlite"), "import", str(path), "--format", "jsonl"
    )
    assert code == 1 and "needs 'content', 'text' or 'messages'" in err


def test_own_episodes_with_chat_like_keys_stay_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An episode line may carry extra keys ('type', 'channel'): only an export's own
    shape makes a file an export."""
    path = tmp_path / "episodes.jsonl"
    lines = [
        {"id": 1, "type": "chat", "messages": [{"role": "user", "content": "hi"}]},
        {"id": 2, "channel": {"name": "x"}, "guild": {}, "messages": [
            {"role": "user", "content": "yo"}]},
    ]  # fmt: skip
    for order in (lines, lines[::-1]):
        path.write_text("".join(json.dumps(line) + "\n" for line in order), "utf-8")
        db = tmp_path / "c.sqlite"
        code, out, err = run(capsys, "--db", str(db), "--json", "import", str(path))
        [note] = json.loads(out)["files"][0]["notes"]  # the keys read and left out, said
        assert note.startswith("keys no episode keeps were left out: channel (1 record)")
        assert (code, err) == (0, f"{path}: note: {note}\n")
        assert json.loads(out)["files"][0]["format"] == "jsonl"


def test_csv_long_cells_up_to_the_episode_limit_and_beyond(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The csv module's own cell limit (131,072) is not the episode limit: a long message
    is imported, one over 1,000,000 characters is rejected by line and the next row read."""
    path = tmp_path / "long.csv"
    path.write_text("content\n" + "a" * 200_000 + "\n" + "b" * 1_000_001 + "\nshort\n", "utf-8")
    db = tmp_path / "c.sqlite"
    code, out, err = run(capsys, "--db", str(db), "--json", "import", str(path), "--format", "csv")
    assert code == 1
    assert f"{path}:3: the content is 1,000,001 characters, over the 1,000,000 limit" in err
    assert json.loads(out)["imported"] == 2


@pytest.mark.parametrize("fmt", ["auto", "chatgpt", "slack", "csv"])
def test_a_named_pipe_is_refused_not_waited_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """Recognising or reading a format never opens a pipe that has no writer (it would
    wait for ever): the file type is checked first."""
    pipe = tmp_path / "conversations.json"
    os.mkfifo(pipe)
    code, _, err = run(
        capsys, "--db", str(tmp_path / "c.sqlite"), "import", str(pipe), "--format", fmt
    )
    assert code == 1
    assert f"{pipe}: " in err and "named pipe" in err


def test_another_formats_export_forced_as_telegram_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Discord export read as Telegram counted its messages as service messages and
    imported nothing with exit 0."""
    path = write_json(tmp_path / "d.json", discord_export())
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path), "--format", "telegram")
    assert code == 1 and "it is a Discord export, not a Telegram export" in err, err
    assert "nothing was imported" in err and not db.exists()


def _doubled_key() -> bytes:
    export = json.dumps(claude_export()[:1])
    return export.replace('"chat_messages":', '"chat_messages": [], "chat_messages":', 1).encode()


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        # the second list replaced the first unsaid
        ("c.json", _doubled_key, "the key 'chat_messages' is given twice in one object"),
        # which column holds the text? one was lost unsaid
        ("t.csv", lambda: b"content,source,content\nfirst,ops,second\n", "column 'content' twice"),
        # one error a line, none saying why
        ("e.json", lambda: json.dumps(chatgpt_export()).encode("utf-16"), "in UTF-16, not UTF-8"),
    ],
    ids=["key given twice", "csv column twice", "utf-16"],
)
def test_a_fault_of_the_whole_file_is_one_error_and_nothing_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: Any, said: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content())
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path))
    assert code == 1 and said in err, err
    assert len([line for line in err.splitlines() if said in line]) == 1
    assert not db.exists()


def test_csv_times_eight_digits_are_a_date_and_out_of_range_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        "when,content\n20240501,a day\n1714560000000,milliseconds\n"
        "0001-01-01T00:00:00+01:00,before year one\n1714557660,seconds\n",
        "utf-8",
    )
    db = tmp_path / "c.sqlite"
    code, _, err = run(capsys, "--db", str(db), "import", str(path), "--map", "timestamp=when")
    assert code == 1
    assert "t.csv:3: 'timestamp' 1714560000000.0 is out of range" in err, err
    assert "t.csv:4: 'timestamp' '0001-01-01T00:00:00+01:00' is outside the range" in err, err
    with sqlite3.connect(db) as conn:
        stamps = dict(conn.execute("SELECT text, timestamp FROM episode"))
    assert stamps["user: a day"].startswith("2024-05-01T00:00:00")
    assert stamps["user: seconds"].startswith("2024-05-01T10:01:00")

"""A value another program wrote into a number or a date column is one sentence wherever
it is read (the model's fields and the raw queries), exit 2, never 'unexpected TypeError'.

SQLite keeps whatever text is written into any column: ``importance = 'abc'`` made
``curator insights`` and ``audit`` fail with a TypeError, ``distilled_at = 'yesterday'``
made ``export`` and ``insights`` fail with a ValueError.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from curator.cli import main
from curator.store.db import Store
from curator.store.demo import create_demo

CASES = [
    ("importance", "'abc'", "holds importance 'abc', not a number from 0 to 1"),
    ("importance", "X'00'", "not a number from 0 to 1"),  # a blob
    ("distilled_at", "'yesterday'", "holds distilled_at 'yesterday', not a date and time"),
    ("distilled_at", "42", "holds distilled_at '42', not a date and time"),
]


@pytest.mark.parametrize(("column", "value", "said"), CASES)
def test_a_damaged_pattern_value_is_one_sentence_wherever_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, value: str, said: str
) -> None:
    db = tmp_path / "curator.sqlite"
    store = Store(db)
    create_demo(store)
    store.close()
    with sqlite3.connect(db) as raw:
        raw.execute(f"UPDATE pattern SET {column} = {value} WHERE id = 1")
    reads = [["export", "--top", "50"], ["insights"]]
    if column == "importance":  # the audit reads importances, not dates
        reads.append(["audit"])
    for args in reads:
        capsys.readouterr()
        code = main(["--db", str(db), *args])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and said in err, (args, err)

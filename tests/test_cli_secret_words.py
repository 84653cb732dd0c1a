"""A secret on the command line never comes back in what the command says about it.

argparse quotes the words it could not place ("unrecognized arguments: --api-key sk-...")
and a word it refused ("invalid choice: 'postgresql://me:pw@h/db'"); a password in
``$CURATOR_DB`` is judged by the libpq the driver loads even in the command line's own
process, where the driver is held back until a database is opened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.cli import main
from curator.core.redact import MASK, redact_arguments
from curator.gui.app import chosen_database

ROOT = Path(__file__).resolve().parent.parent
SECRET = "Zq7SecretValue91"


@pytest.mark.parametrize(
    "words",
    [
        ["stats", "--api-key", SECRET],
        ["stats", "--password", f"two {SECRET}"],
        ["stats", f"--client-secret={SECRET}"],
        ["stats", f"postgresql://alice:{SECRET}@127.0.0.1:5432/db"],
        ["export", "--format", f"postgresql://alice:{SECRET}@h/db"],
        ["--api-key", SECRET, "classify"],  # taken for the command: "invalid choice"
        ["--password", SECRET, "stats"],
        ["stats", "--openai-key", SECRET],
        ["stats", "--llm-token", SECRET],
        ["stats", "--pass-word", SECRET],
        ["stats", "--format", "sk-proj-Zq7SecretValue91abcdefgh"],  # a key by its shape
    ],
)
def test_a_usage_error_never_quotes_a_secret(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, words: list[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    for json_flag in ([], ["--json"]):
        with pytest.raises(SystemExit) as stopped:
            main(["--db", db, *json_flag, *words])
        assert stopped.value.code == 2
        out, err = capsys.readouterr()
        assert "error" in err and "(see --help)" in err
        assert "Zq7" not in out + err and "Value91" not in out + err
        if json_flag:
            assert "Zq7" not in json.loads(out)["error"]


_WORD = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(_WORD, max_size=3),
    option=st.sampled_from(["--api-key", "-password", "--auth-token", "--db-pwd", "--passphrase"]),
    secret=st.text(min_size=1, max_size=20).filter(lambda s: s.strip()),
    after=st.lists(_WORD, max_size=3),
)
def test_the_word_after_any_secret_option_is_masked_whole(
    before: list[str], option: str, secret: str, after: list[str]
) -> None:
    shown = redact_arguments([*before, option, secret, *after])
    assert shown[len(before)] == option and shown[len(before) + 1] == MASK


def test_words_of_no_secret_stay_as_they_were() -> None:
    words = ["--format", "json", "--limit", "5", "extra", "--token-file", "/tmp/t"]
    assert redact_arguments(words) == words
    # an option after a secret option is an option, and the person must see it named
    assert redact_arguments(["--token", "--bogus"]) == ["--token", "--bogus"]


def test_a_password_tail_in_the_environment_url_is_refused_not_quoted(tmp_path: Path) -> None:
    """The command line holds the driver back; the URL's parameters must still be judged
    by libpq's keywords (before, no keyword was known in that process and libpq quoted
    the unescaped rest of the password)."""
    url = f"postgresql://alice@127.0.0.1:1/cur?password=xy&{SECRET}="
    env = {**os.environ, "CURATOR_DB": url}
    done = subprocess.run(
        [sys.executable, "-m", "curator", "stats"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "libpq does not know" in done.stderr
    assert "Zq7" not in done.stdout + done.stderr


def test_the_window_takes_a_database_the_command_line_resolved_as_it_is() -> None:
    """``$CURATOR_DB`` may hold a password; judged again as ``--db`` it was refused."""
    url = f"postgresql://alice:{SECRET}@127.0.0.1:5432/cur"
    assert chosen_database(url, "$CURATOR_DB") == (url, "$CURATOR_DB")
    assert chosen_database(tmp := Path("x.sqlite"), "--db") == (tmp, "--db")

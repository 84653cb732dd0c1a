"""A database path the system refuses is said in one sentence, by the API and the CLI.

``Path.exists()`` calls some refusals "missing" (a folder that may not be searched) and
raises others as they are (a name too long: ``OSError``; a loop of links, through
``Path.resolve()``: ``RuntimeError``). Every one is a :class:`StoreError` naming the path
and the system's reason, whether or not the caller may create a database, and nothing is
created beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator import Curator
from curator.core.userpath import shown_path
from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.opening import StoreError


def _loop(folder: Path) -> Path:
    (folder / "a.sqlite").symlink_to(folder / "b.sqlite")
    (folder / "b.sqlite").symlink_to(folder / "a.sqlite")
    return folder / "a.sqlite"


def _too_long(folder: Path) -> Path:
    return folder / ("n" * 300 + ".sqlite")


def _under_a_file(folder: Path) -> Path:
    (folder / "plain").write_text("not a folder")
    return folder / "plain" / "db.sqlite"


REFUSED: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a loop of links": (_loop, "Too many levels of symbolic links"),
    "a name too long": (_too_long, "File name too long"),
    "a file where a folder belongs": (_under_a_file, "Not a directory"),
}


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("create", [True, False])
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_the_api_says_why_the_system_refuses_the_path(
    tmp_path: Path, kind: str, create: bool
) -> None:
    make, reason = REFUSED[kind]
    path = make(tmp_path)
    before = _listing(tmp_path)
    with pytest.raises(StoreError) as refused:
        Curator(db=str(path), create=create)
    assert str(refused.value) == f"cannot use {shown_path(path)}: {reason}"
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_the_cli_says_the_same_in_one_line_and_exits_2(tmp_path: Path, kind: str) -> None:
    make, reason = REFUSED[kind]
    path = make(tmp_path)
    before = _listing(tmp_path)
    episodes = tmp_path.parent / f"{tmp_path.name}-one.jsonl"
    episodes.write_text('{"text": "one"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "curator", "--db", str(path), "import", str(episodes)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith("curator: error: cannot use ") and said.endswith(reason), said
    assert _listing(tmp_path) == before


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv")
def test_a_folder_that_may_not_be_searched_is_not_called_missing(tmp_path: Path) -> None:
    """As a user without the right to search the folder (root drops the capabilities
    that override file permissions): the file is there, and the error says why it
    cannot be used rather than that there is none."""
    locked = tmp_path / "locked"
    locked.mkdir()
    Store(locked / "x.sqlite").close()
    locked.chmod(0o700)
    script = (
        "import sys\n"
        "from curator import Curator\n"
        "from curator.errors import CuratorError\n"
        "for create in (True, False):\n"
        "    try:\n"
        "        Curator(db=sys.argv[1], create=create)\n"
        "    except CuratorError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    command = [sys.executable, "-c", script, str(locked / "x.sqlite")]
    if os.geteuid() == 0:
        os.chown(locked, 65534, 65534)  # nobody's: root without the override may not enter
        command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *command]
    else:
        locked.chmod(0o000)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    finally:
        locked.chmod(0o700)
    assert done.returncode == 0, done.stderr
    expected = f"StoreError cannot use {locked / 'x.sqlite'}: Permission denied"
    assert done.stdout.splitlines() == [expected, expected]


PART = st.sampled_from(["db.sqlite", "n" * 260, "plain", "loop", "dangling", "folder", ".."])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(PART, min_size=1, max_size=4), create=st.booleans())
def test_any_path_opens_or_is_refused_in_one_sentence(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str], create: bool
) -> None:
    """Paths made of ordinary names, over-long names, a file, links in a loop, a link to
    nothing and a folder, in any order: a database is opened, or a CuratorError says why
    in one line; no other exception, and a refusal creates nothing."""
    folder = tmp_path_factory.mktemp("paths")
    (folder / "plain").write_text("not a folder")
    (folder / "loop").symlink_to(folder / "loop2")
    (folder / "loop2").symlink_to(folder / "loop")
    (folder / "dangling").symlink_to(folder / "nowhere" / "x")
    (folder / "folder").mkdir()
    path = folder.joinpath(*parts)
    before = _listing(folder)
    try:
        with Curator(db=str(path), create=create):
            pass
    except CuratorError as exc:
        assert "\n" not in str(exc) and str(exc)
        assert _listing(folder) == before

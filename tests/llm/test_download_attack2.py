"""Second round of attacks on model downloads, with cases the first round did not list.

The promises: a file that is not ours is never modified (a ``.part`` or lock that is a
symbolic link, a lock that is a folder), a redirect neither leaks the credentials nor
turns a permanent failure into "run it again to resume", a server that compresses what it
was asked to send as is cannot slip a different file in, and a catalogue's file names are
files on every system the catalogue is used on (Windows device names, characters Windows
forbids, and two spellings of one name that normalise alike on macOS). Real loopback
servers (:mod:`tests.llm.rogue_server`) and real files throughout.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import threading
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.errors import CuratorError
from curator.llm.catalogue import CatalogueError, file_name_problem, load_catalogue, models_dir
from curator.llm.download import DownloadError, download_model
from tests.llm.rogue_server import Reply, honest, rogue
from tests.llm.test_download_attacks import DATA, FAST, always, entry_for

PRECIOUS = b"someone else's file, not a download" * 10


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


# -- files that are not ours ----------------------------------------------------------------


@pytest.mark.parametrize("prefix", [b"", DATA[:1000]], ids=["unrelated", "a-true-prefix"])
def test_a_part_that_is_a_symlink_is_never_written_through(tmp_path: Path, prefix: bytes) -> None:
    victim = tmp_path / "victim.bin"
    victim.write_bytes(prefix + PRECIOUS)
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf.part").symlink_to(victim)
    with rogue(honest(DATA)) as (url, log), pytest.raises(DownloadError) as caught:
        download_model(entry_for(url), models, limits=FAST)
    assert "tiny.gguf.part" in _one_line(caught.value) and "not a regular file" in str(caught.value)
    assert victim.read_bytes() == prefix + PRECIOUS
    assert (models / "tiny.gguf.part").is_symlink() and not (models / "tiny.gguf").exists()
    assert log.ranges == []  # refused before asking


def test_a_part_that_is_a_folder_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").mkdir()
    (tmp_path / "tiny.gguf.part" / "inside").write_bytes(PRECIOUS)
    with (
        rogue(honest(DATA)) as (url, log),
        pytest.raises(DownloadError, match="not a regular file"),
    ):
        download_model(entry_for(url), tmp_path, limits=FAST)
    assert (tmp_path / "tiny.gguf.part" / "inside").read_bytes() == PRECIOUS
    assert log.ranges == []


def test_a_lock_that_is_a_dangling_symlink_creates_nothing_elsewhere(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (models / "tiny.gguf.lock").symlink_to(elsewhere)
    with rogue(honest(DATA)) as (url, log), pytest.raises(CuratorError) as caught:
        download_model(entry_for(url), models, limits=FAST)
    assert "tiny.gguf.lock" in _one_line(caught.value) and "symbolic link" in str(caught.value)
    assert not elsewhere.exists() and log.ranges == []
    assert (models / "tiny.gguf.lock").is_symlink()


def test_a_lock_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.lock").mkdir()
    with (
        rogue(honest(DATA)) as (url, log),
        pytest.raises(CuratorError, match="lock file") as caught,
    ):
        download_model(entry_for(url), tmp_path, limits=FAST)
    _one_line(caught.value)
    assert (tmp_path / "tiny.gguf.lock").is_dir() and log.ranges == []


def test_a_dangling_symlink_at_the_model_name_is_replaced_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.gguf"
    models = tmp_path / "models"
    models.mkdir()
    (models / "tiny.gguf").symlink_to(elsewhere)
    with rogue(honest(DATA)) as (url, _log):
        download_model(entry_for(url), models, limits=FAST)
    assert not elsewhere.exists()
    assert not (models / "tiny.gguf").is_symlink() and (models / "tiny.gguf").read_bytes() == DATA


# -- redirects ---------------------------------------------------------------------------


def _redirect(location: str) -> Reply:
    return Reply(302, {"Location": location, "Content-Length": "0"})


def test_a_redirect_to_another_host_does_not_carry_the_credentials(tmp_path: Path) -> None:
    with rogue(honest(DATA)) as (other, other_log), rogue(always(_redirect(other))) as (url, log):
        secret = url.replace("http://", "http://user:hunter2@")
        download_model(entry_for(secret), tmp_path, limits=FAST)
    assert log.authorizations[0] is not None
    assert other_log.authorizations == [None]
    assert (tmp_path / "tiny.gguf").read_bytes() == DATA


@pytest.mark.parametrize(
    "location", ["file:///etc/passwd", "ftp://127.0.0.1/model.gguf", "gopher://x/"]
)
def test_a_redirect_to_another_protocol_is_a_failure_not_a_resume(
    tmp_path: Path, location: str
) -> None:
    with rogue(always(_redirect(location))) as (url, log), pytest.raises(DownloadError) as caught:
        download_model(entry_for(url), tmp_path, limits=FAST)
    message = _one_line(caught.value)
    assert "resume" not in message and "not an http(s) address" in message
    assert len(log.ranges) == 1  # a permanent failure is not retried
    assert not (tmp_path / "tiny.gguf").exists() and not (tmp_path / "tiny.gguf.part").exists()


def test_a_redirect_loop_is_one_line(tmp_path: Path) -> None:
    with (
        rogue(always(_redirect("/model.gguf"))) as (url, _log),
        pytest.raises(DownloadError, match="redirect"),
    ):
        download_model(entry_for(url), tmp_path, limits=FAST)
    assert not list(tmp_path.iterdir())


def test_a_redirect_to_a_url_with_credentials_never_shows_them(tmp_path: Path) -> None:
    with rogue(always(Reply(404, {"Content-Length": "0"}))) as (other, _other_log):
        target = other.replace("http://", "http://them:s3cr3tpw@") + "?token=abcdef"
        with (
            rogue(always(_redirect(target))) as (url, _log),
            pytest.raises(DownloadError) as caught,
        ):
            download_model(entry_for(url), tmp_path, limits=FAST)
    assert "s3cr3tpw" not in _one_line(caught.value) and "abcdef" not in str(caught.value)


# -- a body that is not the file's own bytes -------------------------------------------------


def test_a_compressed_answer_to_an_identity_request_is_not_saved(tmp_path: Path) -> None:
    """Content-Encoding despite ``Accept-Encoding: identity``: the bytes written are the
    compressed ones, which are not a model: refused, nothing kept under the model's name."""
    packed = gzip.compress(DATA)
    reply = Reply(200, {"Content-Length": str(len(packed)), "Content-Encoding": "gzip"}, packed)
    with rogue(always(reply)) as (url, _log), pytest.raises(DownloadError):
        download_model(entry_for(url, size=None, sha=None), tmp_path, limits=FAST)
    assert not (tmp_path / "tiny.gguf").exists()


# -- catalogue names -----------------------------------------------------------------------


def _catalogue(tmp_path: Path, *files: str) -> Path:
    path = tmp_path / "catalogue.json"
    models = [
        {"name": f"m{i}", "file": f, "url": "https://example.org/m.gguf"}
        for i, f in enumerate(files)
    ]
    path.write_text(json.dumps({"models": models}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "file",
    [
        "CON",
        "nul.gguf",
        "Com1.gguf",
        "LPT9",
        "aux.tar.gguf",
        "PRN ",
        "a<b.gguf",
        "a:b.gguf",
        'a"b.gguf',
        "a|b.gguf",
        "a?b.gguf",
        "a*b.gguf",
        "a>b.gguf",
    ],
)
def test_names_windows_cannot_hold_are_refused(tmp_path: Path, file: str) -> None:
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(_catalogue(tmp_path, file))
    assert "'file'" in _one_line(caught.value)


@pytest.mark.parametrize("file", ["console.gguf", "conan.gguf", "com10.gguf", "nulls.gguf"])
def test_names_that_only_look_like_devices_are_fine(tmp_path: Path, file: str) -> None:
    assert [e.file for e in load_catalogue(_catalogue(tmp_path, file))] == [file]


def test_two_spellings_of_one_accented_name_are_one_file(tmp_path: Path) -> None:
    """NFC "é" and NFD "e + combining acute" are the same name on macOS (and to a user)."""
    nfc, nfd = "caf\u00e9.gguf", "cafe\u0301.gguf"
    with pytest.raises(CatalogueError, match="share the file"):
        load_catalogue(_catalogue(tmp_path, nfc, nfd))
    with pytest.raises(CatalogueError, match="share the file"):
        load_catalogue(_catalogue(tmp_path, "CAF\u00c9.gguf", nfd))


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


@settings(max_examples=150, deadline=None)
@given(
    files=st.lists(
        st.text(
            alphabet=st.sampled_from(list("aAeE\u00e9\u00c9\u0301.:<CONnulPRT1 -_\u212a")),
            min_size=1,
            max_size=8,
        ),
        min_size=1,
        max_size=3,
    )
)
def test_accepted_catalogues_hold_distinct_portable_names(files: list[str]) -> None:
    """Whatever names a catalogue holds, an accepted one has no two that any supported
    file system could take for one file, and none a Windows device or forbidden name."""
    for file in files:
        if file_name_problem(file.strip()) is None:
            stem = file.strip().split(".")[0].rstrip(" ").upper()
            assert stem not in {"CON", "PRN", "AUX", "NUL"} and not (
                len(stem) == 4 and stem[:3] in {"COM", "LPT"} and stem[3] in "123456789"
            )
            assert not set(file) & set('<>:"|?*')
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = _catalogue(Path(folder), *files)
        try:
            entries = load_catalogue(path)
        except CatalogueError:
            return
    keys = [_key(e.file) for e in entries]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("blank", [" ", "\t", "\n"])
def test_a_blank_models_dir_variable_is_unset(blank: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank ``$CURATOR_MODELS_DIR`` would otherwise be a folder named " " in the
    current directory, where downloads went unnoticed."""
    monkeypatch.delenv("CURATOR_MODELS_DIR", raising=False)
    default = models_dir()
    monkeypatch.setenv("CURATOR_MODELS_DIR", blank)
    assert models_dir() == default
    monkeypatch.setenv("CURATOR_MODELS_DIR", " /tmp/models-here\n")
    assert models_dir() == Path("/tmp/models-here")


# -- the catalogue file itself -----------------------------------------------------------


def _bounded_load(path: Path) -> BaseException | None:
    """load_catalogue(path) on a thread; a load still running after 10 s fails the test."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            load_catalogue(path)
            box.append(None)
        except BaseException as exc:
            box.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10.0)
    assert not worker.is_alive(), "loading the catalogue hung"
    return box[0]


def test_a_catalogue_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "catalogue.json"
    os.mkfifo(fifo)
    try:
        error = _bounded_load(fifo)
    finally:
        with contextlib.suppress(OSError):  # release a reader the old code left blocked
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
    assert isinstance(error, CatalogueError) and "not a regular file" in _one_line(error)


def test_a_catalogue_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    error = _bounded_load(tmp_path)
    assert isinstance(error, CatalogueError) and "not a regular file" in _one_line(error)


def test_a_huge_catalogue_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.json"
    with path.open("wb") as handle:
        handle.truncate(64 << 20)  # sparse: 64 MiB of NULs without writing them
    error = _bounded_load(path)
    assert isinstance(error, CatalogueError) and "larger than" in _one_line(error)


@pytest.mark.parametrize("ram", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_ram_figure_that_is_not_a_number_is_refused(tmp_path: Path, ram: str) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text(
        '{"models": [{"name": "m", "file": "m.gguf", "url": "https://example.org/m.gguf", '
        f'"ram_gb": {ram}}}]}}'
    )
    with pytest.raises(CatalogueError, match="ram_gb"):
        load_catalogue(path)


def test_a_part_that_is_a_hard_link_is_never_written_through(tmp_path: Path) -> None:
    """A second name of another file (same inode): appending would change that file."""
    victim = tmp_path / "victim.bin"
    victim.write_bytes(DATA[:1000])
    models = tmp_path / "models"
    models.mkdir()
    os.link(victim, models / "tiny.gguf.part")
    with rogue(honest(DATA)) as (url, log), pytest.raises(DownloadError) as caught:
        download_model(entry_for(url), models, limits=FAST)
    assert "tiny.gguf.part" in _one_line(caught.value) and "other name" in str(caught.value)
    assert victim.read_bytes() == DATA[:1000] and log.ranges == []


@pytest.mark.parametrize(
    "url",
    [
        "http://user:SeK/rEt@example.org/m.gguf",
        "http://user:SeK#rEt@example.org/m.gguf",
        "http://user:SeK?rEt@example.org/m.gguf",
        "http://user:SeK rEt@example.org/m.gguf",
    ],
)
def test_a_malformed_url_with_a_password_is_refused_without_showing_it(
    tmp_path: Path, url: str
) -> None:
    """A password with an unescaped "/", "#", "?" or space ends the URL's user part early
    for the parser, so the refusal cannot rely on it to find the password."""
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"models": [{"name": "m", "file": "m.gguf", "url": url}]}))
    with pytest.raises(CatalogueError, match="'url'") as caught:
        load_catalogue(path)
    message = _one_line(caught.value)
    assert "SeK" not in message and "rEt" not in message and "example.org" in message


@pytest.mark.parametrize("field", ["title", "licence", "note", "source"])
@pytest.mark.parametrize("value", ["\x1b[2Jcleared", "two\nlines", "bell\x07", "\u202eevil"])
def test_catalogue_texts_a_terminal_would_obey_are_refused(
    tmp_path: Path, field: str, value: str
) -> None:
    """``curator models list`` prints these fields: an escape would clear the screen or
    rewrite the line, a right-to-left override would reverse what it says."""
    model = {"name": "m", "file": "m.gguf", "url": "https://example.org/m.gguf", field: value}
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"models": [model]}))
    with pytest.raises(CatalogueError, match=f"'{field}'") as caught:
        load_catalogue(path)
    assert value not in _one_line(caught.value)

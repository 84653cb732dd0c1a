"""Downloads against misbehaving servers on 127.0.0.1: nothing corrupt is kept, nothing hangs.

Each server here answers the way a broken server or proxy does (a 206 with the whole
file, a wrong Content-Range, a 416 on a truncated file, an endless body, a trickle,
headers that never finish). The rule checked every time: the model file is either exactly
the served bytes, or absent with a one-line error and a ``.part`` that is a true prefix.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from curator.llm.catalogue import CatalogueEntry
from curator.llm.download import (
    DownloadError,
    DownloadLimits,
    DownloadResult,
    DownloadStalled,
    Progress,
    TargetBusy,
    download_model,
)
from tests.llm.rogue_server import Reply, Responder, honest, rogue, tiny_gguf

DATA = tiny_gguf(300_000)
FAST = DownloadLimits(first_byte_s=1.0, stall_window_s=0.5)
"""Short limits so the stall and deadline tests stop within a second."""


def entry_for(
    url: str,
    data: bytes = DATA,
    *,
    size: int | str | None = "auto",
    sha: str | None = "auto",
    file: str = "tiny.gguf",
) -> CatalogueEntry:
    return CatalogueEntry(
        name="tiny",
        title="Tiny",
        file=file,
        url=url,
        size_bytes=len(data) if size == "auto" else size,  # type: ignore[arg-type]
        sha256=hashlib.sha256(data).hexdigest() if sha == "auto" else sha,
        ram_gb=0.1,
        context_length=512,
        licence="test",
        note="test",
        source="test",
    )


def assert_nothing_corrupt(folder: Path, data: bytes = DATA) -> None:
    """The model is absent and the .part (if any) is a true prefix of the served file."""
    assert not (folder / "tiny.gguf").exists()
    part = folder / "tiny.gguf.part"
    if part.exists():
        kept = part.read_bytes()
        assert len(kept) <= len(data) and data.startswith(kept)


def always(reply: Reply) -> Responder:
    return lambda _start: reply


def then(first: Responder, rest: Responder) -> Responder:
    """``first`` answers the first request, ``rest`` every later one."""
    calls = [0]

    def respond(start: int | None) -> Reply:
        calls[0] += 1
        return first(start) if calls[0] == 1 else rest(start)

    return respond


def whole_206(content_range: str | None) -> Responder:
    """A server that answers a Range request with 206 and the *whole* file."""

    def respond(start: int | None) -> Reply:
        headers = {"Content-Length": str(len(DATA))}
        if content_range is not None:
            headers["Content-Range"] = content_range
        return Reply(206 if start is not None else 200, headers, DATA)

    return respond


# -- 206 with the whole file, wrong Content-Range ------------------------------------------


def test_206_with_the_whole_file_from_zero_replaces_the_part(tmp_path: Path) -> None:
    """The case of the report: no size, no checksum, a .part, a 206 carrying the whole
    file. Its Content-Range says it starts at 0, so it replaces the .part."""
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    with rogue(whole_206(f"bytes 0-{len(DATA) - 1}/{len(DATA)}")) as (url, log):
        result = download_model(entry_for(url, size=None, sha=None), tmp_path)
    assert log.ranges == [5000]
    assert result.path.read_bytes() == DATA and result.resumed_from == 0


@pytest.mark.parametrize(
    ("content_range", "message"),
    [
        (None, "without a valid Content-Range"),
        ("bytes 17-299999/300000", "from 17 when asked for bytes from 5000"),
        ("bytes 5000-999/300000", "impossible Content-Range"),
        ("bytes 5000-9999/20000", "Content-Length"),
        ("items 5000-9999/*", "without a valid Content-Range"),
    ],
)
def test_206_with_a_wrong_content_range_is_refused_and_keeps_the_part(
    tmp_path: Path, content_range: str | None, message: str
) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    with (
        rogue(whole_206(content_range)) as (url, _),
        pytest.raises(DownloadError, match=message) as info,
    ):
        download_model(entry_for(url, size=None, sha=None), tmp_path)
    assert "5,000 bytes kept in tiny.gguf.part" in str(info.value)
    assert (tmp_path / "tiny.gguf.part").read_bytes() == DATA[:5000]
    assert not (tmp_path / "tiny.gguf").exists()


def test_206_whose_total_contradicts_the_catalogue_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    wrong_total = len(DATA) + 10

    def respond(start: int | None) -> Reply:
        assert start is not None
        body = DATA[start:] + b"x" * 10
        return Reply(206, {"Content-Range": f"bytes {start}-{wrong_total - 1}/{wrong_total}"}, body)

    with (
        rogue(respond) as (url, _),
        pytest.raises(DownloadError, match=f"{wrong_total:,} bytes, but {len(DATA):,}"),
    ):
        download_model(entry_for(url, sha=None), tmp_path)
    assert (tmp_path / "tiny.gguf.part").read_bytes() == DATA[:5000]


def test_200_to_a_resume_request_starts_again_from_zero(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    ignoring = then(always(Reply(200, {}, DATA)), honest(DATA))
    with rogue(ignoring) as (url, log):
        result = download_model(entry_for(url, sha=None, size=None), tmp_path)
    assert log.ranges == [5000]
    assert result.path.read_bytes() == DATA and result.resumed_from == 0


# -- 416 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_range", [f"bytes */{len(DATA)}", None, "bytes */4000", "bytes 0-1/2"]
)
def test_416_on_a_truncated_part_discards_it_and_starts_again(
    tmp_path: Path, content_range: str | None
) -> None:
    """A 416 is no proof the .part is complete: a truncated tiny GGUF still parses, so
    taking it on trust would save a truncated model."""
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    headers = {"Content-Range": content_range} if content_range else {}
    lying = then(always(Reply(416, headers)), honest(DATA))
    with rogue(lying) as (url, log):
        result = download_model(entry_for(url, size=None, sha=None), tmp_path)
    assert log.ranges == [5000, None]
    assert result.path.read_bytes() == DATA and result.resumed_from == 0


def test_a_size_announced_before_a_restart_is_forgotten(tmp_path: Path) -> None:
    """A first answer claims three bytes more than the file and sends ten bytes fewer; the
    resume's 416 says the file is complete at its real size, so the .part (short of it)
    goes and the download starts again. The size the first answer claimed described the
    bytes just dropped: the honest 200 that follows, with its own Content-Length, is taken
    (it was refused as "N bytes, N + 3 expected")."""
    n = len(DATA)
    answers = [
        Reply(206, {"Content-Range": f"bytes 0-{n - 1}/{n + 3}"}, DATA[: n - 10]),
        Reply(416, {"Content-Range": f"bytes */{n}"}),
    ]
    with rogue(lambda start: answers.pop(0) if answers else honest(DATA)(start)) as (url, log):
        result = download_model(entry_for(url, size=None), tmp_path)
    assert log.ranges == [None, n - 10, None]
    assert result.path.read_bytes() == DATA and result.resumed_from == 0


def test_a_416_at_the_real_size_completes_despite_an_earlier_claim(tmp_path: Path) -> None:
    """After a first answer claiming three bytes more than it sent, an honest 416 at the
    size of the .part is the server's latest word: the .part is complete, and the
    checksum confirms it (it was dropped, and with it every byte saved)."""
    n = len(DATA)
    lying = Reply(206, {"Content-Range": f"bytes 0-{n - 1}/{n + 3}"}, DATA)
    with rogue(then(always(lying), honest(DATA))) as (url, log):
        result = download_model(entry_for(url, size=None), tmp_path)
    assert log.ranges == [None, n]
    assert result.path.read_bytes() == DATA


def test_416_with_the_announced_size_completes_the_part(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA)
    with rogue(honest(DATA)) as (url, log):
        result = download_model(entry_for(url, size=None, sha=None), tmp_path)
    assert log.ranges == [len(DATA)]
    assert result.path.read_bytes() == DATA and result.resumed_from == len(DATA)


def test_a_part_longer_than_the_catalogue_size_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA + b"junk")
    with rogue(honest(DATA)) as (url, log):
        result = download_model(entry_for(url), tmp_path)
    assert log.ranges == [None] and result.verified


# -- caps ----------------------------------------------------------------------------------


def test_an_endless_body_is_capped_at_the_catalogue_size(tmp_path: Path) -> None:
    endless = always(Reply(200, {}, DATA, garbage=50_000_000))
    with (
        rogue(endless) as (url, _),
        pytest.raises(DownloadError, match=f"more than the {len(DATA):,} bytes") as info,
    ):
        download_model(entry_for(url, sha=None), tmp_path)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_an_entry_without_a_size_is_capped_by_the_hard_cap(tmp_path: Path) -> None:
    endless = always(Reply(200, {}, DATA, garbage=50_000_000))
    limits = DownloadLimits(hard_cap_bytes=len(DATA) + 1000)
    with (
        rogue(endless) as (url, _),
        pytest.raises(DownloadError, match=f"more than the {len(DATA) + 1000:,} bytes"),
    ):
        download_model(entry_for(url, size=None, sha=None), tmp_path, limits=limits)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("body", [b" " * 4096, b"<!DOCTYPE html>", b"GGU!", b"G"])
def test_an_answer_that_does_not_begin_like_a_model_is_refused_at_its_first_bytes(
    tmp_path: Path, body: bytes
) -> None:
    """An entry without a size and a server sending an endless body of anything: before,
    it was written until the 64 GiB cap (11.6 GB in a minute), a model check only at the
    end. A body of one byte that could still begin a model is judged when it ends."""
    endless = always(Reply(200, {}, body, garbage=0 if body == b"G" else 50_000_000))
    with rogue(endless) as (url, _), pytest.raises(DownloadError) as info:
        download_model(entry_for(url, body, size=None, sha=None), tmp_path)
    said = str(info.value)
    assert "\n" not in said and "GGUF" in said
    if body != b"G":
        assert "is not a GGUF model (it begins b" in said and "nothing was kept" in said
    assert list(tmp_path.iterdir()) == []


def test_a_body_of_unknown_size_stops_before_the_last_free_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The free space is looked at before a body of unknown size is written, and again
    as it is; the floor is set above what this disk has free, so the first look stops it
    before a byte is written (a later look keeps what was written, for a resume)."""
    import shutil

    from curator.llm import download

    monkeypatch.setattr(download, "ROOM_LEFT_BYTES", shutil.disk_usage(tmp_path).free * 2)
    endless = always(Reply(200, {}, DATA, drip=4096))
    with rogue(endless) as (url, _), pytest.raises(DownloadError, match="nearly full") as info:
        download_model(entry_for(url, size=None, sha=None), tmp_path)
    assert "\n" not in str(info.value) and str(info.value).endswith("; nothing was kept")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Length": str(10**12)},
        {"Content-Range": f"bytes 0-{10**12 - 1}/{10**12}"},  # a 206: the cap held for 200s only
        {"Content-Range": f"bytes 0-{10**12 - 1}/*"},
    ],
    ids=["200-length", "206-total", "206-no-total"],
)
def test_an_announced_size_over_the_hard_cap_is_refused_before_writing(
    tmp_path: Path, headers: dict[str, str]
) -> None:
    status = 200 if "Content-Length" in headers else 206
    huge = always(Reply(status, headers, DATA))
    limits = DownloadLimits(hard_cap_bytes=10**9)
    with (
        rogue(huge) as (url, _),
        pytest.raises(DownloadError, match="more than the 1,000,000,000"),
    ):
        download_model(entry_for(url, size=None, sha=None), tmp_path, limits=limits)
    assert list(tmp_path.iterdir()) == []


def test_a_resumed_body_that_overflows_keeps_the_earlier_prefix(tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])

    def overflowing(start: int | None) -> Reply:
        assert start == 5000
        return Reply(206, {"Content-Range": f"bytes 5000-{len(DATA) - 1}/*"}, DATA[5000:] * 2)

    with (
        rogue(overflowing) as (url, _),
        pytest.raises(DownloadError, match="more than"),
    ):
        download_model(entry_for(url, sha=None), tmp_path)
    assert (tmp_path / "tiny.gguf.part").read_bytes() == DATA[:5000]


# -- nothing hangs -------------------------------------------------------------------------


def trickle(start: int | None) -> Reply:
    """200 with the right length, then 2 bytes every 0.1 s (20 B/s) for up to 8 s."""
    return Reply(200, {"Content-Length": str(len(DATA))}, DATA, drip=2, pause_s=0.1, give_up_s=8)


def test_a_trickle_stops_with_a_message_and_the_part_resumes(tmp_path: Path) -> None:
    with rogue(trickle) as (url, _):
        entry = entry_for(url)
        with pytest.raises(DownloadStalled, match=r"stalled: less than 1 KiB/s over 0.5 s") as info:
            download_model(entry, tmp_path, limits=FAST)
    assert "run it again to resume" in str(info.value)
    assert_nothing_corrupt(tmp_path)
    kept = (tmp_path / "tiny.gguf.part").stat().st_size
    assert kept > 0
    with rogue(honest(DATA)) as (url, log):
        result = download_model(entry_for(url), tmp_path)
    assert log.ranges == [kept] and result.verified and result.resumed_from == kept


@pytest.mark.parametrize("pause_s", [0.05, 5.0], ids=["dripping", "silent"])
def test_headers_that_never_finish_hit_the_first_byte_deadline(
    tmp_path: Path, pause_s: float
) -> None:
    slow_headers = always(
        Reply(200, {"Content-Length": str(len(DATA))}, DATA, header_pause_s=pause_s)
    )
    with (
        rogue(slow_headers) as (url, _),
        pytest.raises(DownloadStalled, match=r"no answer within 1 s"),
    ):
        download_model(entry_for(url), tmp_path, limits=FAST)
    assert list(tmp_path.iterdir()) == []


def test_cancel_works_while_the_server_is_silent(tmp_path: Path) -> None:
    """The GUI's Cancel must not wait for a server that sends nothing."""
    cancel = threading.Event()
    silent_after_start = always(
        Reply(200, {"Content-Length": str(len(DATA))}, DATA[:10], drip=10, pause_s=30, give_up_s=30)
    )

    def on_progress(_p: Progress) -> None:
        cancel.set()  # the first bytes arrived; then the server goes silent

    slow = DownloadLimits(first_byte_s=30, stall_window_s=30)
    with (
        rogue(silent_after_start) as (url, _),
        pytest.raises(DownloadError, match="cancelled; 10 bytes kept"),
    ):
        download_model(entry_for(url), tmp_path, progress=on_progress, cancel=cancel, limits=slow)


# -- secrets -------------------------------------------------------------------------------


def test_credentials_in_the_url_are_used_but_never_shown(tmp_path: Path) -> None:
    with rogue(always(Reply(404, {"Content-Length": "0"}))) as (url, log):
        secret_url = url.replace("http://", "http://user:hunter2@")
        with pytest.raises(DownloadError, match="HTTP 404") as info:
            download_model(entry_for(secret_url), tmp_path)
    assert "hunter2" not in str(info.value) and "http://***@127.0.0.1" in str(info.value)
    assert log.authorizations[0] is not None and log.authorizations[0].startswith("Basic ")


# -- one download of a target at a time ----------------------------------------------------


def test_a_second_download_of_the_same_target_is_refused_at_once(tmp_path: Path) -> None:
    started = threading.Event()
    release = threading.Event()
    outcome: dict[str, Any] = {}

    def first_progress(_p: Progress) -> None:
        started.set()
        release.wait(10)

    def first(entry: CatalogueEntry) -> None:
        try:
            outcome["first"] = download_model(entry, tmp_path, progress=first_progress)
        except Exception as exc:  # reported through the assertion below
            outcome["first"] = exc

    with rogue(honest(DATA)) as (url, log):
        entry = entry_for(url)
        thread = threading.Thread(target=first, args=(entry,))
        thread.start()
        assert started.wait(10)
        with pytest.raises(TargetBusy, match="already being downloaded") as info:
            download_model(entry, tmp_path)
        assert info.value.exit_code == 1
        from curator.llm.catalogue import remove_model

        with pytest.raises(TargetBusy, match="being downloaded right now"):
            remove_model(entry, tmp_path)
        release.set()
        thread.join(10)
    result = outcome["first"]
    assert isinstance(result, DownloadResult), result
    assert len(log.ranges) == 1  # the refused download sent no request
    assert result.sha256 == hashlib.sha256(result.path.read_bytes()).hexdigest()
    assert result.path.read_bytes() == DATA
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]  # no lock left
    with pytest.raises(DownloadError, match="already exists"):
        download_model(entry, tmp_path)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(200, {"Content-Length": "-5"}, DATA), "bad Content-Length"),
        (Reply(200, {"Content-Length": "lots"}, DATA), "bad Content-Length"),
        (Reply(204), "HTTP 204 instead of the file"),
        (Reply(302), "HTTP 302 instead of the file"),
        (Reply(200, {"Content-Length": str(len(DATA) - 1)}, DATA[:-1]), "bytes, but"),
    ],
)
def test_other_unusable_answers_are_one_line_and_keep_the_part(
    tmp_path: Path, reply: Reply, message: str
) -> None:
    (tmp_path / "tiny.gguf.part").write_bytes(DATA[:5000])
    with (
        rogue(always(reply)) as (url, _),
        pytest.raises(DownloadError, match=message) as info,
    ):
        download_model(entry_for(url, sha=None), tmp_path)
    assert "\n" not in str(info.value) and info.value.exit_code == 2
    assert (tmp_path / "tiny.gguf.part").read_bytes() == DATA[:5000]

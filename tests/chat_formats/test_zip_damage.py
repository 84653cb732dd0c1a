"""Every reader of a zip (a Slack export, OpenMemory's export) meets a damaged, encrypted
or oddly compressed zip with one line, never a crash (``curator.core.zip_errors``), and a
Slack zip holding a second export beside its own is refused, not merged or dropped."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curator.chat_formats import ChatImport
from curator.pipeline.import_knowledge import import_knowledge
from curator.store.db import Store
from curator.store.importer import import_file
from tests.chat_formats.exports import episodes, slack_files
from tests.memtools.test_readers import OPENMEMORY


def _slack_zip(method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, value in slack_files().items():
            archive.writestr(name, json.dumps(value))
    return buffer.getvalue()


def _openmemory_zip(method: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("export/memories.json", json.dumps(OPENMEMORY))
    return buffer.getvalue()


def _read_slack(store: Store, path: Path) -> list[str]:
    return [str(e) for e in import_file(store, path, chat=ChatImport(format="slack")).errors]


def _read_openmemory(store: Store, path: Path) -> list[str]:
    return [str(e) for e in import_knowledge(store, path).errors]


READERS: dict[str, tuple[Callable[[int], bytes], Callable[[Store, Path], list[str]]]] = {
    "slack": (_slack_zip, _read_slack),
    "openmemory": (_openmemory_zip, _read_openmemory),
}
METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]


def _members(data: bytes) -> list[int]:
    """The offsets of the local file headers."""
    found, at = [], data.find(b"PK\x03\x04")
    while at != -1:
        found.append(at)
        at = data.find(b"PK\x03\x04", at + 4)
    return found


def _encrypted(data: bytes) -> bytes:
    """Every member marked encrypted (bit 0 of the flags, local and central headers)."""
    out = bytearray(data)
    for magic, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = out.find(magic)
        while at != -1:
            out[at + flags_at] |= 1
            at = out.find(magic, at + 4)
    return bytes(out)


def _method(data: bytes, method: int) -> bytes:
    """Every member claiming a compression method (local and central headers)."""
    out = bytearray(data)
    for magic, method_at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = out.find(magic)
        while at != -1:
            out[at + method_at : at + method_at + 2] = method.to_bytes(2, "little")
            at = out.find(magic, at + 4)
    return bytes(out)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda d: _encrypted(d), "encrypted"),
        (lambda d: _method(d, 99), "compression method"),
    ],
)
def test_an_encrypted_or_unknown_compression_zip_is_one_line(
    tmp_path: Path, reader: str, damage: Callable[[bytes], bytes], said: str
) -> None:
    make, read = READERS[reader]
    path = tmp_path / "export.zip"
    path.write_bytes(damage(make(zipfile.ZIP_DEFLATED)))
    with Store(tmp_path / "db.sqlite") as store:
        errors = read(store, path)
        assert len(errors) == 1 and "\n" not in errors[0] and said in errors[0], errors
        assert episodes(store) == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    reader=st.sampled_from(sorted(READERS)),
    method=st.sampled_from(METHODS),
    where=st.floats(0.0, 1.0),
    width=st.integers(1, 64),
    seed=st.integers(0, 255),
)
@example(reader="openmemory", method=zipfile.ZIP_DEFLATED, where=0.5, width=32, seed=90)
@example(reader="slack", method=zipfile.ZIP_LZMA, where=0.3, width=40, seed=90)
def test_a_zip_damaged_anywhere_is_read_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    reader: str,
    method: int,
    where: float,
    width: int,
    seed: int,
) -> None:
    """Bytes changed anywhere in the zip (headers, compressed data, the directory), under
    every compression method: the reader imports or reports each problem in one line."""
    make, read = READERS[reader]
    data = bytearray(make(method))
    start = int(where * (len(data) - 1))
    for offset in range(start, min(len(data), start + width)):
        data[offset] ^= (seed + offset) % 255 + 1
    folder = tmp_path_factory.mktemp("zip")
    path = folder / "export.zip"
    path.write_bytes(bytes(data))
    with Store(folder / "db.sqlite") as store:
        for error in read(store, path):
            assert error and "\n" not in error


@pytest.mark.parametrize(
    ("prefixes", "extra", "said"),
    [
        (("export1/", "export2/"), {}, "the zip holds 2 exports ('export1/users.json'"),
        (("", "other/"), {}, "the zip holds 2 exports ('users.json', 'other/users.json')"),
        (("a/",), {"b/general/2024-05-01.json": []}, "'b/general/2024-05-01.json' is outside"),
        ((), {"conversations.json": []}, "a zip without a Slack export's users.json"),
    ],
)
def test_a_zip_that_is_not_one_slack_export_is_refused_in_one_line(
    tmp_path: Path, prefixes: tuple[str, ...], extra: dict[str, object], said: str
) -> None:
    """A second export (beside, or inside the first's folder), a file outside the
    export's folder, another program's zip: refused whole, never merged or dropped."""
    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for prefix in prefixes:
            for name, value in slack_files().items():
                archive.writestr(prefix + name, json.dumps(value))
        for name, value in extra.items():
            archive.writestr(name, json.dumps(value))
    with Store(tmp_path / "db.sqlite") as store:
        (error,) = _read_slack(store, path)
        assert said in error and "\n" not in error, error
        assert episodes(store) == []


@pytest.mark.parametrize("start", [b"PK\x03\x04", b"PK\x05\x06"])
def test_a_damaged_zip_is_recognised_as_a_zip_and_refused_in_one_line(
    tmp_path: Path, start: bytes
) -> None:
    """Without --format: a file that starts like a zip is one, damaged or not, and is
    refused as such, never read line by line as text."""
    path = tmp_path / "export.zip"
    path.write_bytes(start + bytes(range(256)) * 8)
    with Store(tmp_path / "db.sqlite") as store:
        report = import_file(store, path, chat=ChatImport())
        (error,) = [str(e) for e in report.errors]
        assert error.startswith(f"{path}: not a readable slack export: not a readable zip (")
        knowledge = _read_openmemory(store, path)
        assert len(knowledge) == 1 and "an unreadable zip" in knowledge[0], knowledge


@pytest.mark.parametrize(
    ("names", "said"),
    [
        (["a/memories.json", "b/memories.json"], "a zip with 2 files named memories.json"),
        (["memories.json/", "x/memories.json"], None),  # the folder entry is no file
    ],
)
def test_openmemory_reads_the_one_memories_json_of_its_zip(
    tmp_path: Path, names: list[str], said: str | None
) -> None:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            if name.endswith("/"):
                archive.writestr(zipfile.ZipInfo(name), b"")
            else:
                archive.writestr(name, json.dumps(OPENMEMORY))
    with Store(tmp_path / "db.sqlite") as store:
        errors = _read_openmemory(store, path)
    if said is None:
        assert all("memories.json" not in e for e in errors), errors
    else:
        assert len(errors) == 1 and said in errors[0], errors

"""Dataclass methods compiled by an earlier run build the very class a fresh compile does.

The command line hands :mod:`dataclasses` an ``exec`` that keeps the compiled methods in
the user cache (:mod:`curator.core.kept_code`). A class built from kept code must behave
as one built from freshly compiled code, for any mix of fields and options; a kept file
from elsewhere is never used; and a program that imports ``curator`` as a library keeps
its :mod:`dataclasses` as it was.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.core import derived_cache, kept_code

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hooked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The hook installed on an empty cache folder, taken off again afterwards."""
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(kept_code, "_TABLE", None)
    monkeypatch.setattr(derived_cache, "_SECRETS", {})
    kept_code.install("test")
    yield tmp_path
    if hasattr(dataclasses, "exec"):
        del dataclasses.exec


def _table() -> derived_cache.KeptTable[str, Any]:
    """The hook's table (installed by the fixture)."""
    table = kept_code._TABLE
    assert table is not None
    return table


def _next_run() -> None:
    """As a new process would: forget the table, read the file again on the next class."""
    _table().entries.clear()
    _table().loaded = _table().dirty = False


def _spec(
    names: list[str], defaults: list[int | None], frozen: bool, slots: bool, kw_only: bool
) -> dict[str, Any]:
    fields: list[Any] = []
    for name, default in zip(names, defaults, strict=False):
        if default is None:
            fields.append((name, int))
        else:
            fields.append((name, int, dataclasses.field(default=default)))
    return {"fields": fields, "frozen": frozen, "slots": slots, "kw_only": kw_only}


def _build(spec: dict[str, Any]) -> type:
    fields = [tuple(f) for f in spec["fields"]]
    # defaults must follow non-defaults unless keyword-only: sort the plain ones first
    if not spec["kw_only"]:
        fields.sort(key=lambda f: len(f) == 3)
    return dataclasses.make_dataclass(
        "Record",
        fields,
        frozen=spec["frozen"],
        slots=spec["slots"],
        kw_only=spec["kw_only"],
    )


def _behaviour(cls: type) -> tuple[object, ...]:
    """What a user of the class sees: construction, repr, equality, hashing, writability."""
    fields = dataclasses.fields(cls)
    required = {f.name: i for i, f in enumerate(fields) if f.default is dataclasses.MISSING}
    one = cls(**required)
    try:
        setattr(one, fields[0].name if fields else "x", 99)
        writable = "yes"
    except Exception as exc:  # frozen, slots without that name (3.11 raises TypeError for both)
        writable = type(exc).__name__
    other = cls(**required)
    return (
        repr(other),
        other == cls(**required),
        writable,
        hash(other) if type(other).__hash__ is not None else None,
        [(f.name, f.default, f.kw_only) for f in fields],
    )


names = st.lists(
    st.sampled_from(["a", "b", "c", "d", "e", "f"]), min_size=0, max_size=5, unique=True
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=names,
    defaults=st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=5),
    frozen=st.booleans(),
    slots=st.booleans(),
    kw_only=st.booleans(),
)
def test_a_class_from_kept_code_is_the_class_a_fresh_compile_builds(
    hooked: Path,
    names: list[str],
    defaults: list[int | None],
    frozen: bool,
    slots: bool,
    kw_only: bool,
) -> None:
    spec = _spec(names, defaults, frozen, slots, kw_only)
    _table().entries.clear()
    first = _build(spec)  # compiled now, and kept
    assert _table().entries, "nothing went through the hook"
    kept_code.save()
    _next_run()  # read back, signed
    second = _build(spec)
    assert _table().loaded and not _table().dirty  # nothing compiled
    for name in ("__init__", "__repr__", "__eq__"):
        fresh, kept = getattr(first, name), getattr(second, name)
        assert fresh.__code__.co_code == kept.__code__.co_code
    assert _behaviour(first) == _behaviour(second)


def test_the_next_run_reads_its_code_and_compiles_nothing(hooked: Path) -> None:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0

    kept_code.save()
    path = hooked / "dataclass-code-test.bin"
    assert path.exists()
    sources = set(_table().entries)
    _next_run()
    _table().load()
    assert set(_table().entries) == sources
    compiled: list[str] = []
    real = compile

    def counting(source: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(source)
        return real(source, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("builtins.compile", counting)

        @dataclasses.dataclass(frozen=True)
        class Point:  # type: ignore[no-redef]
            x: int
            y: int = 0

    assert compiled == [] and not _table().dirty
    assert (
        Point(1) == Point(1, 0)
        and repr(Point(2))
        == "test_the_next_run_reads_its_code_and_compiles_nothing.<locals>.Point(x=2, y=0)"
    )


def test_a_file_of_another_python_or_damaged_is_not_used(
    hooked: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    kept_code.save()
    path = hooked / "dataclass-code-test.bin"
    with monkeypatch.context() as other_python:
        other_python.setattr(_table(), "key", lambda: b"cpython-999-\x00\x00\r\n")
        _table().entries.clear()
        _table().load()
        assert _table().entries == {}  # another bytecode version: another key
    _table().load()
    assert _table().entries  # this one's: read
    _table().entries.clear()
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0x01
    path.write_bytes(bytes(raw))
    _table().load()
    assert _table().entries == {}  # the signature no longer matches


def _probe(code: str, cache: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), CURATOR_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_only_the_command_line_installs_the_hook(tmp_path: Path) -> None:
    library = "import dataclasses, curator; curator.Curator; print(hasattr(dataclasses, 'exec'))"
    assert _probe(library, tmp_path) == "False"
    command = (
        "import dataclasses, curator.cli; curator.cli.build_parser(modules=('review',)); "
        "print(hasattr(dataclasses, 'exec'))"
    )
    assert _probe(command, tmp_path) == "True"
    assert (tmp_path / "dataclass-code-review.bin").exists()  # written at exit, per verb

"""A model that passed the trial load is not loaded in a child again until it, or the
llama.cpp that loaded it, changes (curator.llm.model_check_cache).

Whether a child ran is seen through a fault injection: once the first trial has passed,
the child is replaced by one that always refuses (the real child passes the demo model),
so a validation that still passes took the kept verdict, and one that fails tried again.
"""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curator.core import derived_cache
from curator.llm import model_check_cache, model_trial
from curator.llm.model_file import ModelFileError
from curator.llm.model_trial import validate_model_file

pytestmark = pytest.mark.llm

ARCH_KEY = b"general.architecture"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of its own: the run's shared one holds other tests' verdicts."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("CURATOR_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def fresh_copies_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy made a moment ago is remembered too (the settling time is what the ctime
    test below checks the other way round)."""
    monkeypatch.setattr(model_check_cache, "SETTLE_S", 0.0)


def refusing_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: every later trial load refuses the file."""
    command = [sys.executable, "-c", "import sys; sys.exit(3)"]
    monkeypatch.setattr(
        model_trial, "child_check_command", lambda path: (command, dict(os.environ))
    )


def remembered(model: Path) -> None:
    """The precondition of a test that a change makes the file tried again: it was kept
    (skipped where it never is: on a file system that does not stamp mapped writes, or
    another account's file)."""
    status = os.stat(model)
    if not model_check_cache._stamping_file_system(status.st_dev):
        pytest.skip("the test folder's file system does not stamp mapped writes")
    if os.geteuid() not in (0, status.st_uid):
        pytest.skip("a read lease needs the file's owner: another account's file is never kept")
    assert model_check_cache.passed_before(model.resolve()) is not None


@pytest.fixture
def kept_demo(demo_model: Path) -> dict[str, object]:
    """The demo model validated once and kept; what its trial load learned."""
    info = validate_model_file(demo_model)
    remembered(demo_model)
    return dict(info.metadata["llama.cpp"])


def copy_of(demo_model: Path, tmp_path: Path, name: str = "m.gguf") -> Path:
    target = tmp_path / name
    shutil.copyfile(demo_model, target)
    return target


def architecture_at(data: bytes | bytearray | mmap.mmap) -> int:
    """Where the value of general.architecture ("llama") starts: after the key, its
    value type (u32) and the string's length (u64)."""
    at = data.find(ARCH_KEY) + len(ARCH_KEY) + 4 + 8
    assert data[at : at + 5] == b"llama"
    return at


def refused_copy(demo_model: Path, target: Path) -> Path:
    """A copy whose header parses but whose architecture llama.cpp refuses ("xlama")."""
    data = bytearray(demo_model.read_bytes())
    at = architecture_at(data)
    data[at : at + 1] = b"x"
    target.write_bytes(bytes(data))
    return target


def test_a_file_that_passed_is_not_tried_again(
    demo_model: Path, kept_demo: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    refusing_child(monkeypatch)
    again = validate_model_file(demo_model)
    assert again.metadata["llama.cpp"] == kept_demo
    assert again.metadata["llama.cpp"]["n_layer"] == 30


def test_a_file_changed_in_place_with_its_old_times_is_tried_again(
    demo_model: Path, tmp_path: Path, fresh_copies_count: None
) -> None:
    """Same size, same modification time (set back): the status-change time moved, and
    llama.cpp is asked again, and refuses."""
    model = copy_of(demo_model, tmp_path)
    validate_model_file(model)
    remembered(model)
    before = os.stat(model)
    with model.open("r+b") as handle:
        data = handle.read()
        handle.seek(architecture_at(data))
        handle.write(b"x")  # "llama" -> "xlama"
    os.utime(model, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(model)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(ModelFileError, match="xlama"):
        validate_model_file(model)


def test_a_file_replaced_by_another_is_tried_again(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_copies_count: None
) -> None:
    model = copy_of(demo_model, tmp_path)
    validate_model_file(model)
    remembered(model)
    os.replace(copy_of(demo_model, tmp_path, "other.gguf"), model)  # same bytes, new file
    refusing_child(monkeypatch)
    with pytest.raises(ModelFileError, match="cannot load it"):
        validate_model_file(model)


def test_a_file_changed_moments_ago_is_not_remembered(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """File times move in clock ticks: a file written just before its trial could be
    written again within the same tick, unseen, so its pass is not kept."""
    model = copy_of(demo_model, tmp_path)
    validate_model_file(model)
    refusing_child(monkeypatch)
    with pytest.raises(ModelFileError, match="cannot load it"):
        validate_model_file(model)


def test_another_llama_cpp_tries_again(
    demo_model: Path, kept_demo: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    build = model_check_cache._llama_build()
    monkeypatch.setattr(model_check_cache, "_llama_build", lambda: [*build, "another build"])
    refusing_child(monkeypatch)
    with pytest.raises(ModelFileError, match="cannot load it"):
        validate_model_file(demo_model)


def test_a_refused_file_is_never_remembered(demo_model: Path, tmp_path: Path) -> None:
    model = refused_copy(demo_model, tmp_path / "m.gguf")
    for _ in range(2):
        with pytest.raises(ModelFileError, match="xlama"):
            validate_model_file(model)
    assert not list(Path(os.environ["CURATOR_CACHE_DIR"]).glob("model-check-*"))


def test_the_kept_verdict_is_the_childs_own_report(
    demo_model: Path, own_cache: Path, kept_demo: dict[str, object]
) -> None:
    assert len(list(own_cache.glob("model-check-*"))) == 1
    assert model_check_cache.passed_before(demo_model.resolve()) == kept_demo


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    damage=st.one_of(
        st.binary(max_size=300),
        st.tuples(st.integers(0, 400), st.binary(min_size=1, max_size=8)),
    )
)
def test_a_forged_or_damaged_verdict_is_never_taken(
    demo_model: Path,
    own_cache: Path,
    kept_demo: dict[str, object],
    damage: bytes | tuple[int, bytes],
) -> None:
    """Whatever the kept file holds other than what this account's run signed, the file
    is tried again: a verdict nobody earned would let a crashing model into the window."""
    (kept,) = own_cache.glob("model-check-*")
    original = kept.read_bytes()
    try:
        if isinstance(damage, bytes):
            kept.write_bytes(damage)  # a file made by hand
        else:
            at, junk = damage
            at %= len(original)
            changed = original[:at] + junk + original[at + len(junk) :]
            if changed == original:
                return
            kept.write_bytes(changed)  # a file damaged in place
        assert model_check_cache.passed_before(demo_model.resolve()) is None
    finally:
        kept.write_bytes(original)
    assert model_check_cache.passed_before(demo_model.resolve()) is not None


def test_without_a_cache_folder_every_load_is_tried(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv(derived_cache.CACHE_ENV, str(blocked))
    validate_model_file(demo_model)
    refusing_child(monkeypatch)
    with pytest.raises(ModelFileError, match="cannot load it"):
        validate_model_file(demo_model)


def test_a_file_mapped_writable_is_never_remembered(
    demo_model: Path, tmp_path: Path, fresh_copies_count: None
) -> None:
    """A page written through a writable shared mapping moves no file time until the
    kernel writes it back: while such a mapping exists, a pass is not kept."""
    model = copy_of(demo_model, tmp_path)
    with model.open("r+b") as handle, mmap.mmap(handle.fileno(), 0) as mapped:
        at = architecture_at(mapped)
        mapped[at : at + 1] = b"l"  # the page written once: later writes fault no more
        validate_model_file(model)  # the file is still good
        before = os.stat(model)
        mapped[at : at + 1] = b"x"  # "llama" -> "xlama"
        after = os.stat(model)
        assert (after.st_mtime_ns, after.st_ctime_ns) == (before.st_mtime_ns, before.st_ctime_ns)
        with pytest.raises(ModelFileError, match="xlama"):
            validate_model_file(model)


def test_a_name_pointed_elsewhere_during_the_trial_is_not_believed(
    demo_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_copies_count: None
) -> None:
    """The folder holding a refused file is swapped for one holding a good file while the
    child loads, and back (no file time moves): the child loads the file that was opened
    and stamped, not whatever the name leads to meanwhile."""
    bad_dir, good_dir = tmp_path / "models", tmp_path / "elsewhere"
    bad_dir.mkdir()
    good_dir.mkdir()
    model = refused_copy(demo_model, bad_dir / "m.gguf")
    shutil.copyfile(demo_model, good_dir / "m.gguf")
    real_run = subprocess.run

    def swapping_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """Fault injection: the swap an attacker times to the trial."""
        os.rename(bad_dir, tmp_path / "aside")
        os.rename(good_dir, bad_dir)
        try:
            return real_run(*args, **kwargs)
        finally:
            os.rename(bad_dir, good_dir)
            os.rename(tmp_path / "aside", bad_dir)

    monkeypatch.setattr(model_trial.subprocess, "run", swapping_run)
    with pytest.raises(ModelFileError, match="xlama"):
        validate_model_file(model)
    monkeypatch.setattr(model_trial.subprocess, "run", real_run)
    with pytest.raises(ModelFileError, match="xlama"):
        validate_model_file(model)


def test_another_llama_library_folder_tries_again(
    demo_model: Path, kept_demo: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMA_CPP_LIB_PATH", str(tmp_path))
    refusing_child(monkeypatch)
    with pytest.raises(ModelFileError, match="cannot load it"):
        validate_model_file(demo_model)


def test_a_library_rewritten_with_its_old_size_and_times_changes_the_build(
    tmp_path: Path,
) -> None:
    library = tmp_path / "libllama.so"
    library.write_bytes(b"\x7fELF" + bytes(100))
    before = model_check_cache._folder_stamps(tmp_path)
    old = os.stat(library)
    with library.open("r+b") as handle:
        handle.write(b"junk")
    os.utime(library, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert model_check_cache._folder_stamps(tmp_path) != before


SHM = Path("/dev/shm")


@pytest.mark.skipif(
    not SHM.is_dir() or not os.access(SHM, os.W_OK), reason="no /dev/shm to write to"
)
def test_a_file_on_tmpfs_is_never_remembered(
    demo_model: Path, tmp_path: Path, fresh_copies_count: None
) -> None:
    """On tmpfs a page read through a shared mapping can then be written without any file
    time moving, even after the mapping is gone: a pass there is never kept."""
    folder = SHM / f"curator-test-{os.getpid()}-{tmp_path.name}"
    folder.mkdir()
    try:
        model = copy_of(demo_model, folder)
        if model_check_cache._stamping_file_system(os.stat(model).st_dev):
            pytest.skip("/dev/shm is not tmpfs here")
        validate_model_file(model)
        assert model_check_cache.passed_before(model.resolve()) is None
        with model.open("r+b") as handle, mmap.mmap(handle.fileno(), 0) as mapped:
            at = architecture_at(mapped)
            assert mapped[at : at + 1] == b"l"  # read first: the page is mapped
            mapped[at : at + 1] = b"x"
        with pytest.raises(ModelFileError, match="xlama"):
            validate_model_file(model)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_file_systems_of_the_test_folder_and_of_proc_are_told_apart(tmp_path: Path) -> None:
    """/proc is never a file system whose files are kept; the checkout's usually is."""
    assert not model_check_cache._stamping_file_system(os.stat("/proc/self").st_dev)


LEASE_BROKEN = r"""
import fcntl, os, subprocess, sys, time
from curator.llm import model_check_cache

path = sys.argv[1]
real = fcntl.fcntl


def leasing(fd, cmd, arg=0):
    done = real(fd, cmd, arg)
    if cmd == fcntl.F_SETLEASE and arg == fcntl.F_RDLCK:
        # fault injection: another process opens the file for writing while the lease is held
        subprocess.run([sys.executable, "-c",
                        "import os, sys\n"
                        "try:\n os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK))\n"
                        "except OSError:\n pass", path])
        time.sleep(0.3)  # the lease break's signal arrives meanwhile
    return done


fcntl.fcntl = leasing
fd = os.open(path, os.O_RDONLY)
print("writers:", not model_check_cache._no_writers(fd))
print("alive")
"""


def test_a_writer_breaking_the_lease_does_not_end_the_process(tmp_path: Path) -> None:
    """A lease broken while held signals its holder: SIGIO would end the window."""
    target = tmp_path / "m.gguf"
    target.write_bytes(b"GGUF" + bytes(64))
    done = subprocess.run(
        [sys.executable, "-c", LEASE_BROKEN, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(model_trial.__file__).resolve().parents[2])},
    )
    assert done.returncode == 0 and "alive" in done.stdout, (done.returncode, done.stderr)

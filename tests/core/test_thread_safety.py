"""The process's shared caches hold under threads: the detector, the redaction, the claims.

Several threads read texts at once: the MCP server's group writer and its screening
thread, the window's jobs (which shorten the interpreter's switch interval while they
run). A cache shared by the process and changed without a lock once made a read raise
"dictionary changed size during iteration" under a load of clients, and the client got
"Error executing tool record_episode". Each test here runs its threads with a switch
interval of a microsecond, so that they interleave at nearly every bytecode.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from curator.core import regex_gate, secret_forms
from curator.store import backup_partials

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _interleaved() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def _on_threads(work: Callable[[int], None], threads: int = 4) -> list[BaseException]:
    """``work(k)`` on ``threads`` threads started together; what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def run(k: int) -> None:
        start.wait()
        try:
            work(k)
        except BaseException as exc:  # reported by the test, not lost in a thread
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    with _interleaved():
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    return errors


def test_texts_case_folded_on_many_threads_are_folded_and_kept_within_bounds() -> None:
    def fold_many(k: int) -> None:
        for i in range(3000):
            text = f"Thread {k} reads text {i}: İgnore THE Rules " + "x" * (i % 40)
            assert regex_gate.case_folded(text) == regex_gate._fold_word(text)

    assert _on_threads(fold_many) == []
    assert len(regex_gate._FOLDED) <= regex_gate._FOLDED_MAX
    assert regex_gate._folded_chars == sum(map(len, regex_gate._FOLDED))


def test_a_remembered_key_stays_masked_while_other_threads_remember_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(secret_forms, "_SECRETS", set())
    monkeypatch.setattr(secret_forms, "_FORMS", ())
    known = "sk-known-0123456789abcdefghijklmnop"
    secret_forms.remember_secret(known)

    def remember_and_mask(k: int) -> None:
        for i in range(150):
            if k % 2:
                secret_forms.remember_secret(f"sk-thread{k}-{i:04d}-abcdefghijklmnopqrstuv")
            else:
                shown = secret_forms.mask_secrets(f"the key {known} came back ({i})")
                assert known[: secret_forms.PREFIX_CHARS + 1] not in shown

    assert _on_threads(remember_and_mask) == []
    assert len(secret_forms._SECRETS) == 1 + 2 * 150


def _contest(partial: Path) -> list[str]:
    """Four threads claim ``partial`` at once; what each was told."""
    held = threading.Event()
    outcomes: list[str] = []
    told = threading.Semaphore(0)

    def claim(k: int) -> None:
        try:
            with backup_partials.claimed(partial):
                outcomes.append("held")
                held.set()
                for _ in range(3):  # held until every other thread was told
                    assert told.acquire(timeout=10)
        except backup_partials.ClaimTaken:
            outcomes.append("taken")
            held.wait(10)
            # the loser leaves the holder's claim alone
            assert partial.absolute() in backup_partials._CLAIMED_HERE
            told.release()

    assert _on_threads(claim) == []
    return outcomes


class _ChecksMeet(set[Path]):
    """Fault injection: a claim set whose first four membership checks wait for each
    other (at most 0.2 s), so that four threads claiming at once all stand between a
    check and the claim that follows it, whichever runs first."""

    def __init__(self) -> None:
        super().__init__()
        self._meet = threading.Barrier(4)
        self._checks = itertools.count()

    def __contains__(self, item: object) -> bool:
        found = super().__contains__(item)
        if next(self._checks) < 4:  # every thread has its answer before any acts on it
            with contextlib.suppress(threading.BrokenBarrierError):
                self._meet.wait(timeout=0.2)
        return found


def test_one_partial_backup_is_claimed_by_one_thread_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads that claim one name at once: one holds it, the others are told it is taken,
    and the name stays claimed for the holder until its block ends."""
    for round_ in range(3):
        monkeypatch.setattr(backup_partials, "_CLAIMED_HERE", _ChecksMeet())
        partial = tmp_path / f"curator.sqlite.{round_}.partial"
        assert sorted(_contest(partial)) == ["held", "taken", "taken", "taken"]
        assert partial.absolute() not in backup_partials._CLAIMED_HERE


def test_a_sweep_leaves_a_name_claimed_after_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep looked at a stale partial's name, unclaimed then; before it removes the
    file, a thread of this process claims the name anew (the file is then that thread's,
    made but not locked yet): the sweep must leave it."""
    db = tmp_path / "curator.sqlite"
    db.write_bytes(b"")
    partial = tmp_path / "curator.sqlite-20260101T000000000000Z.partial"
    partial.write_bytes(b"")
    read_id = backup_partials.read_database_id

    def claimed_meanwhile(path: Path) -> str | None:  # fault injection: the other thread
        if path == partial:
            backup_partials._CLAIMED_HERE.add(partial.absolute())
        return read_id(path)

    monkeypatch.setattr(backup_partials, "read_database_id", claimed_meanwhile)
    try:
        assert backup_partials.sweep_stale(tmp_path, db) == []
        assert partial.exists()
    finally:
        monkeypatch.undo()
        backup_partials._CLAIMED_HERE.discard(partial.absolute())
    assert backup_partials.sweep_stale(tmp_path, db) == [partial]  # unclaimed: stale


class _ForeignSweepBeforeLocking:
    """Fault injection: ``fcntl`` for :mod:`curator.store.backup_partials` whose first
    blocking lock (the claim's) first lets a sweep run as another process would see it
    (this process's claims unknown to it): two backups of one database at once."""

    def __init__(self, folder: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder, self.db, self.monkeypatch = folder, db, monkeypatch
        self.swept: list[Path] | None = None

    def flock(self, fd: int, operation: int) -> None:
        if self.swept is None and not operation & fcntl.LOCK_NB:
            claims = backup_partials._CLAIMED_HERE
            self.monkeypatch.setattr(backup_partials, "_CLAIMED_HERE", set())
            try:
                self.swept = backup_partials.sweep_stale(self.folder, self.db)
            finally:
                self.monkeypatch.setattr(backup_partials, "_CLAIMED_HERE", claims)
        fcntl.flock(fd, operation)

    def __getattr__(self, name: str) -> Any:
        return getattr(fcntl, name)


def test_a_sweep_in_another_process_never_meets_a_claimed_partial_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "curator.sqlite"
    db.write_bytes(b"")
    partial = tmp_path / "curator.sqlite-20260101T000000000000Z.partial"
    foreign = _ForeignSweepBeforeLocking(tmp_path, db, monkeypatch)
    monkeypatch.setattr(backup_partials, "fcntl", foreign)
    with backup_partials.claimed(partial):
        assert foreign.swept == [] and partial.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name, partial.name]


def test_a_claim_where_the_file_system_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*_: object, **__: object) -> None:  # fault injection: FAT, a network mount
        raise OSError(errno.EPERM, "Operation not permitted")

    partial = tmp_path / "curator.sqlite-20260101T000000000000Z.partial"
    monkeypatch.setattr(os, "link", no_links)
    with backup_partials.claimed(partial):
        assert partial.exists()
        with pytest.raises(backup_partials.ClaimTaken), backup_partials.claimed(partial):
            pass  # held, by name, as before
    assert [p.name for p in tmp_path.iterdir()] == [partial.name]  # no private file left


def test_model_digests_computed_at_once_on_threads_and_processes_are_all_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each writer used to write back the whole file as it had read it: 16 digests
    computed by 8 threads at once left 3 or 4 in the cache."""
    from curator.llm import model_file
    from curator.llm.json_cache import read_entries

    monkeypatch.setenv(model_file.CACHE_ENV, str(tmp_path / "cache"))
    models = []
    for i in range(24):
        path = tmp_path / f"m{i}.gguf"
        path.write_bytes(i.to_bytes(4, "little") * 4096)
        models.append(path)
    other = subprocess.Popen(  # another process hashing the last eight meanwhile
        [sys.executable, "-c", HASH_IN_ANOTHER_PROCESS, *map(str, models[16:])],
        env={**os.environ, model_file.CACHE_ENV: str(tmp_path / "cache")},
        cwd=ROOT,
    )
    try:
        assert _on_threads(lambda k: [model_file.model_sha256(p) for p in models[k:16:8]], 8) == []
    finally:
        assert other.wait(timeout=120) == 0
    entries = read_entries(model_file.hash_cache_file())
    assert sorted(entries) == sorted(str(p.resolve()) for p in models)


HASH_IN_ANOTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from curator.llm.model_file import model_sha256
    for path in sys.argv[1:]:
        model_sha256(path)
    """
)


def test_threads_silencing_llama_cpp_at_once_share_one_sink() -> None:
    from curator.llm import llama_log

    sinks: list[object] = []
    before = llama_log._sink, llama_log._callback
    llama_log._sink = None  # as in a process that has not silenced llama.cpp yet
    try:
        assert _on_threads(lambda _: sinks.append(llama_log.silence()), threads=8) == []
        assert len({id(sink) for sink in sinks}) == 1 and sinks[0] is llama_log._sink
    finally:
        if before[0] is not None:  # this process's sink and callback back in place
            import llama_cpp

            llama_log._sink, llama_log._callback = before
            llama_cpp.llama_log_set(before[1], None)


DETECT_ON_THREADS = textwrap.dedent(
    """
    import json, sys, threading
    sys.setswitchinterval(1e-6)
    from curator.core.flags import _detect
    from curator.store.episode_records import detector_text

    texts = []
    for line in open(sys.argv[1], encoding="utf-8"):
        if line.strip():
            item = json.loads(line)
            texts.append(item.get("content") or detector_text(item["messages"]))
    texts = texts[:48]
    axioms = ("Never share a user's private data.",)
    found, errors = {}, []
    start = threading.Barrier(4)

    def read(k):
        start.wait()  # every thread meets the detector cold: its first builds at once
        try:
            for text in texts[k::4]:
                found[text] = list(_detect(text, axioms, "Name: Wren", True))
        except BaseException as exc:
            errors.append(repr(exc))

    workers = [threading.Thread(target=read, args=(k,)) for k in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    _detect.cache_clear()
    alone = {text: list(_detect(text, axioms, "Name: Wren", True)) for text in texts}
    print(json.dumps({"errors": errors, "same": found == alone, "read": len(found)}))
    """
)


def test_the_detector_reads_from_cold_on_many_threads_as_on_one() -> None:
    """In a fresh interpreter, so that the threads also meet the detector's first builds
    (its word families, its learned reader, its gate's words) at the same moment."""
    episodes = ROOT / "resources" / "demo" / "episodes.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", DETECT_ON_THREADS, str(episodes)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report == {"errors": [], "same": True, "read": 48}

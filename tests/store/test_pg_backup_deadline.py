"""``pg_dump`` and ``pg_restore`` against a server that stops answering are given up.

The server is reached through a loopback proxy that forwards every byte until it is told
to stall: from then on, a new connection gets a set number of the server's bytes and then
nothing, while both sockets stay open (a frozen server or a proxy that keeps the
connection but forwards nothing; the kernel would still answer keepalive probes). The
answer margin is shortened for the test (it is a minute in use).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from curator.errors import CuratorError
from curator.store import pg_connection
from curator.store.db import Store
from curator.store.pg_backup import backups_of, database_id, restore_pg_backup, take_pg_backup
from tests.store.test_copy import digests, fill

pytestmark = pytest.mark.skipif(
    shutil.which("pg_dump") is None or shutil.which("pg_restore") is None,
    reason="pg_dump and pg_restore are not installed",
)


#: The answers of a connection that :attr:`StallingProxy.delay_s` holds back.
DELAYED_ANSWERS = 6


class StallingProxy:
    """A TCP proxy to ``target``. Once :meth:`stall` was called, a new connection whose
    startup message names ``marker`` (any, without one) stops after ``server_bytes`` of
    the server's bytes or ``client_bytes`` of the client's: from then on nothing passes
    either way, and both sockets stay open."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.rule: tuple[int | None, int | None, bytes] | None = None
        self.client_after = b""  # stall once a client chunk with these bytes has passed
        self.delay_s = 0.0  # before each of the first answers of a new connection
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(
        self, *, server_bytes: int | None = None, client_bytes: int | None = None, marker: str = ""
    ) -> None:
        self.rule = (server_bytes, client_bytes, marker.encode())

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            stalled = threading.Event()
            server_limit, client_limit, marker = self.rule or (None, None, b"")
            if self.rule is None:
                marker = b"\0never\0"  # no rule yet: never stalls
            for args in (
                (server, client, server_limit, b"", stalled, self.delay_s, b""),
                (client, server, client_limit, marker, stalled, 0.0, self.client_after),
            ):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    @staticmethod
    def _pump(
        source: socket.socket,
        sink: socket.socket,
        limit: int | None,
        marker: bytes,
        stalled: threading.Event,
        delay_s: float,
        after: bytes,
    ) -> None:
        sent = 0
        delayed = 0 if delay_s else DELAYED_ANSWERS
        head = b""  # the client's first bytes, while the marker is looked for
        with contextlib.suppress(OSError):
            data = source.recv(65536)
            while not stalled.is_set():
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                if marker:  # SSL request first, then the startup message with the name
                    head += data
                    if marker in head:
                        marker = b""
                    elif len(head) > 4096:  # not the connection named: never stalls
                        marker, limit, stalled = b"", None, threading.Event()
                if not marker and limit is not None and sent + len(data) > limit:
                    sink.sendall(data[: max(0, limit - sent)])
                    stalled.set()  # both directions stop; the sockets stay open
                    return
                if delayed < DELAYED_ANSWERS:
                    time.sleep(delay_s)
                    delayed += 1
                sink.sendall(data)
                sent += len(data)
                if not marker and after and after in data:
                    stalled.set()  # it passed; nothing more either way
                    return
                data = source.recv(65536)

    def close(self) -> None:
        """Ends every connection (a shutdown wakes the pumps blocked on them)."""
        for sock in [self.listener, *self.sockets]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{self.port}"))


@pytest.fixture
def proxy(pg_url: str) -> Iterator[StallingProxy]:
    parts = urlsplit(pg_url)
    opened = StallingProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def _short_margin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pg_connection, "ANSWER_MARGIN_S", 1.0)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


# 0: the server never answers the connection; 2,000: it stops in the middle of the
# dump's catalogue reads (an empty database's dump reads about 50 KB of them).
@pytest.mark.parametrize("server_bytes", [0, 2_000])
def test_a_backup_from_a_server_that_stops_answering_is_given_up(
    pg_url: str, proxy: StallingProxy, tmp_path: Path, server_bytes: int
) -> None:
    store = Store(proxy.url(pg_url), busy_timeout_s=0.5)  # silent for 1.5 s: given up
    try:
        folder = tmp_path / "backups"
        proxy.stall(server_bytes=server_bytes)
        with pytest.raises(CuratorError) as raised:
            take_pg_backup(store, folder)
        message = str(raised.value)
        assert message.startswith("pg_dump of ") and "\n" not in message
        assert "sent no answer for 1.5 s" in message and "given up" in message
        assert not folder.exists()  # no backup, no partial file, not the folder it made
    finally:
        store.close()


def test_a_slow_server_that_keeps_answering_is_waited_for(
    pg_url: str, proxy: StallingProxy, tmp_path: Path
) -> None:
    """The server's first answers reach each tool late (0.4 s each, longer than the
    deadline in all): the tools move, so neither is given up, however long the whole."""
    store = Store(pg_url, busy_timeout_s=0.5)
    try:
        fill(store, random.Random(5), at_least=1)
        before = digests(store)
    finally:
        store.close()
    folder = tmp_path / "backups"
    through = Store(proxy.url(pg_url), busy_timeout_s=0.5)  # silent for 1.5 s: given up
    try:
        proxy.delay_s = 0.4
        started = time.monotonic()
        backup = take_pg_backup(through, folder).path
        assert time.monotonic() - started > DELAYED_ANSWERS * 0.4 > 1.5  # the premise: by sleeps
        restore_pg_backup(through, backup)
    finally:
        through.close()
    store = Store(pg_url)
    try:
        assert digests(store) == before
    finally:
        store.close()


def test_a_tool_that_hangs_with_a_child_is_given_up_at_once(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pg_dump (here a stand-in script: a fault no real one can be made to show) that
    starts a child and waits without a byte: the deadline applies, and the kill reaches
    the child, whose open pipes would otherwise hold the command."""
    marker = tmp_path / "child"
    body = f"sleep 600 &\necho $! > {marker}\nwait\necho never\n"
    monkeypatch.setenv("PATH", _stand_in_pg_dump(tmp_path / "bin", body)["PATH"])
    store = Store(pg_url, busy_timeout_s=0.5)
    try:
        with pytest.raises(CuratorError, match=r"sent no answer for 1\.5 s"):
            take_pg_backup(store, tmp_path / "backups")
        assert not (tmp_path / "backups").exists()  # nor the folder it made
    finally:
        store.close()
    assert not _running(int(marker.read_text()))  # the kill reached the stand-in's child


def test_a_restore_into_a_server_that_stops_answering_changes_nothing(
    pg_url: str, proxy: StallingProxy, tmp_path: Path
) -> None:
    folder = tmp_path / "backups"
    store = Store(pg_url, busy_timeout_s=0.5)
    try:
        fill(store, random.Random(3), at_least=1)
        backup = take_pg_backup(store, folder).path
        store.execute("INSERT INTO setting (key, value) VALUES ('after', '1')")
        before = digests(store)
        own = database_id(store)
    finally:
        store.close()
    through = Store(proxy.url(pg_url), busy_timeout_s=0.5)
    # pg_restore's connection (its application name) stalls in the middle of the
    # restore's statements; the safety backup and the lock watch pass.
    proxy.stall(client_bytes=3_000, marker="curator-restore-")
    try:
        with pytest.raises(CuratorError) as raised:
            restore_pg_backup(through, backup)
    finally:
        through.close()
        proxy.close()  # the server sees the stalled connection end: it rolls back
    message = str(raised.value)
    assert message.startswith("pg_restore of ") and "sent no answer for 1.5 s" in message
    assert "nothing changed" in message and "\n" not in message
    store = Store(pg_url)
    try:
        assert digests(store) == before  # one transaction, never committed
        assert len(backups_of(own, folder)) == 2  # the backup and the safety backup
    finally:
        store.close()


def test_a_restore_silent_after_its_commit_says_it_may_be_applied(
    pg_url: str, proxy: StallingProxy, tmp_path: Path
) -> None:
    """pg_restore's COMMIT reaches the server, its answer never comes back: the restore
    may well be applied, so the message must not say that nothing changed."""
    folder = tmp_path / "backups"
    store = Store(pg_url, busy_timeout_s=0.5)
    try:
        fill(store, random.Random(6), at_least=1)
        backup = take_pg_backup(store, folder).path
        restored = digests(store)
        store.execute("INSERT INTO setting (key, value) VALUES ('after', '1')")
    finally:
        store.close()
    through = Store(proxy.url(pg_url), busy_timeout_s=0.5)
    proxy.client_after = b"COMMIT"
    proxy.stall(marker="curator-restore-")
    try:
        with pytest.raises(CuratorError) as raised:
            restore_pg_backup(through, backup)
    finally:
        through.close()
        proxy.close()
    message = str(raised.value)
    assert "may have been applied" in message and "nothing changed" not in message
    assert "\n" not in message
    store = Store(pg_url)
    try:
        assert digests(store) == restored  # the server did commit it
    finally:
        store.close()


def _running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _stand_in_pg_dump(folder: Path, body: str) -> dict[str, str]:
    """A PATH whose pg_dump is a script (a fault no real one can be made to show)."""
    folder.mkdir()
    fake = folder / "pg_dump"
    fake.write_text("#!/bin/sh\n" + body)
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}:{os.environ['PATH']}"}


def test_a_message_that_is_not_utf8_is_still_one_sentence(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _stand_in_pg_dump(tmp_path / "bin", "printf 'pg_dump: error: caf\\351\\n' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", env["PATH"])
    store = Store(pg_url)
    try:
        with pytest.raises(CuratorError, match="pg_dump: error: caf\ufffd") as raised:
            take_pg_backup(store, tmp_path / "backups")
        assert "\n" not in str(raised.value)
    finally:
        store.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_backup_ended_by_a_signal_leaves_no_tool_and_no_partial_file(
    pg_url: str, tmp_path: Path, sig: signal.Signals
) -> None:
    """The tool runs in a session of its own (so that its kill reaches its children); a
    signal that ends the command must end it too, and the partial file must go."""
    marker = tmp_path / "started"
    body = (
        'for a in "$@"; do case "$a" in --file=*) echo part > "${a#--file=}";; esac; done\n'
        f"echo $$ > {marker}\nsleep 600\n"
    )
    env = _stand_in_pg_dump(tmp_path / "bin", body)
    folder = tmp_path / "backups"
    command = [sys.executable, "-m", "curator", "--db", pg_url, "backup", "--dir", str(folder)]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text().strip():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        tool = int(marker.read_text())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert f"{sig.name}: pg_dump of" in err
    assert not folder.exists()  # no partial file, not the folder it made
    with pytest.raises(ProcessLookupError):
        os.kill(tool, 0)  # the stand-in is gone (and its sleep with it)

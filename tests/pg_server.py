"""A real PostgreSQL server for the tests: initdb into a temporary folder, one per session.

The server listens on a free loopback port and on a Unix socket in its own folder, with
``trust`` authentication (nothing outside this machine can reach it), and is stopped at
the end of the session. PostgreSQL refuses to run as root, so where the tests run as root
the server runs as ``nobody`` (its folder owned by that user). Without the binaries
(``initdb``, ``pg_ctl``, ``postgres``) the PostgreSQL tests are skipped with the reason;
``.ci/run`` installs Debian's ``postgresql`` package so they run there.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = "curator_template"
"""A database migrated once per session; each test gets a copy (CREATE DATABASE ...
TEMPLATE), which takes a few milliseconds instead of running every migration again."""


def find_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres (PATH first, then Debian's)."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server; ``url(name)`` names one of its databases."""

    bin_dir: Path
    folder: Path
    port: int
    as_user: list[str]
    counter: int = 0

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        """One statement on the maintenance database, outside a transaction."""
        from curator.store import pg_driver

        psycopg = pg_driver.load()  # a module that imported curator.cli held it back
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # our own literal text

    def admin_in(self, database: str, sql: str) -> None:
        """One statement in ``database`` (committed)."""
        from curator.store import pg_driver

        psycopg = pg_driver.load()
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # our own literal text

    def tables(self, database: str) -> list[str]:
        from curator.store import pg_driver

        psycopg = pg_driver.load()
        with psycopg.connect(self.url(database)) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def fresh_database(self, template: str = TEMPLATE) -> str:
        """A new database copied from ``template``; returns its name."""
        self.counter += 1
        name = f"t{os.getpid()}_{self.counter}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def drop(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def pg_ctl(self, *args: str) -> None:
        _run([*self.as_user, str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), *args])


def _run(command: list[str]) -> None:
    """Run a server tool; a failure says what the tool printed."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({done.returncode}): "
            f"{done.stderr.strip() or done.stdout.strip()}"
        )


def _run_as(folder: Path) -> list[str]:
    """The command prefix that runs the server as an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return []
    shutil.chown(folder, "nobody", "nogroup")
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _start_on_a_free_port(server: PostgresServer, attempts: int = 3) -> None:
    """Start the server on a free port, choosing another when the chosen one was taken
    between choosing and binding (by another test worker's server, say)."""
    for attempt in range(attempts):
        options = (
            f"-h 127.0.0.1 -p {server.port} -k {server.folder} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        log = server.folder / "server.log"
        try:
            server.pg_ctl("start", "-w", "-l", str(log), "-o", options)
            return
        except RuntimeError as exc:
            said = log.read_text(errors="replace") if log.exists() else ""
            if "already in use" not in said or attempt == attempts - 1:
                raise RuntimeError(f"{exc}\n{said[-2000:]}") from exc
            server.port = _free_port()


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    """Start a throwaway server and stop it (and remove its folder) afterwards."""
    bin_dir = find_binaries()
    if bin_dir is None:
        raise FileNotFoundError("initdb, pg_ctl and postgres were not found")
    # A folder of its own, readable by the server's user (pytest's folders are root's).
    folder = Path(tempfile.mkdtemp(prefix="curator-pg-"))
    os.chmod(folder, 0o755)
    as_user = _run_as(folder)
    server = PostgresServer(bin_dir, folder, _free_port(), as_user)
    try:
        _run(
            [
                *as_user,
                str(bin_dir / "initdb"),
                "-D",
                str(folder / "data"),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        )
        _start_on_a_free_port(server)
        try:
            server.admin(f'CREATE DATABASE "{TEMPLATE}"')
            yield server
        finally:
            server.pg_ctl("stop", "-m", "fast", "-w")
    finally:
        shutil.rmtree(folder, ignore_errors=True)

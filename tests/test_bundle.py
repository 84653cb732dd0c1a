"""The desktop build: built the way `make dist` builds it, then run as a user would.

One build per run (about a minute of CPU), started with the run into its shared temporary
folder (``tests/bundle_build.py``); every test runs the
frozen program, never this checkout's Python, in an environment with its own HOME and
XDG folders, so nothing of the user's is read or written.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from curator import __version__
from curator.llm.model_file import DEMO_FILE, DEMO_PACKAGE
from tests import bundle_build

ROOT = Path(__file__).resolve().parent.parent
INSTALLER = ROOT / "packaging" / "desktop_install.py"
APP_ID = "io.github.memorycurator"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
WINDOW_SECONDS = 5
QT_WARNING = re.compile(r"(?i)warn|error|critical|fatal|traceback|qt\.\w|QObject|QWidget")

pytestmark = pytest.mark.slow


class Built:
    """The output of packaging/build_dist.py in a temporary folder."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tree = out / f"memory-curator-{__version__}"
        self.bundle = self.tree / "lib" / "memory-curator"
        self.launcher = self.tree / "bin" / "curator"
        (self.tarball,) = out.glob("memory-curator-*.tar.gz")


@pytest.fixture(scope="module")
def built(desktop_build: Path) -> Built:
    """The build started with the run (``tests/bundle_build.py``), once it has ended; it
    is removed when the run ends (``bundle_build.remove``)."""
    status, log = bundle_build.wait(desktop_build)
    assert status == 0, log[-6000:]
    print(f"build_dist.py:\n{log}")  # reported (pytest -s / -rP), never asserted
    return Built(desktop_build / "out")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user with nothing: own HOME and XDG folders, a UTF-8 locale, no model settings."""
    home = tmp_path / "home"
    values = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": "/usr/bin:/bin",
        "LC_ALL": "C.UTF-8",
    }
    for value in values.values():
        if value.startswith(str(home)):
            Path(value).mkdir(parents=True, exist_ok=True)
    return values


def run(built: Built, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(built.launcher), *args],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, f"{done.args}: {done.returncode}\n{done.stderr[-3000:]}"
    return done


def test_version(built: Built, env: dict[str, str]) -> None:
    assert ok(run(built, env, "--version")).stdout.strip() == f"curator {__version__}"


def test_every_verb_is_in_the_bundle(built: Built, env: dict[str, str]) -> None:
    """Each verb's module is imported by name only when that verb runs, which the
    freezer's import scan cannot follow: every one must be in the bundle all the same."""
    from curator.cli import VERBS

    for name in VERBS:
        done = run(built, env, name, "--help")
        assert done.returncode == 0, f"{name}: {done.stderr[-1500:]}"
        assert "usage: curator " + name in done.stdout, name


def test_the_bundle_serves_mcp_to_the_sdks_client(
    built: Built, env: dict[str, str], tmp_path: Path
) -> None:
    """``--help`` imports a verb's parser only; the MCP server needs the SDK and what it
    validates and speaks HTTP with (pydantic, httpx2, uvicorn's protocols) at run time:
    an agent spawning the bundle, or connecting to it over HTTP, gets a working server."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.types import Implementation

    db = tmp_path / "memory.sqlite"
    ok(run(built, env, "--db", str(db), "demo"))
    stdio = StdioServerParameters(
        command=str(built.launcher), args=["--db", str(db), "mcp"], env=env, cwd=env["HOME"]
    )
    http = subprocess.Popen(
        [str(built.launcher), "--db", str(db), "mcp", "--http", "127.0.0.1:0"],
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert http.stderr is not None
        announced = http.stderr.readline()
        found = re.search(r"serving on (http://\S+/mcp)", announced)
        assert found, f"{announced}{http.stderr.read() if http.poll() is not None else ''}"

        async def call(target: Any, name: str) -> tuple[set[str], Any, Any]:
            agent = Implementation(name=name, version="1.0")
            async with Client(target, client_info=agent, read_timeout_seconds=120) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                text = f"Build passed, reported by {name}."
                recorded = await client.call_tool("record_episode", {"text": text})
                status = await client.call_tool("memory_status", {})
                return tools, recorded.structured_content, status.structured_content

        for target, name in ((stdio, "stdio-agent"), (found.group(1), "http-agent")):
            tools, recorded, status = anyio.run(call, target, name)
            assert {"get_knowledge", "record_episode", "memory_status"} <= tools, name
            assert recorded["created"] and recorded["source"] == name
            assert status["pending_classification"] >= 1
    finally:
        http.terminate()
        http.wait(timeout=30)
        if http.stderr is not None:
            http.stderr.close()


def test_the_bundle_opens_a_postgresql_database(
    built: Built, env: dict[str, str], pg_url: str, tmp_path: Path
) -> None:
    """psycopg (and its compiled libpq) is imported by name only for a postgresql://
    database, which the freezer's import scan cannot see: the frozen program must still
    open one, and copy it into a file."""
    done = ok(run(built, env, "--db", pg_url, "stats", "--json"))
    assert json.loads(done.stdout)["episodes"]["total"] == 0
    ok(run(built, env, "copy", pg_url, str(tmp_path / "copy.sqlite")))


def test_demo_classify_stats_with_the_bundled_model(
    built: Built, env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "curator.sqlite")
    demo = json.loads(ok(run(built, env, "--db", db, "demo", "--json")).stdout)
    assert demo["created"] and demo["episodes"] > 0
    # No --model, no $CURATOR_MODEL, no setting: the model inside the bundle is used,
    # after the check in a child process (the frozen executable run with --check-model).
    result = json.loads(
        ok(run(built, env, "--db", db, "classify", "--limit", "2", "--json")).stdout
    )
    assert result["status"] == "done" and result["counts"]["classified"] == 2
    record = json.loads(
        ok(run(built, env, "--db", db, "run", str(result["run_id"]), "--json")).stdout
    )
    assert Path(record["model_path"]) == built.bundle / "_internal" / DEMO_PACKAGE / DEMO_FILE
    stats = json.loads(ok(run(built, env, "--db", db, "stats", "--json")).stdout)
    assert stats["episodes"]["total"] == demo["episodes"]
    assert stats["episodes"]["by_label"]["unlabelled"] == demo["episodes"] - 2


def test_model_check_runs_in_the_frozen_child(
    built: Built, env: dict[str, str], tmp_path: Path
) -> None:
    """A header llama.cpp refuses: the frozen child reports llama.cpp's reason, one line."""
    model = built.bundle / "_internal" / DEMO_PACKAGE / DEMO_FILE
    checked = ok(run(built, env, "--check-model", str(model)))
    assert '"ok": true' in checked.stdout
    data = bytearray(model.read_bytes())
    key = b"general.architecture"
    at = data.index(key) + len(key) + 4 + 8  # value type (u32), string length (u64)
    assert data[at : at + 5] == b"llama"
    data[at : at + 5] = b"xlama"
    alien = tmp_path / "alien.gguf"
    alien.write_bytes(bytes(data))
    db = str(tmp_path / "curator.sqlite")
    ok(run(built, env, "--db", db, "demo"))
    refused = run(built, env, "--db", db, "classify", "--limit", "1", "--model", str(alien))
    assert refused.returncode == 2, refused.stderr[-2000:]
    (line,) = refused.stderr.strip().splitlines()
    assert "llama.cpp cannot load it" in line and "xlama" in line, line


def test_window_runs_offscreen_without_warnings(
    built: Built, env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "curator.sqlite")
    ok(run(built, env, "--db", db, "demo"))
    window = subprocess.Popen(
        [str(built.launcher), "--db", db],
        env={**env, "QT_QPA_PLATFORM": "offscreen"},
        cwd=env["HOME"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(WINDOW_SECONDS * 10):
            if window.poll() is not None:
                break
            time.sleep(0.1)
        still_running = window.poll() is None
    finally:
        window.send_signal(signal.SIGTERM)
        _, stderr = window.communicate(timeout=30)
    assert still_running, f"the window exited with {window.returncode}:\n{stderr[-3000:]}"
    warnings = [line for line in stderr.splitlines() if QT_WARNING.search(line)]
    assert not warnings, "\n".join(warnings)
    # The window got as far as its logging set-up (a log file in the user's state folder).
    assert list(Path(env["XDG_STATE_HOME"]).rglob("curator.log")), stderr[-2000:]


def test_tarball_is_the_prefix_tree(built: Built) -> None:
    top = built.tree.name
    with tarfile.open(built.tarball) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert {m.name.split("/")[0] for m in members.values()} == {top}
    assert all(m.uid == 0 and m.gid == 0 for m in members.values())
    launcher = members[f"{top}/bin/curator"]
    assert launcher.issym() and launcher.linkname == "../lib/memory-curator/curator"
    assert members[f"{top}/lib/memory-curator/curator"].mode & 0o111
    internal = f"{top}/lib/memory-curator/_internal"
    assert f"{internal}/{DEMO_PACKAGE}/{DEMO_FILE}" in members
    assert f"{internal}/llama_cpp/lib/libllama.so" in members
    assert f"{top}/share/applications/{APP_ID}.desktop" in members
    assert f"{top}/share/metainfo/{APP_ID}.metainfo.xml" in members
    for size in ICON_SIZES:
        assert f"{top}/share/icons/hicolor/{size}x{size}/apps/{APP_ID}.png" in members
    assert f"{top}/share/icons/hicolor/scalable/apps/{APP_ID}.svg" in members
    # Qt's GTK theme plugin (and the GTK it would drag in) is left out on purpose.
    assert not [name for name in members if "libqgtk3" in name or "libgtk-3" in name]


def test_icons_have_their_sizes(built: Built) -> None:
    from PySide6.QtGui import QImage

    for size in ICON_SIZES:
        path = built.tree / "share" / "icons" / "hicolor" / f"{size}x{size}" / "apps"
        image = QImage(str(path / f"{APP_ID}.png"))
        assert (image.width(), image.height()) == (size, size)


@pytest.fixture
def installed(built: Built, env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """The tree installed for the test's user with the installer `make install-desktop` runs."""
    prefix = tmp_path / "home" / ".local"
    done = subprocess.run(
        [sys.executable, str(INSTALLER), "install", str(built.tree), "--prefix", str(prefix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    ok(done)
    yield prefix
    removed = subprocess.run(
        [sys.executable, str(INSTALLER), "uninstall", "--prefix", str(prefix)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    ok(removed)
    # The prefix and data folders existed before (the env fixture made them), empty.
    left = sorted(p for p in Path(env["HOME"]).rglob("*") if not p.is_dir())
    assert not [p for p in left if "memorycurator" in p.name or "memory-curator" in str(p)], left


def test_installed_entry_starts_the_bundle(
    installed: Path, env: dict[str, str], built: Built
) -> None:
    entry = Path(env["XDG_DATA_HOME"]) / "applications" / f"{APP_ID}.desktop"
    fields = dict(line.split("=", 1) for line in entry.read_text().splitlines() if "=" in line)
    executable = installed / "lib" / "memory-curator" / "curator"
    assert fields["Exec"] == str(executable)
    for program in (fields["Exec"], str(installed / "bin" / "curator")):
        done = subprocess.run(
            [program, "--version"], env=env, capture_output=True, text=True, check=False
        )
        assert ok(done).stdout.strip() == f"curator {__version__}"
    _validate_desktop_entry(entry)


def test_desktop_entry_validates(built: Built) -> None:
    _validate_desktop_entry(built.tree / "share" / "applications" / f"{APP_ID}.desktop")


def test_metainfo_validates(built: Built) -> None:
    tool = shutil.which("appstreamcli")
    if tool is None:
        pytest.skip("appstreamcli is not installed (apt-get install appstream)")
    metainfo = built.tree / "share" / "metainfo" / f"{APP_ID}.metainfo.xml"
    done = subprocess.run(
        [tool, "validate", "--no-net", "--pedantic", str(metainfo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _validate_desktop_entry(path: Path) -> None:
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed (apt-get install desktop-file-utils)")
    done = subprocess.run([tool, str(path)], capture_output=True, text=True, check=False)
    # It exits 0 on hints too; any output (error, warning or hint) is a finding.
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), (
        done.stdout + done.stderr
    )


def test_no_qt_warning_filter_is_blind() -> None:
    """The pattern the window test relies on matches what Qt prints when something is off."""
    for line in (
        "qt.qpa.plugin: Could not load the Qt platform plugin",
        "QWidget::setMinimumSize: (/QWidget) Negative sizes",
        "2026-01-01 12:00:00 WARNING curator.gui: no log file",
    ):
        assert QT_WARNING.search(line), line
    assert not QT_WARNING.search("2026-01-01 12:00:00 INFO curator.gui: started")


def _spec_excludes() -> list[str]:
    """The module names ``packaging/curator.spec`` leaves out of the bundle."""
    import ast

    tree = ast.parse((ROOT / "packaging" / "curator.spec").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "excludes":
            return [ast.literal_eval(item) for item in node.value.elts]  # type: ignore[attr-defined]
    raise AssertionError("the spec names no excludes")


def _runtime_modules() -> dict[str, str]:
    """Every top-level module of the distributions the application needs at run time (its
    own requirements without extras, and theirs, recursively), with the distribution."""
    from importlib import metadata

    from packaging.requirements import Requirement

    found: dict[str, str] = {}
    seen: set[str] = set()
    todo = ["memory-curator"]
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement of a dependency, not installed
        if key != "memory-curator":
            for file in dist.files or ():
                top = file.parts[0]
                if file.suffix == ".py" or (top.isidentifier() and len(file.parts) > 1):
                    found.setdefault(top.removesuffix(".py"), dist.metadata["Name"])
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def test_the_bundle_leaves_out_nothing_the_application_needs() -> None:
    """A module left out of the bundle must be one no run-time dependency brings: the MCP
    SDK needs pydantic and httpx2, and leaving them out broke ``curator mcp`` in the
    bundle while every verb's ``--help`` still worked. The demo model's package and a
    module's tools (``llama_cpp.server``) are left out on purpose: not run-time imports."""
    needed = _runtime_modules()
    assert {"PySide6", "llama_cpp", "mcp", "pydantic", "sklearn"} <= needed.keys()
    clashes = {
        name: needed[name.split(".")[0]]
        for name in _spec_excludes()
        if "." not in name and name in needed
    }
    assert not clashes, f"left out of the bundle but needed at run time: {clashes}"

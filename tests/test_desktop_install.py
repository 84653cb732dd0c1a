"""`make install-desktop` / `uninstall-desktop`: what goes where, and exactly back out.

The installer only copies files, so these tests give it a small tree of the layout
`make dist` produces (tests/test_bundle.py installs the real one); the user's folders are
temporary ones, found through $XDG_DATA_HOME and --prefix as the Makefile passes them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALLER = ROOT / "packaging" / "desktop_install.py"
APP_ID = "io.github.memorycurator"


def make_tree(folder: Path) -> Path:
    """A tree with the layout of dist/memory-curator-VERSION and a runnable executable."""
    tree = folder / "memory-curator-0.0.0"
    bundle = tree / "lib" / "memory-curator"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "_internal" / "data.bin").write_bytes(b"\0" * 16)
    executable = bundle / "curator"
    executable.write_text("#!/bin/sh\necho curator 0.0.0\n")
    executable.chmod(0o755)
    share = tree / "share"
    (share / "applications").mkdir(parents=True)
    (share / "applications" / f"{APP_ID}.desktop").write_bytes(
        (ROOT / "packaging" / f"{APP_ID}.desktop").read_bytes()
    )
    (share / "metainfo").mkdir()
    (share / "metainfo" / f"{APP_ID}.metainfo.xml").write_text("<component/>\n")
    for size in ("16x16", "256x256"):
        (share / "icons" / "hicolor" / size / "apps").mkdir(parents=True)
        (share / "icons" / "hicolor" / size / "apps" / f"{APP_ID}.png").write_bytes(b"png")
    (share / "icons" / "hicolor" / "scalable" / "apps").mkdir(parents=True)
    (share / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").write_text("<svg/>")
    return tree


class User:
    """A home with some things of its own already in ~/.local."""

    def __init__(self, folder: Path) -> None:
        self.home = folder / "home"
        self.prefix = self.home / ".local"
        self.data = self.home / "xdg-data"  # not the default: proves $XDG_DATA_HOME is used
        (self.data / "applications").mkdir(parents=True)
        (self.data / "applications" / "other.desktop").write_text("[Desktop Entry]\n")
        (self.data / "icons" / "hicolor" / "16x16" / "apps").mkdir(parents=True)
        (self.prefix / "bin").mkdir(parents=True)
        (self.prefix / "bin" / "other-tool").write_text("#!/bin/sh\n")

    def run(self, *args: str, prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HOME": str(self.home), "XDG_DATA_HOME": str(self.data)}
        return subprocess.run(
            [sys.executable, str(INSTALLER), *args, "--prefix", str(prefix or self.prefix)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def snapshot(self) -> dict[str, bytes | str | None]:
        """Every path under home with its content (files), target (links) or None (dirs)."""
        state: dict[str, bytes | str | None] = {}
        for path in sorted(self.home.rglob("*")):
            key = str(path.relative_to(self.home))
            if path.is_symlink():
                state[key] = os.readlink(path)
            elif path.is_file():
                state[key] = path.read_bytes()
            else:
                state[key] = None
        return state


@pytest.fixture
def user(tmp_path: Path) -> User:
    return User(tmp_path)


def test_install_puts_each_part_in_its_place(user: User, tmp_path: Path) -> None:
    tree = make_tree(tmp_path)
    done = user.run("install", str(tree))
    assert done.returncode == 0, done.stderr
    bundle = user.prefix / "lib" / "memory-curator"
    assert (bundle / "_internal" / "data.bin").is_file()
    entry = user.data / "applications" / f"{APP_ID}.desktop"
    lines = entry.read_text().splitlines()
    assert f"Exec={bundle / 'curator'}" in lines and f"TryExec={bundle / 'curator'}" in lines
    assert sum(line.startswith("Exec=") for line in lines) == 1
    assert (user.data / "metainfo" / f"{APP_ID}.metainfo.xml").is_file()
    for size in ("16x16", "256x256"):
        assert (user.data / "icons" / "hicolor" / size / "apps" / f"{APP_ID}.png").is_file()
    assert (user.data / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg").is_file()
    launcher = user.prefix / "bin" / "curator"
    assert launcher.resolve() == (bundle / "curator").resolve()
    ran = subprocess.run([str(launcher)], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "curator 0.0.0"


def test_uninstall_removes_exactly_what_install_added(user: User, tmp_path: Path) -> None:
    before = user.snapshot()
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    assert user.snapshot() != before
    done = user.run("uninstall")
    assert done.returncode == 0, done.stderr
    assert user.snapshot() == before


def test_install_twice_replaces_the_first(user: User, tmp_path: Path) -> None:
    before = user.snapshot()
    tree = make_tree(tmp_path)
    assert user.run("install", str(tree)).returncode == 0
    (tree / "lib" / "memory-curator" / "_internal" / "new.bin").write_bytes(b"new")
    again = user.run("install", str(tree))
    assert again.returncode == 0, again.stderr
    assert (user.prefix / "lib" / "memory-curator" / "_internal" / "new.bin").is_file()
    assert user.run("uninstall").returncode == 0
    assert user.snapshot() == before


def test_a_file_that_is_not_ours_stops_the_install_untouched(user: User, tmp_path: Path) -> None:
    foreign = user.data / "applications" / f"{APP_ID}.desktop"
    foreign.write_text("[Desktop Entry]\nName=someone else's\n")
    before = user.snapshot()
    done = user.run("install", str(make_tree(tmp_path)))
    assert done.returncode == 1
    assert str(foreign) in done.stderr and "not ours" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert user.snapshot() == before


def test_an_existing_curator_on_path_is_left_alone(user: User, tmp_path: Path) -> None:
    theirs = user.prefix / "bin" / "curator"
    theirs.write_text("#!/bin/sh\necho pip's curator\n")
    before = user.snapshot()
    done = user.run("install", str(make_tree(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert theirs.read_text() == "#!/bin/sh\necho pip's curator\n"
    assert "not ours" in done.stderr
    assert user.run("uninstall").returncode == 0
    assert user.snapshot() == before


def test_uninstall_with_nothing_installed_changes_nothing(user: User) -> None:
    before = user.snapshot()
    done = user.run("uninstall")
    assert done.returncode == 0 and "nothing installed" in done.stdout
    assert user.snapshot() == before


def test_make_targets_pass_prefix_and_data_home(user: User) -> None:
    """`make uninstall-desktop` reaches the installer with PREFIX and $XDG_DATA_HOME."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-s", "uninstall-desktop", f"PREFIX={user.prefix}"],
        cwd=ROOT,
        env={**os.environ, "HOME": str(user.home), "XDG_DATA_HOME": str(user.data)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"nothing installed in {user.prefix / 'lib' / 'memory-curator'}" in done.stdout


# -- what is no longer ours, a damaged manifest, a stopped install ----------------------


def _manifest(user: User) -> Path:
    return user.prefix / "lib" / "memory-curator" / "install-manifest.json"


def test_a_file_changed_or_replaced_since_is_left_by_uninstall_and_install(
    user: User, tmp_path: Path
) -> None:
    """The user edited the desktop entry; another tool put its own `curator` in place of
    the launcher: both are theirs now. Uninstall leaves them, a new install refuses."""
    tree = make_tree(tmp_path)
    assert user.run("install", str(tree)).returncode == 0
    entry = user.data / "applications" / f"{APP_ID}.desktop"
    entry.write_text(entry.read_text() + "X-Mine=yes\n")
    launcher = user.prefix / "bin" / "curator"
    launcher.unlink()
    launcher.write_text("#!/bin/sh\necho theirs\n")
    again = user.run("install", str(tree))
    assert again.returncode == 1 and "was changed since it was installed" in again.stderr
    removed = user.run("uninstall")
    assert removed.returncode == 0
    assert "X-Mine=yes" in entry.read_text() and "theirs" in launcher.read_text()
    assert removed.stderr.count("changed or replaced since: left alone") == 2


@pytest.mark.parametrize(
    "files",
    [
        ["/etc/hostname"],
        ["{prefix}/lib/memory-curator/../../../victim.txt"],
        ["{data}/applications/other.desktop"],
        "ab",
        [1],
        None,
    ],
)
def test_a_damaged_manifest_removes_nothing(user: User, tmp_path: Path, files: object) -> None:
    """Only the names an installation can have are removed: a manifest listing another
    file, a path out through '..', or of the wrong shape is refused in one line."""
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    victim = user.home / "victim.txt"
    victim.write_text("mine")
    if isinstance(files, list):
        files = [
            f.format(prefix=user.prefix, data=user.data) if isinstance(f, str) else f for f in files
        ]
    _manifest(user).write_text(json.dumps({"files": files, "dirs": []}))
    before = user.snapshot()
    done = user.run("uninstall")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "nothing was removed" in done.stderr
    assert user.snapshot() == before


def test_an_install_stopped_half_way_is_uninstalled(user: User, tmp_path: Path) -> None:
    """The manifest is written before the first file and after each: whatever landed
    is listed (here: killed after the desktop entry), and uninstall takes it back."""
    before = user.snapshot()
    tree = make_tree(tmp_path)
    assert user.run("install", str(tree)).returncode == 0
    manifest = json.loads(_manifest(user).read_text())
    manifest["files"] = manifest["files"][:1]  # as a kill after the first file leaves it
    (user.prefix / "bin" / "curator").unlink()
    for entry in json.loads(_manifest(user).read_text())["files"][1:]:
        Path(entry["path"]).unlink(missing_ok=True)
    _manifest(user).write_text(json.dumps(manifest))
    assert user.run("uninstall").returncode == 0
    assert user.snapshot() == before
    assert user.run("install", str(tree)).returncode == 0


@pytest.mark.parametrize("name", ["100%u", "back\\slash"])
def test_odd_prefixes_are_written_as_the_desktop_entry_spec_says(
    user: User, tmp_path: Path, name: str
) -> None:
    prefix = tmp_path / name
    done = user.run("install", str(make_tree(tmp_path)), prefix=prefix)
    assert done.returncode == 0, done.stderr
    lines = (user.data / "applications" / f"{APP_ID}.desktop").read_text().splitlines()
    executable = str(prefix / "lib" / "memory-curator" / "curator")
    if "%" in name:
        assert f"Exec={executable.replace('%', '%%')}" in lines
    else:
        assert f"TryExec={executable.replace(chr(92), chr(92) * 2)}" in lines


def test_a_manifest_never_removes_a_folder_the_installation_did_not_make(
    user: User, tmp_path: Path
) -> None:
    """Folders listed by a damaged manifest: the user's own (empty ones too), one reached
    through a link, the prefix's siblings: only folders above an installation's own names
    are removed, and none through a link."""
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    outside = tmp_path / "outside"
    (outside / "photos").mkdir(parents=True)
    (user.prefix / "lnk").symlink_to(outside)
    mine = [user.data / "keyrings", user.prefix / "state"]
    for folder in mine:
        folder.mkdir()
    manifest = json.loads(_manifest(user).read_text())
    manifest["dirs"] += [*map(str, mine), str(user.prefix / "lnk" / "photos")]
    _manifest(user).write_text(json.dumps(manifest))
    assert user.run("uninstall").returncode == 0
    assert all(folder.is_dir() for folder in mine) and (outside / "photos").is_dir()


def test_a_planted_part_file_never_leads_the_install_to_another_file(
    user: User, tmp_path: Path
) -> None:
    thesis = user.home / "thesis.tex"
    thesis.write_text("mine")
    for n in range(3):  # whatever the name: the part file is new and of its own
        link = user.data / "applications" / f".{APP_ID}.desktop.{n:08x}.part"
        link.symlink_to(thesis)
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    assert thesis.read_text() == "mine"
    assert not (user.data / "applications" / f"{APP_ID}.desktop").is_symlink()


def test_an_older_manifest_of_names_only_still_removes_its_launcher(
    user: User, tmp_path: Path
) -> None:
    before = user.snapshot()
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    manifest = json.loads(_manifest(user).read_text())
    manifest["files"] = [entry["path"] for entry in manifest["files"]]  # the older format
    _manifest(user).write_text(json.dumps(manifest))
    assert user.run("uninstall").returncode == 0
    assert user.snapshot() == before


def test_a_bundle_that_is_a_link_is_refused_before_anything_is_removed(
    user: User, tmp_path: Path
) -> None:
    assert user.run("install", str(make_tree(tmp_path))).returncode == 0
    bundle = user.prefix / "lib" / "memory-curator"
    moved = tmp_path / "elsewhere"
    bundle.rename(moved)
    bundle.symlink_to(moved)
    before = user.snapshot()
    done = user.run("uninstall")
    assert done.returncode == 1 and "is a link, not an installation" in done.stderr
    assert user.snapshot() == before

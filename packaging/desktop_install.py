"""Install the desktop build for the current user, or remove exactly what was installed.

Usage::

    python packaging/desktop_install.py install dist/memory-curator-VERSION [--prefix P]
    python packaging/desktop_install.py uninstall [--prefix P]

(``make install-desktop`` / ``make uninstall-desktop``). What goes where, with
``PREFIX`` = ``~/.local`` and ``DATA`` = ``$XDG_DATA_HOME`` (default ``~/.local/share``):

- ``PREFIX/lib/memory-curator/``: the bundle, and ``install-manifest.json`` listing every
  file and folder created outside it;
- ``PREFIX/bin/curator``: a link to the bundle's executable, unless a ``curator`` is already
  there (e.g. from ``pip install --user``), which is left alone;
- ``DATA/applications/io.github.memorycurator.desktop``, with ``Exec`` set to the bundle's
  executable by absolute path (a desktop session's PATH often lacks ``~/.local/bin``);
- ``DATA/icons/hicolor/*/apps/io.github.memorycurator.{png,svg}``;
- ``DATA/metainfo/io.github.memorycurator.metainfo.xml``.

Nothing that exists and is not ours is overwritten: installing stops, before writing
anything, on the first such file. Installing again replaces the previous installation.
Uninstalling removes the listed files, the bundle, and the folders the installation
created if they are empty; the user's data (database, settings, logs) is not touched.
Uses only the standard library, so it runs with any Python 3.11, without the venv.

The manifest is written before the first file and again as each one lands, so an
install stopped any way (``kill -9`` included) can be uninstalled. It keeps each file's
SHA-256 (a launcher: where it points): a file changed since, or replaced by someone
else's, is no longer ours and is left alone, by uninstall and by a new install alike. Only
the names an installation can have are removed, whatever a damaged manifest lists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

APP_ID = "io.github.memorycurator"
BUNDLE_NAME = "memory-curator"
EXECUTABLE = "curator"
MANIFEST = "install-manifest.json"


class InstallError(Exception):
    """A one-line reason the installation cannot proceed."""


def data_home() -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (the XDG base directory default)."""
    value = os.environ.get("XDG_DATA_HOME", "")
    # The spec says a relative value is invalid and must be ignored.
    return Path(value) if os.path.isabs(value) else Path.home() / ".local" / "share"


def default_prefix() -> Path:
    return Path.home() / ".local"


def desktop_string(text: str) -> str:
    """``text`` as a string value of a desktop entry: backslashes written twice (the
    spec's escapes; ``\\s`` would read as a space)."""
    return text.replace("\\", "\\\\")


def desktop_exec_quote(path: Path) -> str:
    """``path`` as one argument of an ``Exec`` key (Desktop Entry spec, "The Exec key"):
    ``%`` doubled (a field code otherwise), quoted where a character needs it."""
    text = str(path).replace("%", "%%")
    if not any(c in text for c in " \t\n\"'\\><~|&;$*?#()`="):
        return text
    quoted = "".join("\\" + c if c in '"`$\\' else c for c in text)
    # The key's value is itself a string with escapes: each backslash is written twice.
    return '"' + desktop_string(quoted) + '"'


def entry_for(source: Path, executable: Path) -> str:
    """The tree's .desktop entry with Exec/TryExec pointing at the installed executable."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.startswith(("Exec=", "TryExec=")):
            continue
        lines.append(line)
        if line.startswith("Type="):
            lines.append(f"TryExec={desktop_string(str(executable))}")
            lines.append(f"Exec={desktop_exec_quote(executable)}")
    return "\n".join(lines) + "\n"


def planned_files(tree: Path, data: Path) -> list[tuple[Path, Path]]:
    """(source in the tree, target) for everything installed under DATA."""
    share = tree / "share"
    plan = [
        (share / folder / name, data / folder / name)
        for folder, name in (
            ("applications", f"{APP_ID}.desktop"),
            ("metainfo", f"{APP_ID}.metainfo.xml"),
        )
    ]
    for icon in sorted((share / "icons").rglob(f"{APP_ID}.*")):
        plan.append((icon, data / icon.relative_to(share)))
    return plan


def make_parents(path: Path, created: list[str]) -> None:
    """mkdir -p, remembering the folders that did not exist (to remove them again)."""
    missing = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
        created.append(str(folder))


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


Entry = dict[str, str]
"""A manifest's file: ``path``, and ``sha256`` (a copy) or ``link`` (the launcher)."""


def is_ours(entry: Entry) -> bool:
    """Whether the file is still what the installation wrote: the same content, or the
    launcher still pointing at the bundle (a file changed or replaced since is the user's
    or another program's). An entry of an older manifest, which kept names only, is
    judged by its name alone."""
    path = Path(entry["path"])
    if "link" in entry:
        return path.is_symlink() and os.readlink(path) == entry["link"]
    if path.is_symlink() or not path.is_file():
        return False
    return "sha256" not in entry or sha256_of(path) == entry["sha256"]


def allowed_names(prefix: Path, data: Path) -> tuple[set[Path], Path]:
    """The names an installation can have outside its bundle (the launcher, the desktop
    entry and metainfo), and the icon folder whose ``APP_ID.*`` files it may have."""
    names = {
        prefix / "bin" / EXECUTABLE,
        data / "applications" / f"{APP_ID}.desktop",
        data / "metainfo" / f"{APP_ID}.metainfo.xml",
    }
    return names, data / "icons"


def read_manifest(bundle: Path, prefix: Path, data: Path) -> dict[str, list[Entry]] | None:
    """The manifest, checked: a damaged one, or one naming anything an installation cannot
    have (another folder, ``..``), is refused in one sentence, and nothing is removed."""
    path = bundle / MANIFEST
    if bundle.is_symlink():
        raise InstallError(f"{bundle} is a link, not an installation; remove it by hand")
    if not path.is_file():
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise InstallError(f"{path}: unreadable ({exc}); remove {bundle} by hand") from exc
    damaged = InstallError(f"{path} is damaged; nothing was removed: remove {bundle} by hand")
    if not isinstance(loaded, dict):
        raise damaged
    files, dirs = loaded.get("files", []), loaded.get("dirs", [])
    if not isinstance(files, list) or not isinstance(dirs, list):
        raise damaged
    names, icons = allowed_names(prefix, data)
    entries: list[Entry] = []
    launcher = prefix / "bin" / EXECUTABLE
    for item in files:
        entry = {"path": item} if isinstance(item, str) else item
        if isinstance(item, str) and Path(item) == launcher:  # an older manifest's launcher
            entry = {"path": item, "link": str(bundle / EXECUTABLE)}
        if not isinstance(entry, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in entry.items()
        ):
            raise damaged
        target = Path(entry.get("path", ""))
        inside = target in names or (
            target.is_relative_to(icons) and target.name.startswith(APP_ID + ".")
        )
        if not target.is_absolute() or ".." in target.parts or not inside:
            raise InstallError(
                f"{path} lists {str(target)[:200]!r}, which no installation has; nothing was "
                f"removed: remove {bundle} by hand"
            )
        entries.append(entry)
    # The folders an installation may have made: those above its own names, up to the
    # prefix and the data folder, through no link (a link's target is someone's place).
    above = {bundle.parent, *(name.parent for name in names)}
    above |= {a for folder in list(above) for a in folder.parents}
    theme = icons / "hicolor"
    above |= {icons, theme}
    folders: list[Entry] = []
    for item in dirs:
        folder = Path(item) if isinstance(item, str) else None
        if folder is None or not folder.is_absolute() or ".." in folder.parts:
            raise damaged
        inside = any(folder == root or folder.is_relative_to(root) for root in (prefix, data))
        icon_folder = folder.parent.parent == theme and folder.name == "apps"
        icon_folder |= folder.parent == theme  # hicolor/48x48, hicolor/scalable
        made = folder in above or icon_folder
        if made and inside and not _through_a_link(folder, (prefix, data)):
            folders.append({"path": str(folder)})
    return {"files": entries, "dirs": folders}


def _through_a_link(folder: Path, roots: tuple[Path, ...]) -> bool:
    """Whether ``folder`` or a folder between it and its root is a symbolic link."""
    for root in roots:
        if folder == root or folder.is_relative_to(root):
            here = folder
            while here != root:
                if here.is_symlink():
                    return True
                here = here.parent
    return False


def write_manifest(bundle: Path, files: list[Entry], dirs: list[str]) -> None:
    """Replace the manifest whole (a reader never sees half of one)."""
    part = bundle / (MANIFEST + ".part")
    part.write_text(json.dumps({"files": files, "dirs": dirs}, indent=1) + "\n", "utf-8")
    part.replace(bundle / MANIFEST)


def install(tree: Path, prefix: Path, data: Path) -> list[str]:
    """Copy the tree's bundle and desktop files into place; returns what was written."""
    if any(c in str(p) for p in (prefix, data) for c in "\n\r"):
        raise InstallError(
            "the prefix or the data folder holds a line break; nothing was installed"
        )
    source_bundle = tree / "lib" / BUNDLE_NAME
    if not (source_bundle / EXECUTABLE).is_file():
        raise InstallError(f"{tree} holds no bundle (run make dist first)")
    bundle = prefix / "lib" / BUNDLE_NAME
    plan = planned_files(tree, data)
    previous = read_manifest(bundle, prefix, data)
    if previous is None and bundle.exists():
        raise InstallError(f"{bundle} exists and was not installed by this script; left alone")
    ours = {e["path"] for e in previous["files"] if is_ours(e)} if previous else set()
    for _, target in plan:
        if (target.exists() or target.is_symlink()) and str(target) not in ours:
            raise InstallError(
                f"{target} exists and is not ours (or was changed since it was installed); "
                "nothing was installed"
            )
    if previous is not None:
        uninstall(prefix, data)

    created: list[str] = []
    files: list[Entry] = []
    make_parents(bundle, created)
    bundle.mkdir()
    write_manifest(bundle, files, created)  # first: a stopped install can be uninstalled
    shutil.copytree(source_bundle, bundle, symlinks=True, dirs_exist_ok=True)
    executable = bundle / EXECUTABLE
    for source, target in plan:
        make_parents(target, created)
        if source.suffix == ".desktop":
            content = entry_for(source, executable).encode("utf-8")
        else:
            content = source.read_bytes()
        # listed first, then put in place whole: stopped any way, the name holds nothing
        # or exactly what the manifest says
        files.append({"path": str(target), "sha256": hashlib.sha256(content).hexdigest()})
        write_manifest(bundle, files, created)
        part = target.with_name(f".{target.name}.{os.urandom(4).hex()}.part")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:  # a new file of its own: never through a link
            handle.write(content)
        part.replace(target)
    launcher = prefix / "bin" / EXECUTABLE
    if launcher.exists() or launcher.is_symlink():
        print(f"note: {launcher} exists and is not ours: no launcher on PATH", file=sys.stderr)
    else:
        make_parents(launcher, created)
        files.append({"path": str(launcher), "link": str(executable)})
        write_manifest(bundle, files, created)
        launcher.symlink_to(executable)
    return [str(bundle), *(e["path"] for e in files)]


def uninstall(prefix: Path, data: Path) -> list[str]:
    """Remove what :func:`install` listed in the manifest and is still as it wrote it;
    returns what was removed. A file changed or replaced since is left, with a note."""
    bundle = prefix / "lib" / BUNDLE_NAME
    manifest = read_manifest(bundle, prefix, data)
    if manifest is None:
        return []
    removed = []
    for entry in manifest["files"]:
        path = Path(entry["path"])
        if not (path.exists() or path.is_symlink()):
            continue
        if not is_ours(entry):
            print(f"note: {path} was changed or replaced since: left alone", file=sys.stderr)
            continue
        path.unlink()
        removed.append(str(path))
    for entry in manifest["files"]:  # what an install stopped before a rename left
        for part in Path(entry["path"]).parent.glob(f".{Path(entry['path']).name}.*.part"):
            if part.is_file() and not part.is_symlink():
                part.unlink()
    shutil.rmtree(bundle)
    removed.append(str(bundle))
    for entry in sorted(manifest["dirs"], key=lambda e: len(e["path"]), reverse=True):
        folder = Path(entry["path"])
        if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
            folder.rmdir()
            removed.append(str(folder))
    return removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("install", help="install the built tree for this user")
    add.add_argument("tree", type=Path, help="the folder make dist built (dist/memory-curator-*)")
    remove = commands.add_parser("uninstall", help="remove what install installed")
    for sub in (add, remove):
        sub.add_argument(
            "--prefix", type=Path, default=default_prefix(), help="bin/ and lib/ go here"
        )
    args = parser.parse_args(argv)
    prefix = args.prefix.expanduser().absolute()
    data = data_home()
    try:
        if args.command == "install":
            written = install(args.tree.absolute(), prefix, data)
            print(f"installed Memory Curator: {written[0]}")
            for name in written[1:]:
                print(f"  {name}")
        else:
            removed = uninstall(prefix, data)
            if not removed:
                print(f"nothing installed in {prefix / 'lib' / BUNDLE_NAME}")
            for name in removed:
                print(f"removed {name}")
    except (InstallError, OSError) as exc:
        print(f"desktop_install: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
"""

from __future__ import annotations

import argparse
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


def desktop_exec_quote(path: Path) -> str:
    """``path`` as one argument of an ``Exec`` key (Desktop Entry spec, "The Exec key")."""
    text = str(path)
    if not any(c in text for c in " \t\n\"'\\><~|&;$*?#()`="):
        return text
    quoted = "".join("\\" + c if c in '"`$\\' else c for c in text)
    # The key's value is itself a string with escapes: each backslash is written twice.
    return '"' + quoted.replace("\\", "\\\\") + '"'


def entry_for(source: Path, executable: Path) -> str:
    """The tree's .desktop entry with Exec/TryExec pointing at the installed executable."""
    lines = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.startswith(("Exec=", "TryExec=")):
            continue
        lines.append(line)
        if line.startswith("Type="):
            lines.append(f"TryExec={executable}")
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


def read_manifest(bundle: Path) -> dict[str, list[str]] | None:
    path = bundle / MANIFEST
    if not path.is_file():
        return None
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InstallError(f"{path}: unreadable ({exc}); remove {bundle} by hand") from exc
    return {"files": list(loaded.get("files", [])), "dirs": list(loaded.get("dirs", []))}


def install(tree: Path, prefix: Path, data: Path) -> list[str]:
    """Copy the tree's bundle and desktop files into place; returns what was written."""
    source_bundle = tree / "lib" / BUNDLE_NAME
    if not (source_bundle / EXECUTABLE).is_file():
        raise InstallError(f"{tree} holds no bundle (run make dist first)")
    bundle = prefix / "lib" / BUNDLE_NAME
    plan = planned_files(tree, data)
    previous = read_manifest(bundle)
    if previous is None and bundle.exists():
        raise InstallError(f"{bundle} exists and was not installed by this script; left alone")
    ours = set(previous["files"]) if previous else set()
    for _, target in plan:
        if (target.exists() or target.is_symlink()) and str(target) not in ours:
            raise InstallError(f"{target} exists and is not ours; nothing was installed")
    if previous is not None:
        uninstall(prefix)

    created: list[str] = []
    files: list[str] = []
    make_parents(bundle, created)
    shutil.copytree(source_bundle, bundle, symlinks=True)
    executable = bundle / EXECUTABLE
    try:
        for source, target in plan:
            make_parents(target, created)
            if source.suffix == ".desktop":
                target.write_text(entry_for(source, executable), encoding="utf-8")
            else:
                shutil.copyfile(source, target)
            files.append(str(target))
        launcher = prefix / "bin" / EXECUTABLE
        if launcher.exists() or launcher.is_symlink():
            print(f"note: {launcher} exists and is not ours: no launcher on PATH", file=sys.stderr)
        else:
            make_parents(launcher, created)
            launcher.symlink_to(executable)
            files.append(str(launcher))
    finally:
        # Also after a failure half-way: uninstall can then remove what was written.
        manifest = {"files": files, "dirs": created}
        (bundle / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return [str(bundle), *files]


def uninstall(prefix: Path) -> list[str]:
    """Remove what :func:`install` listed in the manifest; returns what was removed."""
    bundle = prefix / "lib" / BUNDLE_NAME
    manifest = read_manifest(bundle)
    if manifest is None:
        return []
    removed = []
    for name in manifest["files"]:
        path = Path(name)
        launcher = path.is_symlink() and path.name == EXECUTABLE
        if launcher and Path(os.readlink(path)) != bundle / EXECUTABLE:
            continue  # replaced since by someone else's curator: theirs now
        if path.is_symlink() or path.is_file():
            path.unlink()
            removed.append(name)
    shutil.rmtree(bundle)
    removed.append(str(bundle))
    for name in sorted(manifest["dirs"], key=len, reverse=True):
        folder = Path(name)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            removed.append(name)
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
            removed = uninstall(prefix)
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

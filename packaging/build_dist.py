"""Build the desktop distribution: the PyInstaller bundle laid out as an install prefix.

Usage: ``python packaging/build_dist.py OUT [--work DIR] [--no-tarball]`` (``make dist``
runs it with OUT=dist). The result::

    OUT/memory-curator-VERSION/                  contents go to /usr, /usr/local or ~/.local
        bin/curator                              -> ../lib/memory-curator/curator
        lib/memory-curator/                      the one-folder bundle (curator, _internal/)
        share/applications/io.github.memorycurator.desktop
        share/icons/hicolor/NxN/apps/io.github.memorycurator.png   (16 … 512)
        share/icons/hicolor/scalable/apps/io.github.memorycurator.svg
        share/metainfo/io.github.memorycurator.metainfo.xml
    OUT/memory-curator-VERSION-linux-ARCH.tar.gz  the same folder, owned by root

Why a prefix and not only the bundle: a desktop only finds an application through the
.desktop entry, icons and metainfo in those standard places, so the tarball unpacks into a
prefix as it is (``tar -xzf … --strip-components=1 -C /usr/local``), and
``packaging/desktop_install.py`` (``make install-desktop``) copies it into the user's own.

The PNG icons are rendered from the SVG with Qt at build time, so only the SVG and one
PNG are kept in the repository. Runs in the project's environment (PyInstaller, PySide6).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curator import __version__  # noqa: E402

APP_ID = "io.github.memorycurator"
BUNDLE_NAME = "memory-curator"
EXECUTABLE = "curator"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
PACKAGING = ROOT / "packaging"


def dist_name() -> str:
    return f"{BUNDLE_NAME}-{__version__}"


def tarball_name() -> str:
    return f"{dist_name()}-linux-{platform.machine()}.tar.gz"


def check_release_listed(metainfo: Path) -> None:
    """The newest <release> in the metainfo must be this version: software centres show it."""
    match = re.search(r'<release\s+version="([^"]+)"', metainfo.read_text(encoding="utf-8"))
    if match is None or match.group(1) != __version__:
        found = match.group(1) if match else "none"
        raise SystemExit(
            f"{metainfo.name}: the newest <release> is {found}, but the version is "
            f"{__version__}: add a <release> entry first"
        )


def run_pyinstaller(lib_dir: Path, work: Path) -> None:
    """The one-folder build, straight into ``lib_dir/memory-curator``."""
    command = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(lib_dir),
        "--workpath",
        str(work),
        str(PACKAGING / "curator.spec"),
    ]
    subprocess.run(command, check=True, cwd=ROOT)


def render_icons(hicolor: Path) -> None:
    """PNG icons in the hicolor sizes, drawn from the SVG; the SVG itself as 'scalable'."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    svg = ROOT / "resources" / "icons" / "curator.svg"
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg}: Qt cannot render it")
    for size in ICON_SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        target = hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(target)):  # PNG, from the suffix
            raise SystemExit(f"{target}: could not write the icon")
    scalable = hicolor / "scalable" / "apps" / f"{APP_ID}.svg"
    scalable.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(svg, scalable)


def lay_out(tree: Path, work: Path) -> None:
    """The prefix folder: bundle under lib/, launcher in bin/, desktop files under share/."""
    metainfo = PACKAGING / f"{APP_ID}.metainfo.xml"
    check_release_listed(metainfo)
    if tree.exists():
        shutil.rmtree(tree)
    run_pyinstaller(tree / "lib", work)
    bundle = tree / "lib" / BUNDLE_NAME
    if not (bundle / EXECUTABLE).is_file():
        raise SystemExit(f"{bundle / EXECUTABLE}: PyInstaller produced no executable")
    (tree / "bin").mkdir()
    # Relative, so the prefix can be unpacked anywhere; the bootloader follows the link.
    (tree / "bin" / EXECUTABLE).symlink_to(Path("..") / "lib" / BUNDLE_NAME / EXECUTABLE)
    share = tree / "share"
    (share / "applications").mkdir(parents=True)
    shutil.copyfile(PACKAGING / f"{APP_ID}.desktop", share / "applications" / f"{APP_ID}.desktop")
    (share / "metainfo").mkdir()
    shutil.copyfile(metainfo, share / "metainfo" / metainfo.name)
    render_icons(share / "icons" / "hicolor")


def make_tarball(tree: Path, target: Path) -> None:
    """``tree`` as one top folder, owned by root (it may be unpacked into /usr)."""

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    partial = target.with_name(target.name + ".part")
    # Level 1: measured 5 % larger than level 6 in less than half the time; the model and
    # the compiled libraries, most of the bytes, barely shrink at any level.
    with tarfile.open(partial, "w:gz", compresslevel=1) as archive:
        archive.add(tree, arcname=tree.name, filter=as_root)
    partial.replace(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path, help="output folder (e.g. dist)")
    parser.add_argument(
        "--work", type=Path, help="PyInstaller's work folder (default: build/pyinstaller)"
    )
    parser.add_argument("--no-tarball", action="store_true", help="lay out the folder only")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    work: Path = (args.work or ROOT / "build" / "pyinstaller").resolve()
    out.mkdir(parents=True, exist_ok=True)
    tree = out / dist_name()
    started = time.monotonic()
    lay_out(tree, work)
    built = time.monotonic()
    print(f"bundle: {tree} ({built - started:.0f} s)", flush=True)
    if not args.no_tarball:
        tarball = out / tarball_name()
        make_tarball(tree, tarball)
        size_mb = tarball.stat().st_size / 1e6
        took = time.monotonic() - built
        print(f"tarball: {tarball} ({size_mb:.0f} MB, {took:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The .desktop entry and the AppStream metainfo say what software centres need.

desktop-file-validate and appstreamcli check the format (tests/test_bundle.py runs them on
the built copies when they are installed); these checks are the project's own rules.
"""

from __future__ import annotations

import configparser
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from curator import __version__

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "io.github.memorycurator"
DESKTOP = ROOT / "packaging" / f"{APP_ID}.desktop"
METAINFO = ROOT / "packaging" / f"{APP_ID}.metainfo.xml"
MAIN_CATEGORIES = {
    "AudioVideo",
    "Audio",
    "Video",
    "Development",
    "Education",
    "Game",
    "Graphics",
    "Network",
    "Office",
    "Science",
    "Settings",
    "System",
    "Utility",
}


def desktop_entry() -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(DESKTOP, encoding="utf-8")
    return dict(parser["Desktop Entry"])


def test_desktop_entry_has_one_main_category() -> None:
    categories = [c for c in desktop_entry()["Categories"].split(";") if c]
    assert len(set(categories) & MAIN_CATEGORIES) == 1, categories


def test_desktop_entry_matches_the_application() -> None:
    entry = desktop_entry()
    assert entry["Icon"] == APP_ID  # the icon name the build installs in hicolor
    assert entry["Exec"] == "curator"  # bin/curator of the prefix; the installer rewrites it
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("launchable") == f"{APP_ID}.desktop" == DESKTOP.name
    assert root.findtext("id") == APP_ID
    gui = (ROOT / "curator" / "gui" / "app.py").read_text(encoding="utf-8")
    assert f'setDesktopFileName("{APP_ID}")' in gui  # Wayland matches windows by this name


def test_metainfo_names_this_version_as_the_newest_release() -> None:
    releases = ET.parse(METAINFO).getroot().findall("releases/release")
    assert releases and releases[0].get("version") == __version__
    assert all(release.get("date") for release in releases)


def test_metainfo_has_a_content_rating() -> None:
    rating = ET.parse(METAINFO).getroot().find("content_rating")
    assert rating is not None and rating.get("type", "").startswith("oars-")


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", header[16:24])
    return width, height


def test_screenshots_are_the_repository_ones_at_their_stated_size() -> None:
    shots = ET.parse(METAINFO).getroot().findall("screenshots/screenshot")
    assert shots and shots[0].get("type") == "default"
    named = set()
    for shot in shots:
        assert (shot.findtext("caption") or "").strip()
        image = shot.find("image")
        assert image is not None and image.text
        assert image.text.startswith("https://")  # appstreamcli wants web URLs
        name = image.text.rsplit("/", 1)[1]
        local = ROOT / "docs" / "screenshots" / name
        assert local.is_file(), f"{image.text} names no file in docs/screenshots"
        assert png_size(local) == (int(image.get("width", 0)), int(image.get("height", 0)))
        named.add(name)
    assert named == {p.name for p in (ROOT / "docs" / "screenshots").glob("*.png")}


def test_about_names_the_version_without_distribution_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A frozen build has no installed-distribution metadata; About still names the version.

    The missing metadata is simulated (a double): in this environment the package is
    installed, and only a frozen bundle lacks it.
    """
    from importlib import metadata

    from curator.gui.window.main_window import app_version

    def no_metadata(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", no_metadata)
    assert app_version() == __version__

"""Where the shipped resources (prompts, demo data, icons) live.

The top-level ``resources/`` folder of the source tree is installed inside the package as
``curator/resources`` (see ``pyproject.toml``). A wheel therefore has it next to this
module; a source checkout or an editable install has it one level up, beside ``curator/``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def resource_dir() -> Path:
    """The folder holding ``demo/``, ``prompts/`` and ``icons/``."""
    installed = _PACKAGE_DIR / "resources"
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / "resources"


def resource_path(*parts: str) -> Path:
    """A file below the resources folder, e.g. ``resource_path("demo", "episodes.jsonl")``."""
    return resource_dir().joinpath(*parts)

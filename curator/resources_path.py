"""Where the shipped resources (prompts, demo data, icons) live.

The top-level ``resources/`` folder of the source tree is installed as the package
``curator.resources`` (see ``pyproject.toml``), so the same code finds it in a wheel, an
editable install and a plain checkout.
"""

from __future__ import annotations

from importlib import resources as importlib_resources
from pathlib import Path


def resource_dir() -> Path:
    """The folder holding ``demo/``, ``prompts/`` and ``icons/``."""
    try:
        found = Path(str(importlib_resources.files("curator.resources")))
        if found.is_dir():
            return found
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "resources"


def resource_path(*parts: str) -> Path:
    """A file below the resources folder, e.g. ``resource_path("demo", "episodes.jsonl")``."""
    return resource_dir().joinpath(*parts)

"""Import boundaries: the core stays free of Qt and the database, the backend of Qt.

The check reads the source with ``ast`` (nothing is imported), so it also catches
imports inside functions and ``if TYPE_CHECKING`` blocks.  Add a package to
``FORBIDDEN`` to extend it; packages that do not exist yet are skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

QT = ("PySide6", "shiboken6")

#: package directory (relative to the repository root) -> forbidden module prefixes
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "curator/core": (*QT, "peewee", "curator.store", "curator.gui"),
    "curator/pipeline": QT,
    # A backend knows nothing of the database or the runs that use it (a second backend,
    # e.g. a model server, must not have to reach through them).
    "curator/llm": (*QT, "curator.store", "curator.pipeline", "curator.gui"),
    "curator/store": QT,
    "curator/chat_formats": (*QT, "curator.gui", "curator.pipeline"),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Absolute module names imported by a file, with line numbers.

    Relative imports are resolved against the file's package so that
    ``from ..store import x`` inside ``curator/core`` is caught too.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def _is_forbidden(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _violations(package: str, prefixes: tuple[str, ...]) -> list[str]:
    directory = ROOT / package
    return [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted(directory.rglob("*.py"))
        for line, module in _imports(path)
        if _is_forbidden(module, prefixes)
    ]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_its_import_boundary(package: str) -> None:
    if not (ROOT / package).is_dir():
        pytest.skip(f"{package} does not exist yet")
    assert _violations(package, FORBIDDEN[package]) == []


def test_the_checker_catches_violations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    core = tmp_path / "curator" / "core"
    core.mkdir(parents=True)
    (core / "bad.py").write_text(
        "import os\n"
        "from PySide6.QtCore import QObject\n"
        "def f():\n"
        "    import peewee\n"
        "    from ..store import db\n"
        "    from curator.gui.app import main\n"
        "    import importlib; importlib.import_module('shiboken6')\n",
        encoding="utf-8",
    )
    (core / "good.py").write_text("import difflib\nfrom . import bad\n", encoding="utf-8")
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    found = _violations("curator/core", FORBIDDEN["curator/core"])
    assert all(entry.startswith("curator/core/bad.py:") for entry in found)
    assert sorted(entry.split(" imports ")[1] for entry in found) == [
        "PySide6.QtCore",
        "PySide6.QtCore.QObject",
        "curator.gui.app",
        "curator.gui.app.main",
        "curator.store",
        "curator.store.db",
        "peewee",
        "shiboken6",
    ]

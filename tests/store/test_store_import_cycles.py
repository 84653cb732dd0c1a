"""The store's modules import one another without a circle.

A circle among them was once dodged with imports inside functions, which works until
someone moves one import to the top of its file and the package fails to import
depending on which module is loaded first. The check reads the source with ``ast``
(nothing is imported), so imports inside functions and ``if TYPE_CHECKING`` blocks count
too: a layer that needs a lower one's names at run time must get them from below.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "curator.store"


def _module_name(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _targets(path: Path, root: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports anywhere in its text."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path, root).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            # ``from curator.store import db`` imports the module ``curator.store.db``
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        for name in names:
            # ``import curator.store.db.x`` or ``from curator.store.db import Store``
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def import_graph(root: Path, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the package itself left out)."""
    folder = root.joinpath(*package.split("."))
    paths = {
        _module_name(p, root): p for p in sorted(folder.glob("*.py")) if p.name != "__init__.py"
    }
    known = set(paths)
    return {name: _targets(path, root, known) - {name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import one another, directly or through others
    (strongly connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_store_modules_import_without_a_circle() -> None:
    graph = import_graph(ROOT)
    assert graph.get("curator.store.db")  # the scan sees imports
    assert cycles(graph) == []


def test_the_checker_finds_circles_through_function_imports(tmp_path: Path) -> None:
    store = tmp_path / "curator" / "store"
    store.mkdir(parents=True)
    (store / "__init__.py").write_text("", encoding="utf-8")
    (store / "a.py").write_text("from curator.store.b import thing\n", encoding="utf-8")
    (store / "b.py").write_text("def later():\n    from curator.store import c\n", encoding="utf-8")
    (store / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n",
        encoding="utf-8",
    )
    (store / "d.py").write_text("import curator.store.a\nimport os\n", encoding="utf-8")
    (store / "e.py").write_text("from . import e\n", encoding="utf-8")  # itself: no circle
    graph = import_graph(tmp_path)
    assert graph["curator.store.d"] == {"curator.store.a"}
    assert cycles(graph) == [["curator.store.a", "curator.store.b", "curator.store.c"]]

"""Every module-level container the code changes at run time is changed under a lock,
or is listed here with the reason it needs none.

Several threads run the package's code at once (the MCP server's group writer and its
screening thread, the window's jobs, the log follower). A module-level dictionary changed
on one thread while another iterated it once failed a whole group of ``record_episode``
calls ("dictionary changed size during iteration"). ``test_thread_safety.py`` holds the
caches known then; this test holds the class: it reads every module of ``curator`` and
finds each module-level list, dict, set (or deque, Counter, weak collection) that a
function changes (a mutating method, an item assigned or deleted, ``heapq``/``bisect``
on it) and each module-level name a function rebinds through ``global``, outside a
``with`` on a lock (known by its name: ``_LOCK``, ``_CLAIM_LOCK``, ``one_lock()``). A
new one fails here until it takes a lock or its reason is written below.

What it does not see: state kept on objects (a cache instance's own dictionary; those
hold their own locks, as ``KeptTable`` does) and locks taken with ``acquire()``.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "curator"

_CONTAINERS = frozenset(
    {
        "dict",
        "list",
        "set",
        "defaultdict",
        "OrderedDict",
        "deque",
        "Counter",
        "WeakSet",
        "WeakValueDictionary",
        "WeakKeyDictionary",
    }
)
_MUTATORS = frozenset(
    {
        "add",
        "append",
        "appendleft",
        "clear",
        "difference_update",
        "discard",
        "extend",
        "extendleft",
        "insert",
        "intersection_update",
        "move_to_end",
        "pop",
        "popitem",
        "popleft",
        "remove",
        "reverse",
        "setdefault",
        "sort",
        "symmetric_difference_update",
        "update",
    }
)
_CHANGING_FUNCTIONS = frozenset(
    {"heappush", "heappop", "heapify", "heapreplace", "heappushpop", "insort", "insort_left"}
)

SAFE_WITHOUT_A_LOCK: dict[str, str] = {
    "curator/core/derived_cache.py:_SECRETS": (
        "one item assigned, the same secret from any thread (read back from the one file "
        "that os.link let exist)"
    ),
    "curator/core/derived_cache.py:_STATE": "one item set to False, never back",
    "curator/core/kept_code.py:_TABLE": "installed once at start, before any thread",
    "curator/core/kept_flags.py:_KEY": (
        "a list of one derived key: racing threads derive the same key, and item 0 is read"
    ),
    "curator/core/regex_gate.py:_FOLD_TABLE": (
        "built whole, then bound at once; racing threads build equal tables"
    ),
    "curator/gui/widgets/errors.py:_previous_threading_hooks": (
        "the window's hook, installed and removed on the GUI thread"
    ),
    "curator/llm/llama_log.py:_sink": "bound by _installed, which silence calls under its lock",
    "curator/llm/llama_log.py:_callback": (
        "bound by _installed, which silence calls under its lock"
    ),
    "curator/store/backup_partials.py:_CLAIMED_HERE": (
        "the claim's check and add are under the lock; the owner's discard is one call"
    ),
}


@dataclass(frozen=True)
class Change:
    module: str
    name: str
    line: int
    how: str

    @property
    def key(self) -> str:
        return f"{self.module}:{self.name}"


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp):
        return True
    if isinstance(value, ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in _CONTAINERS
    return False


def _module_containers(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    targets: list[ast.expr]
    value: ast.expr | None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if _is_container(value):
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _is_lock(expr: ast.expr) -> bool:
    text = ast.unparse(expr).lower()
    return "lock" in text or "mutex" in text


def _changes(tree: ast.Module, module: str) -> Iterator[Change]:
    containers = _module_containers(tree)

    def named(expr: ast.expr) -> str | None:
        return expr.id if isinstance(expr, ast.Name) and expr.id in containers else None

    def walk(node: ast.AST, in_function: bool, locked: bool, rebound: set[str]) -> Iterator[Change]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = {n for sub in ast.walk(node) if isinstance(sub, ast.Global) for n in sub.names}
            for child in ast.iter_child_nodes(node):  # a body runs later, without the lock
                yield from walk(child, True, False, inner)
            return
        if isinstance(node, ast.With | ast.AsyncWith):
            held = locked or any(_is_lock(item.context_expr) for item in node.items)
            for statement in node.body:
                yield from walk(statement, in_function, held, rebound)
            return
        if in_function and not locked:
            yield from _found(node, module, named, rebound)
        for child in ast.iter_child_nodes(node):
            yield from walk(child, in_function, locked, rebound)

    yield from walk(tree, False, False, set())


def _found(
    node: ast.AST, module: str, named: Callable[[ast.expr], str | None], rebound: set[str]
) -> Iterator[Change]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Call):
        func = node.func
        name = named(func.value) if isinstance(func, ast.Attribute) else None
        if name is not None and isinstance(func, ast.Attribute) and func.attr in _MUTATORS:
            yield Change(module, name, line, f".{func.attr}()")
        called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        name = named(node.args[0]) if node.args else None
        if name is not None and called in _CHANGING_FUNCTIONS:
            yield Change(module, name, line, f"{called}()")
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign | ast.Delete):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    for target in targets:
        if isinstance(target, ast.Subscript) and (name := named(target.value)) is not None:
            yield Change(module, name, line, "an item assigned or deleted")
        if isinstance(target, ast.Name) and target.id in rebound:
            yield Change(module, target.id, line, "rebound through global")


@functools.cache
def shared_changes() -> tuple[Change, ...]:
    found: list[Change] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        found.extend(_changes(ast.parse(path.read_text(encoding="utf-8")), module))
    return tuple(found)


def test_every_shared_container_changed_at_run_time_is_locked_or_explained() -> None:
    unexplained = [c for c in shared_changes() if c.key not in SAFE_WITHOUT_A_LOCK]
    assert unexplained == [], "\n".join(
        f"{c.module}:{c.line}: {c.name} changed ({c.how}) outside a lock: take a lock, or "
        "write why none is needed in SAFE_WITHOUT_A_LOCK"
        for c in unexplained
    )


def test_every_explanation_still_names_a_change() -> None:
    found = {c.key for c in shared_changes()}
    assert sorted(set(SAFE_WITHOUT_A_LOCK) - found) == []


def test_the_reading_finds_each_kind_of_change() -> None:
    """The finder itself, on a module written for it: each kind found, locked ones not."""
    source = (
        "import heapq, threading\n"
        "_A = {}\n_B: list[int] = []\n_C = set()\n_D = None\n_E = {}\n_LOCK = threading.Lock()\n"
        "def f():\n"
        "    global _D\n"
        "    _A['k'] = 1\n"
        "    _B.append(1)\n"
        "    heapq.heappush(_B, 2)\n"
        "    _C.discard(3)\n"
        "    _D = 4\n"
        "    with _LOCK:\n"
        "        _E['k'] = 1\n"
        "        def later():\n"
        "            _E.clear()\n"
        "    with open('x') as fh:\n"
        "        del _A['k']\n"
        "_A['at import'] = 0\n"
    )
    found = sorted((c.name, c.line) for c in _changes(ast.parse(source), "pkg/m.py"))
    assert found == [
        ("_A", 10),
        ("_A", 20),
        ("_B", 11),
        ("_B", 12),
        ("_C", 13),
        ("_D", 14),
        ("_E", 18),
    ]

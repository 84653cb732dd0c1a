"""A widget connects a lambda only to signals of objects that die with it.

PySide6 drops a connection when its receiver is destroyed only where the slot is a bound
method of a QObject. A lambda (a ``functools.partial``, a nested function) has no receiver:
connected to an object that outlives the widget (the shared operations, the model
worker), it stays, and the next emission calls into the destroyed widget's C++ parts
("Internal C++ object already deleted", raised inside Qt's event loop). It happened once
in a fresh-clone run: Review's commit bar followed the operations' busy state through a
lambda, and a write delivered after an earlier test's pane was gone raised during the next
test's setup.

The static test holds the class: every ``connect`` in ``curator/gui`` whose slot is one of
those, on a signal of an object the connecting code did not make (``self``, an attribute
it assigns a new object to, or a local it makes in the same function), fails here until
it is a bound method or its reason is written below. The runtime test destroys each pane
and then makes the shared objects emit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent

from curator.gui.runtime.services import AppServices
from curator.gui.runtime.worker import LlmWorker
from curator.gui.window.main_window import PANES

ROOT = Path(__file__).resolve().parents[2]
GUI = ROOT / "curator" / "gui"

#: ``path:connect-expression`` -> why the lambda cannot outlive what it calls.
REASONS = {
    "curator/gui/widgets/errors.py:dialog.finished": (
        "it calls the plain Python Dialogs object, which has no C++ part to lose"
    ),
    "curator/gui/window/status_room.py:bar.messageChanged": (
        "the room is a child of the bar (its parent): it is destroyed with it, never before"
    ),
}


def _made(node: ast.AST) -> set[str]:
    """Names (``x``) and ``self`` attributes (``self.x``) assigned a newly made object."""
    made: set[str] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.Assign | ast.AnnAssign) and isinstance(item.value, ast.Call):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            made.update(ast.unparse(t) for t in targets)
    return made


def _free_slot(slot: ast.expr, nested: set[str]) -> bool:
    """A slot that has no receiver for Qt to follow."""
    if isinstance(slot, ast.Lambda):
        return True
    if isinstance(slot, ast.Call) and ast.unparse(slot.func) in ("partial", "functools.partial"):
        return True
    return isinstance(slot, ast.Name) and slot.id in nested


def _functions(tree: ast.Module) -> Iterator[tuple[set[str], ast.FunctionDef]]:
    """Each function with what its class makes (nothing for module-level functions)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield set(), node
        elif isinstance(node, ast.ClassDef):
            owned = {name for name in _made(node) if name.startswith("self.")}
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef):
                    yield owned, item


def unowned_free_connections() -> dict[str, int]:
    """``path:sender`` -> line, for every free slot on a signal of an object not made here."""
    found: dict[str, int] = {}
    for path in sorted(GUI.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for owned, function in _functions(tree):
            nested = {
                n.name
                for n in ast.walk(function)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n is not function
            }
            local = _made(function)
            for call in ast.walk(function):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "connect"
                    and call.args
                    and _free_slot(call.args[0], nested)
                ):
                    continue
                signal = call.func.value
                sender = signal.value if isinstance(signal, ast.Attribute) else signal
                name = ast.unparse(sender)
                if name == "self" or name in local or name in owned:
                    continue
                found[f"{path.relative_to(ROOT)}:{ast.unparse(signal)}"] = call.lineno
    return found


def test_a_lambda_is_connected_only_to_what_dies_with_its_widget() -> None:
    found = unowned_free_connections()
    unexplained = {where: line for where, line in found.items() if where not in REASONS}
    assert not unexplained, (
        "a lambda (partial, nested function) connected to a signal of an object this code "
        "did not make: connect a bound method of the widget instead, so the connection goes "
        f"with it, or write the reason in REASONS: {unexplained}"
    )
    stale = sorted(set(REASONS) - set(found))
    assert not stale, f"REASONS lists connections that are gone: {stale}"


def test_the_static_check_finds_a_lambda_on_a_shared_object(tmp_path: Path) -> None:
    """The check itself: the shape of the fixed fault is found, the owned shapes are not."""
    source = (
        "class Pane:\n"
        "    def __init__(self, services):\n"
        "        self.button = QPushButton()\n"
        "        self.button.clicked.connect(lambda: self.refresh())\n"
        "        dialog = QDialog(self)\n"
        "        dialog.finished.connect(lambda _r: self.refresh())\n"
        "        services.ops.busy_changed.connect(lambda _b: self.refresh())\n"
        "        worker = services.worker\n"
        "        worker.busy_changed.connect(functools.partial(self.set_busy))\n"
    )
    tree = ast.parse(source)
    flagged = []
    for owned, function in _functions(tree):
        local = _made(function)
        for call in ast.walk(function):
            if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "connect":
                sender = ast.unparse(call.func.value.value)  # type: ignore[attr-defined]
                if _free_slot(call.args[0], set()) and not (
                    sender == "self" or sender in local or sender in owned
                ):
                    flagged.append(sender)
    assert flagged == ["services.ops", "worker"]


@pytest.fixture
def worker_services(services: AppServices) -> Iterator[AppServices]:
    services.worker = LlmWorker(services)
    yield services
    services.worker.shutdown()


@pytest.mark.parametrize(("name", "cls"), [(name, cls) for name, _, cls in PANES])
def test_a_destroyed_pane_is_not_reached_by_the_shared_objects(
    qtbot, worker_services: AppServices, name: str, cls: type
) -> None:
    """Shown, destroyed, and then the operations and the worker report busy and idle, as a
    write or a run of the window would: nothing raises in Qt's event loop (pytest-qt fails
    the test on any exception there)."""
    services = worker_services
    pane = cls(services)
    pane.setObjectName(name)
    pane.resize(1400, 900)  # shown as the window shows it (not through qtbot, which
    pane.show()  # would close it again after the test, when it is gone)
    qtbot.waitExposed(pane)
    pane.refresh()
    qtbot.wait(50)  # the first load's reads delivered
    pane.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert services.worker is not None
    for busy in (True, False):
        services.ops.busy_changed.emit(busy)
        services.worker.busy_changed.emit(busy)
    QCoreApplication.processEvents()

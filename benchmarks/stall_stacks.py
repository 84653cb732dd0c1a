"""Where a GUI-thread stall comes from: stacks sampled while the heartbeat is late.

Runs the *window* half of an operation of ``bench_gui_responsiveness.py`` (``import`` of
N lines or ``relabel`` of N episodes and its undo) with a watchdog thread that, whenever
the GUI thread's heartbeat is more than 80 ms late (or the watchdog itself woke late:
some thread held the GIL), records the stack of every thread; ``gc.callbacks`` time every
garbage collection. It prints the longest late episodes with their stacks and the longest
collections. A stack taken after a long GIL hold shows where the holder resumed: an
allocation site next to a long collection means the collector, not the code there.

    python benchmarks/stall_stacks.py relabel 100000
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_gui_responsiveness as bench  # noqa: E402
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

LATE_S = 0.08
state: dict[str, Any] = {"last": time.perf_counter(), "on": False}
late: list[tuple[str, float, list[str]]] = []
collections: list[tuple[float, int, str]] = []
_gc_started = [0.0]


def _stack(frame: FrameType, depth: int = 7) -> str:
    shown = traceback.extract_stack(frame)[-depth:]
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(shown))


def _stacks() -> list[str]:
    me = threading.get_ident()
    return [_stack(f) for t, f in sys._current_frames().items() if t != me]


def _watch() -> None:
    current: list[Any] | None = None
    previous = time.perf_counter()
    while True:
        time.sleep(0.005)
        now = time.perf_counter()
        woke_late, previous = now - previous, now
        if not state["on"]:
            continue
        behind = now - state["last"]
        if woke_late > 0.05:
            late.append((f"watchdog woke {woke_late * 1000:.0f} ms late", behind, _stacks()))
        if behind > LATE_S and current is None:
            current = ["heartbeat late", behind, _stacks()]
            late.append(current)  # type: ignore[arg-type]
        elif behind > LATE_S and current is not None:
            current[1] = behind
        elif behind < 0.02:
            current = None


def _timed(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_started[0] = time.perf_counter()
    elif state["on"]:
        spent = time.perf_counter() - _gc_started[0]
        collections.append((spent, info["generation"], threading.current_thread().name))


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "relabel"
    size = int(argv[1]) if len(argv) > 1 else (60_000 if what == "import" else 100_000)
    original = bench.Stall.measure

    def measure(self: bench.Stall, start: Any, done: Any, timeout_s: float = 900) -> Any:
        beat = QTimer()
        beat.setInterval(2)
        beat.timeout.connect(lambda: state.update(last=time.perf_counter()))
        beat.start()
        state.update(on=True, last=time.perf_counter())
        try:
            return original(self, start, done, timeout_s)
        finally:
            state["on"] = False
            beat.stop()

    bench.Stall.measure = measure  # type: ignore[method-assign]
    # the *direct* halves would show the GUI thread busy for seconds: skip them
    bench.import_file = lambda *_a, **_k: None  # type: ignore[assignment]
    bench.relabel = lambda *_a, **_k: None  # type: ignore[assignment]
    bench.undo_last_relabel = lambda *_a, **_k: None  # type: ignore[assignment]
    gc.callbacks.append(_timed)
    threading.Thread(target=_watch, daemon=True).start()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    with tempfile.TemporaryDirectory() as folder:
        if what == "import":
            print(bench.bench_import(app, Path(folder), size))
        else:
            print(bench.bench_relabel(app, Path(folder), size))
    total = sum(c[0] for c in collections) * 1000
    print(f"-- {len(collections)} garbage collections, {total:.0f} ms; longest:")
    for spent, generation, thread in sorted(collections, reverse=True)[:8]:
        print(f"   {spent * 1000:.0f} ms, generation {generation}, thread {thread}")
    for kind, behind, stacks in sorted(late, key=lambda e: -e[1])[:12]:
        print(f"## {kind}; heartbeat {behind * 1000:.0f} ms late")
        for stack in stacks:
            print("   ", stack)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

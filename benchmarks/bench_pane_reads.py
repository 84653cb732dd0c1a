"""GUI-thread stalls of the Review and Knowledge panes at 300,000 episodes / 10,000 patterns.

Benchmark, not a test: a 10 ms heartbeat on the GUI thread records its longest gap while
each operation runs, once the way the panes did it before (the store call on the GUI
thread, in the same run, as the baseline) and once the way they do it now (background
read or write through ``StoreOps``, result delivered, widgets filled):

- Review: loading a staged run of 400 candidates; one decision key (before: the decision
  written on the GUI thread and the whole run re-listed); an edit's re-match.
- Knowledge: the provenance of a pattern with 20,000 source episodes.

    python benchmarks/bench_pane_reads.py [--quick]

``--quick`` uses a tenth of the sizes. Results are printed, not written.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_episode_table import fill  # noqa: E402
from bench_gui_responsiveness import (  # noqa: E402
    GOAL_MS,
    Stall,
    bench_noise,
    open_window,
    settle,
)
from PySide6.QtWidgets import QApplication  # noqa: E402

from curator.core.scoring import rank_key  # noqa: E402
from curator.gui.knowledge.knowledge_pane import KnowledgePane  # noqa: E402
from curator.gui.review.review_pane import ReviewPane  # noqa: E402
from curator.pipeline import review as review_api  # noqa: E402
from curator.store.db import Store  # noqa: E402
from curator.store.knowledge import pattern_sources  # noqa: E402

Row = tuple[str, float, float, float, float]
"""operation, before ms, now ms, before s, now s"""

WORDS = [
    "memory",
    "agent",
    "reply",
    "thread",
    "kind",
    "tired",
    "build",
    "release",
    "weekend",
    "question",
    "note",
]
RUN_SQL = (
    "INSERT INTO run (kind, status, status_reason, started_at, model_path, model_name, "
    "model_sha256, model_metadata, params, prompts, stats) VALUES ('distill', ?, '', "
    "'2026-01-02T00:00:00.000000+00:00', '', 'bench', '', '{}', '{}', '{}', '{}')"
)


def build(store: Store, episodes: int, patterns: int, sources: int, candidates: int) -> None:
    """Episodes, patterns (pattern 1 with ``sources`` source episodes), a staged run."""
    fill(store, episodes)
    rng = random.Random(5)
    stamp = "2026-01-02T00:00:00.000000+00:00"
    moment = datetime(2026, 1, 2, tzinfo=UTC)
    db = store.db
    with store.write():
        db.execute_sql(RUN_SQL, ("done",))  # run 1: made the patterns
        db.execute_sql(RUN_SQL, ("staged",))  # run 2: waits for review
        rows = []
        for i in range(patterns):
            importance = round(rng.random(), 3)
            text = f"pattern {i}: " + " ".join(rng.choice(WORDS) for _ in range(12))
            rows.append((text, importance, stamp, rank_key(importance, moment), stamp, stamp))
        db.cursor().executemany(
            "INSERT INTO pattern (text, importance, distilled_at, rank_key, category, status, "
            "revision, created_run_id, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'uncategorized', 'active', 1, 1, ?, ?)",
            rows,
        )
        links = [(1, e, 1) for e in range(1, sources + 1)]
        links += [(p, rng.randint(1, episodes), 1) for p in range(2, patterns + 1)]
        db.cursor().executemany(
            "INSERT OR IGNORE INTO pattern_episode (pattern_id, episode_id, run_id) "
            "VALUES (?, ?, ?)",
            links,
        )
        cands = [
            (
                n + 1,
                f"candidate {n}: " + " ".join(rng.choice(WORDS) for _ in range(12)),
                "ADD" if n % 3 else "UPDATE",
                None if n % 3 else rng.randint(1, patterns),
            )
            for n in range(candidates)
        ]
        db.cursor().executemany(
            "INSERT INTO candidate (run_id, ordinal, text, importance, category, "
            "proposed_action, proposed_target_id, proposed_ratio, state, revision) "
            "VALUES (2, ?, ?, 0.5, 'uncategorized', ?, ?, 0.8, 'pending', 1)",
            cands,
        )
        db.cursor().executemany(
            "INSERT OR IGNORE INTO candidate_episode (candidate_id, episode_id) VALUES (?, ?)",
            [(c, rng.randint(1, episodes)) for c in range(1, candidates + 1) for _ in range(5)],
        )


def bench(app: QApplication, tmp: Path, scale: int) -> list[Row]:
    episodes, patterns = 300_000 // scale, 10_000 // scale
    sources, candidates = 20_000 // scale, 400 // scale
    store = Store(tmp / "panes.sqlite")
    build(store, episodes, patterns, sources, candidates)
    window = open_window(store, tmp)
    settle(app, window, 1.0)
    review = window.pane("reviewPane")
    knowledge = window.pane("knowledgePane")
    assert isinstance(review, ReviewPane) and isinstance(knowledge, KnowledgePane)
    stall = Stall()
    rows: list[Row] = []

    window.tabs.setCurrentWidget(review)
    settle(app, window, 0.5)
    direct = stall.measure(lambda: review_api.list_candidates(store, 2), lambda: True)
    now = stall.measure(review.refresh, lambda: review.settled)
    rows.append((f"Review: list a run of {candidates} candidates", *direct[:1], *now[:1],
                 direct[1], now[1]))  # fmt: skip

    ids = [c.id for c in review.candidates()]

    def decide_direct() -> None:  # what a key did before: write, then re-list the run
        review_api.decide(store, ids[-1], "ADD")
        review_api.list_candidates(store, 2)

    direct = stall.measure(decide_direct, lambda: True)
    review._select_row(0)
    now = stall.measure(lambda: review.decide_current("ADD"), lambda: review.settled)
    rows.append(("Review: one decision key", direct[0], now[0], direct[1], now[1]))

    text = "a reworded candidate about replies on a tired weekend"
    direct = stall.measure(lambda: review_api.check_text(store, text), lambda: True)
    dialog = review.edit_current()
    assert dialog is not None
    dialog.text_edit.setPlainText(text)
    now = stall.measure(dialog.rematch, lambda: not dialog.rematching)
    dialog.reject()
    rows.append((f"Review: re-match an edit ({patterns:,} patterns)", direct[0], now[0],
                 direct[1], now[1]))  # fmt: skip

    window.tabs.setCurrentWidget(knowledge)
    settle(app, window, 0.5)
    knowledge.select_patterns([2])
    settle(app, window, 0.5)
    direct = stall.measure(lambda: pattern_sources(store, 1), lambda: True)
    knowledge.provenance.show_pattern(None, "", ())
    now = stall.measure(
        lambda: knowledge.provenance.show_pattern(1, "pattern 0", ()),
        lambda: not knowledge.provenance.loading,
    )
    rows.append((f"Knowledge: provenance of {sources:,} episodes", direct[0], now[0],
                 direct[1], now[1]))  # fmt: skip
    window.close()
    app.processEvents()
    store.close()
    return rows


def _noise(app: QApplication) -> Row:
    """The responsiveness benchmark's control row, in this table's shape."""
    name, idle_ms, busy_ms, _busy_own, idle_s, busy_s = bench_noise(app)
    return (name, idle_ms, busy_ms, idle_s, busy_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    with tempfile.TemporaryDirectory() as folder:
        rows = [_noise(app), *bench(app, Path(folder), 10 if args.quick else 1)]
    print("| operation | before: longest stall | now: longest stall | ratio |")
    print("|---|---|---|---|")
    for name, before_ms, now_ms, _before_s, _now_s in rows:
        ratio = before_ms / now_ms if now_ms else float("inf")
        flag = "" if now_ms <= GOAL_MS else " ⚠"
        print(f"| {name} | {before_ms:,.0f} ms | {now_ms:,.0f} ms{flag} | {ratio:,.1f}× |")
    print(f"\nLoad average: {', '.join(f'{v:.1f}' for v in os.getloadavg())}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

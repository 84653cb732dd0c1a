"""How long the Insights figures take on 100,000 labelled episodes.

Builds a throw-away database with 100,000 episodes that all carry a model label (with its
classify trace step) and a human label, plus 2,000 reviewed candidates, then times
:func:`curator.pipeline.insights.compute_insights` against a baseline measured in the same
run: one plain ``SELECT`` of the same episode and trace columns (what any reader must at
least do). The pane runs the computation on a pool thread; the ratio says how much the
statistics (bootstrap included) add to the bare read.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from curator.pipeline.insights import compute_insights
from curator.store.db import Store

EPISODES = 100_000
CANDIDATES = 2_000
LABELS = ("constitutional", "noise", "uncategorized")
ACTIONS = ("SKIP", "UPDATE", "ADD", "REJECT")


def fill(store: Store) -> None:
    rng = random.Random(3)
    db = store.db
    with store.write():
        db.execute_sql(
            "INSERT INTO run (kind, status, status_reason, started_at, model_path, model_name, "
            "model_sha256, model_metadata, params, prompts, stats) VALUES ('classify', 'done', "
            "'', '2026-01-01T00:00:00.000000+00:00', '', 'bench', '', '{}', '{}', '{}', '{}')"
        )
        db.execute_sql(
            "INSERT INTO run (kind, status, status_reason, started_at, model_path, model_name, "
            "model_sha256, model_metadata, params, prompts, stats) VALUES ('distill', 'staged', "
            "'', '2026-01-02T00:00:00.000000+00:00', '', 'bench', '', '{}', '{}', '{}', '{}')"
        )
        rows = []
        traces = []
        for i in range(EPISODES):
            human = rng.choice(LABELS)
            model = human if rng.random() < 0.7 else rng.choice(LABELS)
            conf = round(rng.uniform(0.34, 1.0), 4)
            stamp = f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00"
            rows.append((f"h{i}", f"episode {i}", stamp, model, conf, human, human))
            traces.append((i + 1, f'{{"label": "{model}", "confidence": {conf}}}', model))
        db.cursor().executemany(
            "INSERT INTO episode (content_hash, text, timestamp, source, metadata, imported_at, "
            "model_label, model_confidence, model_run_id, human_label, label, label_by, "
            "classify_truncated) VALUES (?, ?, ?, '', '{}', '2026-01-01T00:00:00.000000+00:00', "
            "?, ?, 1, ?, ?, 'human', 0)",
            rows,
        )
        db.cursor().executemany(
            "INSERT INTO trace_step (run_id, step, batch, category, episode_id, prompt_name, "
            "prompt_sha256, raw_output, parsed, tokens_in, tokens_out, cached_tokens, seconds, "
            "attempt, error, created_at) VALUES (1, 'classify', 0, '', ?, '', '', '', ?, 0, 0, "
            "0, 0, 1, '', '2026-01-01T00:00:00.000000+00:00')",
            [(eid, parsed) for eid, parsed, _ in traces],
        )
        cands = []
        for i in range(CANDIDATES):
            ratio = rng.random()
            proposed = "SKIP" if ratio >= 0.95 else "UPDATE" if ratio >= 0.7 else "ADD"
            human = proposed if rng.random() < 0.8 else rng.choice(ACTIONS)
            cands.append((i, f"candidate text number {i} " * 3, proposed, ratio, human))
        db.cursor().executemany(
            "INSERT INTO candidate (run_id, ordinal, text, importance, category, "
            "proposed_action, proposed_ratio, action, decided_by, state, revision) VALUES "
            "(2, ?, ?, 0.5, 'uncategorized', ?, ?, ?, 'human', 'reviewed', 1)",
            cands,
        )


def timed(work: object, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.sqlite")
        fill(store)
        baseline = timed(
            lambda: (
                store.execute("SELECT id, human_label, model_label, model_confidence FROM episode"),
                store.execute("SELECT run_id, episode_id, parsed FROM trace_step"),
            )
        )
        full = timed(lambda: compute_insights(store))
        store.close()
    print(f"episodes: {EPISODES:,}, reviewed candidates: {CANDIDATES:,}")
    print(f"baseline (plain read of the same rows): {baseline * 1000:.0f} ms")
    print(f"compute_insights: {full * 1000:.0f} ms ({full / baseline:.1f}x the baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

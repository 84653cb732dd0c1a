"""The reads a commit, its preview and its fingerprint share.

A run's open candidates (those not applied yet, undecided ones included) and the patterns
their decisions target are what :func:`curator.pipeline.commit_preview.plan_commit`
previews and what :func:`run_fingerprint` fingerprints, read by this one function so the
two can never disagree. ``curator review --json`` prints the fingerprint a script passes
to ``curator commit --expect``; it needs only this, not the whole preview and its effect
on the prompt (a ranking of every pattern).
"""

from __future__ import annotations

from curator.errors import CuratorError
from curator.pipeline.fingerprint import decision_keys, fingerprint
from curator.store.db import Store
from curator.store.decay_clock import update_refreshes_decay
from curator.store.engine import in_chunks
from curator.store.models import Candidate, Pattern, Run

__all__ = ["OpenDecisions", "read_open", "run_fingerprint"]

OpenDecisions = tuple[Run, list[Candidate], dict[int, Pattern]]
"""The run, its open candidates in order, and their target patterns by id."""


def read_open(run_id: int) -> OpenDecisions:
    """Read the run's open candidates and their targets; call inside one transaction."""
    run = Run.get_or_none(Run.id == run_id)
    if run is None:
        raise CuratorError(f"there is no run {run_id}")
    open_candidates = list(
        Candidate.select()
        .where((Candidate.run == run_id) & (Candidate.state != "applied"))
        .order_by(Candidate.ordinal)
    )
    target_ids = sorted(
        {t for c in open_candidates if c.action is not None and (t := c.target_id) is not None}
    )
    patterns: dict[int, Pattern] = {}
    for chunk in in_chunks(target_ids):
        for p in Pattern.select().where(Pattern.id.in_(chunk)):
            patterns[p.id] = p
    return run, open_candidates, patterns


def run_fingerprint(store: Store, run_id: int) -> str:
    """The fingerprint :func:`~curator.pipeline.commit_preview.preview_commit` gives the
    run now (the same reads, keys and setting), without building the preview."""
    with store.read():
        run, open_candidates, patterns = read_open(run_id)
        keys = decision_keys(open_candidates, patterns)
        return fingerprint(run.id, keys, refresh_clock=update_refreshes_decay(store))

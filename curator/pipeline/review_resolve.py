"""What a decision resolves to: the action, its target and the revision a commit checks.

A verb (ACCEPT or an action) with an optional target becomes the decision columns of a
candidate: ACCEPT takes the proposal (the re-match of an edited text), a target comes
from the reviewer, the proposal or the re-match, and which of them decides the revision
the commit holds the target to (see :mod:`curator.pipeline.review`, "Stale-target
detection"). Shared by a single decision, accept-all and the undo of an edit.
"""

from __future__ import annotations

from typing import Any

from curator.errors import CuratorError
from curator.pipeline.review_views import TARGETED, quality_gate
from curator.pipeline.stale_adds import newer_matches
from curator.store.models import Candidate, Pattern
from curator.store.settings import Settings

FINAL_ACTIONS = ("SKIP", "UPDATE", "ADD", "REJECT")


def active_pattern(pattern_id: int) -> Pattern:
    pattern = Pattern.get_or_none(Pattern.id == pattern_id)
    if pattern is None or pattern.status != "active":
        state = "does not exist" if pattern is None else f"is {pattern.status}"
        raise CuratorError(f"pattern {pattern_id} {state}; choose an active pattern")
    return pattern


def resolve(
    candidate: Candidate,
    state: dict[str, Any],
    verb: str,
    target_id: int | None,
    settings: Settings,
    *,
    check_newer: bool = True,
) -> None:
    """Set action, target, target_ratio and decision_target_revision in ``state``.

    ``check_newer``: an accepted ADD is checked against the patterns written since
    staging (:mod:`curator.pipeline.stale_adds`); False where the caller checked it."""
    # On use: the dedup engine (numpy) is not needed to list a run.
    from curator.core.dedup import pair_ratio

    final_text: str | None = state["final_text"]
    if final_text is not None:
        p_action = state["rematch_action"] or "ADD"
        p_target = state["rematch_target_id"]
        p_ratio = state["rematch_ratio"]
    else:
        p_action = candidate.proposed_action
        p_target = candidate.proposed_target_id
        p_ratio = candidate.proposed_ratio
    action = p_action if verb == "ACCEPT" else verb
    if action not in FINAL_ACTIONS:
        raise CuratorError(f"candidate {candidate.id} has an unknown proposal {action!r}")
    if verb == "ACCEPT" and action == "ADD" and check_newer:
        text = final_text if final_text is not None else candidate.text
        newer = newer_matches(candidate.run, [text], settings)[0]
        if newer is not None:
            raise CuratorError(
                f"candidate {candidate.id}: {newer.describe()}; SKIP into it, UPDATE it "
                "or ADD it explicitly"
            )
    if verb == "ACCEPT" and target_id is not None:
        raise CuratorError("ACCEPT takes the proposal as is; give SKIP or UPDATE with a target")
    rematch_gone = final_text is not None and p_action in TARGETED and p_target is None
    if rematch_gone and action in TARGETED and target_id is None:
        # A re-match names a pattern always; none left means its commit was undone.
        raise CuratorError(
            f"candidate {candidate.id}: the pattern its edited text matched no longer exists "
            "(the commit that added it was undone); edit the text again to match it anew, "
            "ADD it, REJECT it or choose a pattern"
        )
    state["action"] = action
    if action not in TARGETED:
        if target_id is not None:
            raise CuratorError(f"{action} takes no target pattern")
        state.update(target_id=None, target_ratio=None, decision_target_revision=None)
    else:
        # Where the target comes from decides which revision the commit checks: the
        # staging-time one for the pipeline's proposal, the current one otherwise.
        chosen: int | None
        if target_id is not None:
            chosen, basis = target_id, "reviewer"
        elif p_target is not None:
            chosen, basis = int(p_target), ("rematch" if final_text is not None else "proposal")
        else:
            chosen, basis = candidate.proposed_target_id, "proposal"
        if chosen is None:
            within_run = final_text is None and candidate.target_revision is None
            if action == "UPDATE" and not (verb == "ACCEPT" and within_run):
                gone = "the proposed one no longer exists" if not within_run else "none proposed"
                raise CuratorError(
                    f"candidate {candidate.id}: UPDATE needs a target pattern ({gone}); choose one"
                )
            if action == "SKIP" and final_text is None and candidate.target_revision is not None:
                # Patterns are removed only by undoing the commit that added them: what
                # the proposal called known is in memory nowhere, and a SKIP would lose it.
                raise CuratorError(
                    f"candidate {candidate.id}: the pattern it duplicates no longer exists (the "
                    "commit that added it was undone); ADD it, REJECT it or choose a pattern "
                    "to SKIP into"
                )
            # A duplicate with nothing to link: of an earlier candidate of the same run
            # (not a pattern yet). Nothing is added twice.
            state.update(
                action="SKIP", target_id=None, target_ratio=None, decision_target_revision=None
            )
            return
        pattern = active_pattern(chosen)
        if chosen == p_target and p_ratio is not None:
            ratio = float(p_ratio)
        else:
            ratio = pair_ratio(
                final_text if final_text is not None else candidate.text, pattern.text
            )
        state.update(
            target_id=chosen,
            target_ratio=ratio,
            decision_target_revision=None if basis == "proposal" else pattern.revision,
        )
    if final_text is not None and action in ("ADD", "UPDATE"):
        verdict = quality_gate(settings).check(final_text)
        if not verdict.ok:
            raise CuratorError(
                f"candidate {candidate.id}: the edited text fails the quality gate "
                f"({'; '.join(verdict.reasons)}); it cannot be {action}ed"
            )

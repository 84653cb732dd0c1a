"""The fingerprint of a run's decisions: a commit applies exactly what the reviewer saw.

A commit preview is shown, read, and accepted some seconds later; meanwhile a second
reviewer (``curator decide`` from a shell, another window) may change the decisions.
Committing the run *as it is then* would write decisions nobody was shown. So the preview
carries a fingerprint of everything a commit of the run would write, and
:func:`curator.pipeline.commit.commit_run` (``expect=``) compares it with the state it
reads under the write lock: a decision written between the preview and the commit makes
the commit refuse with nothing written, with :class:`DecisionsChangedError` carrying a
fresh preview to show instead.

What goes in (:class:`DecisionKey`, one per candidate of the run not committed yet,
undecided ones included: deciding one changes what a "reviewed only" commit applies and
whether the run is complete): the candidate's id, its final action, its target and the
revision the commit checks it against, the edited text, the importance, the
keep-the-pattern's-text choice, the flags recorded as seen, and the current revision and
status of the target pattern (an UPDATE merges into the pattern as it is, and the preview
showed its importance). A decision undone and made again the same way gives the same
fingerprint: it is a function of the state, not of its history. Who decided is part of
the state (several reviewers share a run): a preview that showed ana's ADD does not
commit bob's ADD made since, which the audit would record as bob's judgement. The
candidate's revision is not: it counts writes, so an undo and a redo would change it
while the commit writes the same; the revision guards single decisions
(:mod:`curator.pipeline.review_versions`).

The "UPDATE refreshes the decay clock" setting is part of it too: it decides whether an
UPDATE moves the pattern's decay reference, so it changes what the commit writes and what
the preview said the agent would get. A preview taken under one setting is refused under
the other, and the refusal names the setting rather than a decision.

Qt-free, and pure: :func:`decision_keys` and :func:`fingerprint` read nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from curator.errors import ConflictError, CuratorError

if TYPE_CHECKING:
    from curator.pipeline.commit_preview import CommitPreview
    from curator.store.models import Candidate, Pattern

FINGERPRINT_CHARS = 16
"""Hex digits kept (64 bits): short enough to paste after ``--expect``, and a collision
between two states of one run is out of reach."""


@dataclass(frozen=True)
class DecisionKey:
    """What a commit writes for one candidate (its part of the fingerprint)."""

    candidate_id: int
    action: str | None
    target_id: int | None
    basis_revision: int | None
    """The target revision the commit checks (the reviewer's, else the staging one)."""
    text: str | None
    """The reviewer's edited text (None: the candidate's own text, fixed at staging)."""
    importance: float | None
    """The reviewer's importance (None: the scored one, fixed at staging)."""
    keep_pattern_text: bool
    flags_seen: str
    """The flags recorded as seen, as canonical JSON (the commit's summary lists them)."""
    target_revision: int | None
    """The target pattern's revision now (None: no target, or the pattern is gone)."""
    target_status: str | None
    decided_by: str | None = None
    """Who made the decision in force (the reviewer's name; None while undecided)."""

    def describe(self) -> str:
        """The decision in a few words ("ADD", "UPDATE of pattern 4", "undecided")."""
        if self.action is None:
            return "undecided"
        what = self.action
        if self.target_id is not None:
            what += f" of pattern {self.target_id}"
        return what


_FIELDS = tuple(f.name for f in fields(DecisionKey))


def _by_id(key: DecisionKey) -> int:
    return key.candidate_id


def decision_keys(
    candidates: Iterable[Candidate], patterns: Mapping[int, Pattern]
) -> tuple[DecisionKey, ...]:
    """The keys of the run's open candidates; ``patterns`` holds their targets (by id).

    Candidates already committed (``state == "applied"``) are not part of it: a commit
    never writes them again. Sorted by candidate id, so the order of the query is moot.
    """
    keys = []
    for c in candidates:
        if c.state == "applied":
            continue
        target = c.target_id if c.action is not None else None
        pattern = patterns.get(target) if target is not None else None
        basis = c.decision_target_revision
        if basis is None:
            basis = c.target_revision
        keys.append(
            DecisionKey(
                candidate_id=int(c.id),
                action=c.action,
                target_id=int(target) if target is not None else None,
                basis_revision=int(basis) if basis is not None and target is not None else None,
                text=c.final_text,
                importance=float(c.final_importance) if c.final_importance is not None else None,
                keep_pattern_text=bool(c.keep_pattern_text),
                flags_seen=json.dumps(c.flags_seen or [], sort_keys=True),
                target_revision=int(pattern.revision) if pattern is not None else None,
                target_status=str(pattern.status) if pattern is not None else None,
                decided_by=c.decided_by if c.action is not None else None,
            )
        )
    return tuple(sorted(keys, key=_by_id))


def fingerprint(run_id: int, keys: Sequence[DecisionKey], *, refresh_clock: bool = False) -> str:
    """A short hex digest of the run's decision state (equal states, equal fingerprints).

    ``refresh_clock`` is the "UPDATE refreshes the decay clock" setting the commit would
    run under (off by default, as the setting is).
    """
    rows = [[getattr(k, n) for n in _FIELDS] for k in sorted(keys, key=_by_id)]
    # The setting joins the payload only when on: the fingerprints of previews taken with
    # it off (the default) stay those printed before it was covered.
    head: list[object] = [run_id, "refresh"] if refresh_clock else [run_id]
    payload = json.dumps(
        [*head, rows],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def parse_fingerprint(text: str) -> str:
    """A fingerprint as typed after ``--expect`` (case and surrounding blanks ignored)."""
    cleaned = text.strip().lower()
    if len(cleaned) != FINGERPRINT_CHARS or any(ch not in "0123456789abcdef" for ch in cleaned):
        raise CuratorError(
            f"--expect takes the {FINGERPRINT_CHARS}-digit fingerprint a preview printed "
            f"(got {text[:40]!r})"
        )
    return cleaned


def _change(before: DecisionKey | None, after: DecisionKey | None) -> str:
    if before is None:
        assert after is not None  # only keys that differ are described
        return f"candidate {after.candidate_id} is back from an undone commit ({after.describe()})"
    if after is None:
        return f"candidate {before.candidate_id} was committed elsewhere"
    name = f"candidate {after.candidate_id}"
    if (before.action, before.target_id) != (after.action, after.target_id):
        return f"{name} went from {before.describe()} to {after.describe()}"
    if before.text != after.text:
        return f"{name}'s text was edited"
    if before.importance != after.importance:
        return f"{name}'s importance changed"
    if before.keep_pattern_text != after.keep_pattern_text:
        return f"{name}'s choice of wording changed"
    if (before.target_revision, before.target_status) != (
        after.target_revision,
        after.target_status,
    ):
        return f"pattern {after.target_id}, which {name} targets, changed"
    if before.flags_seen != after.flags_seen:
        return f"{name}'s flags seen changed"
    if before.decided_by != after.decided_by:
        return f"{name} was decided again by {after.decided_by}"
    return f"{name} was decided again"


def describe_changes(
    before: Sequence[DecisionKey], after: Sequence[DecisionKey], limit: int = 5
) -> str:
    """What changed between two decision states, as one clause ("candidate 2 went from
    REJECT to ADD and candidate 3 …"); empty when the states are equal."""
    old = {k.candidate_id: k for k in before}
    new = {k.candidate_id: k for k in after}
    changes = [
        _change(old.get(cid), new.get(cid))
        for cid in sorted(old.keys() | new.keys())
        if old.get(cid) != new.get(cid)
    ]
    if not changes:
        return ""
    shown = changes[:limit]
    if len(changes) > limit:
        shown.append(f"{len(changes) - limit} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


class DecisionsChangedError(ConflictError):
    """The run's decisions are not those of the preview the commit was based on.

    Nothing was written. ``preview`` is the run as it is now (read under the same write
    lock as the refusal), for a caller that shows it instead of the stale one.
    """

    exit_code = 1

    def __init__(self, message: str, preview: CommitPreview, expected: str) -> None:
        super().__init__(message)
        self.preview = preview
        self.expected = expected


def refuse_if_changed(preview: CommitPreview, expected: str | None) -> None:
    """Raise :class:`DecisionsChangedError` when ``expected`` is not ``preview``'s."""
    if expected is None or expected == preview.fingerprint:
        return
    run = preview.run_id
    other = not preview.refresh_clock
    if fingerprint(run, preview.decisions, refresh_clock=other) == expected:
        now = "on" if preview.refresh_clock else "off"
        raise DecisionsChangedError(
            f'the setting "UPDATE refreshes the decay clock" is {now} now, not as in the '
            f"preview with fingerprint {expected}, and it changes what an UPDATE does to the "
            f"prompt; nothing was committed: look at the fresh preview (curator commit {run} "
            f"--preview) and commit it with --expect {preview.fingerprint}",
            preview,
            expected,
        )
    raise DecisionsChangedError(
        f"the decisions of run {run} changed since the preview with fingerprint {expected} "
        f"(now {preview.fingerprint}); nothing was committed: look at the fresh preview "
        f"(curator commit {run} --preview) and commit it with --expect {preview.fingerprint}",
        preview,
        expected,
    )

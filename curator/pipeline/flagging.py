"""Flags for staged candidates and stored patterns: the detector fed from the database.

The detector (:mod:`curator.core.flags`) is pure; this module gives it what it checks
against, read when the flags are computed: the *current* identity and axioms, the
sources marked untrusted in Settings, and each text's source episodes. Flags are
computed when shown, never stored in the database, so a changed axiom or trust setting
applies at once (a text's flags read before for the same axioms and identity come from
:mod:`curator.core.kept_flags`, which is keyed by both);
what a reviewer saw when deciding is kept in ``Candidate.flags_seen``. The guard's
judgements made at staging (the model's second opinion, the learned guard; see
:mod:`curator.pipeline.guard`) are the exception: stored on the candidate, they follow
the rule flags wherever flags are shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from curator.core.flag_type import Flag, provenance_flag
from curator.core.kept_flags import detect_kept
from curator.pipeline.guard_flags import stored_flags
from curator.store.db import Store
from curator.store.engine import in_chunks
from curator.store.identity import current_identity
from curator.store.models import CandidateEpisode, Episode, PatternEpisode
from curator.store.settings import untrusted_sources
from curator.store.snapshot import tuples


@dataclass(frozen=True)
class FlagContext:
    """What texts are checked against: the current axioms, identity and untrusted sources."""

    axioms: tuple[str, ...]
    identity_text: str
    untrusted: frozenset[str]

    def flags(self, text: str, sources: Sequence[str] = (), stored: Any = None) -> list[Flag]:
        """The text's flags, plus ``untrusted`` when every source is untrusted, then the
        guard's flags ``stored`` at staging (``Candidate.guard_flags``)."""
        found = detect_kept(text, self.axioms, self.identity_text)
        provenance = provenance_flag(list(sources), self.untrusted)
        if provenance is not None:
            found.append(provenance)
        found.extend(stored_flags(stored))
        return found


def flag_context(store: Store) -> FlagContext:
    identity = current_identity(store)
    return FlagContext(identity.axioms, identity.identity_text, untrusted_sources(store))


def _sources(link: Any, owner: Any, owner_ids: Iterable[int]) -> dict[int, list[str]]:
    """Each owner's linked episodes' ``source`` names (one entry per episode).

    ``link`` is a provenance table (candidate or pattern to episode), ``owner`` its
    foreign key to the candidate or pattern; read in chunks under SQLite's variable limit.
    """
    ids = list(owner_ids)
    result: dict[int, list[str]] = {i: [] for i in ids}
    for chunk in in_chunks(ids):
        query = link.select(owner, Episode.source).join(Episode).where(owner.in_(chunk))
        for owner_id, source in tuples(query):
            result[int(owner_id)].append(str(source or ""))
    return result


def candidate_sources(candidate_ids: Iterable[int]) -> dict[int, list[str]]:
    """Each candidate's source episodes' ``source`` names (one entry per episode)."""
    return _sources(CandidateEpisode, CandidateEpisode.candidate, candidate_ids)


def pattern_sources(pattern_ids: Iterable[int]) -> dict[int, list[str]]:
    """Each pattern's provenance episodes' ``source`` names (one entry per episode)."""
    return _sources(PatternEpisode, PatternEpisode.pattern, pattern_ids)


def seen_record(flags: Sequence[Flag]) -> list[dict[str, str]] | None:
    """What ``Candidate.flags_seen`` keeps of the flags shown at a decision (None: none)."""
    if not flags:
        return None
    return [{"kind": f.kind, "reason": f.reason, "match": f.match} for f in flags]

"""Planning a distillation run: which episodes, in which batches, under which prompt.

The first half of :mod:`curator.pipeline.distill`, with no model call: the episodes not
yet distilled or claimed, packed in time order into batches that leave the extract call
room to answer, and the constant prompt prefix every batch shares. Kept apart so the
running part stays small.

An episode is "already taken" when it has ``distilled_at``, or belongs to a distill run
that is ``staged`` or ``committed`` (through a candidate's sources or the run's
``stats["episode_ids"]``, which lists every episode of every finished batch, including
batches that yielded no candidate). So two staged runs never propose from the same
episodes, and episodes that yielded nothing are not distilled again and again.
Episodes of ``cancelled`` or ``failed`` runs are free again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from curator.errors import CuratorError
from curator.llm.backend import Backend
from curator.llm.prompts import PromptTemplate, numbered
from curator.store.db import Store
from curator.store.identity import Identity
from curator.store.models import Candidate, CandidateEpisode, Episode, Run
from curator.store.snapshot import tuples

MAX_BATCH_EPISODES = 12
"""More episodes per extract call make the small model lose track; tokens bound it too."""

TOKEN_MARGIN = 16
"""Slack for the chat template's special tokens when estimating prompt lengths."""


def claimed_episode_ids() -> set[int]:
    """Episodes that belong to a staged or committed distill run (see the module doc)."""
    runs = Run.select(Run.id, Run.stats).where(
        (Run.kind == "distill") & Run.status.in_(("staged", "committed"))
    )
    claimed: set[int] = set()
    run_ids: list[int] = []
    for run in runs:
        run_ids.append(run.id)
        listed = (run.stats or {}).get("episode_ids") or []
        claimed.update(int(e) for e in listed)
    if run_ids:
        linked = (
            CandidateEpisode.select(CandidateEpisode.episode)
            .join(Candidate)
            .where(Candidate.run.in_(run_ids))
        )
        claimed.update(int(row[0]) for row in tuples(linked))
    return claimed


def distillable_episode_ids(store: Store, category: str, limit: int | None = None) -> list[int]:
    """Episodes labelled ``category`` and not yet distilled or claimed, oldest first."""
    with store.read():
        claimed = claimed_episode_ids()
        query = (
            Episode.select(Episode.id)
            .where((Episode.label == category) & Episode.distilled_at.is_null())
            .order_by(Episode.timestamp, Episode.id)
            .bind(store.db)
        )
        ids = [int(row.id) for row in query if int(row.id) not in claimed]
    return ids if limit is None else ids[: max(0, limit)]


@dataclass
class Batch:
    """A run of episodes of one category that fits one extract call, in time order."""

    index: int
    category: str
    episode_ids: list[int]
    item: str


def format_episode(number: int, episode: Episode) -> str:
    when = episode.timestamp.date().isoformat() if episode.timestamp else "?"
    return f"Episode {number} ({when}, {episode.source or 'log'}):\n{episode.text.strip()}\n"


def pack_batches(
    backend: Backend, category: str, ids: list[int], item_budget: int, first_index: int
) -> list[Batch]:
    """Greedy packing, in time order, by token count (one oversized episode = one batch)."""
    batches: list[Batch] = []
    current: list[int] = []
    parts: list[str] = []
    used = 0

    def flush() -> None:
        nonlocal current, parts, used
        if current:
            batches.append(Batch(first_index + len(batches), category, current, "\n".join(parts)))
        current, parts, used = [], [], 0

    for episode in (
        Episode.select().where(Episode.id.in_(ids)).order_by(Episode.timestamp, Episode.id)
    ):
        text = format_episode(len(current) + 1, episode)
        cost = len(backend.tokenize(text)) + 1
        if current and (used + cost > item_budget or len(current) >= MAX_BATCH_EPISODES):
            flush()
            text = format_episode(1, episode)
        current.append(int(episode.id))
        parts.append(text)
        used += cost
    flush()
    return batches


def render_prefix(
    backend: Backend, prompt: PromptTemplate, identity: Identity, category: str
) -> str:
    """A distillation prompt's constant part; the system prompt is identity plus axioms."""
    has_identity = bool(identity.identity_text.strip() or identity.axioms)
    values = {
        "system_prompt": identity.system_prompt
        if has_identity
        else "You are an autonomous AI agent reviewing your own memory.",
        "identity": identity.identity_text,
        "axioms": numbered(list(identity.axioms)),
        "category": category,
    }
    system, user_start = prompt.render(values)
    return backend.chat_prefix(system, user_start)


def plan_batches(
    store: Store,
    backend: Backend,
    prompt: PromptTemplate,
    identity: Identity,
    categories: Sequence[str],
    limit: int | None,
    out_reserve: int,
) -> list[Batch]:
    """Every batch of the run, category by category, with ``limit`` episodes at most.

    Each batch's episodes leave ``out_reserve`` tokens of the context for the extract
    call's answer after the prompt ``prompt`` renders; CuratorError when even one
    episode would not fit (the context is too small).
    """
    remaining = limit
    batches: list[Batch] = []
    for category in categories:
        ids = distillable_episode_ids(store, category, remaining)
        if remaining is not None:
            remaining -= len(ids)
        if not ids:
            continue
        prefix = render_prefix(backend, prompt, identity, category)
        item_budget = backend.n_ctx - len(backend.tokenize(prefix)) - out_reserve - TOKEN_MARGIN
        if item_budget < 64:
            raise CuratorError(
                f"the context (n_ctx {backend.n_ctx}) is too small for the extract prompt; "
                "raise n_ctx"
            )
        batches.extend(pack_batches(backend, category, ids, item_budget, len(batches)))
    return batches

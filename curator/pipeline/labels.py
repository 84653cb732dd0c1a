"""Relabelling episodes: a person's label overrides the model's, and can be undone.

Both labels are kept: ``model_label`` is what the classifier said, ``human_label`` what a
person said; ``label`` is the one in force (human over model) and ``label_by`` says whose
it is, so a later classification run never overwrites a person's judgement and clearing
the override falls back to the model's label.

Each relabel is one batch (one id for the episodes changed together) of LabelEvents with
the label state before and after, so "undo the last relabel" restores a whole selection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from peewee import SQL, fn

from curator.errors import CuratorError
from curator.store.db import Store
from curator.store.engine import IN_LIST_SIZE, in_chunks
from curator.store.models import LABELS, Episode, LabelEvent, format_moment, format_utc, utcnow
from curator.store.profile import reviewer_name

Progress = Callable[[int, int], None]
"""``progress(done, total)`` steps; a window shows it, the CLI passes nothing."""

Phase = Callable[[str], None]
"""``phase(name)``: the step a relabel is at, so a long one says what it is doing."""

RELABEL_PHASES = (
    "reading the episodes",
    "updating the labels",
    "recording the undo history",
    "saving",
)
"""The phases of a relabel (and of its undo), in order. Each episode counts once in each
of the first three, the saving (the commit) one step more: the progress reaches its
total only when the change is saved, where it used to show 100 % once the labels were
updated and then write the undo history and commit for a minute (300,000 episodes)."""

_PROGRESS_EVERY = 2000


class _Steps:
    """One progress over the whole relabel: ``at(phase, done)`` with ``done`` counted
    within the phase (episodes), reported as steps of the whole operation."""

    def __init__(self, n: int, progress: Progress | None, phase: Phase | None) -> None:
        self.n = n
        self.total = 3 * n + 1
        self.progress = progress
        self.phase = phase
        self._reported = -_PROGRESS_EVERY

    def begin(self, index: int) -> None:
        if self.phase is not None:
            self.phase(RELABEL_PHASES[index])
        self.at(index, 0, force=index > 0)

    def at(self, index: int, done: int, *, force: bool = False) -> None:
        step = min(index * self.n + done, self.total - 1)  # the total means saved
        if self.progress is not None and (force or step - self._reported >= _PROGRESS_EVERY):
            self._reported = step
            self.progress(step, self.total)

    def within(self, index: int) -> Progress:
        """A ``progress(done, total)`` for the phase ``index`` (what :class:`_Updates` calls)."""
        return lambda done, _total: self.at(index, done)

    def saved(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)


# Why rows are plain named tuples, not model instances: a relabel of 100,000 episodes run
# in a window's background thread made 100,000 peewee instances (each a tracked object
# with its own dict) and as many event dicts; Python's cyclic garbage collector then ran
# full (generation 2) collections over them, 130-350 ms each with the GIL held and nothing
# to collect, and the window froze that long. Tuples of plain values are untracked by the
# collector after their first collection, so they cost it nothing.


class _Updates:
    """Episode updates grouped by their values: a selection relabelled alike (the usual
    case) becomes one ``UPDATE … WHERE id IN (…)`` per chunk instead of one per row."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.groups: dict[tuple[tuple[str, Any], ...], list[int]] = {}
        self.total = total
        self.progress = progress

    def add(self, episode_id: int, values: dict[str, Any]) -> None:
        self.groups.setdefault(tuple(sorted(values.items())), []).append(episode_id)

    def apply(self) -> None:
        done = reported = 0
        for key, ids in self.groups.items():
            values = dict(key)
            for chunk in in_chunks(ids):
                Episode.update(**values).where(Episode.id.in_(chunk)).execute()
                time.sleep(0)  # hand the GIL over between chunks (a window paints meanwhile)
                done += len(chunk)
                if self.progress is not None and done - reported >= _PROGRESS_EVERY:
                    reported = done
                    self.progress(done, self.total)
        if self.progress is not None:
            self.progress(done, self.total)


def _state(episode: Any) -> dict[str, Any]:
    return {
        "human_label": episode.human_label,
        "label": episode.label,
        "label_by": episode.label_by,
        "label_reviewer": episode.label_reviewer,
        "label_at": format_utc(episode.label_at) if episode.label_at else None,
        "model_label": episode.model_label,
    }


def _after(before: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The label state once ``values`` are applied (what ``_state`` would read back)."""
    after = dict(before)
    for name, value in values.items():
        after[name] = (format_utc(value) if value else None) if name == "label_at" else value
    return after


class _Row(NamedTuple):
    """An episode's label columns, made per row while it is used (never kept)."""

    id: int
    human_label: str | None
    label: str | None
    label_by: str | None
    label_at: datetime | None
    model_label: str | None
    predicted_label: str | None
    label_reviewer: str | None


def _load(episode_ids: Sequence[int], progress: Progress | None = None) -> list[tuple[Any, ...]]:
    """The label columns (``_Row`` order) of the episodes as plain tuples, in the order
    given: exact tuples of plain values are untracked by the collector, a named tuple
    (a subclass) is not."""
    ids = list(dict.fromkeys(int(i) for i in episode_ids))
    if not ids:
        raise CuratorError("no episodes given")
    found: dict[int, tuple[Any, ...]] = {}
    for start in range(0, len(ids), IN_LIST_SIZE):
        if start:
            time.sleep(0)  # hand the GIL over between chunks
        query = Episode.select(
            Episode.id,
            Episode.human_label,
            Episode.label,
            Episode.label_by,
            Episode.label_at,
            Episode.model_label,
            Episode.predicted_label,
            Episode.label_reviewer,
        ).where(Episode.id.in_(ids[start : start + IN_LIST_SIZE]))
        for row in query.tuples().iterator():
            found[row[0]] = row
        if progress is not None:
            progress(len(found), len(ids))
    missing = [i for i in ids if i not in found]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10])
        raise CuratorError(f"no such episode{'s' if len(missing) > 1 else ''}: {shown}")
    return [found[i] for i in ids]


def _relabel(
    store: Store,
    episode_ids: Sequence[int],
    actor: str,
    new_state: Any,
    progress: Progress | None = None,
    phase: Phase | None = None,
    reviewer: str | None = None,
) -> str:
    """Apply ``new_state(episode, now) -> dict`` to each episode as one undoable batch.

    The events' states are kept as dicts of plain values (untracked by the collector);
    the event rows themselves are built a chunk at a time when inserted. Each event's
    ``after`` names the person who made the batch (``REVIEWER_KEY``), whose undo it is."""
    who = reviewer if reviewer is not None else reviewer_name()
    batch = uuid.uuid4().hex
    steps = _Steps(len(set(episode_ids)), progress, phase)
    with store.explained_write("relabel"):
        now = utcnow()
        steps.begin(0)
        rows = _load(episode_ids, steps.within(0))
        steps.begin(1)
        befores: list[dict[str, Any]] = []
        afters: list[dict[str, Any]] = []
        updates = _Updates(len(rows), steps.within(1))
        for raw in rows:
            episode = _Row._make(raw)
            before = _state(episode)
            values = new_state(episode, now)
            updates.add(episode.id, values)
            befores.append(before)
            afters.append({**_after(before, values), REVIEWER_KEY: who})
        updates.apply()
        steps.begin(2)
        for start in range(0, len(rows), IN_LIST_SIZE):
            events = [
                {
                    "episode": rows[i][0],
                    "batch": batch,
                    "actor": actor,
                    "at": now,
                    "before": befores[i],
                    "after": afters[i],
                }
                for i in range(start, min(start + IN_LIST_SIZE, len(rows)))
            ]
            LabelEvent.insert_many(events).execute()
            done = start + len(events)
            events.clear()  # a chunk's rows are not kept while the progress is reported
            steps.at(2, done)
            time.sleep(0)
        steps.begin(3)
    steps.saved()
    return batch


def _human(label_of: Callable[[int], str], who: str) -> Callable[[Any, datetime], dict[str, Any]]:
    """The state of an episode given a human label by ``who`` (``label_of(episode id)``)."""

    def state(episode: Any, now: datetime) -> dict[str, Any]:
        label = label_of(episode.id)
        return {
            "human_label": label,
            "label": label,
            "label_by": "human",
            "label_reviewer": who,
            "label_at": now,
        }

    return state


def relabel_each(
    store: Store, labels: Mapping[int, str], actor: str = "human", reviewer: str | None = None
) -> str:
    """Give each episode its own human label, as one batch (one undo takes them all back,
    as :func:`relabel` does for one label); returns the batch id."""
    unknown = sorted({label for label in labels.values() if label not in LABELS})
    if unknown:
        raise CuratorError(f"unknown label {unknown[0]!r}; use one of {', '.join(LABELS)}")
    who = reviewer if reviewer is not None else reviewer_name()
    return _relabel(store, list(labels), actor, _human(labels.__getitem__, who), reviewer=who)


def relabel(
    store: Store,
    episode_ids: Sequence[int],
    label: str,
    actor: str = "human",
    progress: Progress | None = None,
    phase: Phase | None = None,
    reviewer: str | None = None,
) -> str:
    """Give the episodes a human label (in force from now on); returns the batch id.

    ``actor`` is the channel, ``reviewer`` the person recorded in ``label_reviewer``
    (None: :func:`curator.store.profile.reviewer_name`).

    One transaction: all of them or none, undone as one step by :func:`undo_last_relabel`.
    ``progress`` and ``phase`` follow it through :data:`RELABEL_PHASES`.
    """
    if label not in LABELS:
        raise CuratorError(f"unknown label {label!r}; use one of {', '.join(LABELS)}")

    who = reviewer if reviewer is not None else reviewer_name()
    return _relabel(store, episode_ids, actor, _human(lambda _id: label, who), progress, phase, who)


def clear_human_label(
    store: Store, episode_ids: Sequence[int], actor: str = "human", reviewer: str | None = None
) -> str:
    """Drop the human labels: the predicted (else the model's) label is in force again.
    ``reviewer``: who did it (None: :func:`curator.store.profile.reviewer_name`)."""

    def model(episode: Any, now: datetime) -> dict[str, Any]:
        shown = episode.predicted_label or episode.model_label  # the combination, if any
        return {
            "human_label": None,
            "label": shown,
            "label_by": "model" if shown is not None else None,
            "label_reviewer": None,
            "label_at": now,
        }

    return _relabel(store, episode_ids, actor, model, reviewer=reviewer)


def undo_last_relabel(
    store: Store,
    progress: Progress | None = None,
    phase: Phase | None = None,
    reviewer: str | None = None,
) -> list[int]:
    """Undo ``reviewer``'s newest relabel batch not yet undone; returns the episode ids
    ([] if none). ``reviewer`` None: :func:`curator.store.profile.reviewer_name`.

    As undoing the last decision does: other reviewers' newer batches are passed over
    (never silently undone), and a batch of which someone else has relabelled an episode
    since is refused with that in one sentence (its undo would overwrite their label).
    Batches from before the reviewer was recorded are anyone's.

    The human label is restored exactly. Where no human label was in force before, the
    model's *current* label is put back in force: a classification run after the relabel
    may have changed it, and undoing a person's action must not resurrect a stale one.
    """
    me = reviewer if reviewer is not None else reviewer_name()
    with store.explained_write("undo of the relabel"):
        batch = _newest_own_batch(me)
        if batch is None:
            return []
        in_batch = LabelEvent.batch == batch
        _refuse_if_relabelled_since(in_batch)
        steps = _Steps(LabelEvent.select().where(in_batch).count(), progress, phase)
        steps.begin(0)
        query = (
            LabelEvent.select(LabelEvent.episode, LabelEvent.before)
            .where(in_batch)
            .order_by(LabelEvent.id)
        )
        event_ids: list[int] = []
        befores: list[dict[str, Any]] = []
        for episode_id, before in query.tuples().iterator():
            event_ids.append(episode_id or 0)
            befores.append(before)
        episodes = {row[0]: row for row in _load(event_ids, steps.within(0))}
        steps.begin(1)
        updates = _Updates(len(event_ids), steps.within(1))
        for episode_id, before in zip(event_ids, befores, strict=True):
            episode = _Row._make(episodes[episode_id])
            label_at = datetime.fromisoformat(before["label_at"]) if before["label_at"] else None
            if before["human_label"] is not None:
                values: dict[str, Any] = {
                    "human_label": before["human_label"],
                    "label": before["label"],
                    "label_by": before["label_by"],
                    "label_reviewer": before.get("label_reviewer"),
                    "label_at": label_at,
                }
            else:
                model_label = episode.model_label
                same = before["label"] == model_label
                values = {
                    "human_label": None,
                    "label": model_label,
                    "label_by": before["label_by"] if same else ("model" if model_label else None),
                    "label_reviewer": None,
                    "label_at": label_at if same else utcnow(),
                }
            updates.add(episode.id, values)
        updates.apply()
        steps.begin(2)
        LabelEvent.update(undone=True).where(in_batch).execute()
        steps.begin(3)
    steps.saved()
    return sorted(episodes)


REVIEWER_KEY = "reviewer"
"""The key of a LabelEvent's ``after`` that names who made its batch."""


def _newest_own_batch(me: str) -> str | None:
    """The newest batch not yet undone that ``me`` made (or that names nobody)."""
    newest = (
        LabelEvent.select(LabelEvent.batch, fn.MAX(LabelEvent.id).alias("last"))
        .where(LabelEvent.undone == False)  # noqa: E712 - peewee expression
        .group_by(LabelEvent.batch)
        .order_by(SQL("last").desc())
        .tuples()
    )
    for batch, _last in newest.iterator():
        first = LabelEvent.select(LabelEvent.after).where(LabelEvent.batch == batch).limit(1).get()
        if first.after.get(REVIEWER_KEY, me) == me:
            return str(batch)
    return None


def _refuse_if_relabelled_since(in_batch: Any) -> None:
    """Refuse the undo when another batch not undone, newer than this one, relabelled one
    of its episodes: this reviewer's own newer batches are undone first, so it is
    someone else's."""
    mine = LabelEvent.select(LabelEvent.episode).where(in_batch)
    last = LabelEvent.select(fn.MAX(LabelEvent.id)).where(in_batch).scalar()
    later = (
        LabelEvent.select(LabelEvent.episode, LabelEvent.after, LabelEvent.at)
        .where(
            (LabelEvent.id > last)
            & (LabelEvent.undone == False)  # noqa: E712 - peewee expression
            & LabelEvent.episode.in_(mine)
        )
        .order_by(LabelEvent.id)
        .first()
    )
    if later is not None:
        who = later.after.get(REVIEWER_KEY) or "someone"
        raise CuratorError(
            f"episode {later.episode_id} was relabelled by {who} at "
            f"{format_moment(later.at)} since your relabel; nothing was undone: undo theirs "
            "first, or relabel it again"
        )

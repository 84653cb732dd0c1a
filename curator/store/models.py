"""Peewee models of the curator database.

The tables follow the three memory layers of the agent (episodes, knowledge patterns,
identity) plus the bookkeeping the human review needs: runs with their traces, staged
candidates, and changesets that make every commit undoable.

Models are unbound: :class:`curator.store.db.Store` binds them to its database when it
opens, so no module-level database object exists. The schema itself is created by the
ordered migrations in :mod:`curator.store.migrations`, never by ``create_tables``; these
classes must describe exactly what the latest migration builds.

Times are stored as ISO 8601 text in UTC with microseconds (``UTCDateTimeField``), which
sorts correctly as text and stays readable in any SQLite browser.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from peewee import (
    AutoField,
    BlobField,
    BooleanField,
    CompositeKey,
    FloatField,
    ForeignKeyField,
    IntegerField,
    Model,
    TextField,
)

from curator.core.scoring import as_utc
from curator.store.opening import StoreError

LABELS = ("constitutional", "noise", "uncategorized")
"""The three episode labels of step 0, in the order the prompts list them."""

DISTILLABLE_LABELS = ("constitutional", "uncategorized")
"""Noise is never distilled."""

ACTIONS = ("SKIP", "UPDATE", "ADD")

MAX_PATTERN_CHARS = 4000
"""A pattern is a short statement; anything longer is not knowledge but a pasted document."""


def utcnow() -> datetime:
    """The current time as an aware UTC datetime (the only clock the store uses)."""
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """Aware UTC datetime; a naive one is taken to be UTC already (the core's rule)."""
    return as_utc(value)


def parse_iso_utc(value: str) -> datetime:
    """An ISO 8601 time in aware UTC; a trailing ``Z`` and a time without a zone are UTC
    (the store's rule). ValueError: not ISO 8601; OverflowError: outside what a datetime
    holds once in UTC (``0001-01-01T00:00+01:00``)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    try:
        return to_utc(parsed)
    except ValueError as exc:  # the conversion's, not the reading's
        raise OverflowError(str(exc)) from None


def format_utc(value: datetime) -> str:
    """The stored text form: fixed-width ISO 8601 in UTC, so text order is time order.

    The year is zero-padded by hand: ``strftime("%Y")`` gives ``999`` for the year 999 on
    glibc, which would sort after ``2026`` and could not be read back by ``fromisoformat``.
    The other fields are formatted as integers too: ``strftime`` imports the ``time``
    module on every call, which in the window goes through PySide's import hook (Python
    code, slow enough that relabelling 100,000 episodes spent seconds there).
    """
    utc = to_utc(value)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond:06d}+00:00"
    )


def to_local(value: datetime) -> datetime:
    """``value`` in the local time zone for display, or in UTC where that overflows.

    At the ends of the representable range (0001-01-01, 9999-12-31) the local offset can
    push the date out of range; showing the UTC time then is better than an exception.
    """
    try:
        return to_utc(value).astimezone()
    except (OverflowError, ValueError):
        return to_utc(value)


def format_local(value: datetime, *, seconds: bool = False) -> str:
    """``YYYY-MM-DD HH:MM[:SS]`` in local time (see :func:`to_local`), year zero-padded."""
    local = to_local(value)
    return f"{local.year:04d}-{local:%m-%d %H:%M}" + (f":{local:%S}" if seconds else "")


def format_moment(value: datetime) -> str:
    """When something happened, as a sentence names it: ``HH:MM`` today, else
    ``YYYY-MM-DD HH:MM``, local time."""
    when = format_local(value)
    return when[11:] if when.startswith(format_local(utcnow())[:10]) else when


class UTCDateTimeField(TextField):
    """An aware datetime stored as fixed-width ISO 8601 UTC text."""

    def db_value(self, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, datetime):
            return format_utc(value)
        return value  # already text (e.g. a value read back or built by a query)

    def python_value(self, value: Any) -> Any:
        if value is None:
            return None
        try:  # the common case without a call: every date of every row read comes here
            return to_utc(datetime.fromisoformat(value))
        except (TypeError, ValueError):
            return checked_time(value, self.model._meta.table_name, self.column_name)


class JSONField(TextField):
    """A JSON document stored as text (``ensure_ascii=False`` keeps it readable)."""

    def db_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, sort_keys=True)

    def python_value(self, value: Any) -> Any:
        if value is None:
            return None
        return json.loads(value)


class FlagField(BooleanField):
    """A yes/no stored as the integer 0 or 1 (the column is an INTEGER on both engines).

    SQLite stores a Python bool as 0/1 anyway; PostgreSQL refuses a boolean for its
    integer column, so the value is written as the integer itself.
    """

    field_type = "INTEGER"

    def db_value(self, value: Any) -> Any:
        if value is None:
            return None
        return int(bool(value))


def checked_importance(value: Any, table: str = "pattern", column: str = "importance") -> Any:
    """``value`` as read from ``table.column``, refused in one sentence outside [0, 1]
    (PostgreSQL stores NaN and infinities, which another program may write; this one
    never does): the one check of every read, :class:`ImportanceField`'s and a raw
    query's, rather than ranking or charting such a value by chance. None passes."""
    if value is None:
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0.0 <= value <= 1.0:  # NaN fails both comparisons; text is no number
        raise StoreError(
            f"a {table} holds {column} {value!r}, not a number from 0 to 1 (another program "
            f"wrote it); find it with SELECT id, {column} FROM {table} WHERE NOT {column} "
            "BETWEEN 0 AND 1, set it right and try again"
        )
    return value


def checked_time(value: Any, table: str, column: str) -> datetime:
    """A stored date and time (ISO 8601 text) as an aware UTC datetime, refused in one
    sentence when it is none (another program wrote it): the one parse of every read,
    :class:`UTCDateTimeField`'s and a raw query's."""
    try:
        return to_utc(datetime.fromisoformat(value))
    except (TypeError, ValueError):
        raise StoreError(
            f"a {table} holds {column} {str(value)[:40]!r}, not a date and time (another "
            f"program wrote it); find it with SELECT id, {column} FROM {table}, set it right "
            "and try again"
        ) from None


class ImportanceField(FloatField):
    """An importance, in [0, 1]: :func:`checked_importance` on every read."""

    def python_value(self, value: Any) -> Any:
        table = self.model._meta.table_name
        return checked_importance(super().python_value(value), table, self.column_name)


class BaseModel(Model):
    class Meta:
        legacy_table_names = False


class IdentityVersion(BaseModel):
    """One saved version of the identity text and the constitutional axioms."""

    id = AutoField()
    version = IntegerField(unique=True)
    identity_text = TextField()
    axioms = JSONField()  # list[str]
    created_at = UTCDateTimeField(default=utcnow)
    note = TextField(default="")


class Run(BaseModel):
    """One classification or distillation run and its provenance."""

    id = AutoField()
    kind = TextField()  # "classify" | "distill"
    # running|staged|done|committed|cancelled|failed|abandoned (its process died mid-run)
    status = TextField(default="running")
    status_reason = TextField(default="")
    started_at = UTCDateTimeField(default=utcnow)
    finished_at = UTCDateTimeField(null=True)
    model_path = TextField(default="")
    model_name = TextField(default="")
    model_sha256 = TextField(default="")
    model_metadata = JSONField(default=dict)
    params = JSONField(default=dict)
    prompts = JSONField(default=dict)  # prompt name -> {"version": .., "sha256": ..}
    identity_version = ForeignKeyField(IdentityVersion, null=True, on_delete="SET NULL")
    identity_version_id: int | None  # the raw id (peewee's accessor; no query)
    stats = JSONField(default=dict)
    # The owning process and its last sign of life (see curator/store/liveness.py).
    pid = IntegerField(null=True)
    host = TextField(null=True)
    heartbeat_at = UTCDateTimeField(null=True)


class Episode(BaseModel):
    """A raw conversation or activity log as imported."""

    id = AutoField()
    external_id = TextField(null=True, index=True)
    content_hash = TextField(unique=True)
    text = TextField()  # plain rendering; chat messages as "speaker: content" lines
    messages = JSONField(null=True)  # list of {"role", "content", "name"?} for chat episodes
    timestamp = UTCDateTimeField(index=True)
    source = TextField(default="", index=True)
    metadata = JSONField(default=dict)
    imported_at = UTCDateTimeField(default=utcnow)
    model_label = TextField(null=True)
    model_confidence = FloatField(null=True)
    model_run = ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="labelled")
    model_run_id: int | None  # the raw id (peewee's accessor; no query)
    human_label = TextField(null=True)
    label = TextField(null=True, index=True)  # the label in force: human over model
    label_by = TextField(null=True)  # "model" | "human" | None
    label_reviewer = TextField(null=True)  # the person, when label_by is "human"
    label_at = UTCDateTimeField(null=True)
    classify_truncated = FlagField(default=False)
    distilled_at = UTCDateTimeField(null=True, index=True)
    distilled_run = ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="distilled")
    distilled_run_id: int | None  # the raw id (peewee's accessor; no query)
    # Learning from the reviewer (curator.pipeline.learn): the label distributions behind
    # model_label, raw and contextually calibrated; the label the combination predicts, the
    # source that decided it ("model" | "calibrated" | "learned"), its confidence and margin.
    model_scores = JSONField(null=True)
    calibrated_scores = JSONField(null=True)
    scores_model_sha256 = TextField(null=True)
    predicted_label = TextField(null=True)
    predicted_by = TextField(null=True)
    predicted_confidence = FloatField(null=True)
    predicted_margin = FloatField(null=True, index=True)


class Pattern(BaseModel):
    """A distilled knowledge pattern.

    ``importance`` is the LLM's score, in [0, 1], never rewritten by decay; the effective
    importance is computed when read. ``rank_key`` is the time-independent ranking key of
    :func:`curator.core.scoring.rank_key`, indexed so the top K is one indexed query.
    ``revision`` increases on every change: commits check it to detect edits made elsewhere.
    """

    id = AutoField()
    text = TextField()
    importance = ImportanceField()
    distilled_at = UTCDateTimeField()
    rank_key = FloatField()
    category = TextField(default="uncategorized")
    status = TextField(default="active", index=True)  # active | retired
    revision = IntegerField(default=1)
    created_run = ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="created")
    created_run_id: int | None  # the raw id (peewee's accessor; no query)
    updated_run = ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="updated")
    updated_run_id: int | None  # the raw id (peewee's accessor; no query)
    created_at = UTCDateTimeField(default=utcnow)
    updated_at = UTCDateTimeField(default=utcnow)


class PatternEpisode(BaseModel):
    """Provenance: an episode a pattern was distilled from (or confirmed by), and by which run."""

    pattern = ForeignKeyField(Pattern, on_delete="CASCADE", backref="sources")
    pattern_id: int  # the raw id (peewee's accessor; no query)
    episode = ForeignKeyField(Episode, on_delete="CASCADE", backref="patterns")
    episode_id: int  # the raw id (peewee's accessor; no query)
    run = ForeignKeyField(Run, null=True, on_delete="SET NULL")
    run_id: int | None  # the raw id (peewee's accessor; no query)

    class Meta:
        primary_key = CompositeKey("pattern", "episode")


GATE_STEPS = frozenset({"quality", "dedup"})
"""Trace steps that record a gate's verdicts on a batch: no model was called for them."""


class TraceStep(BaseModel):
    """One LLM call of a run: the prompt hash, raw output, parsed result and timings; or
    one gate's verdicts (:data:`GATE_STEPS`), which the trace shows in the same order."""

    id = AutoField()
    run = ForeignKeyField(Run, on_delete="CASCADE", backref="trace")
    run_id: int  # the raw id (peewee's accessor; no query)
    step = TextField()  # classify | extract | refine | importance | a second opinion | a gate
    batch = IntegerField(default=0)
    category = TextField(default="")
    episode = ForeignKeyField(Episode, null=True, on_delete="SET NULL")
    episode_id: int | None  # the raw id (peewee's accessor; no query)
    prompt_name = TextField(default="")
    prompt_sha256 = TextField(default="")
    raw_output = TextField(default="")
    parsed = JSONField(null=True)
    tokens_in = IntegerField(default=0)
    tokens_out = IntegerField(default=0)
    cached_tokens = IntegerField(default=0)
    seconds = FloatField(default=0.0)
    attempt = IntegerField(default=1)
    error = TextField(default="")
    created_at = UTCDateTimeField(default=utcnow)


class Candidate(BaseModel):
    """A pattern proposed by a distillation run, waiting for (or carrying) a human decision.

    ``proposed_*`` is the pipeline's proposal and never changes; ``action``/``target``/
    ``final_text``/``final_importance`` are the decision in force (None while unreviewed).
    ``target_revision`` is the matched pattern's revision when the run was staged.
    """

    id = AutoField()
    run = ForeignKeyField(Run, on_delete="CASCADE", backref="candidates")
    run_id: int  # the raw id (peewee's accessor; no query)
    ordinal = IntegerField()
    text = TextField()
    importance = FloatField()  # as scored; clamped when committed (a pattern's is checked)
    category = TextField(default="uncategorized")
    proposed_action = TextField()
    proposed_target = ForeignKeyField(Pattern, null=True, on_delete="SET NULL")
    proposed_target_id: int | None  # the raw id (peewee's accessor; no query)
    proposed_ratio = FloatField(default=0.0)
    target_revision = IntegerField(null=True)
    action = TextField(null=True)  # SKIP | UPDATE | ADD | REJECT, None while unreviewed
    target = ForeignKeyField(Pattern, null=True, on_delete="SET NULL", backref="+")
    target_id: int | None  # the raw id (peewee's accessor; no query)
    target_ratio = FloatField(null=True)
    final_text = TextField(null=True)
    final_importance = FloatField(null=True)
    # Who decided (the reviewer's name, curator.store.profile) and through what (the
    # channel: "window", "cli", "window accept-all", "cli --accept-all"); rows decided
    # before names were kept hold the channel in both.
    decided_by = TextField(null=True)
    decided_via = TextField(null=True)
    decided_at = UTCDateTimeField(null=True)
    state = TextField(default="pending")  # pending | reviewed | applied
    revision = IntegerField(default=1)
    # The dedup gate's proposal for an edited ``final_text`` (None while the text is not edited).
    rematch_action = TextField(null=True)
    rematch_target = ForeignKeyField(Pattern, null=True, on_delete="SET NULL", backref="+")
    rematch_target_id: int | None  # the raw id (peewee's accessor; no query)
    rematch_ratio = FloatField(null=True)
    # Revision of ``target`` when the reviewer chose it (a target other than the proposed one,
    # or one picked explicitly); None: the proposal's ``target_revision`` applies.
    decision_target_revision = IntegerField(null=True)
    # The flags (kind and reason) shown when the decision was made; None: none, or undecided.
    flags_seen = JSONField(null=True)
    # Imported knowledge keeps its original distillation date; None: the commit's time.
    distilled_at = UTCDateTimeField(null=True)
    # UPDATE with an edited text: True keeps the pattern's text (only importance and
    # provenance change); None/False: the reviewer's wording replaces it.
    keep_pattern_text = FlagField(null=True)
    # Flags judged at staging, not recomputed when shown (curator.pipeline.guard): the
    # model's second opinion and the learned guard's; a list of Flag JSON, None: none.
    guard_flags = JSONField(null=True)
    # Imported from another memory tool: its original ids and dates, as that file wrote
    # them (curator.store.memtool_origin); None: distilled here, or no origin to keep.
    origin = JSONField(null=True)


class CandidateEpisode(BaseModel):
    """The source episodes of a candidate."""

    candidate = ForeignKeyField(Candidate, on_delete="CASCADE", backref="sources")
    candidate_id: int  # the raw id (peewee's accessor; no query)
    episode = ForeignKeyField(Episode, on_delete="CASCADE")
    episode_id: int  # the raw id (peewee's accessor; no query)

    class Meta:
        primary_key = CompositeKey("candidate", "episode")


class DecisionEvent(BaseModel):
    """Every review action on a candidate, with time and actor, so decisions can be undone."""

    id = AutoField()
    candidate = ForeignKeyField(Candidate, on_delete="CASCADE", backref="events")
    candidate_id: int  # the raw id (peewee's accessor; no query)
    actor = TextField()
    at = UTCDateTimeField(default=utcnow)
    before = JSONField()
    after = JSONField()
    kind = TextField(default="decide")  # propose (the pipeline's) | decide | undo
    undone = FlagField(default=False)  # a decide event reverted by undo_last_decision


class LabelEvent(BaseModel):
    """A relabel of one episode (old and new state), for undo of the last relabels."""

    id = AutoField()
    episode = ForeignKeyField(Episode, on_delete="CASCADE", backref="label_events")
    episode_id: int  # the raw id (peewee's accessor; no query)
    batch = TextField()  # one id for the episodes relabelled together
    actor = TextField()
    at = UTCDateTimeField(default=utcnow)
    before = JSONField()
    after = JSONField()
    undone = FlagField(default=False)


class Changeset(BaseModel):
    """One commit (or undo of a commit), recording every row's before and after."""

    id = AutoField()
    run = ForeignKeyField(Run, null=True, on_delete="SET NULL", backref="changesets")
    run_id: int | None  # the raw id (peewee's accessor; no query)
    kind = TextField()  # commit | undo
    actor = TextField(default="human")  # the channel: "human" (window), "cli"...
    reviewer = TextField(null=True)  # the person (curator.store.profile); None: before names
    created_at = UTCDateTimeField(default=utcnow)
    summary = JSONField(default=dict)
    undoes = ForeignKeyField("self", null=True, on_delete="SET NULL", backref="+")
    undoes_id: int | None  # the raw id (peewee's accessor; no query)
    undone_by = ForeignKeyField("self", null=True, on_delete="SET NULL", backref="+")
    undone_by_id: int | None  # the raw id (peewee's accessor; no query)


class ChangeRow(BaseModel):
    """One row touched by a changeset: table, key, and its full state before and after."""

    id = AutoField()
    changeset = ForeignKeyField(Changeset, on_delete="CASCADE", backref="rows")
    changeset_id: int  # the raw id (peewee's accessor; no query)
    table = TextField()
    key = JSONField()
    before = JSONField(null=True)  # None: the row did not exist
    after = JSONField(null=True)  # None: the row was deleted


class Setting(BaseModel):
    """Saved settings (model path, thresholds, ...) as JSON values."""

    key = TextField(primary_key=True)
    value = JSONField()


class LabelBias(BaseModel):
    """The label distribution a model gives content-free inputs under one prompt version.

    Computed once per (model, prompt) and reused: see :mod:`curator.core.calibration`.
    """

    model_sha256 = TextField()
    prompt_sha256 = TextField()
    probabilities = JSONField()
    inputs = JSONField()  # the content-free inputs it was measured on
    created_at = UTCDateTimeField(default=utcnow)

    class Meta:
        table_name = "label_bias"
        primary_key = CompositeKey("model_sha256", "prompt_sha256")


class EpisodeEmbedding(BaseModel):
    """One episode's embedding under one model: float32 little-endian bytes."""

    episode = ForeignKeyField(Episode, on_delete="CASCADE", backref="+")
    model_sha256 = TextField()
    dim = IntegerField()
    vector = BlobField()

    class Meta:
        table_name = "episode_embedding"
        primary_key = CompositeKey("episode", "model_sha256")


class FollowState(BaseModel):
    """How far ``curator watch`` has read one log: committed in the same transaction as
    the episodes of those lines, so a killed follower neither repeats nor skips a line.

    ``device``/``inode`` and the hash of the file's first ``head_length`` bytes tell the
    same file from a replacement (rotation, deletion and re-creation, copy-truncate);
    ``offset`` is the byte after the last complete line read, ``line`` its line number.
    """

    path = TextField(primary_key=True)
    device = IntegerField()
    inode = IntegerField()
    offset = IntegerField()
    line = IntegerField()
    head_length = IntegerField()
    head_sha256 = TextField()
    updated_at = UTCDateTimeField(default=utcnow)

    class Meta:
        table_name = "follow_state"


ALL_MODELS: tuple[type[BaseModel], ...] = (
    IdentityVersion,
    Run,
    Episode,
    Pattern,
    PatternEpisode,
    TraceStep,
    Candidate,
    CandidateEpisode,
    DecisionEvent,
    LabelEvent,
    Changeset,
    ChangeRow,
    Setting,
    LabelBias,
    EpisodeEmbedding,
    FollowState,
)

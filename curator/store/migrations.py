# ruff: noqa: E501  (SQL statements are kept on one line each, as SQLite prints them)
"""Ordered schema migrations, recorded in ``PRAGMA user_version``.

Each migration is a list of SQL statements, written out literally (not generated from the
models at run time) so that an old migration keeps building exactly the schema it built
when it was released. All pending migrations run in one ``IMMEDIATE`` transaction: a
database is either fully upgraded or left as it was.
"""

from __future__ import annotations

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the initial schema
    (
        'CREATE TABLE "identity_version" ("id" INTEGER NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL, "identity_text" TEXT NOT NULL, "axioms" TEXT NOT NULL, "created_at" TEXT NOT NULL, "note" TEXT NOT NULL)',
        'CREATE UNIQUE INDEX "identity_version_version" ON "identity_version" ("version")',
        'CREATE TABLE "run" ("id" INTEGER NOT NULL PRIMARY KEY, "kind" TEXT NOT NULL, "status" TEXT NOT NULL, "status_reason" TEXT NOT NULL, "started_at" TEXT NOT NULL, "finished_at" TEXT, "model_path" TEXT NOT NULL, "model_name" TEXT NOT NULL, "model_sha256" TEXT NOT NULL, "model_metadata" TEXT NOT NULL, "params" TEXT NOT NULL, "prompts" TEXT NOT NULL, "identity_version_id" INTEGER, "stats" TEXT NOT NULL, FOREIGN KEY ("identity_version_id") REFERENCES "identity_version" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "run_identity_version_id" ON "run" ("identity_version_id")',
        'CREATE TABLE "episode" ("id" INTEGER NOT NULL PRIMARY KEY, "external_id" TEXT, "content_hash" TEXT NOT NULL, "text" TEXT NOT NULL, "messages" TEXT, "timestamp" TEXT NOT NULL, "source" TEXT NOT NULL, "metadata" TEXT NOT NULL, "imported_at" TEXT NOT NULL, "model_label" TEXT, "model_confidence" REAL, "model_run_id" INTEGER, "human_label" TEXT, "label" TEXT, "label_by" TEXT, "label_at" TEXT, "classify_truncated" INTEGER NOT NULL, "distilled_at" TEXT, "distilled_run_id" INTEGER, FOREIGN KEY ("model_run_id") REFERENCES "run" ("id") ON DELETE SET NULL, FOREIGN KEY ("distilled_run_id") REFERENCES "run" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "episode_external_id" ON "episode" ("external_id")',
        'CREATE UNIQUE INDEX "episode_content_hash" ON "episode" ("content_hash")',
        'CREATE INDEX "episode_timestamp" ON "episode" ("timestamp")',
        'CREATE INDEX "episode_source" ON "episode" ("source")',
        'CREATE INDEX "episode_model_run_id" ON "episode" ("model_run_id")',
        'CREATE INDEX "episode_label" ON "episode" ("label")',
        'CREATE INDEX "episode_distilled_at" ON "episode" ("distilled_at")',
        'CREATE INDEX "episode_distilled_run_id" ON "episode" ("distilled_run_id")',
        'CREATE TABLE "pattern" ("id" INTEGER NOT NULL PRIMARY KEY, "text" TEXT NOT NULL, "importance" REAL NOT NULL, "distilled_at" TEXT NOT NULL, "rank_key" REAL NOT NULL, "category" TEXT NOT NULL, "status" TEXT NOT NULL, "revision" INTEGER NOT NULL, "created_run_id" INTEGER, "updated_run_id" INTEGER, "created_at" TEXT NOT NULL, "updated_at" TEXT NOT NULL, FOREIGN KEY ("created_run_id") REFERENCES "run" ("id") ON DELETE SET NULL, FOREIGN KEY ("updated_run_id") REFERENCES "run" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "pattern_status" ON "pattern" ("status")',
        'CREATE INDEX "pattern_created_run_id" ON "pattern" ("created_run_id")',
        'CREATE INDEX "pattern_updated_run_id" ON "pattern" ("updated_run_id")',
        'CREATE TABLE "pattern_episode" ("pattern_id" INTEGER NOT NULL, "episode_id" INTEGER NOT NULL, "run_id" INTEGER, PRIMARY KEY ("pattern_id", "episode_id"), FOREIGN KEY ("pattern_id") REFERENCES "pattern" ("id") ON DELETE CASCADE, FOREIGN KEY ("episode_id") REFERENCES "episode" ("id") ON DELETE CASCADE, FOREIGN KEY ("run_id") REFERENCES "run" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "pattern_episode_pattern_id" ON "pattern_episode" ("pattern_id")',
        'CREATE INDEX "pattern_episode_episode_id" ON "pattern_episode" ("episode_id")',
        'CREATE INDEX "pattern_episode_run_id" ON "pattern_episode" ("run_id")',
        'CREATE TABLE "trace_step" ("id" INTEGER NOT NULL PRIMARY KEY, "run_id" INTEGER NOT NULL, "step" TEXT NOT NULL, "batch" INTEGER NOT NULL, "category" TEXT NOT NULL, "episode_id" INTEGER, "prompt_name" TEXT NOT NULL, "prompt_sha256" TEXT NOT NULL, "raw_output" TEXT NOT NULL, "parsed" TEXT, "tokens_in" INTEGER NOT NULL, "tokens_out" INTEGER NOT NULL, "cached_tokens" INTEGER NOT NULL, "seconds" REAL NOT NULL, "attempt" INTEGER NOT NULL, "error" TEXT NOT NULL, "created_at" TEXT NOT NULL, FOREIGN KEY ("run_id") REFERENCES "run" ("id") ON DELETE CASCADE, FOREIGN KEY ("episode_id") REFERENCES "episode" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "trace_step_run_id" ON "trace_step" ("run_id")',
        'CREATE INDEX "trace_step_episode_id" ON "trace_step" ("episode_id")',
        'CREATE TABLE "candidate" ("id" INTEGER NOT NULL PRIMARY KEY, "run_id" INTEGER NOT NULL, "ordinal" INTEGER NOT NULL, "text" TEXT NOT NULL, "importance" REAL NOT NULL, "category" TEXT NOT NULL, "proposed_action" TEXT NOT NULL, "proposed_target_id" INTEGER, "proposed_ratio" REAL NOT NULL, "target_revision" INTEGER, "action" TEXT, "target_id" INTEGER, "target_ratio" REAL, "final_text" TEXT, "final_importance" REAL, "decided_by" TEXT, "decided_at" TEXT, "state" TEXT NOT NULL, "revision" INTEGER NOT NULL, FOREIGN KEY ("run_id") REFERENCES "run" ("id") ON DELETE CASCADE, FOREIGN KEY ("proposed_target_id") REFERENCES "pattern" ("id") ON DELETE SET NULL, FOREIGN KEY ("target_id") REFERENCES "pattern" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "candidate_run_id" ON "candidate" ("run_id")',
        'CREATE INDEX "candidate_proposed_target_id" ON "candidate" ("proposed_target_id")',
        'CREATE INDEX "candidate_target_id" ON "candidate" ("target_id")',
        'CREATE TABLE "candidate_episode" ("candidate_id" INTEGER NOT NULL, "episode_id" INTEGER NOT NULL, PRIMARY KEY ("candidate_id", "episode_id"), FOREIGN KEY ("candidate_id") REFERENCES "candidate" ("id") ON DELETE CASCADE, FOREIGN KEY ("episode_id") REFERENCES "episode" ("id") ON DELETE CASCADE)',
        'CREATE INDEX "candidate_episode_candidate_id" ON "candidate_episode" ("candidate_id")',
        'CREATE INDEX "candidate_episode_episode_id" ON "candidate_episode" ("episode_id")',
        'CREATE TABLE "decision_event" ("id" INTEGER NOT NULL PRIMARY KEY, "candidate_id" INTEGER NOT NULL, "actor" TEXT NOT NULL, "at" TEXT NOT NULL, "before" TEXT NOT NULL, "after" TEXT NOT NULL, FOREIGN KEY ("candidate_id") REFERENCES "candidate" ("id") ON DELETE CASCADE)',
        'CREATE INDEX "decision_event_candidate_id" ON "decision_event" ("candidate_id")',
        'CREATE TABLE "label_event" ("id" INTEGER NOT NULL PRIMARY KEY, "episode_id" INTEGER NOT NULL, "batch" TEXT NOT NULL, "actor" TEXT NOT NULL, "at" TEXT NOT NULL, "before" TEXT NOT NULL, "after" TEXT NOT NULL, "undone" INTEGER NOT NULL, FOREIGN KEY ("episode_id") REFERENCES "episode" ("id") ON DELETE CASCADE)',
        'CREATE INDEX "label_event_episode_id" ON "label_event" ("episode_id")',
        'CREATE TABLE "changeset" ("id" INTEGER NOT NULL PRIMARY KEY, "run_id" INTEGER, "kind" TEXT NOT NULL, "actor" TEXT NOT NULL, "created_at" TEXT NOT NULL, "summary" TEXT NOT NULL, "undoes_id" INTEGER, "undone_by_id" INTEGER, FOREIGN KEY ("run_id") REFERENCES "run" ("id") ON DELETE SET NULL, FOREIGN KEY ("undoes_id") REFERENCES "changeset" ("id") ON DELETE SET NULL, FOREIGN KEY ("undone_by_id") REFERENCES "changeset" ("id") ON DELETE SET NULL)',
        'CREATE INDEX "changeset_run_id" ON "changeset" ("run_id")',
        'CREATE INDEX "changeset_undoes_id" ON "changeset" ("undoes_id")',
        'CREATE INDEX "changeset_undone_by_id" ON "changeset" ("undone_by_id")',
        'CREATE TABLE "change_row" ("id" INTEGER NOT NULL PRIMARY KEY, "changeset_id" INTEGER NOT NULL, "table" TEXT NOT NULL, "key" TEXT NOT NULL, "before" TEXT, "after" TEXT, FOREIGN KEY ("changeset_id") REFERENCES "changeset" ("id") ON DELETE CASCADE)',
        'CREATE INDEX "change_row_changeset_id" ON "change_row" ("changeset_id")',
    ),
    # 2: saved settings, and the index that serves the top-K query
    (
        'CREATE TABLE "setting" ("key" TEXT NOT NULL PRIMARY KEY, "value" TEXT NOT NULL)',
        'CREATE INDEX "pattern_rank" ON "pattern" ("status", "rank_key" DESC, "distilled_at" DESC, "id")',
    ),
    # 3: review: the dedup re-match of an edited candidate text, the revision of a target the
    # reviewer chose (checked at commit), and undo bookkeeping of review decisions
    (
        'ALTER TABLE "candidate" ADD COLUMN "rematch_action" TEXT',
        'ALTER TABLE "candidate" ADD COLUMN "rematch_target_id" INTEGER REFERENCES "pattern" ("id") ON DELETE SET NULL',
        'ALTER TABLE "candidate" ADD COLUMN "rematch_ratio" REAL',
        'ALTER TABLE "candidate" ADD COLUMN "decision_target_revision" INTEGER',
        'CREATE INDEX "candidate_rematch_target_id" ON "candidate" ("rematch_target_id")',
        'ALTER TABLE "decision_event" ADD COLUMN "kind" TEXT NOT NULL DEFAULT \'decide\'',
        'ALTER TABLE "decision_event" ADD COLUMN "undone" INTEGER NOT NULL DEFAULT 0',
    ),
    # memory-poisoning flags: the flags a reviewer saw when deciding a candidate; the
    # original distillation date of a candidate imported from existing knowledge
    (
        'ALTER TABLE "candidate" ADD COLUMN "flags_seen" TEXT',
        'ALTER TABLE "candidate" ADD COLUMN "distilled_at" TEXT',
    ),
    # repair of episode timestamps before the year 1000, once stored without zero-padding
    # ("999-06-01T…" sorted after "2026-…" and could not be read back); pads the year to 4
    (
        'UPDATE "episode" SET "timestamp" = substr(\'000\', 1, 5 - instr("timestamp", \'-\')) || "timestamp" WHERE instr("timestamp", \'-\') BETWEEN 2 AND 4',
    ),
    # the process that owns a run (pid, host) and its last sign of life, so that a run
    # whose process died can be marked abandoned (see curator/store/liveness.py)
    (
        'ALTER TABLE "run" ADD COLUMN "pid" INTEGER',
        'ALTER TABLE "run" ADD COLUMN "host" TEXT',
        'ALTER TABLE "run" ADD COLUMN "heartbeat_at" TEXT',
    ),
    # episode search: an external-content FTS5 index over episode text with the trigram
    # tokenizer (substring search, as LIKE '%...%'), kept in sync by triggers; the last
    # statement indexes the episodes an existing database already holds
    (
        "CREATE VIRTUAL TABLE \"episode_fts\" USING fts5(\"text\", content='episode', content_rowid='id', tokenize='trigram')",
        'CREATE TRIGGER "episode_fts_insert" AFTER INSERT ON "episode" BEGIN INSERT INTO "episode_fts" ("rowid", "text") VALUES (new."id", new."text"); END',
        'CREATE TRIGGER "episode_fts_delete" AFTER DELETE ON "episode" BEGIN INSERT INTO "episode_fts" ("episode_fts", "rowid", "text") VALUES (\'delete\', old."id", old."text"); END',
        'CREATE TRIGGER "episode_fts_update" AFTER UPDATE OF "text" ON "episode" BEGIN INSERT INTO "episode_fts" ("episode_fts", "rowid", "text") VALUES (\'delete\', old."id", old."text"); INSERT INTO "episode_fts" ("rowid", "text") VALUES (new."id", new."text"); END',
        'INSERT INTO "episode_fts" ("episode_fts") VALUES (\'rebuild\')',
    ),
    # the classifier learns from the reviewer: raw and calibrated label scores, the label
    # bias per model and prompt, episode embeddings per model, and which source decided
    (
        'ALTER TABLE "episode" ADD COLUMN "model_scores" TEXT',
        'ALTER TABLE "episode" ADD COLUMN "calibrated_scores" TEXT',
        'ALTER TABLE "episode" ADD COLUMN "scores_model_sha256" TEXT',
        'ALTER TABLE "episode" ADD COLUMN "predicted_label" TEXT',
        'ALTER TABLE "episode" ADD COLUMN "predicted_by" TEXT',
        'ALTER TABLE "episode" ADD COLUMN "predicted_confidence" REAL',
        'ALTER TABLE "episode" ADD COLUMN "predicted_margin" REAL',
        'CREATE INDEX "episode_predicted_margin" ON "episode" ("predicted_margin")',
        'CREATE TABLE "label_bias" ("model_sha256" TEXT NOT NULL, "prompt_sha256" TEXT NOT NULL, "probabilities" TEXT NOT NULL, "inputs" TEXT NOT NULL, "created_at" TEXT NOT NULL, PRIMARY KEY ("model_sha256", "prompt_sha256"))',
        'CREATE TABLE "episode_embedding" ("episode_id" INTEGER NOT NULL, "model_sha256" TEXT NOT NULL, "dim" INTEGER NOT NULL, "vector" BLOB NOT NULL, PRIMARY KEY ("episode_id", "model_sha256"), FOREIGN KEY ("episode_id") REFERENCES "episode" ("id") ON DELETE CASCADE)',
        'CREATE INDEX "episode_embedding_episode_id" ON "episode_embedding" ("episode_id")',
    ),
    # review: an UPDATE with an edited text either rewords the pattern (NULL/0, the
    # default) or keeps the pattern's text (1); the reviewer chooses in the window
    ('ALTER TABLE "candidate" ADD COLUMN "keep_pattern_text" INTEGER',),
    # the guard's judgements made at staging (the configured model's second opinion, the
    # guard learned from the reviewer's rejections): stored, so the review shows them
    # without a model call and shows the same ones every time
    ('ALTER TABLE "candidate" ADD COLUMN "guard_flags" TEXT',),
    # curator watch: where each followed log was read up to, committed with its lines
    (
        'CREATE TABLE "follow_state" ("path" TEXT NOT NULL PRIMARY KEY, "device" INTEGER NOT NULL, "inode" INTEGER NOT NULL, "offset" INTEGER NOT NULL, "line" INTEGER NOT NULL, "head_length" INTEGER NOT NULL, "head_sha256" TEXT NOT NULL, "updated_at" TEXT NOT NULL)',
    ),
    # knowledge imported from another memory tool: its original ids and dates (a JSON
    # object, curator.store.memtool_origin), shown by the review beside the candidate
    ('ALTER TABLE "candidate" ADD COLUMN "origin" TEXT',),
    # several reviewers on one database: a decision's person ("decided_by", the reviewer's
    # name) apart from its channel ("decided_via": "window", "cli", "cli --accept-all"...,
    # which decided_by held until now, so it is copied over); who labelled an episode;
    # who committed a changeset (curator.store.profile)
    (
        'ALTER TABLE "candidate" ADD COLUMN "decided_via" TEXT',
        'UPDATE "candidate" SET "decided_via" = "decided_by" WHERE "decided_by" IS NOT NULL',
        'ALTER TABLE "episode" ADD COLUMN "label_reviewer" TEXT',
        'ALTER TABLE "changeset" ADD COLUMN "reviewer" TEXT',
    ),
    # the episode list sorted by label: unlabelled episodes first going up, on both
    # engines. SQLite's index on "label" holds that order already (NULLs first, then the
    # id); PostgreSQL's puts NULLs last, so it gets an index of its own (engine.py)
    (),
)

LATEST_VERSION = len(MIGRATIONS)

/**
 * Migration 1: the whole initial schema. `{prefix}` stands for the configured table prefix.
 *
 * Layout decisions (see the package README for the why):
 * - `jobs` is the hot table: one row per job with only what claims, fences, latches and reads of
 *   state need. Payloads, outputs, tags, edges and transitions live in side tables keyed by the
 *   job's `seq`, so the frequent row updates of a claim, heartbeat or outcome rewrite a small
 *   record, and are deleted with the job (`ON DELETE CASCADE`).
 * - States are small integers (`JOB_STATE_CODES`); instants are INTEGER epoch milliseconds.
 * - Every time-ordered scan reads a partial index that holds only the rows it can return: due
 *   scheduled jobs per queue (claims), leases per queue and globally (expiry sweeps, concurrency
 *   usage), terminal jobs per retention class (purges).
 * - `seq`, transition `position`, audit `seq` and workflow `seq` are AUTOINCREMENT, so a purged
 *   row's number is never handed out again (observer cursors and listing cursors rely on it).
 */
export const MIGRATION_000001 = `
CREATE TABLE "{prefix}migrations" (
  version INTEGER PRIMARY KEY
);

CREATE TABLE "{prefix}jobs" (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  job_name TEXT NOT NULL,
  queue TEXT NOT NULL,
  state INTEGER NOT NULL,
  due_at INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  releases INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  cancel_requested_by TEXT,
  enqueued_at INTEGER NOT NULL,
  terminal_at INTEGER,
  terminal_cause TEXT,
  dependency_mode INTEGER NOT NULL DEFAULT 0,
  parents_remaining INTEGER NOT NULL DEFAULT 0,
  has_children INTEGER NOT NULL DEFAULT 0,
  transition_count INTEGER NOT NULL DEFAULT 0,
  trace_context TEXT,
  schedule_id TEXT,
  workflow_id TEXT
);

CREATE INDEX "{prefix}jobs_due" ON "{prefix}jobs" (queue, due_at, seq) WHERE state = 0;
CREATE INDEX "{prefix}jobs_leased" ON "{prefix}jobs" (queue, lease_expires_at) WHERE state = 2;
CREATE INDEX "{prefix}jobs_lease_expiry" ON "{prefix}jobs" (lease_expires_at) WHERE state = 2;
CREATE INDEX "{prefix}jobs_done" ON "{prefix}jobs" (terminal_at) WHERE state IN (3, 4);
CREATE INDEX "{prefix}jobs_failed" ON "{prefix}jobs" (terminal_at) WHERE state IN (5, 6);
CREATE INDEX "{prefix}jobs_schedule" ON "{prefix}jobs" (schedule_id, state) WHERE schedule_id IS NOT NULL;
CREATE INDEX "{prefix}jobs_workflow" ON "{prefix}jobs" (workflow_id, state) WHERE workflow_id IS NOT NULL;

CREATE TABLE "{prefix}job_payloads" (
  job_seq INTEGER PRIMARY KEY REFERENCES "{prefix}jobs" (seq) ON DELETE CASCADE,
  payload TEXT NOT NULL
);

CREATE TABLE "{prefix}job_outputs" (
  job_seq INTEGER PRIMARY KEY REFERENCES "{prefix}jobs" (seq) ON DELETE CASCADE,
  output TEXT NOT NULL
);

CREATE TABLE "{prefix}job_tags" (
  job_seq INTEGER NOT NULL REFERENCES "{prefix}jobs" (seq) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_seq, ordinal)
) WITHOUT ROWID;

CREATE INDEX "{prefix}job_tags_key_value" ON "{prefix}job_tags" (key, value);

CREATE TABLE "{prefix}tag_counts" (
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  key_fold TEXT NOT NULL,
  value_fold TEXT NOT NULL,
  jobs INTEGER NOT NULL,
  PRIMARY KEY (key, value)
) WITHOUT ROWID;

CREATE INDEX "{prefix}tag_counts_value_fold" ON "{prefix}tag_counts" (key, value_fold, value);
CREATE INDEX "{prefix}tag_counts_key_fold" ON "{prefix}tag_counts" (key_fold, key);

CREATE TABLE "{prefix}job_edges" (
  child_seq INTEGER NOT NULL REFERENCES "{prefix}jobs" (seq) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  parent_id TEXT NOT NULL,
  parent_seq INTEGER NOT NULL,
  PRIMARY KEY (child_seq, ordinal)
) WITHOUT ROWID;

CREATE INDEX "{prefix}job_edges_parent" ON "{prefix}job_edges" (parent_seq);

CREATE TABLE "{prefix}transitions" (
  position INTEGER PRIMARY KEY AUTOINCREMENT,
  job_seq INTEGER NOT NULL REFERENCES "{prefix}jobs" (seq) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  at INTEGER NOT NULL,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  failure_detail TEXT
);

CREATE INDEX "{prefix}transitions_job" ON "{prefix}transitions" (job_seq, ordinal);

CREATE TABLE "{prefix}schedules" (
  id TEXT PRIMARY KEY,
  cron TEXT NOT NULL,
  time_zone TEXT NOT NULL,
  job_name TEXT NOT NULL,
  queue TEXT NOT NULL,
  payload TEXT NOT NULL,
  tags TEXT NOT NULL,
  catch_up INTEGER NOT NULL,
  no_overlap INTEGER NOT NULL,
  cursor INTEGER NOT NULL,
  skipped_ticks TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE "{prefix}queues" (
  queue TEXT PRIMARY KEY,
  paused INTEGER NOT NULL DEFAULT 0,
  concurrency_limit INTEGER
) WITHOUT ROWID;

CREATE TABLE "{prefix}audit" (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  actor TEXT NOT NULL,
  action INTEGER NOT NULL,
  target_kind INTEGER NOT NULL,
  target TEXT NOT NULL,
  detail TEXT
);

CREATE INDEX "{prefix}audit_target" ON "{prefix}audit" (target, seq);

CREATE TABLE "{prefix}workflows" (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE "{prefix}observers" (
  id TEXT PRIMARY KEY,
  subscription TEXT NOT NULL,
  cursor INTEGER NOT NULL,
  lease_owner TEXT,
  lease_expires_at INTEGER
) WITHOUT ROWID;

CREATE TABLE "{prefix}observer_deliveries" (
  observer_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  resolution INTEGER NOT NULL,
  next_attempt_at INTEGER,
  PRIMARY KEY (observer_id, position)
) WITHOUT ROWID;

CREATE TABLE "{prefix}observer_dead_letters" (
  observer_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  at INTEGER NOT NULL,
  delivery_attempts INTEGER NOT NULL,
  dead_lettered_at INTEGER NOT NULL,
  error TEXT NOT NULL,
  PRIMARY KEY (observer_id, position)
);
`;

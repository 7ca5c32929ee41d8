/**
 * Promise surface, migration 1: every table of `SqlitePromiseStore`. `{prefix}` stands for the
 * table prefix, shared with the job surface (`SqliteStore`); no table or index name overlaps, and
 * the surface keeps its own version table, so either class's `migrate()` creates only its own
 * tables and both live in one file.
 *
 * Layout decisions:
 * - Rows are the contract's rows (`PromiseRow`, `TaskRow`, …), one table each. States are the
 *   protocol's words (TEXT), instants INTEGER epoch milliseconds, params, values and tags JSON text.
 * - Every timer is a column with a time-ordered index that holds only the rows it can return:
 *   pending promises by deadline, tasks with a timer (retry or lease), schedules by next run, the
 *   outbox by availability (every message is available at some instant).
 * - A promise's `resonate:branch` tag is a generated column with its own index, so a preload reads
 *   its branch without scanning tags.
 * - Callbacks are keyed by (awaited, awaiter) and indexed by awaiter: a settlement reads the
 *   callbacks on a promise, a fulfilment deletes the callbacks of a task.
 * - The outbox is one table keyed by (kind, id, address). An `execute` is one per task: its address
 *   is its promise's `resonate:target`, which never changes, so the key names one row per task.
 *   `revision` comes from `outbox_revision`, a counter that only rises (an acknowledgement or a
 *   release of an older take must never match a newer message, even after the old row was
 *   deleted). `created_at` is when the message was written (an `execute` replaced by a newer
 *   version is a new message: written again, `takes` back to 0); `takes` counts its takes.
 * - The availability index `(available_at, revision)` is the only way a take reads the outbox. A
 *   WITHOUT ROWID table's index carries the primary key, so it covers `kind`, `id` and `address`:
 *   a take filtered by address or prefix walks the index in order and tests each entry's address
 *   without reading the table.
 * - No foreign keys: the contract's machine decides which rows exist, and only `reset` deletes
 *   promises or tasks (everything at once).
 * - Promises and schedules carry params of up to the value bound (1 MiB): ordinary rowid tables
 *   with a unique id. Tasks, callbacks, listeners and the outbox are small: WITHOUT ROWID, keyed.
 */
export const PROMISE_MIGRATION_000001 = `
CREATE TABLE "{prefix}promise_migrations" (
  version INTEGER PRIMARY KEY
);

CREATE TABLE "{prefix}promises" (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('pending', 'resolved', 'rejected', 'rejected_canceled', 'rejected_timedout')),
  param TEXT NOT NULL,
  value TEXT NOT NULL,
  tags TEXT NOT NULL,
  timeout_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  settled_at INTEGER,
  branch TEXT GENERATED ALWAYS AS (json_extract(tags, '$."resonate:branch"')) VIRTUAL
);

CREATE INDEX "{prefix}promises_timeout" ON "{prefix}promises" (timeout_at) WHERE state = 'pending';
CREATE INDEX "{prefix}promises_branch" ON "{prefix}promises" (branch) WHERE branch IS NOT NULL;

CREATE TABLE "{prefix}tasks" (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('pending', 'acquired', 'suspended', 'halted', 'fulfilled')),
  version INTEGER NOT NULL,
  resumes INTEGER NOT NULL,
  pid TEXT,
  ttl INTEGER,
  timer_at INTEGER
) WITHOUT ROWID;

CREATE INDEX "{prefix}tasks_timer" ON "{prefix}tasks" (timer_at) WHERE timer_at IS NOT NULL;

CREATE TABLE "{prefix}callbacks" (
  awaited TEXT NOT NULL,
  awaiter TEXT NOT NULL,
  PRIMARY KEY (awaited, awaiter)
) WITHOUT ROWID;

CREATE INDEX "{prefix}callbacks_awaiter" ON "{prefix}callbacks" (awaiter);

CREATE TABLE "{prefix}listeners" (
  promise_id TEXT NOT NULL,
  address TEXT NOT NULL,
  PRIMARY KEY (promise_id, address)
) WITHOUT ROWID;

CREATE TABLE "{prefix}outbox" (
  kind TEXT NOT NULL CHECK (kind IN ('execute', 'unblock')),
  id TEXT NOT NULL,
  address TEXT NOT NULL,
  version INTEGER NOT NULL,
  available_at INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  takes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, id, address)
) WITHOUT ROWID;

CREATE INDEX "{prefix}outbox_available" ON "{prefix}outbox" (available_at, revision);

CREATE TABLE "{prefix}outbox_revision" (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  revision INTEGER NOT NULL
);
INSERT INTO "{prefix}outbox_revision" (id, revision) VALUES (1, 0);

CREATE TABLE "{prefix}promise_schedules" (
  id TEXT PRIMARY KEY,
  cron TEXT NOT NULL,
  promise_id TEXT NOT NULL,
  promise_timeout INTEGER NOT NULL,
  promise_param TEXT NOT NULL,
  promise_tags TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  next_run_at INTEGER NOT NULL,
  last_run_at INTEGER
);

CREATE INDEX "{prefix}promise_schedules_due" ON "{prefix}promise_schedules" (next_run_at);
`;

import { JOB_STATE_CODES } from "@belay/contract";
import { COLUMN_BYTES, COLUMN_CHARS } from "../sqlserver-store-config.js";

// The filtered indexes name states by the contract's codes, which never change: the text this
// renders is the text released, byte for byte.
const STATE = JOB_STATE_CODES;
const ID = `varbinary(${COLUMN_BYTES.id})`;
const QUEUE = `varbinary(${COLUMN_BYTES.queue})`;

/**
 * Migration 1: the job tables. `S` is the bracket-quoted schema name.
 *
 * Layout decisions:
 * - Text that is compared or ordered (ids, queue and job names, worker ids, tag keys and values)
 *   is its UTF-8 bytes in `varbinary` (see `keys.ts`): exact equality, code point order, no
 *   collation. Display text (payload, output, causes, actors, failure detail, JSON of tags and
 *   parents on the job row) is `nvarchar(max)`, verbatim.
 * - Instants are `bigint` epoch milliseconds, states `tinyint` (the contract's codes).
 * - `jobs` is clustered on `seq` (enqueue order); the id is a unique nonclustered key. Only what a
 *   hot query reads is indexed, each index filtered on the state it serves: due jobs per queue
 *   (claims), leased jobs per queue and by expiry (lease expiry, concurrency usage), terminal jobs
 *   per retention class (purges). Filtered indexes serve only statements whose state predicate is
 *   a literal: the statements interpolate the contract's codes.
 * - `transitions.rv` is a `rowversion`: observers walk it in order and only below
 *   `MIN_ACTIVE_ROWVERSION()`, so a transaction that commits late is never passed over.
 * - Queue settings rows exist only for queues an operator configured; claims read them under
 *   shared locks held to commit, so a pause or limit change waits for claims in flight.
 * - No foreign keys: every write happens inside the operation that decides it, and a key check
 *   per insert would cost the hot path for nothing.
 */
export const migration000001 = (S: string): string => `
CREATE TABLE ${S}.queues (
  queue ${QUEUE} NOT NULL,
  paused bit NOT NULL,
  concurrency_limit int NULL,
  CONSTRAINT queues_pk PRIMARY KEY CLUSTERED (queue)
);

CREATE TABLE ${S}.jobs (
  seq bigint IDENTITY(1, 1) NOT NULL,
  id ${ID} NOT NULL,
  job_name varbinary(${COLUMN_BYTES.jobName}) NOT NULL,
  queue ${QUEUE} NOT NULL,
  state tinyint NOT NULL,
  due_at bigint NOT NULL,
  attempt int NOT NULL,
  releases int NOT NULL,
  lease_owner ${ID} NULL,
  lease_expires_at bigint NULL,
  cancel_requested_by nvarchar(max) NULL,
  enqueued_at bigint NOT NULL,
  terminal_at bigint NULL,
  terminal_cause nvarchar(max) NULL,
  dependency_mode tinyint NOT NULL,
  parents_remaining int NOT NULL,
  has_children bit NOT NULL,
  transition_count int NOT NULL,
  parent_ids nvarchar(max) NULL,
  tags nvarchar(max) NULL,
  trace_context nvarchar(${COLUMN_CHARS.traceContext}) NULL,
  schedule_id ${ID} NULL,
  workflow_id ${ID} NULL,
  retry nvarchar(max) NULL,
  payload nvarchar(max) NOT NULL,
  CONSTRAINT jobs_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX jobs_id ON ${S}.jobs (id);
CREATE INDEX jobs_due ON ${S}.jobs (queue, due_at, seq) WHERE state = ${STATE.scheduled};
CREATE INDEX jobs_leased ON ${S}.jobs (queue, lease_expires_at, seq) WHERE state = ${STATE.leased};
CREATE INDEX jobs_lease_expiry ON ${S}.jobs (lease_expires_at, seq) WHERE state = ${STATE.leased};
CREATE INDEX jobs_ended_succeeded_cancelled ON ${S}.jobs (terminal_at, seq) WHERE state IN (${STATE.succeeded}, ${STATE.cancelled});
CREATE INDEX jobs_ended_dead_quarantined ON ${S}.jobs (terminal_at, seq) WHERE state IN (${STATE.deadLettered}, ${STATE.quarantined});
CREATE INDEX jobs_schedule ON ${S}.jobs (schedule_id, state) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_workflow ON ${S}.jobs (workflow_id, state) WHERE workflow_id IS NOT NULL;

CREATE TABLE ${S}.job_outputs (
  job_seq bigint NOT NULL,
  output nvarchar(max) NOT NULL,
  CONSTRAINT job_outputs_pk PRIMARY KEY CLUSTERED (job_seq)
);

CREATE TABLE ${S}.job_tags (
  tag_seq bigint IDENTITY(1, 1) NOT NULL,
  job_seq bigint NOT NULL,
  tag_key varbinary(${COLUMN_BYTES.tagKey}) NOT NULL,
  tag_value varbinary(${COLUMN_BYTES.tagValue}) NOT NULL,
  key_folded varbinary(${COLUMN_BYTES.tagKey}) NOT NULL,
  value_folded varbinary(${COLUMN_BYTES.tagValue}) NOT NULL,
  CONSTRAINT job_tags_pk PRIMARY KEY CLUSTERED (tag_seq)
);
CREATE UNIQUE INDEX job_tags_job ON ${S}.job_tags (job_seq, tag_key, tag_value);
CREATE INDEX job_tags_by_tag ON ${S}.job_tags (tag_key, tag_value) INCLUDE (job_seq);

CREATE TABLE ${S}.job_edges (
  parent_seq bigint NOT NULL,
  child_seq bigint NOT NULL,
  CONSTRAINT job_edges_pk PRIMARY KEY CLUSTERED (parent_seq, child_seq)
);
CREATE INDEX job_edges_child ON ${S}.job_edges (child_seq);

CREATE TABLE ${S}.transitions (
  position bigint IDENTITY(1, 1) NOT NULL,
  rv rowversion NOT NULL,
  job_seq bigint NOT NULL,
  ordinal int NOT NULL,
  at bigint NOT NULL,
  state tinyint NOT NULL,
  attempt int NOT NULL,
  cause tinyint NULL,
  worker_id ${ID} NULL,
  failure_detail nvarchar(max) NULL,
  CONSTRAINT transitions_pk PRIMARY KEY CLUSTERED (position)
);
CREATE UNIQUE INDEX transitions_rv ON ${S}.transitions (rv);
CREATE INDEX transitions_job ON ${S}.transitions (job_seq, ordinal);

CREATE TABLE ${S}.schedules (
  id ${ID} NOT NULL,
  cron nvarchar(max) NOT NULL,
  time_zone nvarchar(max) NOT NULL,
  job_name varbinary(${COLUMN_BYTES.jobName}) NOT NULL,
  queue ${QUEUE} NOT NULL,
  payload nvarchar(max) NOT NULL,
  tags nvarchar(max) NOT NULL,
  catch_up nvarchar(16) NOT NULL,
  no_overlap bit NOT NULL,
  retry nvarchar(max) NULL,
  cursor_at bigint NOT NULL,
  skipped_ticks nvarchar(max) NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  CONSTRAINT schedules_pk PRIMARY KEY CLUSTERED (id)
);

CREATE TABLE ${S}.workflows (
  seq bigint IDENTITY(1, 1) NOT NULL,
  id ${ID} NOT NULL,
  name nvarchar(${COLUMN_CHARS.workflowName}) NOT NULL,
  created_at bigint NOT NULL,
  CONSTRAINT workflows_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX workflows_id ON ${S}.workflows (id);

CREATE TABLE ${S}.audit (
  seq bigint IDENTITY(1, 1) NOT NULL,
  at bigint NOT NULL,
  actor nvarchar(max) NOT NULL,
  action nvarchar(32) NOT NULL,
  target_kind nvarchar(16) NOT NULL,
  target ${ID} NOT NULL,
  detail nvarchar(max) NULL,
  CONSTRAINT audit_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE INDEX audit_target ON ${S}.audit (target, seq);

CREATE TABLE ${S}.observers (
  id ${ID} NOT NULL,
  states nvarchar(max) NOT NULL,
  job_names nvarchar(max) NULL,
  queues nvarchar(max) NULL,
  cursor_rv binary(8) NOT NULL,
  cursor_position bigint NOT NULL,
  lease_owner ${ID} NULL,
  lease_expires_at bigint NULL,
  CONSTRAINT observers_pk PRIMARY KEY CLUSTERED (id)
);

CREATE TABLE ${S}.observer_deliveries (
  observer_id ${ID} NOT NULL,
  position bigint NOT NULL,
  rv binary(8) NOT NULL,
  attempts int NOT NULL,
  resolved tinyint NOT NULL,
  next_attempt_at bigint NULL,
  CONSTRAINT observer_deliveries_pk PRIMARY KEY CLUSTERED (observer_id, position)
);

CREATE TABLE ${S}.observer_dead_letters (
  seq bigint IDENTITY(1, 1) NOT NULL,
  observer_id ${ID} NOT NULL,
  position bigint NOT NULL,
  job_id ${ID} NOT NULL,
  state tinyint NOT NULL,
  attempt int NOT NULL,
  at bigint NOT NULL,
  delivery_attempts int NOT NULL,
  dead_lettered_at bigint NOT NULL,
  error nvarchar(max) NOT NULL,
  CONSTRAINT observer_dead_letters_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE INDEX observer_dead_letters_observer ON ${S}.observer_dead_letters (observer_id, seq);
`;

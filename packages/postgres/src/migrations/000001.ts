import { JOB_STATE_CODES } from "@belay/contract";

// The partial indexes name states by the contract's codes, which never change: the text this
// renders is the text released, byte for byte.
const STATE = JOB_STATE_CODES;

/**
 * Migration 1: the whole schema. `S` is the quoted schema name.
 *
 * Layout decisions (DESIGN §8):
 * - `jobs` is the hot table. Instants are bigint epoch milliseconds, states smallint, payloads
 *   `text` (verbatim; `jsonb` would reformat them). Parents and tags are denormalised onto the
 *   row as JSON text so a claim returns everything without joins; `job_tags` and `job_edges`
 *   exist for search and for latch resolution.
 * - Only what a hot query reads is indexed, and each index is partial on the state it serves:
 *   due jobs (claims), leased jobs (lease expiry, concurrency usage), terminal jobs per
 *   retention class (purges). Columns a state change does not touch stay out of every index, so
 *   `has_children` and cancel requests are HOT updates. Heartbeats move `lease_expires_at`,
 *   which the expiry index needs: they are not HOT, by choice.
 * - Output lives in its own table, written only when a handler returns one.
 * - Each transition records its writing transaction (`xid`); observers walk (xid, position) and
 *   only below the oldest running transaction, so a transaction that commits late is never
 *   passed over.
 * - Every queue that ever held a job has a `queues` row (created by the insert of its first
 *   job), so pause and limit changes are row updates that serialize with claims through the
 *   row lock a claim takes on it.
 */
export const migration000001 = (S: string): string => `
CREATE TABLE ${S}.queues (
  queue text COLLATE "C" PRIMARY KEY,
  paused boolean NOT NULL DEFAULT false,
  concurrency_limit integer,
  configured boolean NOT NULL DEFAULT false
);

CREATE TABLE ${S}.jobs (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  job_name text COLLATE "C" NOT NULL,
  queue text COLLATE "C" NOT NULL,
  state smallint NOT NULL,
  due_at bigint NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  releases integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at bigint,
  cancel_requested_by text,
  enqueued_at bigint NOT NULL,
  terminal_at bigint,
  terminal_cause text,
  dependency_mode smallint NOT NULL DEFAULT 0,
  parents_remaining integer NOT NULL DEFAULT 0,
  has_children boolean NOT NULL DEFAULT false,
  transition_count integer NOT NULL DEFAULT 0,
  parent_ids text,
  tags text,
  trace_context text,
  schedule_id text COLLATE "C",
  workflow_id text COLLATE "C",
  payload text NOT NULL
) WITH (fillfactor = 90);

CREATE INDEX jobs_due ON ${S}.jobs (queue, due_at, seq) WHERE state = ${STATE.scheduled};
CREATE INDEX jobs_leased ON ${S}.jobs (queue, lease_expires_at, seq) WHERE state = ${STATE.leased};
CREATE INDEX jobs_ended_succeeded_cancelled ON ${S}.jobs (terminal_at, seq) WHERE state IN (${STATE.succeeded}, ${STATE.cancelled});
CREATE INDEX jobs_ended_dead_quarantined ON ${S}.jobs (terminal_at, seq) WHERE state IN (${STATE.deadLettered}, ${STATE.quarantined});
CREATE INDEX jobs_schedule ON ${S}.jobs (schedule_id, state) WHERE schedule_id IS NOT NULL;
CREATE INDEX jobs_workflow ON ${S}.jobs (workflow_id, state) WHERE workflow_id IS NOT NULL;

CREATE TABLE ${S}.job_outputs (
  job_seq bigint PRIMARY KEY,
  output text NOT NULL
);

CREATE TABLE ${S}.job_tags (
  job_seq bigint NOT NULL,
  key text COLLATE "C" NOT NULL,
  value text COLLATE "C" NOT NULL,
  PRIMARY KEY (job_seq, key, value)
);
CREATE INDEX job_tags_by_tag ON ${S}.job_tags (key, value);

CREATE TABLE ${S}.job_edges (
  parent_seq bigint NOT NULL,
  child_seq bigint NOT NULL,
  PRIMARY KEY (parent_seq, child_seq)
);
CREATE INDEX job_edges_child ON ${S}.job_edges (child_seq);

CREATE TABLE ${S}.transitions (
  xid xid8 NOT NULL,
  position bigint GENERATED ALWAYS AS IDENTITY,
  job_seq bigint NOT NULL,
  ordinal integer NOT NULL,
  at bigint NOT NULL,
  state smallint NOT NULL,
  attempt integer NOT NULL,
  failure_detail text,
  PRIMARY KEY (xid, position)
);
CREATE INDEX transitions_job ON ${S}.transitions (job_seq, ordinal);

CREATE TABLE ${S}.schedules (
  id text COLLATE "C" PRIMARY KEY,
  cron text NOT NULL,
  time_zone text NOT NULL,
  job_name text NOT NULL,
  queue text COLLATE "C" NOT NULL,
  payload text NOT NULL,
  tags text NOT NULL,
  catch_up text NOT NULL,
  no_overlap boolean NOT NULL,
  cursor bigint NOT NULL,
  skipped_ticks bigint[] NOT NULL DEFAULT '{}',
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);

CREATE TABLE ${S}.workflows (
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text COLLATE "C" PRIMARY KEY,
  name text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE ${S}.audit (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at bigint NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  target_kind text NOT NULL,
  target text COLLATE "C" NOT NULL,
  detail text
);
CREATE INDEX audit_target ON ${S}.audit (target, seq);

CREATE TABLE ${S}.observers (
  id text COLLATE "C" PRIMARY KEY,
  states smallint[] NOT NULL,
  job_names text[],
  queues text[],
  cursor_xid xid8 NOT NULL,
  cursor_position bigint NOT NULL,
  lease_owner text,
  lease_expires_at bigint
);

CREATE TABLE ${S}.observer_deliveries (
  observer_id text COLLATE "C" NOT NULL,
  xid xid8 NOT NULL,
  position bigint NOT NULL,
  attempts integer NOT NULL,
  resolved smallint NOT NULL DEFAULT 0,
  next_attempt_at bigint,
  PRIMARY KEY (observer_id, position)
);

CREATE TABLE ${S}.observer_dead_letters (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  observer_id text COLLATE "C" NOT NULL,
  position bigint NOT NULL,
  job_id text NOT NULL,
  state smallint NOT NULL,
  attempt integer NOT NULL,
  at bigint NOT NULL,
  delivery_attempts integer NOT NULL,
  dead_lettered_at bigint NOT NULL,
  error text NOT NULL
);
CREATE INDEX observer_dead_letters_observer ON ${S}.observer_dead_letters (observer_id, seq);

-- Aborts the statement that calls it with SQLSTATE BLY01 when its argument is true: how a
-- one-statement fast path hands over to the transactional path without committing anything.
CREATE FUNCTION ${S}.retry_in_transaction(needed boolean) RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
  IF needed THEN
    RAISE EXCEPTION 'belay: this batch needs a transaction' USING ERRCODE = 'BLY01';
  END IF;
  RETURN false;
END
$fn$;
`;

import { OUTBOX_ADDRESS_KEY, PROMISE_STATE_CODES } from "../sql/promise-rows.js";

/**
 * Promise migration 1: the whole promise surface (`PostgresPromiseStore`), in the same schema as
 * the job tables, versioned on its own (`promise_migrations`). `S` is the quoted schema name.
 *
 * Layout decisions:
 * - Instants are bigint epoch milliseconds and states smallint codes, as for jobs. A promise's
 *   param and value are JSON text, verbatim (never parsed by the server); its tags are `jsonb`,
 *   so searches filter with `@>`, and `branch` (the `resonate:branch` tag) is a generated column
 *   with an index of its own: the preload of an acquire reads it.
 * - Every timer is a column with a time-ordered index, partial where only some rows have one:
 *   pending promises by deadline, tasks by `timer_at` (retry or lease), schedules by next run,
 *   outbox messages by `available_at`. Scans take them with `FOR UPDATE SKIP LOCKED`.
 * - `promises.revision` rises with every write of the row and whenever a callback or listener is
 *   added on it (by an operation holding its lock): a load that had to wait for the lock compares
 *   it with the revision its snapshot saw, and reads the callbacks and listeners again if they
 *   may have changed meanwhile (see `sql/promise-rows.ts`).
 * - Keys holding an address (a listener, an outbox message) hold its MD5 instead (`address_key`):
 *   an id and an address within the contract's bounds (1,024 and 2,048 characters) would exceed
 *   the 2,704 bytes of a btree entry. A collision needs two addresses both chosen to collide (not
 *   a second preimage of someone's address), and would only merge those two.
 * - No foreign keys: every write happens under its promise's row lock, decided by the contract's
 *   machine, and a key check per insert would cost the hot path for nothing.
 * - The outbox has one row per key — `execute` by task id alone (its `address_key` is a constant),
 *   `unblock` by (promise, address), the id first (an acquire or a settle drops its task's
 *   `execute` by id) — and a revision from one sequence, so an
 *   acknowledgement of an older take never deletes a newer message, even after a delete and
 *   re-insert of the same key. `created_at` is when the message was written (an `execute`
 *   replaced by a newer version is a new message: it starts again, with `takes` 0) and `takes`
 *   counts its takes. A take filters by address (what its taker can deliver) on the same
 *   availability index: no index on the address, whose filters are lists and prefixes.
 */
export const promiseMigration000001 = (S: string): string => `
CREATE TABLE ${S}.promises (
  id text COLLATE "C" PRIMARY KEY,
  state smallint NOT NULL,
  param text NOT NULL,
  value text NOT NULL,
  tags jsonb NOT NULL,
  branch text COLLATE "C" GENERATED ALWAYS AS (tags ->> 'resonate:branch') STORED,
  timeout_at bigint NOT NULL,
  created_at bigint NOT NULL,
  settled_at bigint,
  revision bigint NOT NULL
) WITH (fillfactor = 90);
CREATE INDEX promises_timeout ON ${S}.promises (timeout_at, id) WHERE state = ${PROMISE_STATE_CODES.pending};
CREATE INDEX promises_branch ON ${S}.promises (branch) WHERE branch IS NOT NULL;

CREATE TABLE ${S}.tasks (
  id text COLLATE "C" PRIMARY KEY,
  state smallint NOT NULL,
  version bigint NOT NULL,
  resumes integer NOT NULL,
  pid text,
  ttl integer,
  timer_at bigint
) WITH (fillfactor = 80);
CREATE INDEX tasks_timer ON ${S}.tasks (timer_at, id) WHERE timer_at IS NOT NULL;

CREATE TABLE ${S}.callbacks (
  awaited text COLLATE "C" NOT NULL,
  awaiter text COLLATE "C" NOT NULL,
  PRIMARY KEY (awaited, awaiter)
);
CREATE INDEX callbacks_awaiter ON ${S}.callbacks (awaiter);

CREATE TABLE ${S}.listeners (
  promise_id text COLLATE "C" NOT NULL,
  address text NOT NULL,
  address_key uuid GENERATED ALWAYS AS (md5(address)::uuid) STORED,
  PRIMARY KEY (promise_id, address_key)
);

CREATE SEQUENCE ${S}.outbox_revision AS bigint;
CREATE TABLE ${S}.outbox (
  kind smallint NOT NULL,
  id text COLLATE "C" NOT NULL,
  address text NOT NULL,
  address_key uuid GENERATED ALWAYS AS (${OUTBOX_ADDRESS_KEY("kind", "address")}) STORED,
  version bigint NOT NULL,
  available_at bigint NOT NULL,
  revision bigint NOT NULL,
  created_at bigint NOT NULL,
  takes integer NOT NULL DEFAULT 0,
  PRIMARY KEY (id, kind, address_key)
);
CREATE INDEX outbox_available ON ${S}.outbox (available_at, revision);

CREATE TABLE ${S}.promise_schedules (
  id text COLLATE "C" PRIMARY KEY,
  cron text NOT NULL,
  promise_id text NOT NULL,
  promise_timeout bigint NOT NULL,
  promise_param text NOT NULL,
  promise_tags jsonb NOT NULL,
  created_at bigint NOT NULL,
  next_run_at bigint NOT NULL,
  last_run_at bigint
);
CREATE INDEX promise_schedules_next_run ON ${S}.promise_schedules (next_run_at, id);
`;

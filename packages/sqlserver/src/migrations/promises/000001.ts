/**
 * Promise migration 1: the promise surface (`SqlServerPromiseStore`), in the same schema as the
 * job tables, versioned on its own (`promise_migrations`). `S` is the bracket-quoted schema name.
 *
 * Layout decisions:
 * - Ids are UTF-8 bytes in `varbinary(1024)` (the contract bounds them at 1,024 bytes), unique
 *   nonclustered keys (a clustered key may hold 900 bytes); tables are clustered on an identity.
 *   Pairs of long keys (a callback's two promises, a listener's promise and address, an outbox
 *   message's id and address) are keyed by one of them and the SHA-256 of the other, computed by
 *   the store: 1,024 + 32 bytes stays under the 1,700 bytes of a nonclustered key.
 * - Instants `bigint`, states `tinyint`. Params, values and tags are JSON text, verbatim.
 *   `branch_key` is the SHA-256 of the `resonate:branch` tag, indexed for the preload of an acquire.
 * - Every timer is a column with a time-ordered filtered index: pending promises by deadline,
 *   tasks by `timer_at`, schedules by next run, outbox messages by `available_at`; scans read them
 *   with `UPDLOCK, READPAST, ROWLOCK`, so concurrent scanners split the work.
 * - An outbox row's revision is its `rowversion`: it changes with every write and take, and is
 *   never reused, so an acknowledgement of an older take never deletes a newer message.
 */
export const promiseMigration000001 = (S: string): string => `
CREATE TABLE ${S}.promises (
  seq bigint IDENTITY(1, 1) NOT NULL,
  id varbinary(1024) NOT NULL,
  state tinyint NOT NULL,
  param nvarchar(max) NOT NULL,
  value nvarchar(max) NOT NULL,
  tags nvarchar(max) NOT NULL,
  branch_key binary(32) NULL,
  timeout_at bigint NOT NULL,
  created_at bigint NOT NULL,
  settled_at bigint NULL,
  CONSTRAINT promises_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX promises_id ON ${S}.promises (id);
CREATE INDEX promises_timeout ON ${S}.promises (timeout_at, seq) INCLUDE (id) WHERE state = 0;
CREATE INDEX promises_branch ON ${S}.promises (branch_key) WHERE branch_key IS NOT NULL;

CREATE TABLE ${S}.tasks (
  seq bigint IDENTITY(1, 1) NOT NULL,
  id varbinary(1024) NOT NULL,
  state tinyint NOT NULL,
  version bigint NOT NULL,
  resumes int NOT NULL,
  pid nvarchar(max) NULL,
  ttl int NULL,
  timer_at bigint NULL,
  CONSTRAINT tasks_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX tasks_id ON ${S}.tasks (id);
CREATE INDEX tasks_timer ON ${S}.tasks (timer_at, seq) INCLUDE (id) WHERE timer_at IS NOT NULL;

CREATE TABLE ${S}.callbacks (
  seq bigint IDENTITY(1, 1) NOT NULL,
  awaited varbinary(1024) NOT NULL,
  awaiter varbinary(1024) NOT NULL,
  awaiter_key binary(32) NOT NULL,
  CONSTRAINT callbacks_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX callbacks_edge ON ${S}.callbacks (awaited, awaiter_key);
CREATE INDEX callbacks_awaiter ON ${S}.callbacks (awaiter);

CREATE TABLE ${S}.listeners (
  seq bigint IDENTITY(1, 1) NOT NULL,
  promise_id varbinary(1024) NOT NULL,
  address nvarchar(max) NOT NULL,
  address_key binary(32) NOT NULL,
  CONSTRAINT listeners_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX listeners_key ON ${S}.listeners (promise_id, address_key);

CREATE TABLE ${S}.outbox (
  seq bigint IDENTITY(1, 1) NOT NULL,
  kind tinyint NOT NULL,
  id varbinary(1024) NOT NULL,
  address nvarchar(max) NOT NULL,
  address_bytes varbinary(8000) NOT NULL,
  address_key binary(32) NOT NULL,
  version bigint NOT NULL,
  available_at bigint NOT NULL,
  rv rowversion NOT NULL,
  created_at bigint NOT NULL,
  takes int NOT NULL,
  CONSTRAINT outbox_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX outbox_key ON ${S}.outbox (id, kind, address_key);
CREATE INDEX outbox_available ON ${S}.outbox (available_at, seq);

CREATE TABLE ${S}.promise_schedules (
  seq bigint IDENTITY(1, 1) NOT NULL,
  id varbinary(1024) NOT NULL,
  cron nvarchar(max) NOT NULL,
  promise_id nvarchar(max) NOT NULL,
  promise_timeout bigint NOT NULL,
  promise_param nvarchar(max) NOT NULL,
  promise_tags nvarchar(max) NOT NULL,
  created_at bigint NOT NULL,
  next_run_at bigint NOT NULL,
  last_run_at bigint NULL,
  CONSTRAINT promise_schedules_pk PRIMARY KEY CLUSTERED (seq)
);
CREATE UNIQUE INDEX promise_schedules_id ON ${S}.promise_schedules (id);
CREATE INDEX promise_schedules_next_run ON ${S}.promise_schedules (next_run_at, seq);
`;

// What a PostgreSQL hot-path layout costs per job, before anyone builds it (issue 17: "measure
// each idea before keeping it"). Not part of `pnpm bench`, and not Belay's store: each layout is
// a few hand-written tables and the three statements a job's life needs on them — enqueue in
// batches, claim a batch (FOR UPDATE SKIP LOCKED, as Belay and graphile-worker claim), report a
// batch succeeded — run one after another on one connection of a throwaway cluster. Per layout it
// prints WAL bytes and records per job for enqueue and for processing (claim + report, plus the
// bulk move of finished rows where the layout has one), by record type (pg_walinspect), and the
// server's execution time per job. WAL does not depend on the machine's load; times do.
//
// Layouts:
//  - current: Belay's schema today (migration 1): a wide row with two unique keys (seq, id) and
//    partial indexes per state; one transition row per state change, two indexes.
//  - one-key: as current, with `id` the only unique key (seq an unindexed order column) and
//    transitions keyed by the job's id.
//  - current-feed: as current, but each state change appends to a history column of the row it
//    updates anyway, and observers walk a feed of one row per statement (arrays), not one
//    transition row (and two index entries) per state change.
//  - current-feed-lean: as current-feed, with fillfactor 50 (an update that stays on its page
//    logs no lock record for the old version) and no lock pass before the report's update.
//  - narrow: a runnable table (inserted at enqueue, deleted at claim), a lease table (inserted at
//    claim, deleted at report, no index but its key: expiry sweeps scan it, it holds only jobs in
//    flight), the wide row updated once at the end and HOT (no index on what changes), finished
//    rows moved to a done table in bulk; transitions as current.
//  - narrow-feed: as narrow, but the claim's transition waits in the lease row and both land in
//    the wide row's history at the end (one HOT update), and observers walk a feed of one row per
//    statement (arrays), not one row per transition.
//  - graphile-like: a reference without history, shaped like graphile-worker's jobs table (one
//    key, one partial index on what is available; claim updates the lock columns, completion
//    deletes the row). Its figure should sit near graphile-worker's measured 473 kB per 1,000.
//
//   cd bench && npx tsx --conditions=@belay/source src/tools/layout-probe.ts [--jobs 20000] [--batch 100] [--layouts current,narrow]
import pg from "pg";
import { log, throwawayCluster } from "../infra.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const JOBS = Number(arg("jobs", "20000"));
const BATCH = Number(arg("batch", "100"));
const WORKER = "host-4711:bench:0:K3M9QX";

interface Layout {
  readonly name: string;
  readonly schema: string;
  /** Inserts the jobs `$1::text[]` (ids), due at `$2`. */
  readonly enqueue: string;
  /** Claims up to `$1` jobs due at `$2` for worker `$3`; returns their `id`s (and `attempt`). */
  readonly claim: string;
  /** Reports the jobs `$1::text[]` succeeded at `$2` by worker `$3` at attempts `$4::int[]`; returns `n`, how many ended. */
  readonly report: string;
  /** Run once after processing (the bulk move of finished rows), or null. */
  readonly finish: string | null;
}

const WIDE = `
  job_name text COLLATE "C" NOT NULL,
  queue text COLLATE "C" NOT NULL,
  state smallint NOT NULL,
  due_at bigint NOT NULL,
  attempt integer NOT NULL DEFAULT 0,
  releases integer NOT NULL DEFAULT 0,
  enqueued_at bigint NOT NULL,
  terminal_at bigint,
  terminal_cause text,
  dependency_mode smallint NOT NULL DEFAULT 0,
  parents_remaining integer NOT NULL DEFAULT 0,
  has_children boolean NOT NULL DEFAULT false,
  transition_count integer NOT NULL DEFAULT 0,
  parent_ids text, tags text, trace_context text, schedule_id text, workflow_id text, retry text,
  payload text NOT NULL`;

const TRANSITIONS = (key: string) => `
CREATE TABLE transitions (
  xid xid8 NOT NULL,
  position bigint GENERATED ALWAYS AS IDENTITY,
  ${key} NOT NULL,
  ordinal integer NOT NULL, at bigint NOT NULL, state smallint NOT NULL, attempt integer NOT NULL,
  failure_detail text, cause smallint, worker_id text,
  PRIMARY KEY (xid, position)
);`;

const current: Layout = {
  name: "current",
  schema: `
CREATE TABLE jobs (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  lease_owner text, lease_expires_at bigint, cancel_requested_by text,
  ${WIDE}
) WITH (fillfactor = 90);
CREATE INDEX jobs_due ON jobs (queue, due_at, seq) WHERE state = 0;
CREATE INDEX jobs_leased ON jobs (queue, lease_expires_at, seq) WHERE state = 2;
CREATE INDEX jobs_ended_a ON jobs (terminal_at, seq) WHERE state IN (3, 5);
CREATE INDEX jobs_ended_b ON jobs (terminal_at, seq) WHERE state IN (4, 6);
${TRANSITIONS("job_seq bigint")}
CREATE INDEX transitions_job ON transitions (job_seq, ordinal);`,
  enqueue: `
WITH ins AS (
  INSERT INTO jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count)
  SELECT id, 'bench.noop', 'bench', 0, $2, $2, '{"i":' || o || '}', 1 FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)
  RETURNING seq
)
INSERT INTO transitions (xid, job_seq, ordinal, at, state, attempt, cause)
SELECT pg_current_xact_id(), seq, 1, $2, 0, 0, 0 FROM ins ORDER BY seq`,
  claim: `
WITH picked AS MATERIALIZED (
  SELECT seq FROM jobs WHERE queue = 'bench' AND state = 0 AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE jobs j SET state = 2, attempt = j.attempt + 1, lease_owner = $3, lease_expires_at = $2 + 30000, transition_count = j.transition_count + 1
  WHERE j.seq = ANY(ARRAY(SELECT seq FROM picked))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
log AS (
  INSERT INTO transitions (xid, job_seq, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), seq, transition_count, $2, 2, attempt, 1, $3 FROM claimed ORDER BY seq
)
SELECT id, attempt FROM claimed`,
  report: `
WITH cur AS MATERIALIZED (
  SELECT j.seq FROM unnest($1::text[], $4::int[]) AS r(id, attempt)
  CROSS JOIN LATERAL (SELECT seq, state, lease_owner, attempt FROM jobs j WHERE j.id = r.id OFFSET 0) j
  WHERE j.state = 2 AND j.lease_owner = $3 AND j.attempt = r.attempt
),
locked AS MATERIALIZED (SELECT seq FROM jobs WHERE seq = ANY(ARRAY(SELECT seq FROM cur)) ORDER BY seq FOR NO KEY UPDATE),
ended AS (
  UPDATE jobs j SET state = 3, terminal_at = $2, terminal_cause = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
    transition_count = j.transition_count + 1
  WHERE j.seq = ANY(ARRAY(SELECT seq FROM locked))
  RETURNING j.seq, j.attempt, j.transition_count
)
, log AS (
  INSERT INTO transitions (xid, job_seq, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), seq, transition_count, $2, 3, attempt, 2, $3 FROM ended ORDER BY seq
)
SELECT count(*)::int AS n FROM ended`,
  finish: null,
};

const oneKey: Layout = {
  name: "one-key",
  schema: `
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  lease_owner text, lease_expires_at bigint, cancel_requested_by text,
  ${WIDE}
) WITH (fillfactor = 90);
CREATE INDEX jobs_due ON jobs (queue, due_at, seq) WHERE state = 0;
CREATE INDEX jobs_leased ON jobs (queue, lease_expires_at) WHERE state = 2;
CREATE INDEX jobs_ended_a ON jobs (terminal_at) WHERE state IN (3, 5);
CREATE INDEX jobs_ended_b ON jobs (terminal_at) WHERE state IN (4, 6);
${TRANSITIONS('job_id text COLLATE "C"')}
CREATE INDEX transitions_job ON transitions (job_id, ordinal);`,
  enqueue: `
WITH ins AS (
  INSERT INTO jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count)
  SELECT id, 'bench.noop', 'bench', 0, $2, $2, '{"i":' || o || '}', 1 FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)
  RETURNING id, seq
)
INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause)
SELECT pg_current_xact_id(), id, 1, $2, 0, 0, 0 FROM ins ORDER BY seq`,
  claim: `
WITH picked AS MATERIALIZED (
  SELECT id FROM jobs WHERE queue = 'bench' AND state = 0 AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE jobs j SET state = 2, attempt = j.attempt + 1, lease_owner = $3, lease_expires_at = $2 + 30000, transition_count = j.transition_count + 1
  WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
log AS (
  INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), id, transition_count, $2, 2, attempt, 1, $3 FROM claimed ORDER BY seq
)
SELECT id, attempt FROM claimed`,
  report: `
WITH locked AS MATERIALIZED (
  SELECT j.id FROM jobs j JOIN unnest($1::text[], $4::int[]) AS r(id, attempt) ON j.id = r.id
  WHERE j.state = 2 AND j.lease_owner = $3 AND j.attempt = r.attempt ORDER BY j.id FOR NO KEY UPDATE OF j
),
ended AS (
  UPDATE jobs j SET state = 3, terminal_at = $2, terminal_cause = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
    transition_count = j.transition_count + 1
  WHERE j.id = ANY(ARRAY(SELECT id FROM locked))
  RETURNING j.id, j.seq, j.attempt, j.transition_count
)
, log AS (
  INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), id, transition_count, $2, 3, attempt, 2, $3 FROM ended ORDER BY seq
)
SELECT count(*)::int AS n FROM ended`,
  finish: null,
};

const FEED = `
CREATE TABLE feed (
  xid xid8 NOT NULL, position bigint GENERATED ALWAYS AS IDENTITY,
  job_ids text[] NOT NULL, ordinals int[] NOT NULL, states int2[] NOT NULL, attempts int[] NOT NULL, at bigint NOT NULL, worker_id text,
  PRIMARY KEY (xid, position)
);`;

/** Appends one history entry `[state, attempt, at, cause]` to a JSON-array text column. */
const appendHistory = (state: number, cause: number) =>
  `history = left(j.history, -1) || ',[${state},' || (j.attempt + ${state === 2 ? 1 : 0}) || ',' || $2::bigint || ',${cause}]]'`;

const currentFeed: Layout = {
  name: "current-feed",
  schema: `
CREATE TABLE jobs (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  lease_owner text, lease_expires_at bigint, cancel_requested_by text,
  ${WIDE},
  history text
) WITH (fillfactor = 90);
CREATE INDEX jobs_due ON jobs (queue, due_at, seq) WHERE state = 0;
CREATE INDEX jobs_leased ON jobs (queue, lease_expires_at, seq) WHERE state = 2;
CREATE INDEX jobs_ended_a ON jobs (terminal_at, seq) WHERE state IN (3, 5);
CREATE INDEX jobs_ended_b ON jobs (terminal_at, seq) WHERE state IN (4, 6);
${FEED}`,
  enqueue: `
WITH ins AS (
  INSERT INTO jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count, history)
  SELECT id, 'bench.noop', 'bench', 0, $2, $2, '{"i":' || o || '}', 1, '[[0,0,' || $2::bigint || ',0]]'
  FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)
  RETURNING seq, id
)
INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at)
SELECT pg_current_xact_id(), array_agg(id ORDER BY seq), array_agg(1), array_agg(0::int2), array_agg(0), $2 FROM ins`,
  claim: `
WITH picked AS MATERIALIZED (
  SELECT seq FROM jobs WHERE queue = 'bench' AND state = 0 AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE jobs j SET state = 2, attempt = j.attempt + 1, lease_owner = $3, lease_expires_at = $2 + 30000,
    transition_count = j.transition_count + 1, ${appendHistory(2, 1)}
  WHERE j.seq = ANY(ARRAY(SELECT seq FROM picked))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
log AS (
  INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at, worker_id)
  SELECT pg_current_xact_id(), array_agg(id ORDER BY seq), array_agg(transition_count ORDER BY seq), array_agg(2::int2), array_agg(attempt ORDER BY seq), $2, $3
  FROM claimed HAVING count(*) > 0
)
SELECT id, attempt FROM claimed`,
  report: `
WITH cur AS MATERIALIZED (
  SELECT j.seq FROM unnest($1::text[], $4::int[]) AS r(id, attempt)
  CROSS JOIN LATERAL (SELECT seq, state, lease_owner, attempt FROM jobs j WHERE j.id = r.id OFFSET 0) j
  WHERE j.state = 2 AND j.lease_owner = $3 AND j.attempt = r.attempt
),
locked AS MATERIALIZED (SELECT seq FROM jobs WHERE seq = ANY(ARRAY(SELECT seq FROM cur)) ORDER BY seq FOR NO KEY UPDATE),
ended AS (
  UPDATE jobs j SET state = 3, terminal_at = $2, terminal_cause = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
    transition_count = j.transition_count + 1, ${appendHistory(3, 2)}
  WHERE j.seq = ANY(ARRAY(SELECT seq FROM locked))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
log AS (
  INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at, worker_id)
  SELECT pg_current_xact_id(), array_agg(id ORDER BY seq), array_agg(transition_count ORDER BY seq), array_agg(3::int2), array_agg(attempt ORDER BY seq), $2, $3
  FROM ended HAVING count(*) > 0
)
SELECT count(*)::int AS n FROM ended`,
  finish: null,
};

/** current-feed with its updates kept on their page (fillfactor 50) and no separate lock pass before the report's update. */
const currentFeedLean: Layout = {
  ...currentFeed,
  name: "current-feed-lean",
  schema: currentFeed.schema.replace("fillfactor = 90", "fillfactor = 50"),
  report: currentFeed.report
    .replace(/locked AS MATERIALIZED \(.*\),\n/, "")
    .replace("ARRAY(SELECT seq FROM locked)", "ARRAY(SELECT seq FROM cur)"),
};

/** The narrow layouts' tables; `history` adds the wide row's history column and the feed. */
const narrowSchema = (feed: boolean) => `
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  ${WIDE}${feed ? ",\n  history text" : ""}
) WITH (fillfactor = 70);
CREATE TABLE runnable (
  queue text COLLATE "C" NOT NULL, due_at bigint NOT NULL, seq bigint NOT NULL, id text COLLATE "C" NOT NULL
);
CREATE INDEX runnable_due ON runnable (queue, due_at, seq);
CREATE TABLE leases (
  id text COLLATE "C" PRIMARY KEY, owner text NOT NULL, attempt integer NOT NULL, expires_at bigint NOT NULL${feed ? ", claimed_at bigint NOT NULL" : ""}
) WITH (fillfactor = 70);
CREATE TABLE done (LIKE jobs INCLUDING DEFAULTS, PRIMARY KEY (id));
${feed
    ? FEED
    : `${TRANSITIONS('job_id text COLLATE "C"')}\nCREATE INDEX transitions_job ON transitions (job_id, ordinal);`}`;

const NARROW_ENQUEUE = (feed: boolean) => `
WITH ins AS (
  INSERT INTO jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count${feed ? ", history" : ""})
  SELECT id, 'bench.noop', 'bench', 0, $2, $2, '{"i":' || o || '}', 1${feed ? ", '[[0,0,' || $2::bigint || ',0]]'" : ""}
  FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)
  RETURNING id, seq, queue, due_at
),
run AS (INSERT INTO runnable (queue, due_at, seq, id) SELECT queue, due_at, seq, id FROM ins)
${feed
    ? `INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at)
SELECT pg_current_xact_id(), array_agg(id ORDER BY seq), array_agg(1), array_agg(0::int2), array_agg(0), $2 FROM ins`
    : `INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause)
SELECT pg_current_xact_id(), id, 1, $2, 0, 0, 0 FROM ins ORDER BY seq`}`;

const NARROW_CLAIM = (feed: boolean) => `
WITH taken AS (
  DELETE FROM runnable r WHERE r.ctid = ANY(ARRAY(
    SELECT ctid FROM runnable WHERE queue = 'bench' AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED))
  RETURNING r.id, r.seq
),
leased AS (
  INSERT INTO leases (id, owner, attempt, expires_at${feed ? ", claimed_at" : ""})
  SELECT t.id, $3, j.attempt + 1, $2 + 30000${feed ? ", $2" : ""} FROM taken t JOIN jobs j ON j.id = t.id
  RETURNING id, attempt
)${feed
    ? `,
log AS (
  INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at, worker_id)
  SELECT pg_current_xact_id(), array_agg(id), array_agg(2), array_agg(2::int2), array_agg(attempt), $2, $3 FROM leased HAVING count(*) > 0
)`
    : `,
log AS (
  INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), id, 2, $2, 2, attempt, 1, $3 FROM leased
)`}
SELECT id, attempt FROM leased`;

const NARROW_REPORT = (feed: boolean) => `
WITH gone AS (
  DELETE FROM leases l USING unnest($1::text[], $4::int[]) AS r(id, attempt)
  WHERE l.id = r.id AND l.owner = $3 AND l.attempt = r.attempt AND l.expires_at > $2
  RETURNING l.id, l.attempt${feed ? ", l.claimed_at" : ""}
),
ended AS (
  UPDATE jobs j SET state = 3, attempt = g.attempt, terminal_at = $2, terminal_cause = 'succeeded', transition_count = j.transition_count + 2${
    feed ? `,
    history = left(j.history, -1) || ',[2,' || g.attempt || ',' || g.claimed_at || ',1],[3,' || g.attempt || ',' || $2::bigint || ',2]]'` : ""}
  FROM gone g WHERE j.id = g.id
  RETURNING j.id, j.seq, j.attempt, j.transition_count
)
, log AS (${feed
    ? `INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at, worker_id)
  SELECT pg_current_xact_id(), array_agg(id), array_agg(transition_count), array_agg(3::int2), array_agg(attempt), $2, $3 FROM ended HAVING count(*) > 0`
    : `INSERT INTO transitions (xid, job_id, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), id, transition_count, $2, 3, attempt, 2, $3 FROM ended ORDER BY seq`})
SELECT count(*)::int AS n FROM ended`;

const NARROW_FINISH = `
WITH moved AS (DELETE FROM jobs WHERE state >= 3 RETURNING *)
INSERT INTO done SELECT * FROM moved`;

const narrow: Layout = { name: "narrow", schema: narrowSchema(false), enqueue: NARROW_ENQUEUE(false), claim: NARROW_CLAIM(false), report: NARROW_REPORT(false), finish: NARROW_FINISH };
const narrowFeed: Layout = { name: "narrow-feed", schema: narrowSchema(true), enqueue: NARROW_ENQUEUE(true), claim: NARROW_CLAIM(true), report: NARROW_REPORT(true), finish: NARROW_FINISH };

const graphileLike: Layout = {
  name: "graphile-like",
  schema: `
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key text, task_identifier text NOT NULL, payload json NOT NULL, priority smallint NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL, attempts smallint NOT NULL DEFAULT 0, max_attempts smallint NOT NULL DEFAULT 25,
  last_error text, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
  locked_at timestamptz, locked_by text, revision integer NOT NULL DEFAULT 0, flags jsonb,
  is_available boolean GENERATED ALWAYS AS (locked_at IS NULL AND attempts < max_attempts) STORED
);
CREATE INDEX jobs_main ON jobs (priority, run_at) INCLUDE (id, task_identifier) WHERE is_available = true;`,
  enqueue: `
INSERT INTO jobs (key, task_identifier, payload, run_at)
SELECT NULL, 'bench.noop', json_build_object('i', o), to_timestamp($2::bigint / 1000.0) FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)`,
  claim: `
WITH j AS (
  SELECT id FROM jobs WHERE is_available = true AND run_at <= to_timestamp($2::bigint / 1000.0)
  ORDER BY priority, run_at LIMIT $1 FOR UPDATE SKIP LOCKED
)
UPDATE jobs SET attempts = jobs.attempts + 1, locked_by = $3, locked_at = now() FROM j WHERE jobs.id = j.id
RETURNING jobs.id::text AS id, jobs.attempts::int AS attempt`,
  report: `
WITH d AS (DELETE FROM jobs WHERE id = ANY($1::text[]::bigint[]) AND locked_by = $3 AND $2::bigint > 0 AND cardinality($4::int[]) >= 0 RETURNING 1)
SELECT count(*)::int AS n FROM d`,
  finish: null,
};

const LAYOUTS = [current, oneKey, currentFeed, currentFeedLean, narrow, narrowFeed, graphileLike];
const chosen = arg("layouts", LAYOUTS.map((l) => l.name).join(",")).split(",");

interface Phase {
  walB: number;
  records: number;
  execMs: number;
  byType: { kind: string; n: number; bytes: number }[];
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const ids = (from: number, n: number) => Array.from({ length: n }, (_, k) => `01JOB${String(from + k).padStart(21, "0")}`);

const { startWithStatements, cleanup } = throwawayCluster("belay-layout-", Number(arg("pg-port", "55443")));
try {
  const { url, side } = await startWithStatements("layout");
  side.on("error", () => undefined); // the cluster stops before this client on a failure
  await side.query("create extension if not exists pg_walinspect");
  const lsn = async () => (await side.query("select pg_current_wal_lsn()::text as l")).rows[0].l as string;
  /** Runs `work` and returns the WAL it wrote (by record type) and its duration. */
  async function measured(work: () => Promise<void>, checkpoint: boolean): Promise<Phase> {
    // Each layout's enqueue starts after a checkpoint (its first page writes are full-page images
    // alike); processing follows without one, as in the bench.
    if (checkpoint) await side.query("checkpoint");
    const from = await lsn();
    const t0 = performance.now();
    await work();
    const execMs = performance.now() - t0;
    const { rows } = await side.query(`
      select "resource_manager/record_type" as kind, count::float8 as n, combined_size::float8 as bytes
      from pg_get_wal_stats($1::pg_lsn, pg_current_wal_lsn(), true) where count > 0 order by combined_size desc`, [from]);
    const byType = rows.map((r) => ({ kind: r.kind as string, n: r.n as number, bytes: r.bytes as number }));
    return { walB: byType.reduce((a, r) => a + r.bytes, 0), records: byType.reduce((a, r) => a + r.n, 0), execMs, byType };
  }

  const lines = [
    `# layout-probe — ${new Date().toISOString()}, ${JOBS} jobs, batches of ${BATCH}, one connection, fsync on`,
    "",
    "| layout | enqueue WAL B/job | enqueue records/job | processing WAL B/job | processing records/job | processing ms/1k (loaded machine: indicative) |",
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const layout of LAYOUTS.filter((l) => chosen.includes(l.name))) {
    await side.query("drop schema if exists probe cascade; create schema probe");
    const db = new pg.Client({ connectionString: url, options: "-c search_path=probe" });
    db.on("error", (e) => log(`${layout.name}: connection error ${e.message}`));
    await db.connect();
    await db.query(layout.schema);
    const at = Date.now();
    const enqueue = await measured(async () => {
      for (let s = 0; s < JOBS; s += 1000) await db.query(layout.enqueue, [ids(s, Math.min(1000, JOBS - s)), at]);
    }, true);
    const processing = await measured(async () => {
      let done = 0;
      while (done < JOBS) {
        const { rows } = await db.query(layout.claim, [BATCH, at + 1, WORKER]);
        if (rows.length === 0) throw new Error(`${layout.name}: claimed nothing with ${JOBS - done} jobs left`);
        const report = await db.query(layout.report, [rows.map((r) => r.id), at + 2, WORKER, rows.map((r) => r.attempt)]);
        if (report.rows[0].n !== rows.length) {
          throw new Error(`${layout.name}: reported ${report.rows[0].n} of ${rows.length}`);
        }
        done += rows.length;
      }
      if (layout.finish) await db.query(layout.finish);
    }, false);
    await db.end();
    const per = (x: number) => x / JOBS;
    lines.push(`| ${layout.name} | ${Math.round(per(enqueue.walB))} | ${r1(per(enqueue.records))} | ${Math.round(per(processing.walB))} | ${r1(per(processing.records))} | ${Math.round((processing.execMs / JOBS) * 1000)} |`);
    log(`${layout.name}: processing WAL by record type (B/job, records/job):`);
    for (const t of processing.byType.slice(0, 8)) log(`   ${t.kind.padEnd(24)} ${String(Math.round(per(t.bytes))).padStart(5)} B  ${r1(per(t.n))}`);
  }
  await side.end();
  console.log(lines.join("\n"));
} catch (e) {
  log(`layout probe failed: ${e instanceof Error ? e.stack : String(e)}`);
  process.exitCode = 1;
} finally {
  cleanup();
}

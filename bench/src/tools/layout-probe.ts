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
//  - migration-4: Belay's schema before migration 5: a wide row with two unique keys (seq, id)
//    and partial indexes per state, fillfactor 90; one transition row per state change, two
//    indexes. Every layout's wide row has the columns of Belay's jobs table, read from a schema
//    its migrations create at the start.
//  - current: Belay's schema today, migration-4 at fillfactor 50 (migration 5).
//  - one-key: as current, with `id` the only unique key (seq no unique key of its own: it stays
//    the due index's tie-break column) and transitions keyed by the job's id.
//  - current-feed: as current, but each state change appends to a history column of the row it
//    updates anyway, and observers walk a feed of one row per statement (arrays), not one
//    transition row (and two index entries) per state change.
//  - current-feed-lean: as current-feed, without the report's lock pass before its update.
//  - narrow: a runnable table (inserted at enqueue, deleted at claim), a lease table (inserted at
//    claim, deleted at report, no index but its key: expiry sweeps scan it, it holds only jobs in
//    flight), the wide row updated once at the end and HOT (no index on what changes), finished
//    rows moved to a done table in bulk; transitions as one-key's (keyed by id, the wide row's
//    only key).
//  - narrow-feed: as narrow, but the claim's transition waits in the lease row and both land in
//    the wide row's history at the end (one HOT update), and observers walk a feed of one row per
//    statement (arrays), not one row per transition.
//  - graphile-like: a reference without history, shaped like graphile-worker's jobs table (one
//    key, one partial index on what is available; claim updates the lock columns, completion
//    deletes the row). Its figure should sit near graphile-worker's measured 473–477 kB per 1,000 jobs.
//
//   cd bench && npx tsx --conditions=@belay/source src/tools/layout-probe.ts [--jobs 20000] [--batch 100] [--layouts current,narrow]
import { PostgresStore } from "@belay/postgres";
import pg from "pg";
import { type WalRecordKind, log, throwawayCluster, walPosition, walSince } from "../infra.js";

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

/**
 * The wide row's columns besides its keys and lease columns: Belay's own, read from a schema its
 * migrations just created (so the probe's rows are as wide as the store's), set before the layouts are built.
 */
let WIDE = "";
const OWN_COLUMNS = ["seq", "id", "lease_owner", "lease_expires_at", "cancel_requested_by"];

/** Where history goes: one transition row per state change (two indexes), or the row's own history column plus one feed row per statement. */
type History = "rows" | "feed";

/** The history tables; `key` is the column transitions name their job by (`seq` or `id`). */
function historySchema(history: History, key: "seq" | "id"): string {
  if (history === "feed") {
    return `
CREATE TABLE feed (
  xid xid8 NOT NULL, position bigint GENERATED ALWAYS AS IDENTITY,
  job_ids text[] NOT NULL, ordinals int[] NOT NULL, states int2[] NOT NULL, attempts int[] NOT NULL, at bigint NOT NULL, worker_id text,
  PRIMARY KEY (xid, position)
);`;
  }
  return `
CREATE TABLE transitions (
  xid xid8 NOT NULL,
  position bigint GENERATED ALWAYS AS IDENTITY,
  job_${key} ${key === "seq" ? "bigint" : 'text COLLATE "C"'} NOT NULL,
  ordinal integer NOT NULL, at bigint NOT NULL, state smallint NOT NULL, attempt integer NOT NULL,
  failure_detail text, cause smallint, worker_id text,
  PRIMARY KEY (xid, position)
);
CREATE INDEX transitions_job ON transitions (job_${key}, ordinal);`;
}

/**
 * The CTE `log` recording that the jobs of `source` (columns `key`, `id`, `attempt`,
 * `transition_count`) entered `state` with `cause`, by worker `worker` (an SQL expression).
 */
function logCte(history: History, key: "seq" | "id", source: string, state: number, cause: number, worker: string): string {
  if (history === "feed") {
    return `log AS (
  INSERT INTO feed (xid, job_ids, ordinals, states, attempts, at, worker_id)
  SELECT pg_current_xact_id(), array_agg(id ORDER BY ${key}), array_agg(transition_count ORDER BY ${key}), array_agg(${state}::int2),
         array_agg(attempt ORDER BY ${key}), $2, ${worker}
  FROM ${source} HAVING count(*) > 0
)`;
  }
  return `log AS (
  INSERT INTO transitions (xid, job_${key}, ordinal, at, state, attempt, cause, worker_id)
  SELECT pg_current_xact_id(), ${key}, transition_count, $2, ${state}, attempt, ${cause}, ${worker} FROM ${source} ORDER BY ${key}
)`;
}

/** The history column's first entry `[state, attempt, at, cause]`, and the SET clause appending one. */
const FIRST_ENTRY = `'[[0,0,' || $2::bigint || ',0]]'`;
const appendHistory = (state: number, attempt: string, cause: number) =>
  `history = left(j.history, -1) || ',[${state},' || (${attempt}) || ',' || $2::bigint || ',${cause}]]'`;

/** The enqueue's insert of the wide rows (`ins`, returning what `logCte` reads). */
const insertJobs = (history: History) => `ins AS (
  INSERT INTO jobs (id, job_name, queue, state, due_at, enqueued_at, payload, transition_count${history === "feed" ? ", history" : ""})
  SELECT id, 'bench.noop', 'bench', 0, $2, $2, '{"i":' || o || '}', 1${history === "feed" ? `, ${FIRST_ENTRY}` : ""}
  FROM unnest($1::text[]) WITH ORDINALITY AS r(id, o)
  RETURNING seq, id, attempt, transition_count, queue, due_at
)`;

interface WideOptions {
  readonly name: string;
  /** The one key every update reaches rows by: `seq` (with `id` a second unique key) or `id` (seq unindexed). */
  readonly key: "seq" | "id";
  readonly history: History;
  readonly fillfactor: number;
  /** Whether the report locks its rows in key order before updating them (Belay's deadlock rule). */
  readonly lockPass: boolean;
}

/** A layout whose state lives in one wide row with a partial index per state, as Belay's today. */
function wideLayout(o: WideOptions): Layout {
  const { key: K, history } = o;
  const tie = K === "seq" ? ", seq" : "";
  const feed = history === "feed";
  return {
    name: o.name,
    schema: `
CREATE TABLE jobs (
  ${K === "seq" ? 'seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n  id text COLLATE "C" NOT NULL UNIQUE,' : 'id text COLLATE "C" PRIMARY KEY,\n  seq bigint GENERATED ALWAYS AS IDENTITY,'}
  lease_owner text, lease_expires_at bigint, cancel_requested_by text,
  ${WIDE.trimStart()}${feed ? ",\n  history text" : ""}
) WITH (fillfactor = ${o.fillfactor});
CREATE INDEX jobs_due ON jobs (queue, due_at, seq) WHERE state = 0;
CREATE INDEX jobs_leased ON jobs (queue, lease_expires_at${tie}) WHERE state = 2;
CREATE INDEX jobs_ended_a ON jobs (terminal_at${tie}) WHERE state IN (3, 5);
CREATE INDEX jobs_ended_b ON jobs (terminal_at${tie}) WHERE state IN (4, 6);
${historySchema(history, K)}`,
    enqueue: `WITH ${insertJobs(history)}, ${logCte(history, K, "ins", 0, 0, "NULL")} SELECT count(*) FROM ins`,
    claim: `
WITH picked AS MATERIALIZED (
  SELECT ${K} FROM jobs WHERE queue = 'bench' AND state = 0 AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED
),
claimed AS (
  UPDATE jobs j SET state = 2, attempt = j.attempt + 1, lease_owner = $3, lease_expires_at = $2 + 30000,
    transition_count = j.transition_count + 1${feed ? `, ${appendHistory(2, "j.attempt + 1", 1)}` : ""}
  WHERE j.${K} = ANY(ARRAY(SELECT ${K} FROM picked))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
${logCte(history, K, "claimed", 2, 1, "$3")}
SELECT id, attempt FROM claimed`,
    report: `
WITH cur AS MATERIALIZED (
  SELECT j.${K} FROM unnest($1::text[], $4::int[]) AS r(id, attempt)
  CROSS JOIN LATERAL (SELECT ${K === "seq" ? "seq, " : ""}id, state, lease_owner, attempt FROM jobs j WHERE j.id = r.id OFFSET 0) j
  WHERE j.state = 2 AND j.lease_owner = $3 AND j.attempt = r.attempt
),${o.lockPass ? `\nlocked AS MATERIALIZED (SELECT ${K} FROM jobs WHERE ${K} = ANY(ARRAY(SELECT ${K} FROM cur)) ORDER BY ${K} FOR NO KEY UPDATE),` : ""}
ended AS (
  UPDATE jobs j SET state = 3, terminal_at = $2, terminal_cause = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
    transition_count = j.transition_count + 1${feed ? `, ${appendHistory(3, "j.attempt", 2)}` : ""}
  WHERE j.${K} = ANY(ARRAY(SELECT ${K} FROM ${o.lockPass ? "locked" : "cur"}))
  RETURNING j.seq, j.id, j.attempt, j.transition_count
),
${logCte(history, K, "ended", 3, 2, "$3")}
SELECT count(*)::int AS n FROM ended`,
    finish: null,
  };
}

/**
 * A layout of narrow tables: runnable rows (inserted at enqueue, deleted at claim), lease rows
 * (inserted at claim, deleted at report; their key is their only index), the wide row updated
 * once at the end (HOT: nothing it changes is indexed), finished rows moved out in bulk. With the
 * feed, the claim's history entry waits in the lease row and both land in the wide row at the end.
 */
function narrowLayout(name: string, history: History): Layout {
  const feed = history === "feed";
  return {
    name,
    schema: `
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  ${WIDE.trimStart()}${feed ? ",\n  history text" : ""}
) WITH (fillfactor = 70);
CREATE TABLE runnable (
  queue text COLLATE "C" NOT NULL, due_at bigint NOT NULL, seq bigint NOT NULL, id text COLLATE "C" NOT NULL
);
CREATE INDEX runnable_due ON runnable (queue, due_at, seq);
CREATE TABLE leases (
  id text COLLATE "C" PRIMARY KEY, owner text NOT NULL, attempt integer NOT NULL, expires_at bigint NOT NULL, claimed_at bigint NOT NULL
) WITH (fillfactor = 70);
CREATE TABLE done (LIKE jobs INCLUDING DEFAULTS, PRIMARY KEY (id));
${historySchema(history, "id")}`,
    enqueue: `
WITH ${insertJobs(history)},
run AS (INSERT INTO runnable (queue, due_at, seq, id) SELECT queue, due_at, seq, id FROM ins),
${logCte(history, "id", "ins", 0, 0, "NULL")}
SELECT count(*) FROM ins`,
    claim: `
WITH taken AS (
  DELETE FROM runnable r WHERE r.ctid = ANY(ARRAY(
    SELECT ctid FROM runnable WHERE queue = 'bench' AND due_at <= $2 ORDER BY due_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED))
  RETURNING r.id
),
leased AS (
  INSERT INTO leases (id, owner, attempt, expires_at, claimed_at)
  SELECT t.id, $3, j.attempt + 1, $2 + 30000, $2 FROM taken t JOIN jobs j ON j.id = t.id
  RETURNING id, attempt, 2 AS transition_count
),
${logCte(history, "id", "leased", 2, 1, "$3")}
SELECT id, attempt FROM leased`,
    report: `
WITH gone AS (
  DELETE FROM leases l USING unnest($1::text[], $4::int[]) AS r(id, attempt)
  WHERE l.id = r.id AND l.owner = $3 AND l.attempt = r.attempt AND l.expires_at > $2
  RETURNING l.id, l.attempt, l.claimed_at
),
ended AS (
  UPDATE jobs j SET state = 3, attempt = g.attempt, terminal_at = $2, terminal_cause = 'succeeded', transition_count = j.transition_count + 2${
    feed ? `,
    history = left(j.history, -1) || ',[2,' || g.attempt || ',' || g.claimed_at || ',1],[3,' || g.attempt || ',' || $2::bigint || ',2]]'` : ""}
  FROM gone g WHERE j.id = g.id
  RETURNING j.id, j.attempt, j.transition_count
),
${logCte(history, "id", "ended", 3, 2, "$3")}
SELECT count(*)::int AS n FROM ended`,
    finish: `
WITH moved AS (DELETE FROM jobs WHERE state >= 3 RETURNING *)
INSERT INTO done SELECT * FROM moved`,
  };
}

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

const layouts = () => [
  wideLayout({ name: "migration-4", key: "seq", history: "rows", fillfactor: 90, lockPass: true }),
  wideLayout({ name: "current", key: "seq", history: "rows", fillfactor: 50, lockPass: true }),
  wideLayout({ name: "one-key", key: "id", history: "rows", fillfactor: 50, lockPass: true }),
  wideLayout({ name: "current-feed", key: "seq", history: "feed", fillfactor: 50, lockPass: true }),
  wideLayout({ name: "current-feed-lean", key: "seq", history: "feed", fillfactor: 50, lockPass: false }),
  narrowLayout("narrow", "rows"),
  narrowLayout("narrow-feed", "feed"),
  graphileLike,
];
const chosen = arg("layouts", "migration-4,current,one-key,current-feed,current-feed-lean,narrow,narrow-feed,graphile-like").split(",");

interface Phase {
  walB: number;
  records: number;
  execMs: number;
  byType: WalRecordKind[];
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const ids = (from: number, n: number) => Array.from({ length: n }, (_, k) => `01JOB${String(from + k).padStart(21, "0")}`);

const { startWithStatements, cleanup } = throwawayCluster("belay-layout-", Number(arg("pg-port", "55443")));
try {
  const { url, side } = await startWithStatements("layout");
  side.on("error", () => undefined); // the cluster stops before this client on a failure
  const reference = new PostgresStore({ connectionString: url, schema: "belay_reference" });
  await reference.migrate();
  await reference.close();
  const { rows: columns } = await side.query(`
    select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull as not_null, pg_get_expr(d.adbin, d.adrelid) as dflt
    from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attrelid = 'belay_reference.jobs'::regclass and a.attnum > 0 and not a.attisdropped order by a.attnum`);
  WIDE = columns
    .filter((c) => !OWN_COLUMNS.includes(c.name as string))
    .map((c) => `\n  ${c.name} ${c.type}${["job_name", "queue"].includes(c.name as string) ? ' COLLATE "C"' : ""}${c.not_null ? " NOT NULL" : ""}${c.dflt ? ` DEFAULT ${c.dflt}` : ""}`)
    .join(",");
  /** Runs `work` and returns the WAL it wrote (by record type) and its duration. */
  async function measured(work: () => Promise<void>, checkpoint: boolean): Promise<Phase> {
    // Each layout's enqueue starts after a checkpoint (its first page writes are full-page images
    // alike); processing follows without one, as in the bench.
    if (checkpoint) await side.query("checkpoint");
    const from = await walPosition(side);
    const t0 = performance.now();
    await work();
    const execMs = performance.now() - t0;
    const byType = await walSince(side, from);
    return { walB: byType.reduce((a, r) => a + r.bytes, 0), records: byType.reduce((a, r) => a + r.n, 0), execMs, byType };
  }

  const lines = [
    `# layout-probe — ${new Date().toISOString()}, ${JOBS} jobs, batches of ${BATCH}, one connection, fsync on`,
    "",
    "| layout | enqueue WAL B/job | enqueue records/job | processing WAL B/job | processing records/job | processing ms/1k (loaded machine: indicative) |",
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const layout of layouts().filter((l) => chosen.includes(l.name))) {
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

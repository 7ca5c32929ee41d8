import { DEFAULT_BOUNDS, MAX_RETRY_DELAYS } from "@belay/contract";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hintChannel } from "../src/hints.js";
import { PostgresStore } from "../src/index.js";
import { MIGRATIONS, SCHEMA_VERSION } from "../src/migrations/index.js";
import { migrateSchema } from "../src/migrate.js";
import { Executor } from "../src/session.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { countingClaims } from "./support/claims.js";
import { until } from "./support/until.js";

// `<schema>.add_job(...)` (migration 3): a job enqueued from SQL — by another language, or by a
// trigger inside the user's transaction — passes the contract's checks, is written exactly as
// `enqueue` writes it, wakes an idle worker, and is run by the real Worker of @belay/core. Waits
// are for events, with generous deadlines; nothing asserts a duration.

const target = await pgTarget("add-job.test.ts");
const url = target.url;

// The few parts of @belay/core this test drives (typed here: core is not a dependency).
interface CoreWorker {
  start(): Promise<void>;
  stop(options?: { timeoutMs?: number }): Promise<void>;
}
interface JobContext {
  readonly jobId: string;
  readonly queue: string;
  readonly tags: readonly { key: string; value: string }[];
}
interface Core {
  defineJob(options: { name: string; queue: string; handler: (payload: unknown, ctx: JobContext) => Promise<void> }): unknown;
  Worker: new (options: Record<string, unknown>) => CoreWorker;
  silentLogger: unknown;
  createJobId(now?: number): string;
}

const DEADLINE_MS = 30_000;
/** A poll interval no test waits out: a job that starts was started by the hint. */
const IDLE_POLL_MS = 3_600_000;

async function eventually(condition: () => Promise<boolean>, what: string, timeoutMs = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(url === undefined)(`postgres add_job() (${target.reason})`, () => {
  let core: Core;
  let pool: pg.Pool;
  const schema = randomSchema("addjob");
  const S = `"${schema}"`;
  let store: PostgresStore;
  const workers: CoreWorker[] = [];
  const stores: PostgresStore[] = [];

  beforeAll(async () => {
    core = (await import(/* @vite-ignore */ new URL("../../core/src/index.ts", import.meta.url).href)) as Core;
    pool = testPool(url!);
    store = new PostgresStore({ pool, schema, hints: false });
    await store.migrate();
  });

  afterAll(async () => {
    for (const worker of workers) await worker.stop({ timeoutMs: 1_000 });
    for (const s of stores) await s.close();
    await store?.close();
    if (pool) {
      await dropSchema(pool, schema);
      await pool.end();
    }
    await target.stop();
  });

  /** What the store's tables hold, for "nothing was written". */
  async function counts(): Promise<Record<string, number>> {
    const { rows } = await pool.query(
      `SELECT (SELECT count(*) FROM ${S}.jobs)::int AS jobs, (SELECT count(*) FROM ${S}.queues)::int AS queues,
              (SELECT count(*) FROM ${S}.job_tags)::int AS tags, (SELECT count(*) FROM ${S}.feed)::int AS feed`,
    );
    return rows[0] as Record<string, number>;
  }

  /** Calls add_job with named arguments (`$n` placeholders, so no value is spliced into SQL). */
  async function addJob(args: Record<string, unknown>, client: pg.Pool | pg.PoolClient = pool): Promise<string> {
    const names = Object.keys(args);
    const list = names.map((name, i) => `${name} => $${i + 1}`).join(", ");
    const { rows } = await client.query(`SELECT ${S}.add_job(${list}) AS id`, Object.values(args));
    return rows[0].id as string;
  }

  async function refusal(args: Record<string, unknown>): Promise<{ code?: string; column?: string; detail?: string; message: string }> {
    try {
      await addJob(args);
    } catch (error) {
      return error as { code?: string; column?: string; detail?: string; message: string };
    }
    throw new Error(`add_job(${JSON.stringify(args)}) was not refused`);
  }

  it("writes exactly what enqueue writes for the same job: the row, its queue, its tags, its first transition", async () => {
    const retry = { maxAttempts: 3, delaysMs: [10, 2_000] };
    const tags = [{ key: "", value: "urgent" }, { key: "tenant", value: "acme \"quoted\"\n" }];
    const now = Date.now();
    const dueAt = now + 3_600_000;
    await store.enqueue({
      jobs: [{ id: "by-ts", jobName: "same.job", queue: "same-ts", payload: '{"a":[1,"é"]}', dueAt, tags, traceContext: "00-abc", retry }],
      now,
    });
    const id = await addJob({
      job_name: "same.job",
      payload: '{"a":[1,"é"]}',
      queue: "same-sql",
      run_at: new Date(dueAt),
      job_id: "by-sql",
      tags: ["urgent", 'tenant=acme "quoted"\n', "urgent"],
      trace_context: "00-abc",
      max_attempts: 3,
      retry_delays_ms: [10, 2_000],
    });
    expect(id).toBe("by-sql");
    const ts = (await store.getJob("by-ts"))!;
    const sql = (await store.getJob("by-sql"))!;
    const comparable = (job: typeof ts) => ({ ...job, id: undefined, seq: undefined, queue: undefined, enqueuedAt: undefined });
    expect(comparable(sql)).toEqual({ ...comparable(ts), payload: '{"a": [1, "é"]}' }); // jsonb's own spacing
    expect(sql).toMatchObject({ queue: "same-sql", dueAt, state: "scheduled", retry, tags });

    const { rows } = await pool.query(
      `SELECT j.id, j.tags, j.retry, j.transition_count, j.dependency_mode, j.parents_remaining, j.has_children,
              (SELECT json_agg(json_build_array(t.key, t.value) ORDER BY t.key) FROM ${S}.job_tags t WHERE t.job_seq = j.seq) AS tag_rows,
              (SELECT json_agg(json_build_array(e->1, e->3)) FROM json_array_elements(j.history::json) AS e) AS history,
              (SELECT json_agg(json_build_array(f.ordinals, f.states, f.attempts)) FROM ${S}.feed f WHERE j.seq = ANY(f.job_seqs)) AS feed,
              (SELECT q.queue FROM ${S}.queues q WHERE q.queue = j.queue) AS queue_row
       FROM ${S}.jobs j WHERE j.id IN ('by-ts', 'by-sql') ORDER BY j.id`,
    );
    const [bySql, byTs] = rows.map(({ id: _id, queue_row, ...rest }) => ({ ...rest, hasQueueRow: queue_row !== null }));
    // Stored text identical to encodeTags' and encodeRetry' (outcomes compare tag pairs by their text).
    expect(bySql).toEqual(byTs);
    expect(await store.getJobHistory("by-sql")).toMatchObject([{ state: "scheduled", cause: "enqueued", attempt: 0, workerId: null }]);
  });

  it("generates an id like core's createJobId when none is given: 26 Crockford characters, time first", async () => {
    const before = core.createJobId(Date.now() - 1);
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push(await addJob({ job_name: "gen.job", queue: "gen", run_at: new Date(Date.now() + 3_600_000) }));
    const after = core.createJobId(Date.now() + 1);
    for (const id of ids) {
      expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(id.slice(0, 10) >= before.slice(0, 10) && id.slice(0, 10) <= after.slice(0, 10), id).toBe(true);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(10))).size, "random tails").toBe(ids.length);
  });

  it("an existing id is left unchanged and nothing is written; the id is returned", async () => {
    await addJob({ job_name: "dup.job", queue: "dup", payload: '{"v":1}', job_id: "dup-1", run_at: new Date(Date.now() + 3_600_000) });
    const before = await counts();
    const again = await addJob({ job_name: "other.job", queue: "dup-elsewhere", payload: '{"v":2}', job_id: "dup-1", tags: ["new"] });
    expect(again).toBe("dup-1");
    expect(await store.getJob("dup-1")).toMatchObject({ jobName: "dup.job", queue: "dup", payload: '{"v": 1}', tags: [] });
    expect(await counts(), "no queue row, tag or transition for the duplicate").toEqual(before);
    // The same as enqueue's answer for the id.
    const [result] = await store.enqueue({ jobs: [{ id: "dup-1", jobName: "x", queue: "x", payload: "{}", dueAt: Date.now() }], now: Date.now() });
    expect(result).toMatchObject({ status: "duplicate", state: "scheduled" });
  });

  it("refuses every bad field with SQLSTATE 22023 naming it, as the contract words it, writing nothing", async () => {
    const b = DEFAULT_BOUNDS;
    const ok = { job_name: "check.job" };
    const emoji = "😀"; // two UTF-16 code units: the contract counts characters as JavaScript does
    const cases: [Record<string, unknown>, string, string, string][] = [
      [{ ...ok, job_id: "" }, "job_id", "BELAY_INVALID_INPUT", "invalid job_id: must be a non-empty string"],
      [{ ...ok, job_id: "i".repeat(b.idLength + 1) }, "job_id", "BELAY_ID_TOO_LONG", `job_id exceeds idLength: ${b.idLength + 1} > ${b.idLength}`],
      [{ ...ok, job_id: emoji.repeat(b.idLength / 2) + "i" }, "job_id", "BELAY_ID_TOO_LONG", `job_id exceeds idLength: ${b.idLength + 1} > ${b.idLength}`],
      [{ job_name: null }, "job_name", "BELAY_INVALID_INPUT", "invalid job_name: must be a non-empty string"],
      [{ job_name: "" }, "job_name", "BELAY_INVALID_INPUT", "invalid job_name: must be a non-empty string"],
      [{ job_name: "n".repeat(b.jobNameLength + 1) }, "job_name", "BELAY_JOB_NAME_TOO_LONG", `job_name exceeds jobNameLength: ${b.jobNameLength + 1} > ${b.jobNameLength}`],
      [{ ...ok, queue: null }, "queue", "BELAY_INVALID_INPUT", "invalid queue: must be a non-empty string"],
      [{ ...ok, queue: "" }, "queue", "BELAY_INVALID_INPUT", "invalid queue: must be a non-empty string"],
      [{ ...ok, queue: "q".repeat(b.queueNameLength + 1) }, "queue", "BELAY_QUEUE_NAME_TOO_LONG", `queue exceeds queueNameLength: ${b.queueNameLength + 1} > ${b.queueNameLength}`],
      [{ ...ok, payload: null }, "payload", "BELAY_INVALID_INPUT", "invalid payload: must be JSON (jsonb), not NULL"],
      [{ ...ok, payload: JSON.stringify("p".repeat(b.payloadBytes - 1)) }, "payload", "BELAY_PAYLOAD_TOO_LARGE", `payload exceeds payloadBytes: ${b.payloadBytes + 1} > ${b.payloadBytes}`],
      [{ ...ok, run_at: "infinity" }, "run_at", "BELAY_INVALID_INPUT", "invalid run_at: must be between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z"],
      [{ ...ok, run_at: "-infinity" }, "run_at", "BELAY_INVALID_INPUT", "invalid run_at: must be between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z"],
      [{ ...ok, run_at: "1969-12-31T23:59:59.999Z" }, "run_at", "BELAY_INVALID_INPUT", "invalid run_at: must be between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z"],
      [{ ...ok, run_at: "10000-01-01T00:00:00Z" }, "run_at", "BELAY_INVALID_INPUT", "invalid run_at: must be between 1970-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z"],
      [{ ...ok, tags: ["fine", null] }, "tags[1]", "BELAY_INVALID_INPUT", 'invalid tags[1]: must be "label" or "key=value"'],
      [{ ...ok, tags: ["k="] }, "tags[0].value", "BELAY_INVALID_INPUT", "invalid tags[0].value: must be a non-empty string"],
      [{ ...ok, tags: [""] }, "tags[0].value", "BELAY_INVALID_INPUT", "invalid tags[0].value: must be a non-empty string"],
      [{ ...ok, tags: [`${"k".repeat(b.tagKeyLength + 1)}=v`] }, "tags[0].key", "BELAY_TAG_KEY_TOO_LONG", `tags[0].key exceeds tagKeyLength: ${b.tagKeyLength + 1} > ${b.tagKeyLength}`],
      [{ ...ok, tags: ["a", `k=${"v".repeat(b.tagValueLength + 1)}`] }, "tags[1].value", "BELAY_TAG_TOO_LONG", `tags[1].value exceeds tagValueLength: ${b.tagValueLength + 1} > ${b.tagValueLength}`],
      [{ ...ok, tags: Array.from({ length: b.tagsPerJob + 1 }, (_, i) => `t${i}`) }, "tags", "BELAY_TOO_MANY_TAGS", `tags exceeds tagsPerJob: ${b.tagsPerJob + 1} > ${b.tagsPerJob}`],
      [{ ...ok, tags: "{{a,b},{c,d}}" }, "tags", "BELAY_INVALID_INPUT", "invalid tags: must be a one-dimensional array"],
      [{ ...ok, trace_context: "t".repeat(b.traceContextLength + 1) }, "trace_context", "BELAY_TRACE_CONTEXT_TOO_LONG", `trace_context exceeds traceContextLength: ${b.traceContextLength + 1} > ${b.traceContextLength}`],
      [{ ...ok, max_attempts: 0, retry_delays_ms: [1] }, "max_attempts", "BELAY_INVALID_INPUT", "invalid max_attempts: must be an integer from 1 to 2147483647 (given with retry_delays_ms)"],
      [{ ...ok, retry_delays_ms: [1] }, "max_attempts", "BELAY_INVALID_INPUT", "invalid max_attempts: must be an integer from 1 to 2147483647 (given with retry_delays_ms)"],
      [{ ...ok, max_attempts: 3 }, "retry_delays_ms", "BELAY_INVALID_INPUT", `invalid retry_delays_ms: must hold 1 to ${MAX_RETRY_DELAYS} delays (given with max_attempts)`],
      [{ ...ok, max_attempts: 3, retry_delays_ms: [] }, "retry_delays_ms", "BELAY_INVALID_INPUT", `invalid retry_delays_ms: must hold 1 to ${MAX_RETRY_DELAYS} delays (given with max_attempts)`],
      [{ ...ok, max_attempts: 3, retry_delays_ms: new Array(MAX_RETRY_DELAYS + 1).fill(1) }, "retry_delays_ms", "BELAY_INVALID_INPUT", `invalid retry_delays_ms: must hold 1 to ${MAX_RETRY_DELAYS} delays (given with max_attempts)`],
      [{ ...ok, max_attempts: 3, retry_delays_ms: [1, null] }, "retry_delays_ms[1]", "BELAY_INVALID_INPUT", "invalid retry_delays_ms[1]: must be an integer from 0 to 2147483647"],
      [{ ...ok, max_attempts: 3, retry_delays_ms: [-1] }, "retry_delays_ms[0]", "BELAY_INVALID_INPUT", "invalid retry_delays_ms[0]: must be an integer from 0 to 2147483647"],
    ];
    const before = await counts();
    for (const [args, column, detail, message] of cases) {
      const error = await refusal(args);
      expect({ code: error.code, column: error.column, detail: error.detail, message: error.message }, JSON.stringify(args).slice(0, 200)).toEqual({
        code: "22023",
        column,
        detail,
        message,
      });
    }
    expect(await counts(), "nothing written by any refused call").toEqual(before);

    // Each bound itself is accepted, as the contract accepts it.
    const edge = await addJob({
      job_id: emoji.repeat(b.idLength / 2),
      job_name: "n".repeat(b.jobNameLength),
      queue: "q".repeat(b.queueNameLength),
      payload: JSON.stringify("p".repeat(b.payloadBytes - 2)),
      run_at: "9999-12-31T23:59:59.999Z",
      // tagsPerJob distinct tags once the repeated one collapses, the longest key and value among them.
      tags: [...Array.from({ length: b.tagsPerJob - 1 }, (_, i) => `t${i}`), "t0", `${"k".repeat(b.tagKeyLength)}=${"v".repeat(b.tagValueLength)}`],
      trace_context: "t".repeat(b.traceContextLength),
      max_attempts: 2_147_483_647,
      retry_delays_ms: new Array(MAX_RETRY_DELAYS).fill(2_147_483_647),
    });
    expect(edge).toBe(emoji.repeat(b.idLength / 2));
    expect(await store.getJob(edge)).toMatchObject({ dueAt: 253_402_300_799_999, tags: expect.any(Array) });
    expect((await store.getJob(edge))!.tags).toHaveLength(b.tagsPerJob);
    expect(await addJob({ ...ok, queue: "edge", run_at: "1970-01-01T00:00:00Z" })).toMatch(/^[0-9A-Z]{26}$/);
  });

  it("a trigger on a user table enqueues inside the user's transaction: rolled back, no job; a refusal aborts the user's write", async () => {
    await pool.query(`
      CREATE TABLE ${S}.orders (id bigint PRIMARY KEY, customer text NOT NULL);
      CREATE FUNCTION ${S}.order_placed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM ${S}.add_job(job_name => 'order.placed', queue => 'orders', payload => jsonb_build_object('orderId', NEW.id),
                             job_id => 'order-' || NEW.id, tags => ARRAY['customer=' || NEW.customer],
                             run_at => now() + interval '1 hour');
        RETURN NEW;
      END $$;
      CREATE TRIGGER order_placed AFTER INSERT ON ${S}.orders FOR EACH ROW EXECUTE FUNCTION ${S}.order_placed();
    `);
    const before = await counts();
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`INSERT INTO ${S}.orders VALUES (1, 'acme')`);
      // Inside the transaction, the job is there (and nobody else sees it yet).
      expect((await client.query(`SELECT job_name, payload FROM ${S}.jobs WHERE id = 'order-1'`)).rows).toEqual([{ job_name: "order.placed", payload: '{"orderId": 1}' }]);
      expect(await store.getJob("order-1")).toBeNull();
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    expect(await store.getJob("order-1")).toBeNull();
    expect(await counts(), "rolled back: no job, queue row, tag or transition").toEqual(before);

    await pool.query(`INSERT INTO ${S}.orders VALUES (2, 'acme')`);
    expect(await store.getJob("order-2")).toMatchObject({ jobName: "order.placed", queue: "orders", tags: [{ key: "customer", value: "acme" }], payload: '{"orderId": 2}' });

    // add_job refuses: the user's insert fails with it, and neither the order nor a job exists.
    const tooLong = "c".repeat(DEFAULT_BOUNDS.tagValueLength + 1);
    await expect(pool.query(`INSERT INTO ${S}.orders VALUES (3, $1)`, [tooLong])).rejects.toMatchObject({ code: "22023", column: "tags[0].value" });
    expect((await pool.query(`SELECT id FROM ${S}.orders ORDER BY id`)).rows).toEqual([{ id: "2" }]);
    expect(await store.getJob("order-3")).toBeNull();
  });

  it("sends the store's wake-up NOTIFY at commit, never for a rolled-back call nor a job due later", async () => {
    const listener = await pool.connect();
    const heard: string[] = [];
    listener.on("notification", (message) => {
      if (message.channel === hintChannel(schema) && message.payload) heard.push(message.payload);
    });
    try {
      await listener.query(`LISTEN "${hintChannel(schema)}"`);
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await addJob({ job_name: "hint.job", queue: "rolled-back" }, client);
        await client.query("ROLLBACK");
        await addJob({ job_name: "hint.job", queue: "later", run_at: new Date(Date.now() + 3_600_000) });
        await client.query("BEGIN");
        await addJob({ job_name: "hint.job", queue: "committed" }, client);
        await addJob({ job_name: "hint.job", queue: "committed" }, client);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      // A marker committed last: a session receives notifications in commit order, so once it is
      // heard every earlier one that was ever sent has been too.
      await pool.query("SELECT pg_notify($1, 'marker')", [hintChannel(schema)]);
      await until(() => heard.includes("marker"), "the marker notification");
      expect(heard, "one hint per queue and transaction, only for due work that committed").toEqual(["committed", "marker"]);
    } finally {
      await listener.query("UNLISTEN *");
      listener.release();
    }
  });

  it("a job added by SQL is claimed and run by a core Worker whose next poll is an hour away: the hint woke it", async () => {
    const worker = new PostgresStore({ connectionString: url!, schema, maxConnections: 4 });
    stores.push(worker);
    const { counted, claims } = countingClaims(worker);
    const ran: { payload: unknown; jobId: string; queue: string; tags: readonly unknown[] }[] = [];
    const faults: string[] = [];
    const job = core.defineJob({
      name: "sql.welcome",
      queue: "sql-jobs",
      handler: async (payload, ctx) => void ran.push({ payload, jobId: ctx.jobId, queue: ctx.queue, tags: ctx.tags }),
    });
    const w = new core.Worker({
      store: counted,
      jobs: [job],
      groups: [{ name: "sql", queues: ["sql-jobs"], poolSize: 2 }],
      pollIntervalMs: IDLE_POLL_MS,
      maintenanceIntervalMs: IDLE_POLL_MS,
      logger: core.silentLogger,
      onEvent: (event: { type: string; message?: string }) => {
        if (event.type === "storeFault" || event.type === "halted") faults.push(`${event.type}: ${event.message}`);
      },
    });
    workers.push(w);
    await w.start();
    await until(() => worker.listening, "the worker's LISTEN connection");
    await until(() => claims.finished > 0 && claims.inFlight === 0, "the worker's first claim (then it sleeps for an hour)");

    const id = await addJob({ job_name: "sql.welcome", queue: "sql-jobs", payload: '{"userId": "u1"}', tags: ["from=sql"] });
    await until(() => ran.length > 0, "the handler to run the job added by SQL (only the hint can start it)");
    expect(ran).toEqual([{ payload: { userId: "u1" }, jobId: id, queue: "sql-jobs", tags: [{ key: "from", value: "sql" }] }]);
    await eventually(async () => (await store.getJob(id))?.state === "succeeded", "the job to be recorded succeeded");
    expect((await store.getJobHistory(id)).map((t) => t.cause)).toEqual(["enqueued", "claimed", "succeeded"]);
    expect(faults).toEqual([]);
  }, 4 * DEADLINE_MS);

  it("a database at version 2 takes migration 3 (add_job), and add_job works beside the jobs it already holds", async () => {
    const old = randomSchema("addjob_upgrade");
    const Q = `"${old}"`;
    try {
      expect(await migrateSchema(new Executor(pool, () => null), Q, old, 2)).toEqual({ fromVersion: 0, toVersion: 2 });
      await expect(pool.query(`SELECT ${Q}.add_job('x')`)).rejects.toMatchObject({ code: "42883" }); // no such function yet
      // A job as version 2 wrote it (this build's store refuses to run on version 2).
      const T = Date.now();
      await pool.query(`
        INSERT INTO ${Q}.queues (queue) VALUES ('q');
        INSERT INTO ${Q}.jobs (id, job_name, queue, state, due_at, enqueued_at, transition_count, payload)
        VALUES ('before', 'a.job', 'q', 0, ${T}, ${T}, 1, '{}');
      `);
      const upgraded = new PostgresStore({ pool, schema: old, hints: false });
      await expect(upgraded.getJob("before")).rejects.toMatchObject({ code: "BELAY_SCHEMA_NOT_MIGRATED" });
      expect(await upgraded.migrate()).toEqual({ fromVersion: 2, toVersion: SCHEMA_VERSION });
      expect(await upgraded.getJob("before")).toMatchObject({ state: "scheduled", payload: "{}" });
      const { rows: versions } = await pool.query(`SELECT version, requires FROM ${Q}.schema_migrations ORDER BY version`);
      expect(versions, "each migration records what it requires").toEqual(MIGRATIONS.map((m) => ({ version: m.version, requires: m.requires })));
      expect(versions.map((v) => v.version)).toContain(3);
      expect((await pool.query(`SELECT ${Q}.add_job('a.job', job_id => 'before') AS id`)).rows).toEqual([{ id: "before" }]);
      expect((await pool.query(`SELECT ${Q}.add_job('a.job', queue => 'q', job_id => 'after') AS id`)).rows).toEqual([{ id: "after" }]);
      const { jobs } = await upgraded.claim({ workerId: "w", queues: ["q"], max: 10, leaseMs: 60_000, now: Date.now() + 1_000 });
      expect(jobs.map((j) => j.id).sort()).toEqual(["after", "before"]);
      await upgraded.close();
    } finally {
      await dropSchema(pool, old);
    }
  });

  it("a schema whose name holds the function body's quote tag ($fn$) still migrates, and add_job works there", async () => {
    const odd = `${randomSchema("addjob")}$fn$x`;
    const other = new PostgresStore({ pool, schema: odd, hints: false });
    try {
      await other.migrate();
      expect((await pool.query(`SELECT "${odd}".add_job('a.job', job_id => 'odd-1') AS id`)).rows).toEqual([{ id: "odd-1" }]);
      expect(await other.getJob("odd-1")).toMatchObject({ jobName: "a.job", state: "scheduled" });
      await other.close();
    } finally {
      await dropSchema(pool, odd);
    }
  });
});

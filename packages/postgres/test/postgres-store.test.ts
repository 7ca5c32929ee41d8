import { type JobStore, type NewJob, isBelayError } from "@belay/contract";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PostgresQueryExecutor, PostgresStore, SCHEMA_VERSION } from "../src/index.js";
import { dropSchema, pgTarget, randomSchema, testPool } from "./pg-target.js";
import { rejectionCode } from "../../../tests/support/errors.mjs";
import { until } from "./support/until.js";

// What the conformance suite cannot know about this adapter: its configuration, the caller's
// own pg transactions (savepoints, commit-time hints), retriable faults and schema versions.

const target = await pgTarget("postgres-store.test.ts");
const url = target.url;
const T = 1_800_000_000_000;

function job(id: string, fields: Partial<NewJob> = {}): NewJob {
  return { id, jobName: "test.job", queue: "default", payload: "{}", dueAt: T, ...fields };
}

/** The code of the Belay error `action` fails with (`undefined` when it succeeds). */
const codeOf = (action: () => Promise<unknown>) => rejectionCode(action, isBelayError);

describe("postgres store configuration", () => {
  const pool = { connect: async () => Promise.reject(new Error("unused")), end: async () => {} };

  it("accepts a plain schema identifier of up to 63 bytes, and refuses anything else naming the field", () => {
    expect(new PostgresStore({ pool, schema: "a".repeat(63) }).schema).toBe("a".repeat(63));
    expect(new PostgresStore({ pool }).schema).toBe("belay");
    for (const schema of ["a".repeat(64), "é".repeat(32), "1abc", "a-b", 'a"b', "", "a b"]) {
      expect(() => new PostgresStore({ pool, schema }), schema).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT", field: "schema" }));
    }
  });

  it("takes exactly one of pool and connectionString", () => {
    expect(() => new PostgresStore({})).toThrow(expect.objectContaining({ field: "pool" }));
    expect(() => new PostgresStore({ pool, connectionString: "postgres://x" })).toThrow(expect.objectContaining({ field: "pool" }));
  });

  it("declares its capabilities; hints are on by default and subscribeHints exists only with them", () => {
    const store = new PostgresStore({ pool });
    expect(store.capabilities).toMatchObject({ name: "postgres", transactionalEnqueue: true, wakeUpHints: true });
    expect(typeof store.subscribeHints).toBe("function");
    const quiet = new PostgresStore({ pool, hints: false });
    expect(quiet.capabilities.wakeUpHints).toBe(false);
    expect(quiet.subscribeHints).toBeUndefined();
  });
});

describe.skipIf(url === undefined)(`postgres store against a database (${target.reason})`, () => {
  let pool: pg.Pool;
  const schemas: string[] = [];
  const stores: JobStore[] = [];

  beforeAll(() => {
    pool = testPool(url!);
  });

  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const schema of schemas) await dropSchema(pool, schema);
    await pool?.end();
    await target.stop();
  });

  async function freshStore(options: { pool?: pg.Pool; hints?: boolean } = {}): Promise<PostgresStore> {
    const schema = randomSchema("store");
    schemas.push(schema);
    const store = new PostgresStore({ pool: options.pool ?? pool, schema, hints: options.hints ?? false });
    await store.migrate();
    stores.push(store);
    return store;
  }

  /** Runs `body` on a fresh store with hints on, once it listens, with the queues of the hints it hears so far. */
  async function withHintsHeard(body: (store: PostgresStore, heard: string[]) => Promise<void>): Promise<void> {
    const store = await freshStore({ hints: true });
    const heard: string[] = [];
    const unsubscribe = store.subscribeHints!((queue) => heard.push(queue));
    try {
      await until(() => store.listening, "the LISTEN connection");
      await body(store, heard);
    } finally {
      unsubscribe();
    }
  }

  describe("enqueue inside the caller's pg transaction", () => {
    it("a role that cannot see the store's schema is refused, and its transaction stays usable", async () => {
      const store = await freshStore();
      const role = `belay_noaccess_${process.pid}`;
      await pool.query(`DROP ROLE IF EXISTS ${role}; CREATE ROLE ${role} LOGIN`);
      const parsed = new URL(url!);
      parsed.username = role;
      const outsider = testPool(parsed.toString(), 1);
      const client = await outsider.connect();
      try {
        await client.query("BEGIN");
        await client.query("CREATE TEMP TABLE business (k text) ON COMMIT DROP");
        await client.query("INSERT INTO business VALUES ('kept')");
        const code = await codeOf(() => store.enqueue({ jobs: [job("outsider")], now: 1, tx: client }));
        expect(code).toBe("BELAY_INVALID_TRANSACTION");
        // The failed check was rolled back to the call's savepoint: the transaction goes on.
        const { rows } = await client.query("SELECT k FROM business");
        expect(rows).toEqual([{ k: "kept" }]);
        await client.query("COMMIT");
      } finally {
        client.release();
        await outsider.end();
        await pool.query(`DROP OWNED BY ${role}; DROP ROLE IF EXISTS ${role}`);
      }
      expect(await store.getJob("outsider")).toBeNull();
    });

    it("refuses a client with no open transaction, and one whose transaction failed", async () => {
      const store = await freshStore();
      const client = await pool.connect();
      try {
        expect(await codeOf(() => store.enqueue({ jobs: [job("a")], now: T, tx: client }))).toBe("BELAY_INVALID_TRANSACTION");
        await client.query("BEGIN");
        await client.query("SELECT 1/0").catch(() => undefined);
        expect(await codeOf(() => store.enqueue({ jobs: [job("a")], now: T, tx: client }))).toBe("BELAY_INVALID_TRANSACTION");
        await client.query("ROLLBACK");
        expect(await codeOf(() => store.enqueue({ jobs: [job("a")], now: T, tx: {} }))).toBe("BELAY_INVALID_TRANSACTION");
      } finally {
        client.release();
      }
      expect(await store.getJob("a")).toBeNull();
    });

    it("a refused batch rolls back to its savepoint and leaves the caller's transaction usable", async () => {
      const store = await freshStore();
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("CREATE TEMP TABLE mine (v int) ON COMMIT DROP");
        await client.query("INSERT INTO mine VALUES (1)");
        const refused = await store.enqueue({ jobs: [job("ok"), job("big", { payload: "x".repeat(70_000) })], now: T, tx: client });
        expect(refused.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
        await client.query("INSERT INTO mine VALUES (2)");
        expect((await store.enqueue({ jobs: [job("kept")], now: T, tx: client }))[0]).toMatchObject({ status: "created" });
        const { rows } = await client.query("SELECT count(*)::int AS n FROM mine");
        expect(rows[0].n).toBe(2);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      expect(await store.getJob("ok")).toBeNull();
      expect(await store.getJob("kept")).toMatchObject({ state: "scheduled" });
    });

    it("the caller's own savepoints decide: a rolled-back savepoint takes its jobs with it", async () => {
      const store = await freshStore();
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await store.enqueue({ jobs: [job("before")], now: T, tx: client });
        await client.query("SAVEPOINT mine");
        await store.enqueue({ jobs: [job("inside"), job("child", { parentIds: ["before"] })], now: T, tx: client });
        await client.query("ROLLBACK TO SAVEPOINT mine");
        await store.enqueue({ jobs: [job("after")], now: T, tx: client });
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      const ids = (await store.listJobs()).jobs.map((j) => j.id);
      expect(ids).toEqual(["before", "after"]);
      expect(await store.getDependencies("before")).toEqual({ parents: [], children: [] });
    });

    it("enqueueThrough: the same SQL through a caller's executor whose driver returns bigint as text", async () => {
      const store = await freshStore();
      const client = await pool.connect();
      // pg's default parsing, as Kysely's dialect leaves it: int8 arrives as a string.
      const executor: PostgresQueryExecutor = { query: async (sql, values) => (await client.query(sql, [...values])).rows };
      try {
        await client.query("BEGIN");
        await store.enqueue({ jobs: [job("p")], now: T, tx: client });
        const { result } = await store.enqueueThrough(executor, { jobs: [job("p"), job("c", { parentIds: ["p"] }), job("d")], now: T });
        expect(result).toEqual([
          { id: "p", status: "duplicate", state: "scheduled" },
          { id: "c", status: "created", state: "awaitingParents", seq: expect.any(Number) },
          { id: "d", status: "created", state: "scheduled", seq: expect.any(Number) },
        ]);
        const flow = await store.enqueueWorkflowThrough(executor, { workflow: { id: "wf", name: "wf", jobs: [job("m1"), job("m2", { parentIds: ["m1"] })] }, now: T });
        expect(flow.result).toMatchObject({ status: "created", jobs: [{ id: "m1", seq: expect.any(Number) }, { id: "m2", seq: expect.any(Number) }] });
        expect(await store.getJob("c"), "invisible before the commit").toBeNull();
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      expect(await store.getDependencies("c")).toMatchObject({ parents: [{ jobId: "p" }] });
      expect(await store.getWorkflow("wf")).toMatchObject({ jobCount: 2 });
    });

    it("enqueueThrough refuses an executor outside a transaction, in a failed one, or on a database without the schema", async () => {
      const store = await freshStore();
      const other = await freshStore();
      const client = await pool.connect();
      const executor: PostgresQueryExecutor = { query: async (sql, values) => (await client.query(sql, [...values])).rows };
      try {
        expect(await codeOf(() => store.enqueueThrough(executor, { jobs: [job("a")], now: T }))).toBe("BELAY_INVALID_TRANSACTION");
        await client.query("BEGIN");
        await client.query("SELECT 1/0").catch(() => undefined);
        expect(await codeOf(() => store.enqueueThrough(executor, { jobs: [job("a")], now: T }))).toBe("BELAY_INVALID_TRANSACTION");
        await client.query("ROLLBACK");
        await client.query("BEGIN");
        await client.query(`DROP SCHEMA "${other.schema}" CASCADE`);
        expect(await codeOf(() => other.enqueueThrough(executor, { jobs: [job("a")], now: T }))).toBe("BELAY_INVALID_TRANSACTION");
        await client.query("ROLLBACK");
        expect(await codeOf(() => store.enqueueThrough({} as never, { jobs: [job("a")], now: T }))).toBe("BELAY_INVALID_TRANSACTION");
      } finally {
        client.release();
      }
      expect(await store.getJob("a")).toBeNull();
      expect(await other.getJob("a")).toBeNull();
    });

    it("a hint from inside the caller's transaction is heard at its commit, never before", () =>
      withHintsHeard(async (store, heard) => {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await store.enqueue({ jobs: [job("now", { queue: "mail", dueAt: T })], now: T, tx: client });
          await new Promise((resolve) => setTimeout(resolve, 200));
          expect(heard, "nothing is heard before the commit").toEqual([]);
          await client.query("COMMIT");
        } finally {
          client.release();
        }
        await until(() => heard.length > 0, "the hint after the commit");
        expect(heard).toEqual(["mail"]);
      }));
  });

  it("hints after the store's own commits carry any queue name intact", () =>
    withHintsHeard(async (store, heard) => {
      const queues = ["it's", "back\\slash", "mail"];
      await store.enqueue({ jobs: queues.map((queue, i) => job(`q${i}`, { queue })), now: T });
      await store.enqueue({ jobs: [job("later", { queue: "future", dueAt: T + 60_000 })], now: T });
      await until(() => heard.length >= queues.length, "a hint for each due queue");
      // Any extra hint (the future queue, or an echo) would come meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect([...heard].sort(), "due queues only, each name intact").toEqual([...queues].sort());
    }));

  describe("what a duplicate or refused request writes: nothing", () => {
    /** Every row of every table of the store's schema, as text: any write at all shows. */
    async function everyRow(schema: string): Promise<Record<string, string>> {
      const { rows: tables } = await pool.query("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", [schema]);
      const contents: Record<string, string> = {};
      for (const { tablename } of tables as { tablename: string }[]) {
        const { rows } = await pool.query(`SELECT coalesce(json_agg(t::text ORDER BY t::text), '[]')::text AS rows FROM "${schema}"."${tablename}" t`);
        contents[tablename] = rows[0].rows as string;
      }
      return contents;
    }

    it("no queue row for the queue a duplicate or a refused batch names, no parent marked by a child never created", async () => {
      const store = await freshStore();
      await store.enqueue({ jobs: [job("j1"), job("p")], now: T });
      await store.upsertSchedule({
        schedule: { id: "s", cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "schedule-queue", payload: "{}", catchUp: "skip", noOverlap: false },
        now: T,
      });
      const before = await everyRow(store.schema);
      const queues = async () => (await pool.query(`SELECT queue FROM "${store.schema}".queues ORDER BY queue`)).rows.map((r) => r.queue);
      expect(await queues()).toEqual(["default"]);

      expect(await store.enqueue({ jobs: [job("j1", { queue: "brand-new" })], now: T })).toEqual([{ id: "j1", status: "duplicate", state: "scheduled" }]);
      // With a parent: the transactional path, which locks the parent first.
      expect(await store.enqueue({ jobs: [job("j1", { queue: "dup-queue", parentIds: ["p"] })], now: T })).toMatchObject([{ status: "duplicate" }]);
      const refused = await store.enqueue({ jobs: [job("j2", { queue: "fresh", parentIds: ["p"] }), job("j3", { parentIds: ["missing"] })], now: T });
      expect(refused.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
      const tooBig = await store.enqueue({ jobs: [job("j4", { queue: "fresh-too" }), job("j5", { payload: "x".repeat(70_000) })], now: T });
      expect(tooBig.map((r) => r.status)).toEqual(["notWritten", "rejected"]);
      // A trigger whose job id is taken, and a duplicate inside the caller's committed transaction.
      expect(await store.triggerSchedule({ scheduleId: "s", jobId: "j1", actor: "op", now: T })).toEqual({ status: "triggered", jobId: "j1" });
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        expect(await store.enqueue({ jobs: [job("j1", { queue: "tx-queue" })], now: T, tx: client })).toMatchObject([{ status: "duplicate" }]);
        await client.query("COMMIT");
      } finally {
        client.release();
      }

      expect(await queues()).toEqual(["default"]);
      expect(await everyRow(store.schema)).toEqual(before);
    });

    it("a child created while its parent's outcome waits on the parent's lock is resolved by that outcome", async () => {
      const store = await freshStore();
      // The outcome comes from a second store on the same schema (another process), unhooked.
      const peer = new PostgresStore({ pool, schema: store.schema, hints: false });
      stores.push(peer);
      await store.enqueue({ jobs: [job("parent")], now: T });
      const [claimed] = (await store.claim({ workerId: "w", queues: ["default"], max: 1, leaseMs: 60_000, now: T })).jobs;
      let reached!: () => void;
      const parked = new Promise<void>((resolve) => (reached = resolve));
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      store.setStepHook(async (point) => {
        if (point.operation === "enqueue" && point.step === "parents locked") {
          reached();
          await resumed;
        }
      });
      const enqueued = store.enqueue({ jobs: [job("child", { parentIds: ["parent"] })], now: T });
      await parked;
      const reported = peer.reportOutcomes({
        reports: [{ jobId: "parent", workerId: "w", attempt: claimed!.attempt, outcome: { type: "succeeded" } }],
        now: T + 1,
      });
      // The outcome waits for the enqueue's lock on the parent row (it would otherwise miss the child).
      const waiting = async () =>
        (
          await pool.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
            [store.schema],
          )
        ).rows[0].n as number;
      const deadline = Date.now() + 30_000;
      while ((await waiting()) === 0) {
        if (Date.now() > deadline) throw new Error("the outcome never waited for the parent's lock");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      resume();
      expect(await enqueued).toMatchObject([{ id: "child", status: "created", state: "awaitingParents" }]);
      expect(await reported).toEqual([{ jobId: "parent", attempt: claimed!.attempt, status: "applied", state: "succeeded" }]);
      store.setStepHook(null);
      expect((await store.getJobHistory("child")).map((t) => [t.state, t.cause])).toEqual([
        ["awaitingParents", "enqueued"],
        ["scheduled", "parentsResolved"],
      ]);
    });
  });

  describe("retriable faults", () => {
    it("a lock wait past lock_timeout is a TransientStoreError and commits nothing", async () => {
      const impatient = testPool(url!, 2);
      impatient.on("connect", (client) => void client.query("SET lock_timeout = '100ms'"));
      try {
        const store = await freshStore({ pool: impatient });
        await store.enqueue({ jobs: [job("held")], now: T });
        const holder = await pool.connect();
        try {
          await holder.query("BEGIN");
          await holder.query(`SELECT 1 FROM "${store.schema}".jobs WHERE id = 'held' FOR UPDATE`);
          expect(await codeOf(() => store.cancelJob({ jobId: "held", actor: "ops", now: T }))).toBe("BELAY_TRANSIENT_STORE");
          await holder.query("ROLLBACK");
        } finally {
          holder.release();
        }
        expect(await store.getJob("held")).toMatchObject({ state: "scheduled" });
        expect((await store.listAuditRecords()).records).toEqual([]);
      } finally {
        await impatient.end();
      }
    });

    it("a connection killed mid-operation is a TransientStoreError, commits nothing, and the pool recovers", async () => {
      const store = await freshStore();
      await store.enqueue({ jobs: [job("a"), job("b")], now: T });
      let pid = 0;
      store.setStepHook(async (point) => {
        if (point.operation !== "claim" || pid !== 0) return;
        const { rows } = await pool.query(
          `SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE '%${store.schema}%' ORDER BY backend_start DESC LIMIT 1`,
        );
        pid = rows[0].pid as number;
        await pool.query("SELECT pg_terminate_backend($1)", [pid]);
      });
      expect(await codeOf(() => store.claim({ workerId: "w", queues: ["default"], max: 5, leaseMs: 60_000, now: T }))).toBe(
        "BELAY_TRANSIENT_STORE",
      );
      store.setStepHook(null);
      expect(pid).toBeGreaterThan(0);
      expect((await store.listJobs({ states: ["leased"] })).jobs).toEqual([]);
      const { jobs } = await store.claim({ workerId: "w", queues: ["default"], max: 5, leaseMs: 60_000, now: T });
      expect(jobs.map((j) => j.id).sort()).toEqual(["a", "b"]);
    });
  });

  describe("schema versions", () => {
    it("a store refuses a database migrated by a newer, incompatible version, and migrate refuses any newer one", async () => {
      const store = await freshStore();
      const newer = SCHEMA_VERSION + 1;
      await pool.query(`INSERT INTO "${store.schema}".schema_migrations (version, requires) VALUES ($1, 1)`, [newer]);
      expect(await codeOf(() => store.migrate())).toBe("BELAY_SCHEMA_VERSION_UNKNOWN");
      // Additive (requires 1): an older store keeps working beside the newer one.
      const older = new PostgresStore({ pool, schema: store.schema, hints: false });
      stores.push(older);
      expect(await older.getJob("x")).toBeNull();
      await pool.query(`INSERT INTO "${store.schema}".schema_migrations (version, requires) VALUES ($1, $1)`, [newer + 1]);
      const stranger = new PostgresStore({ pool, schema: store.schema, hints: false });
      stores.push(stranger);
      expect(await codeOf(() => stranger.getJob("x"))).toBe("BELAY_SCHEMA_VERSION_UNKNOWN");
    });

    it("a store used before any migration says so", async () => {
      const schema = randomSchema("none");
      const store = new PostgresStore({ pool, schema, hints: false });
      stores.push(store);
      expect(await codeOf(() => store.getJob("x"))).toBe("BELAY_SCHEMA_NOT_MIGRATED");
      schemas.push(schema);
      await store.migrate();
      expect(await store.getJob("x")).toBeNull();
    });
  });

  describe("history in the row and the feed", () => {
    it("a job whose history passes the cap leaves no feed row behind once it and its batch-mates are purged", async () => {
      const schema = randomSchema("feed");
      schemas.push(schema);
      const store = new PostgresStore({ pool, schema, hints: false, bounds: { transitionsPerJob: 2 } });
      stores.push(store);
      await store.migrate();
      const feedRows = async () => (await pool.query(`SELECT count(*)::int AS n FROM "${schema}".feed`)).rows[0].n as number;
      // a and b move together: every statement below writes one feed row naming both.
      await store.enqueue({ jobs: [job("a"), job("b")], now: T });
      let now = T;
      for (let round = 1; round <= 4; round++) {
        now += 10;
        const { jobs } = await store.claim({ workerId: "w", queues: ["default"], max: 10, leaseMs: 60_000, now });
        expect(jobs.map((j) => j.id).sort()).toEqual(["a", "b"]);
        await store.release({ workerId: "w", leases: jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })), now: now + 1 });
      }
      const { jobs } = await store.claim({ workerId: "w", queues: ["default"], max: 10, leaseMs: 60_000, now: now + 10 });
      await store.reportOutcomes({
        reports: jobs.map((j) => ({ jobId: j.id, workerId: "w", attempt: j.attempt, outcome: { type: "succeeded" as const } })),
        now: now + 20,
      });
      // 1 enqueue + 4 × (claim, release) + claim + outcome: 11 transitions each, 2 kept in the row.
      expect(await feedRows()).toBe(11);
      expect((await store.getJobHistory("a")).map((t) => [t.ordinal, t.state, t.cause])).toEqual([
        [10, "leased", "claimed"],
        [11, "succeeded", "succeeded"],
      ]);
      expect(await store.purgeTerminal({ retentionClass: "succeededOrCancelled", before: now + 1_000, max: 10 })).toEqual({ purged: 2 });
      expect(await feedRows(), "every feed row went with the last of its jobs, the dropped entries' too").toBe(0);
    });
  });

  it("the store made from a connection string ends its own pool on close; a given pool stays open", async () => {
    const schema = randomSchema("owned");
    schemas.push(schema);
    const owned = new PostgresStore({ connectionString: url!, schema, hints: false });
    await owned.migrate();
    await owned.close();
    expect(await codeOf(() => owned.getJob("x"))).toBe("BELAY_STORE_CLOSED");
    const given = new PostgresStore({ pool, schema, hints: false });
    await given.close();
    expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });
});


import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_BOUNDS, MAX_INSTANT } from "@belay/contract";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";

// The README's plain-SQL enqueue (for programs in other languages), run exactly as documented: the
// statements are read from the README between its markers, so the text and this test cannot drift.
// They write what the store's own enqueue writes, and a core Worker runs the job, found by polling.

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const documented = /<!-- sql-enqueue:begin -->\s*```sql\n([\s\S]*?)```\s*<!-- sql-enqueue:end -->/.exec(readme)?.[1];

/** The documented statements, keyed by the table each inserts into (prefix dropped). */
function statements(): Map<string, string[]> {
  if (documented === undefined) throw new Error("README.md has no sql-enqueue block");
  const byTable = new Map<string, string[]>();
  for (const text of documented.split(/;\s*\n/).map((s) => s.trim()).filter((s) => s.length > 0)) {
    const table = /INSERT INTO belay_(\w+)/.exec(text)?.[1];
    if (table === undefined) throw new Error(`a documented statement inserts into no belay_ table: ${text}`);
    byTable.set(table, [...(byTable.get(table) ?? []), text]);
  }
  return byTable;
}

/** Only the named parameters `text` uses (better-sqlite3 refuses missing ones). */
function bind(text: string, values: Record<string, unknown>): Record<string, unknown> {
  const names = [...new Set([...text.matchAll(/:(\w+)/g)].map((m) => m[1]!))];
  return Object.fromEntries(names.map((name) => [name, values[name] ?? null]));
}

interface SqlJob {
  readonly id: string;
  readonly jobName: string;
  readonly queue: string;
  readonly payload: string;
  readonly dueAt: number;
  readonly now: number;
  readonly tags?: readonly { key: string; value: string }[];
  readonly traceContext?: string | null;
  readonly retry?: string | null;
}

/** What the README tells another language to do, step by step, in one write transaction. */
function enqueueBySql(db: Database.Database, job: SqlJob): "created" | "duplicate" {
  const sql = statements();
  const values: Record<string, unknown> = {
    id: job.id,
    job_name: job.jobName,
    queue: job.queue,
    payload: job.payload,
    due_at: job.dueAt,
    now: job.now,
    trace_context: job.traceContext ?? null,
    retry: job.retry ?? null,
  };
  db.exec("BEGIN IMMEDIATE");
  try {
    const [insertJob] = sql.get("jobs")!;
    const row = db.prepare(insertJob!).get(bind(insertJob!, values)) as { seq: number } | undefined;
    if (row === undefined) {
      db.exec("COMMIT");
      return "duplicate";
    }
    values["seq"] = row.seq;
    for (const text of sql.get("job_payloads")!) db.prepare(text).run(bind(text, values));
    for (const [i, tag] of (job.tags ?? []).entries()) {
      for (const text of [...sql.get("job_tags")!, ...sql.get("tag_counts")!]) {
        db.prepare(text).run(bind(text, { ...values, ordinal: i + 1, key: tag.key, value: tag.value }));
      }
    }
    for (const text of sql.get("transitions")!) db.prepare(text).run(bind(text, values));
    db.exec("COMMIT");
    return "created";
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}

// The few parts of @belay/core this test drives (typed here: core is not a dependency).
interface CoreWorker {
  start(): Promise<void>;
  stop(options?: { timeoutMs?: number }): Promise<void>;
}
interface Core {
  defineJob(options: { name: string; queue: string; handler: (payload: unknown, ctx: { jobId: string; tags: unknown }) => Promise<void> }): unknown;
  Worker: new (options: Record<string, unknown>) => CoreWorker;
  silentLogger: unknown;
  createJobId(now?: number): string;
}

const DEADLINE_MS = 30_000;

async function eventually(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const dir = mkdtempSync(join(tmpdir(), "belay-sqlite-sql-enqueue-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

async function setUp(): Promise<{ store: SqliteStore; db: Database.Database; path: string }> {
  const path = join(dir, `store-${++files}.db`);
  const store = new SqliteStore({ path });
  await store.migrate();
  // Another program's connection to the same file.
  const db = new Database(path);
  db.pragma("busy_timeout = 5000");
  return { store, db, path };
}

describe("sqlite: the README's plain-SQL enqueue", () => {
  it("the README holds the statements, and the bounds it quotes are the contract's", () => {
    expect([...statements().keys()]).toEqual(["jobs", "job_payloads", "job_tags", "tag_counts", "transitions"]);
    const quoted = [...readme.matchAll(/`bounds\.(\w+)` \(([\d,]+)\)/g)].map((m) => [m[1]!, Number(m[2]!.replaceAll(",", ""))] as const);
    expect(quoted.length).toBeGreaterThanOrEqual(8);
    for (const [bound, value] of quoted) expect(value, bound).toBe(DEFAULT_BOUNDS[bound as keyof typeof DEFAULT_BOUNDS]);
    expect(readme).toContain(MAX_INSTANT.toLocaleString("en-US"));
  });

  it("writes what the store's enqueue writes for the same job; a repeated id changes nothing", async () => {
    const { store, db } = await setUp();
    try {
      const now = Date.now();
      const dueAt = now + 3_600_000;
      const tags = [{ key: "", value: "Urgent" }, { key: "Tenant", value: "ACME" }];
      const retry = { maxAttempts: 3, delaysMs: [1_000, 5_000] };
      await store.enqueue({
        jobs: [{ id: "by-ts", jobName: "same.job", queue: "q", payload: '{"a":1}', dueAt, tags, traceContext: "00-abc", retry }],
        now,
      });
      const result = enqueueBySql(db, {
        id: "by-sql",
        jobName: "same.job",
        queue: "q",
        payload: '{"a":1}',
        dueAt,
        now,
        tags,
        traceContext: "00-abc",
        retry: JSON.stringify(retry),
      });
      expect(result).toBe("created");
      const ts = (await store.getJob("by-ts"))!;
      const sql = (await store.getJob("by-sql"))!;
      expect({ ...sql, id: "", seq: 0 }).toEqual({ ...ts, id: "", seq: 0 });
      expect(sql).toMatchObject({ state: "scheduled", dueAt, enqueuedAt: now, tags, retry, payload: '{"a":1}' });
      const story = async (id: string) => (await store.getJobHistory(id)).map(({ position: _p, jobId: _j, ...t }) => t);
      expect(await story("by-sql")).toEqual(await story("by-ts"));
      expect(await story("by-sql")).toMatchObject([{ state: "scheduled", cause: "enqueued", attempt: 0 }]);
      // The tag counts (what suggestions read) count both jobs, folded as the store folds.
      expect(db.prepare("SELECT key, value, key_fold, value_fold, jobs FROM belay_tag_counts ORDER BY key").all()).toEqual([
        { key: "", value: "Urgent", key_fold: "", value_fold: "urgent", jobs: 2 },
        { key: "Tenant", value: "ACME", key_fold: "tenant", value_fold: "acme", jobs: 2 },
      ]);

      const count = () => db.prepare("SELECT (SELECT count(*) FROM belay_jobs) + (SELECT count(*) FROM belay_transitions) + (SELECT sum(jobs) FROM belay_tag_counts) AS n").get();
      const before = count();
      expect(enqueueBySql(db, { id: "by-sql", jobName: "other.job", queue: "other", payload: "{}", dueAt: now, now, tags })).toBe("duplicate");
      expect(count()).toEqual(before);
      expect(await store.getJob("by-sql")).toMatchObject({ jobName: "same.job", queue: "q" });
    } finally {
      db.close();
      await store.close();
    }
  });

  it("a job written by another connection's SQL is run by a core Worker, found by its poll", async () => {
    const core = (await import(/* @vite-ignore */ new URL("../../core/src/index.ts", import.meta.url).href)) as Core;
    const { store, db } = await setUp();
    const ran: { payload: unknown; jobId: string; tags: unknown }[] = [];
    const faults: string[] = [];
    const worker = new core.Worker({
      store,
      jobs: [
        core.defineJob({
          name: "sql.welcome",
          queue: "sql-jobs",
          handler: async (payload, ctx) => void ran.push({ payload, jobId: ctx.jobId, tags: ctx.tags }),
        }),
      ],
      groups: [{ name: "sql", queues: ["sql-jobs"], poolSize: 2 }],
      // The wake-up on SQLite is the poll: the store never sees another connection's commit.
      pollIntervalMs: 100,
      logger: core.silentLogger,
      onEvent: (event: { type: string; message?: string }) => {
        if (event.type === "storeFault" || event.type === "halted") faults.push(`${event.type}: ${event.message}`);
      },
    });
    await worker.start();
    try {
      const now = Date.now();
      const id = core.createJobId(now);
      expect(enqueueBySql(db, { id, jobName: "sql.welcome", queue: "sql-jobs", payload: '{"userId":"u1"}', dueAt: now, now, tags: [{ key: "from", value: "sql" }] })).toBe("created");
      await eventually(() => ran.length > 0, "the worker to run the job written by SQL");
      expect(ran).toEqual([{ payload: { userId: "u1" }, jobId: id, tags: [{ key: "from", value: "sql" }] }]);
      await eventually(async () => (await store.getJob(id))?.state === "succeeded", "the job to be recorded succeeded");
      expect((await store.getJobHistory(id)).map((t) => t.cause)).toEqual(["enqueued", "claimed", "succeeded"]);
      expect(faults).toEqual([]);
    } finally {
      await worker.stop({ timeoutMs: 1_000 });
      db.close();
      await store.close();
    }
  });
});

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import type pg from "pg";
import { expect } from "vitest";
import type { PostgresStore } from "../../src/index.js";

// What the tests that run real worker processes share: building what the children import, a
// child with its output collected line by line, the overlap count of the intervals they report,
// and the drain of a limited and a bulk queue by drain children (fixtures/drain-child.mjs).

/**
 * Builds this package's dist/ and its dependencies' (turbo builds those first; a fresh clone has
 * none): the children import what would be published.
 */
export function buildForChildren(packageDir: string): void {
  try {
    execFileSync("pnpm", ["exec", "turbo", "run", "build", "--filter=@belay/postgres", "--output-logs=errors-only"], { cwd: packageDir, stdio: "pipe" });
  } catch (error) {
    const output = (error as { stdout?: Buffer }).stdout?.toString() ?? "";
    throw new Error(`building @belay/postgres and its dependencies for the child processes failed:\n${output}`);
  }
}

export interface Child {
  readonly process: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Resolves once a printed line satisfies `match`. */
  waitFor(match: (line: string) => boolean): Promise<void>;
}

/** Starts `command` (its first element the program) in `cwd`; a non-zero exit prints its stderr. */
export function startChild(command: readonly string[], cwd: string, env: Record<string, string> = {}): Child {
  const child = spawn(command[0]!, command.slice(1), { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  const waiters: { match: (line: string) => boolean; resolve: () => void }[] = [];
  let partial = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    const complete = partial.split("\n");
    partial = complete.pop()!;
    for (const line of complete) {
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    }
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => {
      if (code !== 0 && signal === null) console.error(`[${command.join(" ")}] exited ${code}:\n${stderr}`);
      resolve({ code, signal, stderr });
    }),
  );
  return {
    process: child,
    lines,
    exited,
    waitFor: (match) => (lines.some(match) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ match, resolve }))),
  };
}

/** The most intervals open at one instant (at equal instants, ends before starts: touching intervals do not overlap). */
export function maxOverlap(intervals: readonly [number, number, string][]): number {
  const events = intervals.flatMap(([from, to]) => [
    [from, 1],
    [to, -1],
  ]);
  events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let max = 0;
  for (const [, delta] of events) max = Math.max(max, (open += delta!));
  return max;
}

/** The environment of a drain child draining the limited and the bulk queue, 15 ms per limited job. */
export const DRAIN_QUEUES_ENV = { QUEUES: "limited,bulk", LIMITED_QUEUE: "limited", LIMITED_SLEEP_MS: "15", IDLE_ROUNDS: "20" } as const;

/**
 * Enqueues `total` drain jobs due at `now`, 1,000 a call — job `n` on the limited queue when
 * `limited(n)`, else on bulk — and sets the limited queue's concurrency limit to `limit`.
 */
export async function enqueueDrainLoad(store: PostgresStore, total: number, limited: (n: number) => boolean, limit: number, now: number): Promise<void> {
  for (let i = 0; i < total; i += 1_000) {
    const jobs = Array.from({ length: 1_000 }, (_, k) => {
      const n = i + k;
      return { id: `job-${n}`, jobName: "drain.job", queue: limited(n) ? "limited" : "bulk", payload: `{"n":${n}}`, dueAt: now };
    });
    const results = await store.enqueue({ jobs, now });
    expect(results.every((r) => r.status === "created")).toBe(true);
  }
  await store.setConcurrencyLimit({ queue: "limited", limit, actor: "test", now });
}

/**
 * A sampler watching the committed state, besides the children's own intervals: every 5 ms it
 * counts the leased jobs of the limited queue in `schema`. `stop()` resolves to the most it saw.
 */
export function sampleLimitedLeases(pool: pg.Pool, schema: string): { stop(): Promise<number> } {
  let sampling = true;
  let sampledMax = 0;
  const sampler = (async () => {
    while (sampling) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".jobs WHERE queue = 'limited' AND state = 2`);
      sampledMax = Math.max(sampledMax, rows[0].n as number);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return {
    stop: async () => {
      sampling = false;
      await sampler;
      return sampledMax;
    },
  };
}

/** What a drain child printed at its end: its outcome counts and the intervals of its limited-queue handlers. */
export interface DrainSummary {
  readonly applied: number;
  readonly stale: number;
  readonly expired: number;
  readonly intervals: [number, number, string][];
}

/** The summary line `child` printed. */
export function summaryOf(child: Child): DrainSummary {
  const line = child.lines.find((l) => l.startsWith("summary "));
  expect(line, "the child printed its summary").toBeDefined();
  return JSON.parse(line!.slice("summary ".length)) as DrainSummary;
}

/**
 * Checks a drain of `total` jobs by several children (their `summaries`, the `workers` they ran
 * as): every outcome applied, none stale, every child did some of the work, and every job in
 * `schema` succeeded on its first attempt with one claim and one success recorded.
 */
export async function expectDrainedOnce(pool: pg.Pool, schema: string, summaries: readonly DrainSummary[], total: number, workers: string): Promise<void> {
  expect(summaries.reduce((n, s) => n + s.applied, 0), `outcomes applied across ${workers}`).toBe(total);
  expect(summaries.reduce((n, s) => n + s.stale, 0), "stale outcomes").toBe(0);
  expect(summaries.filter((s) => s.applied > 0).length, `every one of the ${workers} did some of the work`).toBe(summaries.length);
  const [counts] = (
    await pool.query(`SELECT count(*) FILTER (WHERE state = 3)::int AS succeeded, count(*) FILTER (WHERE attempt <> 1)::int AS retried,
                             count(*)::int AS total FROM "${schema}".jobs`)
  ).rows;
  expect(counts).toEqual({ succeeded: total, retried: 0, total });
  const [log] = (
    await pool.query(`SELECT count(*) FILTER (WHERE e.state = 2)::int AS claims, count(*) FILTER (WHERE e.state = 3)::int AS successes,
                             count(DISTINCT e.seq) FILTER (WHERE e.state = 3)::int AS jobs
                      FROM "${schema}".feed f CROSS JOIN LATERAL unnest(f.job_seqs, f.states) AS e(seq, state)`)
  ).rows;
  expect(log, "one claim and one success recorded per job").toEqual({ claims: total, successes: total, jobs: total });
}

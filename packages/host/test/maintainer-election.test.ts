import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { JobStore } from "@belay/contract";
import { type Logger, Worker } from "@belay/core";
import { PostgresStore } from "@belay/postgres";
import { SqliteStore } from "@belay/sqlite";
import { afterAll, describe, expect, it } from "vitest";

// Several workers on one store elect one maintainer: only it lists schedules, sweeps expired
// leases and purges; when it is SIGKILLed (no release) or stops gracefully (release), another
// takes over, and a per-second schedule keeps minting each tick exactly once throughout. The
// first maintainer is a child process (it can be killed); the others run in this process, each
// on its own store handle, wrapped to count the maintenance calls it makes. Nothing here
// measures time: every wait polls for the awaited effect under a generous deadline.

const INTERVAL_MS = 200;
const LEASE_MS = 4_000;
const DEADLINE_MS = 60_000;
const PG_URL = process.env["BELAY_TEST_POSTGRES_URL"] ?? "postgres://postgres@127.0.0.1:5432/test";
const child = fileURLToPath(new URL("./fixtures/maintainer-child.ts", import.meta.url));
// tsx's loader, from the testing package that has it, so the child runs the sources under test.
const tsx = pathToFileURL(createRequire(fileURLToPath(new URL("../../testing/package.json", import.meta.url))).resolve("tsx")).href;
// pg, from the PostgreSQL store that depends on it, only to drop the test's schema afterwards.
const pg = createRequire(fileURLToPath(new URL("../../postgres/package.json", import.meta.url)))("pg") as {
  Pool: new (config: { connectionString: string; max: number }) => { query(text: string): Promise<unknown>; end(): Promise<void> };
};
const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };

const MAINTENANCE = ["listSchedules", "expireLeases", "purgeTerminal", "mintDue"] as const;
type Counts = Record<(typeof MAINTENANCE)[number], number>;

/** `store` with a count of every maintenance call made through it. */
function counted(store: JobStore): { store: JobStore; counts: Counts } {
  const counts: Counts = { listSchedules: 0, expireLeases: 0, purgeTerminal: 0, mintDue: 0 };
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      if ((MAINTENANCE as readonly PropertyKey[]).includes(key)) {
        return (...args: unknown[]) => {
          counts[key as keyof Counts]++;
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
  return { store: proxy, counts };
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function startChild(args: readonly string[]): { process: ChildProcess; granted: Promise<void> } {
  const proc = spawn(process.execPath, ["--conditions=@belay/source", "--import", tsx, child, ...args], {
    env: { ...process.env, INTERVAL_MS: String(INTERVAL_MS), LEASE_MS: String(LEASE_MS) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const granted = new Promise<void>((resolve, reject) => {
    let out = "";
    proc.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("granted\n")) resolve();
    });
    proc.once("exit", (code, signal) => reject(new Error(`the child exited (${code ?? signal}) before it held the lease`)));
  });
  return { process: proc, granted };
}

/** Every minted instance of the schedule, by tick. */
async function mintedTicks(store: JobStore): Promise<Map<number, number>> {
  const ticks = new Map<number, number>();
  let after: string | undefined;
  do {
    const page = await store.listJobs({ scheduleId: "every-second", limit: 500, ...(after === undefined ? {} : { after }) });
    for (const job of page.jobs) ticks.set(job.dueAt, (ticks.get(job.dueAt) ?? 0) + 1);
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return ticks;
}

const total = (ticks: Map<number, number>) => [...ticks.values()].reduce((n, c) => n + c, 0);
const maintains = (c: Counts) => c.listSchedules + c.expireLeases + c.purgeTerminal + c.mintDue;

async function scenario(open: () => JobStore, childArgs: readonly string[]): Promise<void> {
  const admin = open();
  await admin.migrate();
  const now = Date.now();
  await admin.upsertSchedule({
    schedule: { id: "every-second", cron: "* * * * * *", timeZone: "UTC", jobName: "tick", queue: "ticks", payload: "{}", catchUp: "skip", noOverlap: false },
    now,
  });
  const first = startChild(childArgs);
  const workers: { worker: Worker; counts: Counts; store: JobStore }[] = [];
  try {
    await first.granted;
    for (let i = 0; i < 3; i++) {
      const { store, counts } = counted(open());
      const worker = new Worker({
        store,
        jobs: [],
        groups: [{ name: "idle", queues: ["idle"] }],
        name: `w${i}`,
        maintenanceIntervalMs: INTERVAL_MS,
        maintainerLeaseMs: LEASE_MS,
        logger: silent,
      });
      await worker.start();
      workers.push({ worker, counts, store });
    }
    // The child maintains: ticks keep coming, and none of the standbys does any maintenance.
    const before = total(await mintedTicks(admin));
    await until("the child to mint three more ticks", async () => total(await mintedTicks(admin)) >= before + 3);
    expect(workers.map((w) => maintains(w.counts))).toEqual([0, 0, 0]);
    expect(workers.map((w) => w.worker.health().maintainer)).toEqual([false, false, false]);

    // Killed without a release: one standby takes over once the lease has lapsed.
    first.process.kill("SIGKILL");
    await until("a standby to take over from the killed child", () => workers.some((w) => w.counts.listSchedules > 0));
    const afterKill = total(await mintedTicks(admin));
    await until("the new maintainer to mint three more ticks", async () => total(await mintedTicks(admin)) >= afterKill + 3);
    const holders = workers.filter((w) => maintains(w.counts) > 0);
    expect(holders).toHaveLength(1);
    const holder = holders[0]!;
    expect(holder.worker.health().maintainer).toBe(true);
    expect(holder.counts.expireLeases).toBeGreaterThan(0);
    expect(holder.counts.purgeTerminal).toBeGreaterThan(0);

    // A graceful stop releases the lease: another of the remaining two takes over.
    await holder.worker.stop();
    const stoppedCounts = { ...holder.counts };
    const rest = workers.filter((w) => w !== holder);
    await until("a remaining worker to take over from the stopped one", () => rest.some((w) => maintains(w.counts) > 0));
    const afterStop = total(await mintedTicks(admin));
    await until("the third maintainer to mint three more ticks", async () => total(await mintedTicks(admin)) >= afterStop + 3);
    expect(rest.filter((w) => maintains(w.counts) > 0)).toHaveLength(1);
    expect(holder.counts).toEqual(stoppedCounts);
  } finally {
    if (first.process.exitCode === null && first.process.signalCode === null) first.process.kill("SIGKILL");
    await Promise.all(workers.map((w) => w.worker.stop({ timeoutMs: 1_000 })));
    for (const w of workers) await w.store.close();
  }
  // Each tick minted exactly once, across three maintainers and two handovers.
  const ticks = await mintedTicks(admin);
  expect(ticks.size).toBeGreaterThanOrEqual(9);
  expect([...ticks.entries()].filter(([, count]) => count !== 1)).toEqual([]);
  await admin.close();
}

describe("maintainer election: one maintainer per store, taken over when it dies or stops", () => {
  const dir = mkdtempSync(join(tmpdir(), "belay-maintainer-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("sqlite: a child process and three workers on one file", async () => {
    const path = join(dir, "shared.db");
    await scenario(() => new SqliteStore({ path }), ["sqlite", path]);
  });

  it("postgres: a child process and three workers on one schema", async () => {
    const schema = `belay_test_maintainer_${process.pid}_${Date.now().toString(36)}`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      await scenario(() => new PostgresStore({ connectionString: PG_URL, schema, hints: false }), ["postgres", PG_URL, schema]);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });
});

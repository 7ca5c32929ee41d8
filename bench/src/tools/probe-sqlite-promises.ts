// Diagnostics of SqlitePromiseStore's write path (not part of `pnpm bench:promises`): the
// benchmark's lifecycle at one caller on a scratch file, with better-sqlite3's prepared
// statements timed (so the time inside SQLite is told from the front's), the WAL frames each
// operation writes, the cost of a bare WAL commit by pages dirtied on this machine, and the
// lifecycle rate with the store's WAL auto-checkpoint (every 1,000 pages, on the committing
// connection: under synchronous=NORMAL the checkpoint is where the fsyncs happen) against a
// larger interval. The driver is wrapped in this process only; the store's code is unchanged.
//
//   cd bench && npx tsx --conditions=@belay/source src/tools/probe-sqlite-promises.ts [--lifecycles 6000] [--rounds 2]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
};
const LIFECYCLES = Number(arg("lifecycles", "6000"));
const ROUNDS = Number(arg("rounds", "2"));

// ---- the driver, wrapped: the auto-checkpoint interval and statement timings ----------------

type Proto = { pragma(src: string, opts?: unknown): unknown; prepare(sql: string): Record<string, (...a: unknown[]) => unknown> };
const proto = Database.prototype as unknown as Proto;
const pragma = proto.pragma;
const prepare = proto.prepare;
let autocheckpoint: number | null = null;
proto.pragma = function (this: Proto, src: string, opts?: unknown) {
  // The store sets its own interval after opening: the probe's, when it has one, wins.
  if (autocheckpoint !== null && /^wal_autocheckpoint\s*=/i.test(src)) return pragma.call(this, `wal_autocheckpoint = ${autocheckpoint}`, opts);
  const result = pragma.call(this, src, opts);
  if (autocheckpoint !== null && /^journal_mode\s*=\s*WAL/i.test(src)) pragma.call(this, `wal_autocheckpoint = ${autocheckpoint}`);
  return result;
};
const statements = new Map<string, { n: number; ms: number }>();
let insideMs = 0;
proto.prepare = function (this: Proto, sql: string) {
  const statement = prepare.call(this, sql);
  const key = sql.replace(/\s+/g, " ").trim().slice(0, 70);
  for (const method of ["run", "get", "all"]) {
    const original = statement[method]!;
    statement[method] = (...args: unknown[]) => {
      const t = performance.now();
      try {
        return original.apply(statement, args);
      } finally {
        const ms = performance.now() - t;
        insideMs += ms;
        const s = statements.get(key) ?? { n: 0, ms: 0 };
        s.n++;
        s.ms += ms;
        statements.set(key, s);
      }
    };
  }
  return statement;
};

const { SqlitePromiseStore } = await import("@belay/sqlite");
const tags = { "resonate:target": "poll://any@bench" };
const VALUE = { data: "eyJvayI6dHJ1ZX0=" };
type Store = InstanceType<typeof SqlitePromiseStore>;
async function op(store: Store, request: Parameters<Store["handle"]>[0]): Promise<void> {
  const answer = await store.handle(request, Date.now());
  if (answer.status !== 200) throw new Error(`${request.kind}: ${JSON.stringify(answer)}`);
}
const ops = (id: string) =>
  [
    { kind: "promise.create", id, timeoutAt: Date.now() + 3_600_000, param: VALUE, tags },
    { kind: "task.acquire", id, version: 0, pid: "w", ttl: 60_000 },
    { kind: "task.fulfill", id, version: 1, action: { kind: "promise.settle", id, state: "resolved", value: VALUE } },
  ] as const;

const dir = mkdtempSync(join(tmpdir(), "belay-probe-sqlite-"));
const out: string[] = [`# SqlitePromiseStore write-path probe — ${new Date().toISOString()}`, ""];
try {
  // ---- lifecycle rate: the store's auto-checkpoint against a larger interval ----
  out.push("## Lifecycles at one caller, by WAL auto-checkpoint interval", "", "| round | wal_autocheckpoint | lifecycles/s | op p50 ms | op mean ms | ops > 1 ms | their share of the time |", "|---:|---|---:|---:|---:|---:|---:|");
  for (let round = 1; round <= ROUNDS; round++) {
    for (const interval of [1_000, 10_000] as const) {
      autocheckpoint = interval;
      const store = new SqlitePromiseStore({ path: join(dir, `rate-${round}-${interval ?? "default"}.db`) });
      await store.migrate();
      for (let i = 0; i < 500; i++) for (const r of ops(`w-${i}`)) await op(store, r);
      const times: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < LIFECYCLES; i++) {
        for (const r of ops(`p-${i}`)) {
          const t = performance.now();
          await op(store, r);
          times.push(performance.now() - t);
        }
      }
      const wall = performance.now() - t0;
      await store.close();
      const sorted = [...times].sort((a, b) => a - b);
      const total = times.reduce((a, b) => a + b, 0);
      const slow = times.filter((t) => t > 1);
      out.push(`| ${round} | ${interval === 10_000 ? "10000 (the store's)" : "1000 (SQLite's default)"} | ${Math.round(LIFECYCLES / (wall / 1000))} | ${sorted[sorted.length >> 1]!.toFixed(3)} | ${(total / times.length).toFixed(3)} | ${slow.length} | ${Math.round((100 * slow.reduce((a, b) => a + b, 0)) / total)}% |`);
    }
  }

  // ---- statements and WAL frames per operation (checkpoints off, so the WAL only grows) ----
  autocheckpoint = 0;
  const path = join(dir, "frames.db");
  const store = new SqlitePromiseStore({ path });
  await store.migrate();
  for (let i = 0; i < 1000; i++) for (const r of ops(`w-${i}`)) await op(store, r);
  statements.clear();
  insideMs = 0;
  const frames = () => (statSync(`${path}-wal`).size - 32) / (4096 + 24);
  const perKind = new Map<string, number>();
  const N = 2000;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    for (const r of ops(`f-${i}`)) {
      const before = frames();
      await op(store, r);
      perKind.set(r.kind, (perKind.get(r.kind) ?? 0) + frames() - before);
    }
  }
  const wall = performance.now() - t0;
  await store.close();
  out.push("", "## Where a lifecycle's time goes (checkpoints off)", "");
  out.push(`${Math.round(wall / N * 1000)} µs per lifecycle (incl. 3 stat() calls per operation of this probe), of which ${Math.round(insideMs / N * 1000)} µs inside SQLite statements; the rest is the front, the store's JavaScript and the event loop.`, "");
  out.push("| WAL frames (4 KiB pages) written per operation | |", "|---|---:|", ...[...perKind].map(([k, v]) => `| ${k} | ${(v / N).toFixed(2)} |`), "");
  out.push("| statement | per lifecycle | µs per call |", "|---|---:|---:|");
  for (const [key, s] of [...statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 16)) out.push(`| ${key.replaceAll("|", "\\|")} | ${(s.n / N).toFixed(2)} | ${((s.ms / s.n) * 1000).toFixed(1)} |`);

  // ---- the floor: a bare WAL commit by pages dirtied ----
  autocheckpoint = null;
  const raw = new Database(join(dir, "raw.db"));
  raw.pragma("journal_mode = WAL");
  raw.pragma("synchronous = NORMAL");
  for (let k = 1; k <= 8; k++) raw.exec(`create table t${k} (id integer primary key, v text); insert into t${k} values (1, 'x')`);
  const begin = raw.prepare("BEGIN IMMEDIATE");
  const commit = raw.prepare("COMMIT");
  const updates = Array.from({ length: 8 }, (_, k) => raw.prepare(`update t${k + 1} set v = ? where id = 1`));
  out.push("", "## A bare WAL transaction on this machine (synchronous=NORMAL, auto-checkpoint 1000)", "", "| pages dirtied | µs per transaction | of which COMMIT |", "|---:|---:|---:|");
  for (const pages of [1, 4, 8]) {
    const n = 20_000;
    let inCommit = 0;
    const t = performance.now();
    for (let i = 0; i < n; i++) {
      begin.run();
      for (let j = 0; j < pages; j++) updates[j]!.run(String(i));
      const c = performance.now();
      commit.run();
      inCommit += performance.now() - c;
    }
    out.push(`| ${pages} | ${(((performance.now() - t) / n) * 1000).toFixed(1)} | ${((inCommit / n) * 1000).toFixed(1)} |`);
  }
  raw.close();
  console.log(out.join("\n"));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

import type { RetryDisposition, ScheduleDefinition, Tag } from "@belay/contract";
import type { TortureSabotage } from "./sabotage.js";

// The fixed shape of every torture run: its queues and their settings, the schedules, the
// vocabulary of tags, the retry policy every sweeper applies. Clients, drain and audit all read
// it from here, so the audit knows what each client was allowed to do.

/** The queues. `fixed` keeps one limit for the whole run; `raced` has its pause and limit raced by every client. */
export const TORTURE_QUEUES = Object.freeze({
  plain: "plain",
  fixed: "fixed",
  raced: "raced",
  flow: "flow",
  sched: "sched",
});
export const ALL_TORTURE_QUEUES: readonly string[] = Object.freeze(Object.values(TORTURE_QUEUES));

/**
 * The queue of client `index`'s probes: only that client enqueues into it, limits, pauses,
 * resumes and claims it, so what each of its calls must answer is known whatever the other
 * clients race (a claim between its pause and its resume takes nothing, a claim takes at most
 * {@link PROBE_LIMIT} of its jobs).
 */
export function probeQueue(index: number): string {
  return `c${index}-probe`;
}

/** The concurrency limit every probe queue gets before its first job. */
export const PROBE_LIMIT = 1;
/** Jobs each probe enqueues into its queue (more than its limit). */
export const PROBE_JOBS = 2;

/** Every queue of a run with `clients` clients: the shared ones and each client's probe queue. */
export function runQueues(clients: number): readonly string[] {
  return [...ALL_TORTURE_QUEUES, ...Array.from({ length: clients }, (_, i) => probeQueue(i))];
}

/** The concurrency limit of `fixed`, set before the clients start and never changed. */
export const FIXED_LIMIT = 2;
/** The limits clients race onto `raced`; its usage may never exceed the largest. */
export const RACED_LIMITS: readonly number[] = Object.freeze([1, 2, 3]);

/** The policy every sweeper passes to `expireLeases` (and the clients' Core-side retry decisions). */
export const TORTURE_RETRY: RetryDisposition = Object.freeze({ maxAttempts: 3, delaysMs: Object.freeze([10, 30]) });

/** Schedules every client mints, racing on the cursor. */
export const SHARED_SCHEDULES: readonly string[] = Object.freeze(["shared-a", "shared-b"]);

/** The duplicate-id pools fire every this many milliseconds, at the same instant in every client. */
export const BARRIER_MS = 250;
/** Job ids in one duplicate pool. */
export const POOL_SIZE = 6;

/** Labels and keyed tags jobs are enqueued with and handlers add. */
export const TAG_VOCABULARY: readonly Tag[] = Object.freeze([
  { key: "", value: "urgent" },
  { key: "", value: "batch" },
  { key: "", value: "slow" },
  { key: "tenant", value: "acme" },
  { key: "tenant", value: "globex" },
  { key: "stage", value: "1" },
  { key: "stage", value: "2" },
  { key: "region", value: "eu" },
]);

/** Every schedule has the same definition apart from its id: a tick each second, minted into `sched`. */
export function tortureSchedule(id: string): ScheduleDefinition {
  return {
    id,
    cron: "* * * * * *",
    timeZone: "UTC",
    jobName: "torture.tick",
    queue: TORTURE_QUEUES.sched,
    payload: `{"schedule":"${id}"}`,
    tags: [{ key: "", value: "minted" }],
    catchUp: "skip",
    noOverlap: false,
    retry: null,
  };
}

/** The schedule client `index` owns (it mints and later removes it; its neighbour mints it too). */
export function ownSchedule(index: number): string {
  return `c${index}-sched`;
}

/** What a run does: its seed, how long the clients race, how many there are. */
export interface TortureSettings {
  readonly seed: number;
  readonly durationMs: number;
  readonly clients: number;
}

/** The default racing time; `BELAY_TORTURE_MS` makes a run longer. */
export const DEFAULT_TORTURE_MS = 8_000;

/**
 * The settings of a run from the environment: `BELAY_TORTURE_SEED` replays a seed (decimal or
 * `0x` hex), else a fresh one; `BELAY_TORTURE_MS` sets how long the clients race;
 * `BELAY_TORTURE_CLIENTS` how many race (default 8).
 */
export function tortureSettings(env: Readonly<Record<string, string | undefined>> = process.env): TortureSettings {
  const seedText = env["BELAY_TORTURE_SEED"];
  const seed = seedText === undefined || seedText === "" ? Math.floor(Math.random() * 0x1_0000_0000) : Number(seedText);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`BELAY_TORTURE_SEED must be a non-negative integer, got ${seedText}`);
  const durationMs = Number(env["BELAY_TORTURE_MS"] ?? DEFAULT_TORTURE_MS);
  if (!Number.isSafeInteger(durationMs) || durationMs < 500) throw new RangeError(`BELAY_TORTURE_MS must be an integer ≥ 500, got ${env["BELAY_TORTURE_MS"]}`);
  const clients = Number(env["BELAY_TORTURE_CLIENTS"] ?? 8);
  if (!Number.isSafeInteger(clients) || clients < 2 || clients > 64) throw new RangeError(`BELAY_TORTURE_CLIENTS must be 2..64, got ${env["BELAY_TORTURE_CLIENTS"]}`);
  return { seed: seed >>> 0, durationMs, clients };
}

/** What one client process is told (passed to it as JSON). */
export interface TortureClientConfig {
  readonly index: number;
  readonly clients: number;
  readonly seed: number;
  /** Wall-clock instant every client starts at (the first barrier). */
  readonly startAt: number;
  readonly durationMs: number;
  /** Where the client writes its journal (JSON) when it ends. */
  readonly journalPath: string;
  /** A contract violation this client's store commits on purpose (to prove the audit sees it), or `null`. */
  readonly sabotage: TortureSabotage | null;
}

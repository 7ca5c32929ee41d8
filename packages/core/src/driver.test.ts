import type { ClaimedJob, HeartbeatResult, HeldLease, OutcomeReport, ScheduleRecord } from "@belay/contract";
import { describe, expect, it } from "vitest";
import { parseCron, planSchedule } from "./cron-planner.js";
import { servedQueues } from "./dispatch.js";
import { NodeDriver } from "./driver.js";
import type { DriverCommand, DriverConfig, DriverEvent, ExecutionResult } from "./driver-types.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy, retryPolicy, toDisposition } from "./retry.js";

// ---- fixtures --------------------------------------------------------------------------------

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function config(overrides: Partial<DriverConfig> = {}): DriverConfig {
  return {
    workerId: "w1",
    queues: servedQueues(["default"]),
    dispatch: "strict",
    poolSize: 10,
    claimBatch: 32,
    prefetch: 0,
    leaseMs: 60_000,
    heartbeatIntervalMs: 20_000,
    pollIntervalMs: 1_000,
    maxPollIntervalMs: 1_000,
    outcomeBatch: 32,
    maintenance: false,
    maintenanceIntervalMs: 5_000,
    retention: { succeededOrCancelled: DAY, deadLetteredOrQuarantined: 14 * DAY },
    purgeBatch: 500,
    faultBackoffMs: { min: 100, max: 1_600 },
    retryFor: () => DEFAULT_RETRY_POLICY,
    groupRetry: toDisposition(DEFAULT_RETRY_POLICY),
    ...overrides,
  };
}

let nextSeq = 1;
function job(id: string, fields: Partial<ClaimedJob> = {}): ClaimedJob {
  return {
    id,
    seq: nextSeq++,
    jobName: "send-email",
    queue: "default",
    payload: "{}",
    attempt: 1,
    releases: 0,
    dueAt: 0,
    enqueuedAt: 0,
    leaseExpiresAt: 60_000,
    tags: [],
    parentIds: [],
    dependencyMode: "onSuccess",
    traceContext: null,
    scheduleId: null,
    workflowId: null,
    retry: null,
    ...fields,
  };
}

const jobs = (n: number, prefix = "j", fields: Partial<ClaimedJob> = {}): ClaimedJob[] =>
  Array.from({ length: n }, (_, i) => job(`${prefix}${i}`, fields));

const ok: ExecutionResult = { type: "succeeded", output: null, addTags: [] };
const failed = (retryable = true): ExecutionResult => ({ type: "failed", failureDetail: "Error: boom", addTags: [], retryable });

type Command<T extends DriverCommand["type"]> = Extract<DriverCommand, { type: T }>;
function only<T extends DriverCommand["type"]>(commands: readonly DriverCommand[], type: T): Command<T>[] {
  return commands.filter((c): c is Command<T> => c.type === type);
}
const types = (commands: readonly DriverCommand[]): string[] => commands.map((c) => c.type);
const ids = (leases: readonly HeldLease[]): string[] => leases.map((l) => l.jobId).sort();

/** An event without its `now` (the rig stamps it). */
type Input = { [K in DriverEvent["type"]]: Omit<Extract<DriverEvent, { type: K }>, "now"> }[DriverEvent["type"]];

/** A driver with a virtual clock and a log of every command it issued. */
class Rig {
  readonly driver: NodeDriver;
  readonly log: DriverCommand[] = [];
  now = 0;
  readonly #latest = new Map<DriverCommand["type"], DriverCommand>();
  readonly #unansweredReports: Command<"report">[] = [];

  constructor(overrides: Partial<DriverConfig> = {}) {
    this.driver = new NodeDriver(config(overrides));
  }

  step(input: Input, now = this.now): DriverCommand[] {
    this.now = now;
    const out = this.driver.step({ ...input, now } as DriverEvent);
    this.log.push(...out);
    for (const command of out) {
      this.#latest.set(command.type, command);
      if (command.type === "report") this.#unansweredReports.push(command);
    }
    return out;
  }

  start(now = this.now): DriverCommand[] {
    return this.step({ type: "started" }, now);
  }

  /** A rig started at 0 that has claimed two fresh jobs at 0, both running: where most lease and outcome tests begin. */
  static running(overrides: Partial<DriverConfig> = {}): { rig: Rig; a: ClaimedJob; b: ClaimedJob } {
    const rig = new Rig(overrides);
    rig.start(0);
    const [a, b] = jobs(2) as [ClaimedJob, ClaimedJob];
    rig.claimed([a, b], null, 0);
    return { rig, a, b };
  }

  last<T extends DriverCommand["type"]>(type: T): Command<T> {
    const found = this.#latest.get(type);
    if (found === undefined) throw new Error(`no ${type} command issued yet`);
    return found as Command<T>;
  }

  /** Answers the latest claim. */
  claimed(batch: readonly ClaimedJob[], nextDueAt: number | null = null, now = this.now): DriverCommand[] {
    return this.step({ type: "claimed", claimId: this.last("claim").claimId, jobs: batch, nextDueAt }, now);
  }

  finished(j: ClaimedJob, result: ExecutionResult = ok, now = this.now): DriverCommand[] {
    return this.step({ type: "finished", jobId: j.id, attempt: j.attempt, result }, now);
  }

  /** Answers the oldest unanswered report, every row applied. */
  reported(now = this.now): DriverCommand[] {
    const report = this.#unansweredReports.shift();
    if (report === undefined) throw new Error("no report in flight");
    const results = report.reports.map((r) => ({ jobId: r.jobId, attempt: r.attempt, status: "applied" as const, state: "succeeded" as const }));
    return this.step({ type: "reported", batchId: report.batchId, results }, now);
  }

  /** Answers the latest heartbeat: every lease renewed, except those `answers` marks lost or cancel-requested. */
  heartbeatAnswered(answers: Record<string, "lost" | "cancelRequested"> = {}, now = this.now): DriverCommand[] {
    const { leases } = this.last("heartbeat");
    const results = leases.map((l): HeartbeatResult => {
      const answer = answers[l.jobId];
      if (answer === "lost") return { jobId: l.jobId, status: "lost" };
      return { jobId: l.jobId, status: "renewed", leaseExpiresAt: now + 60_000, cancelRequested: answer === "cancelRequested" };
    });
    return this.step({ type: "heartbeatAnswered", results }, now);
  }

  /** Every report row issued for `jobId`. */
  reportsOf(jobId: string): OutcomeReport[] {
    return only(this.log, "report").flatMap((r) => r.reports.filter((x) => x.jobId === jobId));
  }
}

/** mulberry32: a tiny seeded PRNG so simulated event orders can be replayed from their seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

// ---- start -----------------------------------------------------------------------------------

describe("driver: start", () => {
  it("start: claims min(poolSize, claimBatch) from every served queue in order", () => {
    const queues = servedQueues(["critical", "default"]);
    const small = new Rig({ poolSize: 10, claimBatch: 32, queues }).start();
    expect(small).toEqual([{ type: "claim", claimId: 1, queues: ["critical", "default"], max: 10, leaseMs: 60_000 }]);
    const big = new Rig({ poolSize: 50, claimBatch: 32, queues }).start();
    expect(only(big, "claim").map((c) => c.max)).toEqual([32]);
  });

  it("start: with maintenance, the first pass starts at once beside the claim", () => {
    const out = new Rig({ maintenance: true }).start();
    expect(types(out)).toEqual(["claim", "expireLeases"]);
  });

  it("start: once the claim is answered empty, a wakeAt for the next poll", () => {
    const rig = new Rig({ pollIntervalMs: 1_000 });
    rig.start(0);
    const out = rig.claimed([], null, 10);
    expect(out).toEqual([{ type: "wakeAt", at: 1_010 }]);
    expect(types(rig.step({ type: "timer" }, 1_010))).toEqual(["claim"]);
  });

  it("start: once the maintenance pass is done, a wakeAt for the next one when it comes before the poll", () => {
    const rig = new Rig({ maintenance: true, maintenanceIntervalMs: 5_000, pollIntervalMs: 10_000, maxPollIntervalMs: 10_000 });
    rig.start(0);
    expect(rig.claimed([], null, 0)).toEqual([{ type: "wakeAt", at: 10_000 }]);
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false });
    rig.step({ type: "schedulesLoaded", schedules: [] });
    rig.step({ type: "maintained", task: "purgeSucceededOrCancelled", count: 0, full: false });
    const out = rig.step({ type: "maintained", task: "purgeDeadLetteredOrQuarantined", count: 0, full: false });
    expect(out).toEqual([{ type: "wakeAt", at: 5_000 }]);
    expect(only(rig.step({ type: "timer" }, 5_000), "expireLeases")).toHaveLength(1);
  });

  it("start: the snapshot reports phase, pool and reservations", () => {
    const rig = new Rig({ poolSize: 4 });
    expect(rig.driver.snapshot()).toMatchObject({ phase: "idle", executing: 0, reserved: 0, poolSize: 4, degraded: false });
    rig.start();
    expect(rig.driver.snapshot()).toMatchObject({ phase: "running", executing: 0, reserved: 4 });
    rig.claimed(jobs(3));
    expect(rig.driver.snapshot()).toMatchObject({ executing: 3, reserved: 0 });
  });
});

// ---- backpressure ----------------------------------------------------------------------------

describe("driver: backpressure", () => {
  it("backpressure: a full pool issues no claim; each freed slot is claimed, counting the claim in flight", () => {
    const rig = new Rig({ poolSize: 10, claimBatch: 32 });
    rig.start(0);
    const batch = jobs(10);
    const out = rig.claimed(batch, 0);
    expect(only(out, "execute").map((c) => c.job.id)).toEqual(batch.map((j) => j.id));
    expect(only(out, "claim")).toEqual([]); // full answer, but no free slot
    expect(rig.driver.snapshot().executing).toBe(10);

    // The first freed slot is claimed at once, for exactly one job.
    expect(only(rig.finished(batch[0]!), "claim").map((c) => c.max)).toEqual([1]);
    // More slots free up while that claim is in flight: no second claim.
    for (const j of batch.slice(1, 5)) expect(only(rig.finished(j), "claim")).toEqual([]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 5, reserved: 1 });
    // The claim comes back full (1 of 1): re-poll at once for the 4 free slots.
    const again = rig.claimed([job("k0")]);
    expect(only(again, "execute")).toHaveLength(1);
    expect(only(again, "claim").map((c) => c.max)).toEqual([4]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 6, reserved: 4 });
  });

  it("backpressure: a burst of 100 due jobs never runs more than 10 at once, and each runs and is reported once", () => {
    for (let seed = 1; seed <= 25; seed++) {
      const result = simulateBurst(seed, 100, 10);
      expect(result.maxExecuting, `seed ${seed}`).toBe(10); // the pool was actually filled
      expect(result.executed.size, `seed ${seed}`).toBe(100);
      for (const [id, n] of result.executed) expect(n, `seed ${seed}: ${id} executed`).toBe(1);
      expect(result.reported.size, `seed ${seed}`).toBe(100);
      for (const [id, n] of result.reported) expect(n, `seed ${seed}: ${id} reported`).toBe(1);
    }
  });
});

/**
 * Drives one driver against a tiny fake store holding `total` due jobs, delivering answers and
 * handler completions in a seeded random order, and checks backpressure after every step.
 */
function simulateBurst(seed: number, total: number, poolSize: number) {
  const random = prng(seed);
  const driver = new NodeDriver(config({ poolSize, claimBatch: 32 }));
  const due = jobs(total, `s${seed}-`);
  let now = 0;
  let wake: number | null = null;
  const claims: Command<"claim">[] = [];
  const reports: Command<"report">[] = [];
  const heartbeats: Command<"heartbeat">[] = [];
  const executing = new Map<string, ClaimedJob>();
  const executed = new Map<string, number>();
  const reported = new Map<string, number>();
  let maxExecuting = 0;

  const feed = (input: Input): void => {
    const out = driver.step({ ...input, now } as DriverEvent);
    for (const command of out) {
      switch (command.type) {
        case "claim":
          expect(claims, `seed ${seed}: a second claim while one is in flight`).toHaveLength(0);
          expect(executing.size + command.max, `seed ${seed}: claim for ${command.max} with ${executing.size} executing`).toBeLessThanOrEqual(poolSize);
          claims.push(command);
          break;
        case "execute":
          executing.set(command.job.id, command.job);
          executed.set(command.job.id, (executed.get(command.job.id) ?? 0) + 1);
          maxExecuting = Math.max(maxExecuting, executing.size);
          expect(executing.size, `seed ${seed}: executing`).toBeLessThanOrEqual(poolSize);
          break;
        case "report":
          reports.push(command);
          break;
        case "heartbeat":
          heartbeats.push(command);
          break;
        case "wakeAt":
          wake = command.at;
          break;
        default:
          throw new Error(`seed ${seed}: unexpected ${command.type}`);
      }
    }
    const snapshot = driver.snapshot();
    expect(snapshot.executing + snapshot.reserved, `seed ${seed}: executing + reserved`).toBeLessThanOrEqual(poolSize);
  };

  feed({ type: "started" });
  for (let steps = 0; ; steps++) {
    if (steps > 100_000) throw new Error(`seed ${seed}: did not finish`);
    const choices: string[] = [];
    if (claims.length > 0) choices.push("claim");
    if (reports.length > 0) choices.push("report");
    if (heartbeats.length > 0) choices.push("heartbeat");
    if (executing.size > 0) choices.push("finish", "finish");
    if (wake !== null && wake <= now) choices.push("timer");
    if (choices.length === 0) {
      if (reported.size === total) break;
      if (wake === null) throw new Error(`seed ${seed}: stuck with ${reported.size} reported and no wake-up`);
      now = wake;
      continue;
    }
    now += Math.floor(random() * 5);
    const choice = choices[Math.floor(random() * choices.length)]!;
    if (choice === "claim") {
      const claim = claims.shift()!;
      const batch = due.splice(0, Math.min(claim.max, due.length));
      feed({ type: "claimed", claimId: claim.claimId, jobs: batch, nextDueAt: due.length > 0 ? now : null });
    } else if (choice === "report") {
      const report = reports.shift()!;
      for (const r of report.reports) reported.set(r.jobId, (reported.get(r.jobId) ?? 0) + 1);
      feed({ type: "reported", batchId: report.batchId, results: report.reports.map((r) => ({ jobId: r.jobId, attempt: r.attempt, status: "applied", state: "succeeded" })) });
    } else if (choice === "heartbeat") {
      const heartbeat = heartbeats.shift()!;
      feed({
        type: "heartbeatAnswered",
        results: heartbeat.leases.map((l) => ({ jobId: l.jobId, status: "renewed", leaseExpiresAt: now + 60_000, cancelRequested: false })),
      });
    } else if (choice === "finish") {
      const running = [...executing.values()];
      const j = running[Math.floor(random() * running.length)]!;
      executing.delete(j.id);
      feed({ type: "finished", jobId: j.id, attempt: j.attempt, result: ok });
    } else {
      wake = null;
      feed({ type: "timer" });
    }
  }
  expect(due, `seed ${seed}: jobs left unclaimed`).toHaveLength(0);
  return { maxExecuting, executed, reported };
}

// ---- polling ---------------------------------------------------------------------------------

describe("driver: polling", () => {
  it("polling: a claim that comes back full re-polls at once", () => {
    const rig = new Rig({ poolSize: 10, claimBatch: 4 });
    expect(only(rig.start(0), "claim").map((c) => c.max)).toEqual([4]);
    const out = rig.claimed(jobs(4), null, 5);
    expect(types(out).filter((t) => t !== "wakeAt")).toEqual(["execute", "execute", "execute", "execute", "claim"]);
    expect(rig.last("claim")).toMatchObject({ claimId: 2, max: 4 });
    // No poll timer: the only wake-up asked for is the heartbeat of the jobs just claimed.
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: 5 + 20_000 }]);
  });

  it("polling: a partial claim sleeps until nextDueAt via wakeAt", () => {
    const rig = new Rig({ poolSize: 10, claimBatch: 4, pollIntervalMs: 1_000 });
    rig.start(0);
    const out = rig.claimed(jobs(2), 300, 0);
    expect(only(out, "claim")).toEqual([]);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: 300 }]);
    expect(only(rig.step({ type: "timer" }, 299), "claim")).toEqual([]);
    expect(only(rig.step({ type: "timer" }, 300), "claim").map((c) => c.max)).toEqual([4]);
  });

  it("polling: a partial claim with no known next due time sleeps the poll interval", () => {
    const rig = new Rig({ pollIntervalMs: 1_000 });
    rig.start(0);
    expect(only(rig.claimed(jobs(2), null, 50), "wakeAt")).toEqual([{ type: "wakeAt", at: 1_050 }]);
  });

  it("polling: a next due time beyond the idle interval is capped by it", () => {
    const rig = new Rig({ pollIntervalMs: 1_000 });
    rig.start(0);
    expect(only(rig.claimed([], 50_000, 0), "wakeAt")).toEqual([{ type: "wakeAt", at: 1_000 }]);
  });

  it("polling: due work withheld (nextDueAt ≤ now, e.g. a concurrency limit) waits one poll interval, not a busy loop", () => {
    const rig = new Rig({ pollIntervalMs: 1_000 });
    rig.start(0);
    const out = rig.claimed([], 0, 0);
    expect(only(out, "claim")).toEqual([]);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: 1_000 }]);
  });

  it("polling: an applied outcome polls at once (it may have released a dependent)", () => {
    const rig = new Rig({ pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    const [a] = jobs(1);
    rig.claimed([a!], null, 0);
    rig.finished(a!, ok, 10);
    expect(only(rig.reported(20), "claim")).toHaveLength(1);
  });

  it("polling: a hint for another group's queue is ignored", () => {
    const rig = new Rig({ pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    rig.claimed([], null, 0);
    expect(rig.step({ type: "hint", queue: "elsewhere" }, 10)).toEqual([]);
    expect(types(rig.step({ type: "hint", queue: "default" }, 20))).toEqual(["claim"]);
  });
});

describe("driver: adaptive idle backoff", () => {
  const settings = { pollIntervalMs: 1_000, maxPollIntervalMs: 8_000 };

  /** Answers `n` polls empty; returns the gap before each next poll. */
  function idleGaps(rig: Rig, n: number): number[] {
    const gaps: number[] = [];
    for (let i = 0; i < n; i++) {
      const wake = only(rig.claimed([], null), "wakeAt");
      expect(wake).toHaveLength(1);
      gaps.push(wake[0]!.at - rig.now);
      expect(types(rig.step({ type: "timer" }, wake[0]!.at))).toEqual(["claim"]);
    }
    return gaps;
  }

  it("idle backoff: doubles on each empty poll up to maxPollIntervalMs, then stays there", () => {
    const rig = new Rig(settings);
    rig.start(0);
    const gaps = idleGaps(rig, 7);
    for (let i = 1; i < gaps.length; i++) expect(gaps[i]).toBe(Math.min(gaps[i - 1]! * 2, 8_000));
    expect(gaps[0]).toBeLessThan(8_000);
    expect(gaps.at(-1)).toBe(8_000);
    expect(gaps.at(-2)).toBe(8_000);
  });

  it("idle backoff: the first idle wait is pollIntervalMs (the floor), doubling from there", () => {
    // DriverConfig: pollIntervalMs is "Idle poll interval, and the floor of adaptive backoff";
    // WorkerOptions.maxPollIntervalMs: "doubles from pollIntervalMs".
    const rig = new Rig(settings);
    rig.start(0);
    expect(idleGaps(rig, 5)).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
  });

  it("idle backoff: adaptation is off when maxPollIntervalMs equals pollIntervalMs", () => {
    const rig = new Rig({ pollIntervalMs: 1_000, maxPollIntervalMs: 1_000 });
    rig.start(0);
    expect(idleGaps(rig, 4)).toEqual([1_000, 1_000, 1_000, 1_000]);
  });

  it("idle backoff: a hint resets it", () => {
    const rig = new Rig(settings);
    rig.start(0);
    const [first] = idleGaps(rig, 6);
    rig.claimed([], null); // backed off to the ceiling, sleeping
    expect(types(rig.step({ type: "hint", queue: "default" }, rig.now + 10))).toEqual(["claim"]);
    expect(idleGaps(rig, 2)).toEqual([first, first! * 2]);
  });

  it("idle backoff: work resets it", () => {
    const rig = new Rig(settings);
    rig.start(0);
    const [first] = idleGaps(rig, 6);
    const [a] = jobs(1);
    const out = rig.claimed([a!], null);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: rig.now + 1_000 }]);
    rig.finished(a!, ok, rig.now + 5);
    expect(types(rig.reported(rig.now + 5)).filter((t) => t === "claim")).toHaveLength(1);
    expect(idleGaps(rig, 2)).toEqual([first, first! * 2]);
  });
});

// ---- outcomes --------------------------------------------------------------------------------

describe("driver: outcome buffering", () => {
  it("outcomes: one report in flight; outcomes finishing meanwhile ride the next report", () => {
    const rig = new Rig({ pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    const [a, b, c] = jobs(3);
    rig.claimed([a!, b!, c!], null, 0);
    const first = only(rig.finished(a!, ok, 10), "report");
    expect(first).toHaveLength(1);
    expect(first[0]!.reports.map((r) => r.jobId)).toEqual([a!.id]);
    expect(only(rig.finished(b!, ok, 11), "report")).toEqual([]);
    expect(only(rig.finished(c!, ok, 12), "report")).toEqual([]);
    expect(rig.driver.snapshot().unreported).toBe(3);
    const second = only(rig.reported(13), "report");
    expect(second).toHaveLength(1);
    expect(second[0]!.batchId).not.toBe(first[0]!.batchId);
    expect(second[0]!.reports.map((r) => r.jobId)).toEqual([b!.id, c!.id]);
    expect(only(rig.reported(14), "report")).toEqual([]);
    expect(rig.driver.snapshot().unreported).toBe(0);
  });

  it("outcomes: a report carries at most outcomeBatch outcomes", () => {
    const rig = new Rig({ outcomeBatch: 2, pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    const batch = jobs(5);
    rig.claimed(batch, null, 0);
    for (const j of batch) rig.finished(j);
    expect(only(rig.log, "report").map((r) => r.reports.length)).toEqual([1]);
    rig.reported();
    rig.reported();
    rig.reported();
    expect(only(rig.log, "report").map((r) => r.reports.map((x) => x.jobId))).toEqual([["j0"], ["j1", "j2"], ["j3", "j4"]]);
  });

  it("outcomes: the report row carries the fence, the outcome and the added tags", () => {
    const rig = new Rig({ workerId: "worker-7" });
    rig.start(0);
    const a = job("a", { attempt: 3 });
    rig.claimed([a], null, 0);
    rig.finished(a, { type: "succeeded", output: '{"n":1}', addTags: [{ key: "", value: "done" }] });
    expect(rig.reportsOf("a")).toEqual([
      { jobId: "a", workerId: "worker-7", attempt: 3, outcome: { type: "succeeded", output: '{"n":1}' }, addTags: [{ key: "", value: "done" }] },
    ]);
  });

  it("outcomes: cancelled and unroutable results become those outcomes", () => {
    const { rig, a, b } = Rig.running({ pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.finished(a!, { type: "cancelled", addTags: [] });
    rig.finished(b!, { type: "unroutable", reason: "unknown job name" });
    rig.reported();
    expect(rig.reportsOf(a!.id)[0]!.outcome).toEqual({ type: "cancelled" });
    expect(rig.reportsOf(b!.id)[0]!.outcome).toEqual({ type: "unroutable", reason: "unknown job name" });
  });

  it("outcomes: a transient report fault backs off, then resends the same outcomes with the newer ones", () => {
    const { rig, a, b } = Rig.running({ pollIntervalMs: 100_000, maxPollIntervalMs: 100_000, faultBackoffMs: { min: 100, max: 1_600 } });
    expect(rig.finished(a!, ok, 10)).toContainEqual(expect.objectContaining({ type: "report" }));
    rig.finished(b!, ok, 11);
    const out = rig.step({ type: "reportFailed", batchId: rig.last("report").batchId, fault: { transient: true, message: "busy" } }, 20);
    expect(only(out, "report")).toEqual([]);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: 120 }]);
    expect(rig.driver.snapshot()).toMatchObject({ degraded: true, lastFault: "busy", unreported: 2 });
    const retried = only(rig.step({ type: "timer" }, 120), "report");
    expect(retried.map((r) => r.reports.map((x) => x.jobId))).toEqual([[a!.id, b!.id]]);
    rig.reported(121);
    expect(rig.driver.snapshot()).toMatchObject({ degraded: false, unreported: 0 });
  });
});

describe("driver: failures and retry", () => {
  const emailPolicy = retryPolicy({ maxAttempts: 3, delaysMs: [1_000, 5_000] });
  const retryFor = ({ jobName }: ClaimedJob): RetryPolicy => (jobName === "email" ? emailPolicy : DEFAULT_RETRY_POLICY);

  it("failures: a failed execution is reported with retryAt from the job type's policy, null at the ceiling", () => {
    const asked: string[] = [];
    const rig = new Rig({
      retryFor: (claimed) => {
        asked.push(claimed.jobName);
        return retryFor(claimed);
      },
      pollIntervalMs: 100_000,
      maxPollIntervalMs: 100_000,
    });
    rig.start(0);
    const first = job("e1", { jobName: "email", attempt: 1 });
    const second = job("e2", { jobName: "email", attempt: 2 });
    const last = job("e3", { jobName: "email", attempt: 3 });
    const other = job("d1", { jobName: "resize", attempt: 1 });
    rig.claimed([first, second, last, other], null, 0);
    const T = 50_000;
    for (const j of [first, second, last, other]) rig.finished(j, failed(), T);
    rig.reported(T);
    rig.reported(T);
    expect(rig.reportsOf("e1")[0]!.outcome).toEqual({ type: "failed", retryAt: T + 1_000, failureDetail: "Error: boom" });
    expect(rig.reportsOf("e2")[0]!.outcome).toEqual({ type: "failed", retryAt: T + 5_000, failureDetail: "Error: boom" });
    expect(rig.reportsOf("e3")[0]!.outcome).toEqual({ type: "failed", retryAt: null, failureDetail: "Error: boom" });
    expect(rig.reportsOf("d1")[0]!.outcome).toEqual({ type: "failed", retryAt: T + 2_000, failureDetail: "Error: boom" });
    expect(new Set(asked)).toEqual(new Set(["email", "resize"]));
  });

  it("failures: the ceiling counts attempts minus graceful releases", () => {
    const rig = new Rig({ retryFor, pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    // Attempt 4 after 2 releases is counted attempt 2: below the ceiling of 3.
    const released = job("r", { jobName: "email", attempt: 4, releases: 2 });
    // Attempt 4 after 1 release is counted attempt 3: at the ceiling.
    const atCeiling = job("c", { jobName: "email", attempt: 4, releases: 1 });
    rig.claimed([released, atCeiling], null, 0);
    rig.finished(released, failed(), 100);
    rig.finished(atCeiling, failed(), 100);
    rig.reported(100);
    expect(rig.reportsOf("r")[0]!.outcome).toMatchObject({ type: "failed", retryAt: 100 + 5_000 });
    expect(rig.reportsOf("c")[0]!.outcome).toMatchObject({ type: "failed", retryAt: null });
    // The fence is the real attempt, not the counted one.
    expect(rig.reportsOf("r")[0]!.attempt).toBe(4);
  });

  it("failures: a non-retryable failure dead-letters at once", () => {
    const rig = new Rig({ retryFor });
    rig.start(0);
    const a = job("a", { jobName: "email", attempt: 1 });
    rig.claimed([a], null, 0);
    rig.finished(a, failed(false), 10);
    expect(rig.reportsOf("a")[0]!.outcome).toEqual({ type: "failed", retryAt: null, failureDetail: "Error: boom" });
  });

  it("failures: a succeeded outcome the store rejects fails the attempt under the job type's policy (dead-letters at the ceiling)", () => {
    // DESIGN §3: the Core decides "retry at t" or "dead-letter". A job whose output is always
    // over its bound must reach dead_lettered at its ceiling, not retry forever with retryAt = now.
    const rig = new Rig({ retryFor, pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(0);
    const below = job("below", { jobName: "email", attempt: 1 });
    const ceiling = job("ceiling", { jobName: "email", attempt: 3 });
    rig.claimed([below, ceiling], null, 0);
    rig.finished(below, { type: "succeeded", output: "x".repeat(10), addTags: [] }, 10);
    rig.finished(ceiling, { type: "succeeded", output: "x".repeat(10), addTags: [] }, 10);
    rig.reported(10); // [below]
    const batch = rig.last("report");
    expect(batch.reports.map((r) => r.jobId)).toEqual(["ceiling"]);
    const rejection = { code: "BELAY_BOUND_EXCEEDED", bound: "outputBytes", limit: 5, actual: 10 } as never;
    rig.step({ type: "reported", batchId: batch.batchId, results: [{ jobId: "ceiling", attempt: 3, status: "rejected", rejection }] }, 20);
    const retry = rig.reportsOf("ceiling").at(-1)!;
    expect(retry.attempt).toBe(3);
    expect(retry.outcome).toMatchObject({ type: "failed", retryAt: null });
  });
});

// ---- heartbeats ------------------------------------------------------------------------------

describe("driver: heartbeats", () => {
  const quiet = { pollIntervalMs: 100_000, maxPollIntervalMs: 100_000, heartbeatIntervalMs: 20_000, leaseMs: 60_000 };

  it("heartbeat: every heartbeatIntervalMs, for running jobs and unreported outcomes", () => {
    const rig = new Rig(quiet);
    rig.start(0);
    const [a, b, c] = jobs(3);
    expect(only(rig.claimed([a!, b!, c!], null, 0), "wakeAt")).toEqual([{ type: "wakeAt", at: 20_000 }]);
    rig.finished(a!, ok, 5_000); // report in flight
    rig.finished(b!, ok, 6_000); // buffered behind it
    expect(only(rig.step({ type: "timer" }, 19_999), "heartbeat")).toEqual([]);
    const beat = only(rig.step({ type: "timer" }, 20_000), "heartbeat");
    expect(beat).toHaveLength(1);
    expect(beat[0]!.leaseMs).toBe(60_000);
    expect(ids(beat[0]!.leases)).toEqual([a!.id, b!.id, c!.id]);
    expect(beat[0]!.leases.find((l) => l.jobId === c!.id)).toEqual({ jobId: c!.id, attempt: 1 });
    // No second heartbeat while the first is unanswered.
    expect(only(rig.step({ type: "timer" }, 40_000), "heartbeat")).toEqual([]);
    expect(only(rig.heartbeatAnswered({}, 40_001), "heartbeat")).toHaveLength(1);
  });

  it("heartbeat: reported outcomes leave the heartbeat; with nothing held there is none", () => {
    const { rig, a, b } = Rig.running(quiet);
    rig.finished(a!, ok, 1_000);
    rig.reported(1_001);
    rig.step({ type: "timer" }, 20_000);
    expect(ids(rig.last("heartbeat").leases)).toEqual([b!.id]);
    const out = rig.heartbeatAnswered({}, 20_010);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: 40_000 }]);
    rig.finished(b!, ok, 30_000);
    rig.reported(30_001);
    expect(only(rig.step({ type: "timer" }, 40_000), "heartbeat")).toEqual([]);
    expect(only(rig.log, "heartbeat")).toHaveLength(1);
  });

  it("heartbeat: a lost lease aborts the handler (leaseLost) and its later outcome is not reported", () => {
    const { rig, a, b } = Rig.running(quiet);
    rig.step({ type: "timer" }, 20_000);
    const out = rig.heartbeatAnswered({ [a!.id]: "lost" }, 20_010);
    expect(only(out, "abort")).toEqual([{ type: "abort", jobId: a!.id, reason: "leaseLost" }]);
    expect(rig.finished(a!, ok, 21_000)).not.toContainEqual(expect.objectContaining({ type: "report" }));
    expect(rig.reportsOf(a!.id)).toEqual([]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 1, unreported: 0 });
    rig.step({ type: "timer" }, 40_000);
    expect(ids(rig.last("heartbeat").leases)).toEqual([b!.id]);
    // A repeated "lost" does not abort again.
    expect(only(rig.heartbeatAnswered({ [b!.id]: "lost" }, 40_010), "abort")).toEqual([
      { type: "abort", jobId: b!.id, reason: "leaseLost" },
    ]);
  });

  it("heartbeat: a lost lease drops that job's buffered outcome", () => {
    const { rig, a, b } = Rig.running(quiet);
    rig.finished(a!, ok, 1_000); // report in flight
    rig.finished(b!, ok, 2_000); // buffered
    rig.step({ type: "timer" }, 20_000);
    rig.heartbeatAnswered({ [b!.id]: "lost" }, 20_010);
    expect(only(rig.reported(20_020), "report")).toEqual([]);
    expect(rig.reportsOf(b!.id)).toEqual([]);
    expect(rig.driver.snapshot().unreported).toBe(0);
  });

  it("heartbeat: cancel requested aborts the handler (cancelRequested) and its failure is reported as cancelled", () => {
    const { rig, a, b } = Rig.running(quiet);
    rig.step({ type: "timer" }, 20_000);
    const out = rig.heartbeatAnswered({ [a!.id]: "cancelRequested" }, 20_010);
    expect(only(out, "abort")).toEqual([{ type: "abort", jobId: a!.id, reason: "cancelRequested" }]);
    // Asked again on the next heartbeat: the handler is not aborted twice.
    rig.step({ type: "timer" }, 40_000);
    expect(ids(rig.last("heartbeat").leases)).toEqual([a!.id, b!.id]);
    expect(only(rig.heartbeatAnswered({ [a!.id]: "cancelRequested" }, 40_010), "abort")).toEqual([]);
    rig.finished(a!, { type: "failed", failureDetail: "AbortError", addTags: [], retryable: true }, 41_000);
    expect(rig.reportsOf(a!.id).map((r) => r.outcome)).toEqual([{ type: "cancelled" }]);
  });
});

// ---- faults ----------------------------------------------------------------------------------

describe("driver: faults", () => {
  it("faults: a transient claim fault marks the pump degraded and retries with doubling backoff", () => {
    const rig = new Rig({ faultBackoffMs: { min: 100, max: 400 } });
    rig.start(0);
    const fault = { transient: true, message: "connection reset" };
    let now = 0;
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const out = rig.step({ type: "claimFailed", claimId: rig.last("claim").claimId, fault }, now);
      expect(only(out, "claim")).toEqual([]);
      expect(rig.driver.snapshot()).toMatchObject({ phase: "running", degraded: true, lastFault: "connection reset" });
      const wake = only(out, "wakeAt")[0]!.at;
      waits.push(wake - now);
      expect(only(rig.step({ type: "timer" }, wake - 1), "claim")).toEqual([]);
      now = wake;
      expect(only(rig.step({ type: "timer" }, now), "claim")).toHaveLength(1);
    }
    expect(waits).toEqual([100, 200, 400, 400]);
    rig.claimed([], null, now);
    expect(rig.driver.snapshot().degraded).toBe(false);
    // After a success the backoff starts again from min.
    rig.step({ type: "hint", queue: "default" }, now + 1);
    const out = rig.step({ type: "claimFailed", claimId: rig.last("claim").claimId, fault }, now + 2);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: now + 102 }]);
  });

  it("faults: a non-transient fault aborts every running handler and halts; later events produce nothing", () => {
    const rig = new Rig({ pollIntervalMs: 1_000 });
    rig.start(0);
    const [a, b, c] = jobs(3);
    rig.claimed([a!, b!, c!], 0, 0);
    rig.finished(c!, ok, 10); // reported below, then not running
    rig.reported(11);
    const claim = rig.last("claim");
    const out = rig.step({ type: "claimFailed", claimId: claim.claimId, fault: { transient: false, message: "relation does not exist" } }, 20);
    expect(out).toEqual([
      { type: "abort", jobId: a!.id, reason: "halted" },
      { type: "abort", jobId: b!.id, reason: "halted" },
      { type: "halted", message: "relation does not exist" },
    ]);
    expect(rig.driver.snapshot()).toMatchObject({ phase: "halted", lastFault: "relation does not exist" });
    expect(rig.finished(a!, ok, 30)).toEqual([]);
    expect(rig.step({ type: "timer" }, 100_000)).toEqual([]);
    expect(rig.step({ type: "hint", queue: "default" }, 100_001)).toEqual([]);
    expect(rig.step({ type: "stopRequested" }, 100_002)).toEqual([]);
    expect(rig.step({ type: "started" }, 100_003)).toEqual([]);
  });

  it("faults: a non-transient report fault halts too, and the lost batch is not resent", () => {
    const { rig, a, b } = Rig.running();
    rig.finished(a!, ok, 10);
    const out = rig.step({ type: "reportFailed", batchId: rig.last("report").batchId, fault: { transient: false, message: "disk full" } }, 20);
    expect(out).toEqual([
      { type: "abort", jobId: b!.id, reason: "halted" },
      { type: "halted", message: "disk full" },
    ]);
    expect(rig.finished(b!, ok, 30)).toEqual([]);
    expect(only(rig.log, "report")).toHaveLength(1);
  });
});

// ---- maintenance -----------------------------------------------------------------------------

function scheduleRecord(fields: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    id: "nightly",
    cron: "* * * * *",
    timeZone: "UTC",
    jobName: "report",
    queue: "default",
    tags: [],
    catchUp: "skip",
    noOverlap: false,
    retry: null,
    cursor: 0,
    skippedTicks: [],
    hasLiveInstance: false,
    createdAt: 0,
    updatedAt: 0,
    ...fields,
  };
}

describe("driver: maintenance", () => {
  const T = Date.parse("2026-05-04T10:00:30Z");
  const settings = { maintenance: true, maintenanceIntervalMs: 5_000, claimBatch: 32, purgeBatch: 500 };

  it("maintenance: expireLeases → loadSchedules → mintDue → purges, one at a time, then waits for the cadence", () => {
    const groupRetry = { maxAttempts: 4, delaysMs: [10] };
    const rig = new Rig({ ...settings, groupRetry, queues: servedQueues(["a", "b"]) });
    const started = rig.start(T);
    expect(only(started, "expireLeases")).toEqual([{ type: "expireLeases", max: 32, queues: ["a", "b"], retry: groupRetry }]);
    // The claim stays in flight throughout: maintenance does not wait for it.
    expect(rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T + 1)).toEqual([{ type: "loadSchedules" }]);

    const due = scheduleRecord({ id: "every-minute", cursor: T - 90_000 });
    const idle = scheduleRecord({ id: "not-yet", cursor: T });
    const out = rig.step({ type: "schedulesLoaded", schedules: [due, idle] }, T + 2);
    const expected = planSchedule(due, parseCron("* * * * *"), T + 2)!;
    expect(out).toEqual([{ type: "mintDue", decisions: [expected] }]);
    expect(expected.mint).toEqual([T - 30_000]);

    expect(rig.step({ type: "maintained", task: "schedules", count: 1, full: false }, T + 3)).toEqual([
      { type: "purge", task: "purgeSucceededOrCancelled", retentionClass: "succeededOrCancelled", before: T + 3 - DAY, max: 500 },
    ]);
    expect(rig.step({ type: "maintained", task: "purgeSucceededOrCancelled", count: 0, full: false }, T + 4)).toEqual([
      { type: "purge", task: "purgeDeadLetteredOrQuarantined", retentionClass: "deadLetteredOrQuarantined", before: T + 4 - 14 * DAY, max: 500 },
    ]);
    const done = rig.step({ type: "maintained", task: "purgeDeadLetteredOrQuarantined", count: 0, full: false }, T + 5);
    expect(done).toEqual([{ type: "wakeAt", at: T + 5_000 }]);
    // An early timer re-arms the wake-up and starts nothing.
    expect(rig.step({ type: "timer" }, T + 4_999)).toEqual([{ type: "wakeAt", at: T + 5_000 }]);
    expect(types(rig.step({ type: "timer" }, T + 5_000))).toEqual(["expireLeases"]);
  });

  it("maintenance: with no due schedule, no mintDue; the purges follow at once", () => {
    const rig = new Rig(settings);
    rig.start(T);
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T);
    const out = rig.step({ type: "schedulesLoaded", schedules: [scheduleRecord({ cursor: T })] }, T);
    expect(types(out)).toEqual(["purge"]);
    expect(only(out, "purge")[0]!.task).toBe("purgeSucceededOrCancelled");
  });

  it("maintenance: an unparseable stored schedule is skipped, never fatal", () => {
    const rig = new Rig(settings);
    rig.start(T);
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T);
    const bad = scheduleRecord({ id: "bad", cron: "99 * * * *", cursor: T - 90_000 });
    const badZone = scheduleRecord({ id: "bad-zone", timeZone: "Nowhere/Special", cursor: T - 90_000 });
    const good = scheduleRecord({ id: "good", cursor: T - 90_000 });
    const out = rig.step({ type: "schedulesLoaded", schedules: [bad, badZone, good] }, T);
    expect(only(out, "mintDue").map((c) => c.decisions.map((d) => d.scheduleId))).toEqual([["good"]]);
    expect(rig.driver.snapshot().phase).toBe("running");
  });

  it("maintenance: a task that fills its batch runs again at once", () => {
    const rig = new Rig(settings);
    rig.start(T);
    expect(types(rig.step({ type: "maintained", task: "expireLeases", count: 32, full: true }, T + 1)).filter((t) => t !== "claim")).toEqual([
      "expireLeases",
    ]);
    expect(types(rig.step({ type: "maintained", task: "expireLeases", count: 3, full: false }, T + 2))).toContain("loadSchedules");
    rig.step({ type: "schedulesLoaded", schedules: [] }, T + 3);
    const again = rig.step({ type: "maintained", task: "purgeSucceededOrCancelled", count: 500, full: true }, T + 4);
    expect(only(again, "purge").map((p) => p.task)).toEqual(["purgeSucceededOrCancelled"]);
  });

  it("maintenance: expired leases put jobs back, so the pump polls", () => {
    const rig = new Rig({ ...settings, pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
    rig.start(T);
    rig.claimed([], null, T);
    expect(only(rig.step({ type: "maintained", task: "expireLeases", count: 2, full: false }, T + 1), "claim")).toHaveLength(1);
  });

  it("maintenance: a class with retention null is never purged", () => {
    const rig = new Rig({ ...settings, retention: { succeededOrCancelled: null, deadLetteredOrQuarantined: 14 * DAY } });
    rig.start(T);
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T);
    const out = rig.step({ type: "schedulesLoaded", schedules: [] }, T);
    expect(only(out, "purge").map((p) => p.task)).toEqual(["purgeDeadLetteredOrQuarantined"]);
  });

  it("maintenance: a transient fault backs off and retries the same task", () => {
    const rig = new Rig({ ...settings, faultBackoffMs: { min: 100, max: 1_600 } });
    rig.start(T);
    rig.claimed([], null, T);
    const out = rig.step({ type: "maintenanceFailed", task: "expireLeases", fault: { transient: true, message: "timeout" } }, T + 10);
    expect(only(out, "expireLeases")).toEqual([]);
    expect(only(out, "wakeAt")).toEqual([{ type: "wakeAt", at: T + 110 }]);
    expect(only(rig.step({ type: "timer" }, T + 110), "expireLeases")).toHaveLength(1);
  });

  it("maintenance: a pump without maintenance never runs any", () => {
    const rig = new Rig({ maintenance: false });
    rig.start(0);
    rig.claimed([], null, 0);
    for (let t = 1_000; t <= 60_000; t += 1_000) {
      if (only(rig.step({ type: "timer" }, t), "claim").length > 0) rig.claimed([], null, t);
    }
    expect(only(rig.log, "claim").length).toBeGreaterThan(30); // the pump kept polling all along
    const maintenance = rig.log.filter((c) => ["expireLeases", "loadSchedules", "mintDue", "purge"].includes(c.type));
    expect(maintenance).toEqual([]);
  });
});

// ---- graceful stop ---------------------------------------------------------------------------

describe("driver: graceful stop", () => {
  const quiet = { pollIntervalMs: 1_000, maxPollIntervalMs: 1_000 };

  it("stop: stops claiming, lets running jobs finish, reports them, then emits stopped once", () => {
    const { rig, a, b } = Rig.running(quiet);
    const claimsBefore = only(rig.log, "claim").length;
    expect(rig.step({ type: "stopRequested" }, 10)).not.toContainEqual({ type: "stopped" });
    expect(rig.driver.snapshot().phase).toBe("stopping");
    rig.step({ type: "timer" }, 2_000);
    rig.step({ type: "hint", queue: "default" }, 2_001);
    expect(only(rig.finished(a!, ok, 2_002), "report")).toHaveLength(1);
    rig.finished(b!, ok, 2_003);
    expect(types(rig.reported(2_004))).toEqual(["report"]); // b's outcome, and no poll
    expect(rig.reported(2_005)).toEqual([{ type: "stopped" }]);
    expect(only(rig.log, "claim")).toHaveLength(claimsBefore);
    expect(rig.reportsOf(a!.id)).toHaveLength(1);
    expect(rig.reportsOf(b!.id)).toHaveLength(1);
    expect(rig.driver.snapshot().phase).toBe("stopped");
    expect(rig.step({ type: "timer" }, 10_000)).toEqual([]);
    expect(rig.step({ type: "stopDeadline" }, 10_001)).toEqual([]);
    expect(only(rig.log, "stopped")).toHaveLength(1);
  });

  it("stop: with nothing running it stops at once", () => {
    const rig = new Rig(quiet);
    rig.start(0);
    rig.claimed([], null, 0);
    expect(rig.step({ type: "stopRequested" }, 5)).toEqual([{ type: "stopped" }]);
  });

  it("stop: a claim in flight is waited for; what it brings is released at once, never executed", () => {
    const rig = new Rig(quiet);
    rig.start(0);
    expect(rig.step({ type: "stopRequested" }, 5)).toEqual([]);
    const [a, b] = jobs(2, "late", { attempt: 2 });
    const out = rig.claimed([a!, b!], null, 10);
    expect(out).toEqual([{ type: "release", leases: [{ jobId: a!.id, attempt: 2 }, { jobId: b!.id, attempt: 2 }] }]);
    expect(rig.step({ type: "released", results: [{ jobId: a!.id, status: "released" }, { jobId: b!.id, status: "released" }] }, 11)).toEqual([
      { type: "stopped" },
    ]);
  });

  it("stop: the deadline aborts the rest (stopping), releases them in one command, and drops their later outcomes", () => {
    const rig = new Rig(quiet);
    rig.start(0);
    const [a, b, c] = jobs(3);
    rig.claimed([a!, b!, c!], null, 0);
    rig.step({ type: "stopRequested" }, 10);
    rig.finished(a!, ok, 20);
    rig.reported(21);
    const out = rig.step({ type: "stopDeadline" }, 30_000);
    expect(out.filter((cmd) => cmd.type !== "wakeAt")).toEqual([
      { type: "abort", jobId: b!.id, reason: "stopping" },
      { type: "abort", jobId: c!.id, reason: "stopping" },
      { type: "release", leases: [{ jobId: b!.id, attempt: 1 }, { jobId: c!.id, attempt: 1 }] },
    ]);
    expect(rig.finished(b!, ok, 30_001)).toEqual([]);
    expect(rig.step({ type: "released", results: [] }, 30_002)).toEqual([{ type: "stopped" }]);
    expect(rig.finished(c!, failed(), 30_003)).toEqual([]);
    expect(rig.reportsOf(b!.id)).toEqual([]);
    expect(rig.reportsOf(c!.id)).toEqual([]);
    expect(only(rig.log, "release")).toHaveLength(1);
  });

  it("stop: outcomes still unreported at the deadline are flushed before stopped", () => {
    const { rig, a, b } = Rig.running(quiet);
    rig.step({ type: "stopRequested" }, 10);
    rig.finished(a!, ok, 20); // report in flight at the deadline
    const out = rig.step({ type: "stopDeadline" }, 30_000);
    expect(only(out, "release")).toEqual([{ type: "release", leases: [{ jobId: b!.id, attempt: 1 }] }]);
    expect(rig.step({ type: "released", results: [] }, 30_001)).not.toContainEqual({ type: "stopped" });
    expect(rig.reported(30_002)).toEqual([{ type: "stopped" }]);
  });

  it("stop: maintenance stops with claiming", () => {
    const rig = new Rig({ ...quiet, maintenance: true });
    rig.start(0);
    rig.claimed([], null, 0);
    rig.step({ type: "stopRequested" }, 1);
    expect(rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, 2)).toEqual([{ type: "stopped" }]);
  });
});

// ---- weighted dispatch through the driver ----------------------------------------------------

describe("driver: weighted dispatch", () => {
  const weighted = {
    dispatch: "weighted" as const,
    queues: servedQueues([
      { name: "a", weight: 5 },
      { name: "b", weight: 1 },
      { name: "c", weight: 1 },
    ]),
    poolSize: 7,
    claimBatch: 32,
  };
  const from = (queue: string, n: number): ClaimedJob[] => jobs(n, `${queue}-${nextSeq}-`, { queue });

  it("weighted: one poll issues a claim per queue that won slots, one at a time, own queue first", () => {
    const rig = new Rig(weighted);
    expect(only(rig.start(0), "claim")).toEqual([{ type: "claim", claimId: 1, queues: ["a", "b", "c"], max: 5, leaseMs: 60_000 }]);
    // a's claim comes back short: the poll's other claims go out in turn.
    expect(only(rig.claimed(from("a", 2), null, 1), "claim")).toEqual([
      { type: "claim", claimId: 2, queues: ["b", "a", "c"], max: 1, leaseMs: 60_000 },
    ]);
    // b's claim finds nothing anywhere: c's claim still goes out.
    expect(only(rig.claimed([], null, 2), "claim")).toEqual([
      { type: "claim", claimId: 3, queues: ["c", "a", "b"], max: 1, leaseMs: 60_000 },
    ]);
  });

  it("weighted: a full claim does not cancel the other queues' claims of the same poll", () => {
    const rig = new Rig(weighted);
    rig.start(0);
    // a's claim comes back full: b and c still get the slots they won in this poll.
    expect(only(rig.claimed(from("a", 5), null, 1), "claim").map((c) => ({ queue: c.queues[0], max: c.max }))).toEqual([{ queue: "b", max: 1 }]);
  });

  it("weighted: under sustained load in every queue, jobs run in proportion to the weights", { timeout: 60_000 }, () => {
    for (const seed of [1, 2, 3]) {
      const random = prng(seed);
      const rig = new Rig({ ...weighted, pollIntervalMs: 100_000, maxPollIntervalMs: 100_000 });
      const running: ClaimedJob[] = [];
      const started: Record<string, number> = { a: 0, b: 0, c: 0 };
      const handle = (out: DriverCommand[]): void => {
        for (const cmd of out) if (cmd.type === "execute") running.push(cmd.job);
      };
      handle(rig.start(0));
      let pendingClaim: Command<"claim"> | null = rig.last("claim");
      let pendingReport = false;
      while (started.a! + started.b! + started.c! < 7_000) {
        const choices: string[] = [];
        if (pendingClaim !== null) choices.push("claim");
        if (running.length > 0) choices.push("finish");
        if (pendingReport) choices.push("report");
        const choice = choices[Math.floor(random() * choices.length)];
        const before = rig.log.length;
        if (choice === "claim") {
          const queue = pendingClaim!.queues[0]!;
          const batch = from(queue, pendingClaim!.max); // every queue always has work
          started[queue]! += batch.length;
          handle(rig.claimed(batch, rig.now, rig.now + 1));
        } else if (choice === "finish") {
          const j = running.splice(Math.floor(random() * running.length), 1)[0]!;
          handle(rig.finished(j, ok, rig.now + 1));
        } else if (choice === "report") {
          handle(rig.reported(rig.now + 1));
        } else {
          throw new Error(`seed ${seed}: stuck`);
        }
        const issued: DriverCommand[] = rig.log.slice(before);
        const claim: Command<"claim"> | undefined = only(issued, "claim").at(-1);
        if (choice === "claim") pendingClaim = null;
        if (claim !== undefined) pendingClaim = claim;
        if (choice === "report") pendingReport = false;
        if (only(issued, "report").length > 0) pendingReport = true;
      }
      const total = started.a! + started.b! + started.c!;
      expect(started.a! / total, `seed ${seed}: share of a (${JSON.stringify(started)})`).toBeCloseTo(5 / 7, 2);
      expect(started.b! / total, `seed ${seed}: share of b (${JSON.stringify(started)})`).toBeCloseTo(1 / 7, 2);
      expect(started.c! / total, `seed ${seed}: share of c (${JSON.stringify(started)})`).toBeCloseTo(1 / 7, 2);
    }
  });
});

// ---- prefetch: claimed jobs waiting for a slot -------------------------------------------------

describe("driver: prefetch", () => {
  /** A pump of 2 slots that may hold 4 more; its handlers have been seen to take `handlerMs`. */
  function warmed(handlerMs: number, overrides: Partial<DriverConfig> = {}): Rig {
    const rig = new Rig({ poolSize: 2, prefetch: 4, claimBatch: 32, ...overrides });
    rig.start(0);
    expect(rig.last("claim").max, "nothing known of handler times yet: no prefetch").toBe(2);
    const first = jobs(2, "warm");
    rig.claimed(first, null, 0);
    rig.step({ type: "finishedMany", executions: first.map((j) => ({ jobId: j.id, attempt: j.attempt, result: ok })) }, handlerMs);
    rig.reported(handlerMs);
    return rig;
  }

  it("short handlers: claims ask for the slots plus the prefetch, and extra jobs wait, then start in claim order", () => {
    const rig = warmed(1);
    const claim = rig.last("claim");
    expect(claim.max).toBe(6);
    const batch = jobs(6, "p");
    const out = rig.claimed(batch, null, 2);
    expect(only(out, "execute").map((c) => c.job.id)).toEqual(["p0", "p1"]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 2, waiting: 4 });
    const next = rig.finished(batch[0]!, ok, 3);
    expect(only(next, "execute").map((c) => c.job.id)).toEqual(["p2"]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 2, waiting: 3 });
  });

  it("slow handlers: the allowance shrinks with the mean handler time, to nothing for long jobs", () => {
    const rig = warmed(40); // 2 slots × 50 ms ÷ 40 ms → 2 may wait
    expect(rig.last("claim").max).toBe(4);
    const slow = warmed(10_000);
    expect(slow.last("claim").max).toBe(2);
  });

  it("waiting jobs are heartbeated; a lost one is dropped, a cancel-requested one is reported cancelled unstarted", () => {
    const rig = warmed(1, { heartbeatIntervalMs: 300 });
    const batch = jobs(6, "h");
    rig.claimed(batch, null, 2);
    const heartbeat = only(rig.step({ type: "timer" }, 302), "heartbeat")[0]!;
    expect(ids(heartbeat.leases)).toEqual(batch.map((j) => j.id).sort());
    const out = rig.heartbeatAnswered({ h4: "lost", h5: "cancelRequested" }, 303);
    expect(only(out, "abort")).toEqual([]);
    expect(rig.driver.snapshot()).toMatchObject({ executing: 2, waiting: 2 });
    expect(only(out, "report").flatMap((r) => r.reports)).toEqual([
      { jobId: "h5", workerId: "w1", attempt: 1, outcome: { type: "cancelled" }, addTags: [] },
    ]);
    // Finishing the running ones starts h2 and h3, never h4 or h5.
    const started = [...rig.finished(batch[0]!, ok, 304), ...rig.finished(batch[1]!, ok, 304)];
    expect(only(started, "execute").map((c) => c.job.id)).toEqual(["h2", "h3"]);
  });

  it("a stop hands the waiting jobs back at once, and waits only for the running ones", () => {
    const rig = warmed(1);
    const batch = jobs(6, "s");
    rig.claimed(batch, null, 2);
    const out = rig.step({ type: "stopRequested" }, 3);
    expect(only(out, "release").map((r) => ids(r.leases))).toEqual([["s2", "s3", "s4", "s5"]]);
    expect(rig.driver.snapshot()).toMatchObject({ phase: "stopping", executing: 2, waiting: 0 });
    rig.step({ type: "released", results: [] }, 4);
    rig.step({ type: "finishedMany", executions: batch.slice(0, 2).map((j) => ({ jobId: j.id, attempt: j.attempt, result: ok })) }, 5);
    const end = rig.reported(6);
    expect(types(end)).toContain("stopped");
  });

  it("while jobs wait, a claim waits for half the capacity to be free: fewer, larger claims", () => {
    const rig = warmed(1);
    const batch = jobs(6, "c");
    rig.claimed(batch, null, 2);
    // One slot frees (c0 done, c2 starts): 1 free of 6, nothing claimed.
    expect(only(rig.finished(batch[0]!, ok, 3), "claim")).toEqual([]);
    rig.finished(batch[1]!, ok, 3);
    // Three free of six (half): the claim goes out for them.
    const out = rig.finished(batch[2]!, ok, 3);
    expect(only(out, "claim").map((c) => c.max)).toEqual([3]);
  });

  it("a fault-stop hands the waiting jobs back at once", () => {
    const rig = warmed(1, { heartbeatIntervalMs: 300 });
    const batch = jobs(6, "f");
    rig.claimed(batch, null, 2);
    rig.step({ type: "timer" }, 302);
    const out = rig.step({ type: "heartbeatFailed", fault: { transient: false, message: "schema gone" } }, 303);
    expect(only(out, "abort").map((c) => c.jobId)).toEqual(["f0", "f1"]);
    expect(only(out, "release").map((r) => ids(r.leases))).toEqual([["f2", "f3", "f4", "f5"]]);
    expect(rig.driver.snapshot()).toMatchObject({ phase: "halted", waiting: 0 });
  });

  it("jobs that waited past the limit behind slow handlers go back unstarted, and no more are prefetched", () => {
    const rig = warmed(1);
    const batch = jobs(6, "w");
    rig.claimed(batch, null, 2);
    // w0 and w1 never finish: at the limit the four waiting jobs are handed back.
    const out = rig.step({ type: "timer" }, 2 + 1_000);
    expect(only(out, "release").map((r) => ids(r.leases))).toEqual([["w2", "w3", "w4", "w5"]]);
    expect(only(out, "claim")).toEqual([]); // the running handlers' age leaves no allowance
    expect(rig.driver.snapshot()).toMatchObject({ executing: 2, waiting: 0 });
  });

  it("a waiting job whose lease ran out is dropped, never started", () => {
    const rig = warmed(1);
    const batch = [...jobs(2, "r"), job("late", { leaseExpiresAt: 5 }), job("fine", { leaseExpiresAt: 60_000 })];
    rig.claimed(batch, null, 2);
    rig.finished(batch[0]!, ok, 6);
    const out = rig.finished(batch[1]!, ok, 6);
    expect(only(rig.log, "execute").map((c) => c.job.id)).not.toContain("late");
    expect(only(out, "execute").map((c) => c.job.id)).toEqual([]);
    expect(only(rig.log, "execute").map((c) => c.job.id)).toContain("fine");
  });

  it("a heartbeat answer about an earlier attempt does not touch the job's new attempt", () => {
    const rig = warmed(1, { heartbeatIntervalMs: 300 });
    const first = job("x", { attempt: 1 });
    rig.claimed([first], null, 2);
    rig.step({ type: "timer" }, 302); // heartbeat for x@1 in flight
    rig.finished(first, failed(), 303);
    rig.reported(304);
    // x is retried at once and claimed again, at attempt 2, while the old heartbeat is unanswered.
    const second = job("x", { attempt: 2 });
    rig.step({ type: "hint", queue: "default" }, 305);
    rig.claimed([second], null, 305);
    const out = rig.step({ type: "heartbeatAnswered", results: [{ jobId: "x", status: "lost" }] }, 306);
    expect(only(out, "abort")).toEqual([]);
    expect(rig.driver.snapshot().executing).toBe(1);
  });
});

// ---- the maintainer election -----------------------------------------------------------------

describe("driver: maintainer election", () => {
  const T = Date.parse("2026-05-04T10:00:30Z");
  const election = {
    maintenance: true,
    maintenanceIntervalMs: 5_000,
    pollIntervalMs: 60_000,
    maxPollIntervalMs: 60_000,
    maintainerLease: { holder: "m1", leaseMs: 15_000 },
    retention: { succeededOrCancelled: null, deadLetteredOrQuarantined: null },
  };
  const granted = (expiresAt: number, holder = "m1") => ({ type: "maintainerLeaseAnswered" as const, result: { status: "granted" as const, holder, expiresAt } });
  const refused = (expiresAt: number, holder = "m2") => ({
    type: "maintainerLeaseAnswered" as const,
    result: { status: "heldByOther" as const, holder, expiresAt },
  });
  const maintenanceOf = (commands: readonly DriverCommand[]) =>
    commands.filter((c) => ["acquireMaintainerLease", "releaseMaintainerLease", "expireLeases", "loadSchedules", "mintDue", "purge"].includes(c.type));

  it("election: a round starts by taking the lease; granted, the sweeps and minting follow", () => {
    const rig = new Rig(election);
    expect(maintenanceOf(rig.start(T))).toEqual([{ type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 }]);
    expect(rig.driver.snapshot().maintainer).toBe(false);
    expect(maintenanceOf(rig.step(granted(T + 15_000), T + 1))).toEqual([{ type: "expireLeases", max: 32, queues: ["default"], retry: config().groupRetry }]);
    expect(rig.driver.snapshot().maintainer).toBe(true);
    expect(types(rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T + 2))).toEqual(["loadSchedules"]);
    expect(rig.step({ type: "schedulesLoaded", schedules: [] }, T + 3)).toEqual([{ type: "wakeAt", at: T + 5_000 }]);
    // The next round renews first.
    expect(maintenanceOf(rig.step({ type: "timer" }, T + 5_000))).toEqual([{ type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 }]);
  });

  it("election: a standby runs nothing of the round and tries again at the next, or at the holder's expiry when sooner", () => {
    const rig = new Rig(election);
    rig.start(T);
    expect(rig.step(refused(T + 60_000), T + 1)).toEqual([{ type: "wakeAt", at: T + 5_000 }]);
    expect(rig.driver.snapshot().maintainer).toBe(false);
    expect(maintenanceOf(rig.step({ type: "timer" }, T + 5_000))).toEqual([{ type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 }]);
    // The holder's lease ends before the next round: the standby wakes at its expiry.
    expect(rig.step(refused(T + 7_000), T + 5_001)).toEqual([{ type: "wakeAt", at: T + 7_000 }]);
    expect(maintenanceOf(rig.step({ type: "timer" }, T + 7_000))).toEqual([{ type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 }]);
    expect(types(maintenanceOf(rig.step(granted(T + 22_000), T + 7_001)))).toEqual(["expireLeases"]);
    const all = maintenanceOf(rig.log).map((c) => c.type);
    expect(all.filter((t) => t === "expireLeases")).toHaveLength(1); // only once it held the lease
  });

  it("election: a holder taken over (its renewal refused) stops maintaining", () => {
    const rig = new Rig(election);
    rig.start(T);
    rig.step(granted(T + 15_000), T);
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T);
    rig.step({ type: "schedulesLoaded", schedules: [] }, T);
    rig.step({ type: "timer" }, T + 5_000);
    expect(maintenanceOf(rig.step(refused(T + 30_000), T + 5_001))).toEqual([]);
    expect(rig.driver.snapshot().maintainer).toBe(false);
  });

  it("election: a round that outlasts the lease renews it before its next task", () => {
    const rig = new Rig({ ...election, retention: { succeededOrCancelled: DAY, deadLetteredOrQuarantined: null } });
    rig.start(T);
    rig.step(granted(T + 15_000), T);
    // A long run of full sweeps, past the lease's expiry.
    rig.step({ type: "maintained", task: "expireLeases", count: 32, full: true }, T + 10_000);
    expect(maintenanceOf(rig.step({ type: "maintained", task: "expireLeases", count: 32, full: true }, T + 15_000))).toEqual([
      { type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 },
    ]);
    // Renewed: the sweep that filled its batch goes on.
    expect(types(maintenanceOf(rig.step(granted(T + 30_000), T + 15_001)))).toEqual(["expireLeases"]);
  });

  it("election: every configured sweep runs in order, the last over all queues", () => {
    const a = { maxAttempts: 3, delaysMs: [1] };
    const b = { maxAttempts: 7, delaysMs: [2] };
    const rig = new Rig({ ...election, expirySweeps: [{ queues: ["a"], retry: a }, { queues: ["b"], retry: b }, { retry: a }] });
    rig.start(T);
    expect(maintenanceOf(rig.step(granted(T + 15_000), T))).toEqual([{ type: "expireLeases", max: 32, queues: ["a"], retry: a }]);
    // A full batch reruns the same sweep, not the first one.
    rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T);
    expect(maintenanceOf(rig.step({ type: "maintained", task: "expireLeases", count: 32, full: true }, T))).toEqual([
      { type: "expireLeases", max: 32, queues: ["b"], retry: b },
    ]);
    rig.step({ type: "maintenanceFailed", task: "expireLeases", fault: { transient: true, message: "busy" } }, T);
    // The failed sweep is the one retried after the backoff.
    expect(maintenanceOf(rig.step({ type: "timer" }, T + 100))).toEqual([{ type: "expireLeases", max: 32, queues: ["b"], retry: b }]);
    expect(maintenanceOf(rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T + 101))).toEqual([
      { type: "expireLeases", max: 32, retry: a },
    ]);
  });

  it("election: a failed lease request backs off and asks again; nothing else of the round runs meanwhile", () => {
    const rig = new Rig(election);
    rig.start(T);
    const out = rig.step({ type: "maintenanceFailed", task: "maintainerLease", fault: { transient: true, message: "timeout" } }, T + 1);
    expect(maintenanceOf(out)).toEqual([]);
    expect(maintenanceOf(rig.step({ type: "timer" }, T + 101))).toEqual([{ type: "acquireMaintainerLease", holder: "m1", leaseMs: 15_000 }]);
  });

  it("stop: the holder releases the lease once its task in flight is done, and stops after the release settles", () => {
    const rig = new Rig(election);
    rig.start(T);
    rig.claimed([], null, T);
    rig.step(granted(T + 15_000), T);
    const stopping = rig.step({ type: "stopRequested" }, T + 1);
    expect(maintenanceOf(stopping)).toEqual([]); // the sweep is still in flight
    const done = rig.step({ type: "maintained", task: "expireLeases", count: 0, full: false }, T + 2);
    expect(done).toEqual([{ type: "releaseMaintainerLease", holder: "m1" }]);
    expect(rig.step({ type: "maintainerLeaseReleased" }, T + 3)).toEqual([{ type: "stopped" }]);
  });

  it("stop: a standby, or a holder whose grant comes back after the stop, releases only what it holds", () => {
    const standby = new Rig(election);
    standby.start(T);
    standby.claimed([], null, T);
    standby.step({ type: "stopRequested" }, T + 1);
    expect(standby.step(refused(T + 9_000), T + 2)).toEqual([{ type: "stopped" }]);

    const late = new Rig(election);
    late.start(T);
    late.claimed([], null, T);
    late.step({ type: "stopRequested" }, T + 1);
    expect(late.step(granted(T + 15_000), T + 2)).toEqual([{ type: "releaseMaintainerLease", holder: "m1" }]);
    expect(late.step({ type: "maintainerLeaseReleased" }, T + 3)).toEqual([{ type: "stopped" }]);
  });

  it("without an election, a maintenance pump maintains from the start and never asks for the lease", () => {
    const { maintainerLease: _, ...unelected } = election;
    const rig = new Rig(unelected);
    expect(types(maintenanceOf(rig.start(T)))).toEqual(["expireLeases"]);
    expect(rig.driver.snapshot().maintainer).toBe(true);
  });
});

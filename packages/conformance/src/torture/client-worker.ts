import { type ClaimedJob, type HeldLease, type OutcomeReport, type SeededRandom, countedAttempts, retryDelayMs } from "@belay/contract";
import { type ClientContext, sleep } from "./client.js";
import { randomTags } from "./client-producer.js";
import type { JournalReport, StaleReason } from "./journal.js";
import { ALL_TORTURE_QUEUES, TORTURE_RETRY } from "./plan.js";

// A worker lane: claim → (heartbeat) → report, with every way an execution can end, including the
// ones that must be refused: abandoned leases, reports after the lease died, reports and
// heartbeats from the wrong worker or attempt, duplicate reports, oversized outputs. Each claim
// runs under a worker id of its own, so (worker, job) names one lease for the whole run.

type Behaviour =
  | "succeed"
  | "retry"
  | "deadLetter"
  | "cancel"
  | "unroutable"
  | "release"
  | "abandon"
  | "late"
  | "boundary"
  | "duplicate"
  | "stray"
  | "oversize"
  | "heartbeat";

function pickBehaviour(rng: SeededRandom, shortLease: boolean): Behaviour {
  const behaviour = rng.weighted<Behaviour>([
    ["succeed", 30],
    ["retry", 12],
    ["deadLetter", 4],
    ["cancel", 3],
    ["unroutable", 3],
    ["release", 6],
    ["abandon", 7],
    ["late", 4],
    ["boundary", 3],
    ["duplicate", 4],
    ["stray", 5],
    ["oversize", 2],
    ["heartbeat", 8],
  ]);
  // Waiting out a long lease would stall the lane: a long-leased late report reports at the expiry instant instead.
  return behaviour === "late" && !shortLease ? "boundary" : behaviour;
}

interface Held {
  readonly job: ClaimedJob;
  behaviour: Behaviour;
  expires: number;
  lost: boolean;
}

function row(
  workerId: string,
  job: ClaimedJob,
  outcome: OutcomeReport["outcome"],
  extra: { addTags?: JournalReport["addTags"]; expect?: JournalReport["expect"]; why?: JournalReport["why"]; outputBytes?: number } = {},
): { report: OutcomeReport; journal: JournalReport } {
  const addTags = extra.addTags ?? [];
  const report: OutcomeReport = { jobId: job.id, workerId, attempt: job.attempt, outcome, addTags };
  const output = outcome.type === "succeeded" ? (outcome.output ?? null) : null;
  const journal: JournalReport = {
    jobId: job.id,
    workerId,
    attempt: job.attempt,
    type: outcome.type,
    retryAt: outcome.type === "failed" ? outcome.retryAt : null,
    output: extra.outputBytes === undefined ? output : null,
    outputBytes: extra.outputBytes ?? (output === null ? 0 : output.length),
    failureDetail: outcome.type === "failed" ? (outcome.failureDetail ?? null) : null,
    addTags,
    expect: extra.expect ?? null,
    why: extra.why ?? null,
  };
  return { report, journal };
}

/** The outcome a handler of `behaviour` returns (the Core's retry decision included). */
function outcomeOf(rng: SeededRandom, held: Held, now: number): OutcomeReport["outcome"] {
  const { job } = held;
  switch (held.behaviour) {
    case "retry": {
      const policy = job.retry ?? TORTURE_RETRY;
      const counted = countedAttempts(job);
      const long = rng.chance(0.1);
      const failureDetail = long ? `Error: long\n${"é".repeat(5_000)}` : `Error: attempt ${job.attempt} failed`;
      return { type: "failed", retryAt: counted >= policy.maxAttempts ? null : now + retryDelayMs(policy, counted), failureDetail };
    }
    case "deadLetter":
      return { type: "failed", retryAt: null, failureDetail: "Error: permanent" };
    case "cancel":
      return { type: "cancelled" };
    case "unroutable":
      return { type: "unroutable", reason: "unknown job name" };
    default:
      return rng.chance(0.5) ? { type: "succeeded", output: `{"by":"${job.id}","attempt":${job.attempt}}` } : { type: "succeeded" };
  }
}

export async function workerLane(ctx: ClientContext, index: number): Promise<void> {
  const rng = ctx.random(10 + index);
  const lane = `worker${index}`;
  const ghost = `c${ctx.index}ghost`;
  let hinted: (() => void) | null = null;
  const unsubscribe = ctx.store.capabilities.wakeUpHints ? ctx.store.subscribeHints?.(() => hinted?.()) : undefined;
  const idle = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    hinted = () => {
      clearTimeout(timer);
      resolve();
    };
  });

  const report = async (rows: { report: OutcomeReport; journal: JournalReport }[], clock?: () => number) => {
    if (rows.length === 0) return;
    const answer = await ctx.call(lane, "reportOutcomes", (now) => ctx.store.reportOutcomes({ reports: rows.map((r) => r.report), now }), clock);
    if (answer !== null) ctx.record({ kind: "report", lane, now: answer.now, ack: answer.ack, reports: rows.map((r) => r.journal), results: answer.value });
  };
  const heartbeat = async (workerId: string, leases: HeldLease[], stray: (StaleReason | null)[], leaseMs: number) => {
    const answer = await ctx.call(lane, "heartbeat", (now) => ctx.store.heartbeat({ workerId, leases, leaseMs, now }));
    if (answer !== null) ctx.record({ kind: "heartbeat", lane, workerId, leaseMs, now: answer.now, ack: answer.ack, leases, stray, results: answer.value });
    return answer?.value ?? null;
  };

  for (let k = 0; ctx.running(); k++) {
    const workerId = `c${ctx.index}w${index}.${k}`;
    const queues = rng.shuffle(ALL_TORTURE_QUEUES).slice(0, rng.int(1, ALL_TORTURE_QUEUES.length));
    const shortLease = rng.chance(0.35);
    const leaseMs = shortLease ? rng.int(150, 400) : rng.int(1_500, 4_000);
    const max = rng.int(1, 6);
    const claimed = await ctx.claim(lane, { workerId, queues, max, leaseMs });
    if (claimed === null) continue;
    const jobs = claimed.value;
    if (jobs.length === 0) {
      await idle(rng.int(5, 40));
      continue;
    }
    const held: Held[] = jobs.map((job) => ({ job, behaviour: pickBehaviour(rng, shortLease), expires: job.leaseExpiresAt, lost: false }));
    await sleep(rng.int(0, 20));

    // Heartbeats: the real ones renew (or find the lease lost, or a cancel requested); strays —
    // the next attempt, a job this worker never claimed, another worker's id — are always lost.
    if (rng.chance(0.4) || held.some((h) => h.behaviour === "heartbeat" || h.behaviour === "stray")) {
      const leases: HeldLease[] = held.map((h) => ({ jobId: h.job.id, attempt: h.job.attempt }));
      const stray: (StaleReason | null)[] = leases.map(() => null);
      for (const h of held.filter((x) => x.behaviour === "stray")) {
        leases.push({ jobId: h.job.id, attempt: h.job.attempt + 1 });
        stray.push("wrongAttempt");
        const other = ctx.known.pick(rng);
        if (other !== null && !held.some((x) => x.job.id === other)) {
          leases.push({ jobId: other, attempt: rng.int(1, 3) });
          stray.push("notHeld");
        }
      }
      const results = await heartbeat(workerId, leases, stray, rng.chance(0.5) ? leaseMs : rng.int(150, 4_000));
      for (const [i, h] of held.entries()) {
        const result = results?.[i];
        if (result === undefined) continue;
        if (result.status === "lost") h.lost = true;
        else {
          h.expires = result.leaseExpiresAt;
          if (result.cancelRequested && rng.chance(0.85)) h.behaviour = "cancel";
        }
      }
      const strays = held.filter((h) => h.behaviour === "stray");
      if (strays.length > 0) {
        const ghostLeases = strays.map((h) => ({ jobId: h.job.id, attempt: h.job.attempt }));
        await heartbeat(ghost, ghostLeases, ghostLeases.map(() => "ghostWorker"), leaseMs);
      }
    }

    const rows: { report: OutcomeReport; journal: JournalReport }[] = [];
    const followUps: typeof rows = [];
    const delayed: Held[] = [];
    const releases: Held[] = [];
    const now = Date.now();
    for (const h of held) {
      const { job } = h;
      if (h.lost) {
        // The lease is gone: a report now must change nothing.
        if (rng.chance(0.3)) rows.push(row(workerId, job, { type: "succeeded" }, { expect: "stale", why: "afterLost" }));
        continue;
      }
      switch (h.behaviour) {
        case "abandon":
          break;
        case "release":
          releases.push(h);
          break;
        case "late":
        case "boundary":
          delayed.push(h);
          break;
        case "stray":
          rows.push(row(ghost, job, { type: "succeeded" }, { expect: "stale", why: "ghostWorker" }));
          rows.push(row(workerId, { ...job, attempt: job.attempt + 1 }, { type: "succeeded" }, { expect: "stale", why: "wrongAttempt" }));
          rows.push(row(workerId, job, outcomeOf(rng, h, now), { addTags: randomTags(rng) }));
          break;
        case "duplicate": {
          const first = row(workerId, job, outcomeOf(rng, h, now), { addTags: randomTags(rng) });
          const again = { report: first.report, journal: { ...first.journal, expect: "stale" as const, why: "duplicateReport" as const } };
          rows.push(first);
          (rng.chance(0.5) ? rows : followUps).push(again);
          break;
        }
        case "oversize": {
          const output = `"${"o".repeat(65_536)}"`;
          rows.push(row(workerId, job, { type: "succeeded", output }, { expect: "rejected", why: "outputTooLarge", outputBytes: output.length }));
          followUps.push(row(workerId, job, outcomeOf(rng, { ...h, behaviour: "succeed" }, now), { addTags: randomTags(rng) }));
          break;
        }
        default:
          rows.push(row(workerId, job, outcomeOf(rng, h, now), { addTags: rng.chance(0.4) ? randomTags(rng) : [] }));
      }
    }
    await report(rows);
    await report(followUps);

    if (releases.length > 0) {
      const leases: HeldLease[] = releases.map((h) => ({ jobId: h.job.id, attempt: h.job.attempt }));
      const stray: (StaleReason | null)[] = leases.map(() => null);
      if (rng.chance(0.3)) {
        leases.push({ jobId: releases[0]!.job.id, attempt: releases[0]!.job.attempt + 1 });
        stray.push("wrongAttempt");
      }
      const answer = await ctx.call(lane, "release", (at) => ctx.store.release({ workerId, leases, now: at }));
      if (answer !== null) ctx.record({ kind: "release", lane, workerId, now: answer.now, ack: answer.ack, leases, stray, results: answer.value });
    }

    // Reports after the lease died: at its expiry instant exactly (a lease is dead then), or
    // once the wall clock has passed it.
    for (const h of delayed) {
      const rows = [row(workerId, h.job, { type: "succeeded", output: '{"late":true}' }, { expect: "stale", why: "leaseDead" })];
      if (h.behaviour === "boundary") await report(rows, () => h.expires);
      else {
        await sleep(h.expires - Date.now() + 1);
        await report(rows);
      }
    }
  }
  unsubscribe?.();
}

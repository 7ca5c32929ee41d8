import type { JobState, MintDecision, MintResult, UpsertScheduleResult } from "@belay/contract";
import type { Journal, JournalEntry, JournalJob, JournalReport } from "./journal.js";

// The journals, indexed for the audit, and the checks that need nothing but them: every write a
// client was acknowledged held a live fence at its `now`, every write made stale on purpose was
// refused, refused batches and workflows are whole, no claim came out of a queue while it was
// certainly paused.

/** A problem the audit found: which check, and what it saw. */
export interface Violation {
  readonly check: string;
  readonly message: string;
}

/** One lease a claim handed out, as its worker knew it. Keyed `worker|job|attempt`. */
export interface LeaseRecord {
  readonly key: string;
  readonly client: string;
  readonly workerId: string;
  readonly jobId: string;
  readonly attempt: number;
  readonly queue: string;
  readonly releases: number;
  /** The lease expiry after the worker's last renewal. */
  expires: number;
  /** An applied report or release ended it. */
  ended: boolean;
  /**
   * The store answered lost or stale for it at a `now` before its expiry: it can never be the
   * caller's again. (An answer at or past the expiry says only that it is dead from then on,
   * which `expires` already tells.)
   */
  dead: boolean;
}

/** An outcome or release the store applied. */
export interface AppliedExit {
  readonly key: string;
  readonly jobId: string;
  readonly state: JobState;
  readonly via: "report" | "release";
  readonly report: JournalReport | null;
}

export interface Creation {
  readonly jobId: string;
  readonly client: string;
  readonly via: "enqueue" | "workflow";
  readonly job: JournalJob;
  readonly workflowId: string | null;
}

export interface JournalIndex {
  readonly creations: Map<string, Creation[]>;
  /** Ids some call answered `duplicate` for. */
  readonly duplicates: Set<string>;
  /** Own ids of batches refused as a whole. */
  readonly refused: Set<string>;
  readonly leases: Map<string, LeaseRecord>;
  readonly applied: Map<string, AppliedExit>;
  /** Expired leases per job, as the sweepers were told. */
  readonly expiries: Map<string, number>;
  readonly cancels: Map<string, { actor: string; status: string }[]>;
  /** Actors answered `requeued`, per job. */
  readonly requeues: Map<string, string[]>;
  readonly queueActions: { client: string; actor: string; action: string; queue: string; limit: number | null; now: number; ack: number }[];
  readonly triggers: { actor: string; scheduleId: string; jobId: string; status: string; now: number }[];
  readonly mints: { client: string; decision: MintDecision; stale: boolean; result: MintResult; now: number }[];
  readonly removals: { scheduleId: string; status: string; ack: number }[];
  readonly upserts: { scheduleId: string; result: UpsertScheduleResult }[];
  readonly workflows: Map<string, { client: string; status: string; pool: number | null; jobIds: string[] }[]>;
  readonly claims: Extract<JournalEntry, { kind: "claim" }>[];
}

export const leaseKey = (workerId: string, jobId: string, attempt: number) => `${workerId}|${jobId}|${attempt}`;

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => void (map.get(key) ?? map.set(key, []).get(key)!).push(value);

/** The states an applied outcome of `type` may leave its job in. */
function outcomeStates(report: JournalReport): readonly JobState[] {
  switch (report.type) {
    case "succeeded":
      return ["succeeded"];
    case "failed":
      return report.retryAt === null ? ["deadLettered"] : ["scheduled", "cancelled"];
    case "cancelled":
      return ["cancelled"];
    case "unroutable":
      return ["quarantined"];
  }
}

/** Indexes every journal, checking each fenced write against what its lease was at that moment. */
export function indexJournals(journals: readonly Journal[], violations: Violation[]): JournalIndex {
  const index: JournalIndex = {
    creations: new Map(),
    duplicates: new Set(),
    refused: new Set(),
    leases: new Map(),
    applied: new Map(),
    expiries: new Map(),
    cancels: new Map(),
    requeues: new Map(),
    queueActions: [],
    triggers: [],
    mints: [],
    removals: [],
    upserts: [],
    workflows: new Map(),
    claims: [],
  };
  const fail = (check: string, message: string) => violations.push({ check, message });

  /** Why a write at `now` under `key` could not hold its fence, or `null` when it could. */
  const fenceProblem = (key: string, now: number): string | null => {
    const lease = index.leases.get(key);
    if (lease === undefined) return "no claim handed out that lease";
    if (lease.ended) return "its lease had already ended by an applied write";
    if (lease.dead) return "the store had already answered lost or stale for that lease";
    if (now >= lease.expires) return `its lease had died at ${lease.expires} (now ${now})`;
    return null;
  };

  /**
   * Walks the leases of a heartbeat or a release with their results. A lease the store answered
   * `accepted` must have held its fence, and `then` checks the rest; one it refused before the
   * lease's expiry can never be the caller's again.
   */
  const leaseAnswers = <E extends Extract<JournalEntry, { kind: "heartbeat" | "release" }>, A extends E["results"][number]["status"]>(
    client: string,
    entry: E,
    accepted: A,
    then: (lease: E["leases"][number], result: Extract<E["results"][number], { status: A }>, key: string, record: LeaseRecord | undefined) => void,
  ) => {
    for (const [i, lease] of entry.leases.entries()) {
      const result: E["results"][number] | undefined = entry.results[i];
      const key = leaseKey(entry.workerId, lease.jobId, lease.attempt);
      if (result === undefined || result.jobId !== lease.jobId) {
        fail(entry.kind, `${client}: ${entry.kind} result ${i} does not answer for ${lease.jobId}`);
        continue;
      }
      const record = index.leases.get(key);
      if (result.status === accepted) {
        const problem = fenceProblem(key, entry.now);
        if (problem !== null) fail("staleFence", `${client}: ${entry.kind} of ${key}${entry.stray[i] ? ` (${entry.stray[i]} on purpose)` : ""} ${accepted}, but ${problem}`);
        then(lease, result as Extract<E["results"][number], { status: A }>, key, record);
      } else if (record !== undefined && entry.now < record.expires) record.dead = true;
    }
  };

  for (const journal of journals) {
    const client = journal.client;
    if (journal.failure !== null) fail("client", `${client} crashed: ${journal.failure.split("\n")[0]}`);
    for (const entry of journal.entries) {
      switch (entry.kind) {
        case "anomaly":
          fail("anomaly", `${client} ${entry.op}: ${entry.message}`);
          break;
        case "enqueue": {
          const refused = entry.results.some((r) => r.status === "rejected");
          if (entry.invalid) {
            if (!refused || entry.results.some((r) => r.status !== "rejected" && r.status !== "notWritten")) {
              fail("refusedBatch", `${client}: a batch with an invalid job was answered ${JSON.stringify(entry.results.map((r) => r.status))}`);
            }
            for (const job of entry.jobs) index.refused.add(job.id);
            break;
          }
          if (refused) fail("enqueue", `${client}: a valid batch was refused: ${JSON.stringify(entry.results.filter((r) => r.status === "rejected"))}`);
          const seen = new Set<string>();
          for (const [i, result] of entry.results.entries()) {
            const job = entry.jobs[i]!;
            if (result.id !== job.id) fail("enqueue", `${client}: result ${i} names ${result.id}, the job sent was ${job.id}`);
            if (result.status === "created") {
              if (seen.has(job.id)) fail("enqueue", `${client}: ${job.id} was created twice in one call`);
              push(index.creations, job.id, { jobId: job.id, client, via: "enqueue", job, workflowId: null });
            } else if (result.status === "duplicate") index.duplicates.add(job.id);
            seen.add(job.id);
          }
          break;
        }
        case "workflow": {
          const { result } = entry;
          push(index.workflows, entry.workflowId, {
            client,
            status: result.status,
            pool: entry.pool,
            jobIds: entry.jobs.map((j) => j.id),
          });
          if (result.status === "rejected") fail("workflow", `${client}: workflow ${entry.workflowId} was refused: ${JSON.stringify(result)}`);
          if (result.status === "created") {
            for (const member of result.jobs) {
              const job = entry.jobs.find((j) => j.id === member.id);
              if (job === undefined) fail("workflow", `${client}: workflow ${entry.workflowId} created ${member.id}, not one of its members`);
              else push(index.creations, job.id, { jobId: job.id, client, via: "workflow", job, workflowId: entry.workflowId });
            }
            if (result.jobs.length !== entry.jobs.length) fail("workflow", `${client}: workflow ${entry.workflowId} created ${result.jobs.length} of ${entry.jobs.length} members`);
          }
          break;
        }
        case "claim": {
          index.claims.push(entry);
          const ids = new Set<string>();
          for (const job of entry.jobs) {
            if (ids.has(job.id)) fail("claim", `${client}: one claim returned ${job.id} twice`);
            ids.add(job.id);
            if (!entry.queues.includes(job.queue)) fail("claim", `${client}: ${entry.workerId} claimed ${job.id} of queue ${job.queue}, not one it serves`);
            if (job.leaseExpiresAt !== entry.now + entry.leaseMs) fail("claim", `${client}: ${job.id} leased to ${job.leaseExpiresAt}, not now + leaseMs`);
            const key = leaseKey(entry.workerId, job.id, job.attempt);
            if (index.leases.has(key)) fail("claim", `${client}: lease ${key} handed out twice`);
            index.leases.set(key, { key, client, workerId: entry.workerId, jobId: job.id, attempt: job.attempt, queue: job.queue, releases: job.releases, expires: job.leaseExpiresAt, ended: false, dead: false });
          }
          break;
        }
        case "heartbeat":
          leaseAnswers(client, entry, "renewed", (_, result, key, record) => {
            if (result.leaseExpiresAt !== entry.now + entry.leaseMs) fail("heartbeat", `${client}: ${key} renewed to ${result.leaseExpiresAt}, not now + leaseMs`);
            if (record !== undefined) record.expires = result.leaseExpiresAt;
          });
          break;
        case "report":
          for (const [i, report] of entry.reports.entries()) {
            const result = entry.results[i];
            const key = leaseKey(report.workerId, report.jobId, report.attempt);
            if (result === undefined || result.jobId !== report.jobId || result.attempt !== report.attempt) {
              fail("report", `${client}: outcome result ${i} does not answer for ${key}`);
              continue;
            }
            const record = index.leases.get(key);
            if (result.status === "applied") {
              const problem = fenceProblem(key, entry.now);
              if (problem !== null) fail("staleFence", `${client}: ${report.type} of ${key}${report.why ? ` (${report.why} on purpose)` : ""} applied, but ${problem}`);
              if (report.expect === "rejected") fail("report", `${client}: ${key} with an output of ${report.outputBytes} bytes was applied`);
              if (!outcomeStates(report).includes(result.state)) fail("report", `${client}: ${report.type} of ${key} left the job ${result.state}`);
              if (record !== undefined) record.ended = true;
              if (index.applied.has(key)) fail("effectOnce", `${client}: a second outcome of ${key} applied`);
              index.applied.set(key, { key, jobId: report.jobId, state: result.state, via: "report", report });
            } else if (result.status === "rejected") {
              if (report.expect !== "rejected") fail("report", `${client}: ${key} refused: ${JSON.stringify(result.rejection)}`);
              else if (result.rejection.code !== "BELAY_OUTPUT_TOO_LARGE") fail("report", `${client}: oversized output of ${key} refused as ${result.rejection.code}`);
            } else {
              // A live fence with an oversized output must be rejected, never dropped as stale.
              if (record !== undefined && entry.now < record.expires) record.dead = true;
            }
          }
          break;
        case "release":
          leaseAnswers(client, entry, "released", (lease, _, key, record) => {
            if (record !== undefined) record.ended = true;
            index.applied.set(key, { key, jobId: lease.jobId, state: "scheduled", via: "release", report: null });
          });
          break;
        case "expire":
          for (const expired of entry.results) {
            if (!["scheduled", "deadLettered", "cancelled"].includes(expired.state)) fail("expiry", `${client}: ${expired.jobId} expired into ${expired.state}`);
            index.expiries.set(expired.jobId, (index.expiries.get(expired.jobId) ?? 0) + 1);
          }
          break;
        case "cancel":
          push(index.cancels, entry.jobId, { actor: entry.actor, status: entry.status });
          break;
        case "requeue":
          if (entry.status === "requeued") push(index.requeues, entry.jobId, entry.actor);
          else fail("requeue", `${client}: requeue of ${entry.jobId}, listed dead-lettered or quarantined, answered ${entry.status}`);
          break;
        case "queue":
          index.queueActions.push({ client, actor: entry.actor, action: entry.action, queue: entry.queue, limit: entry.limit, now: entry.now, ack: entry.ack });
          break;
        case "trigger":
          index.triggers.push({ actor: entry.actor, scheduleId: entry.scheduleId, jobId: entry.jobId, status: entry.status, now: entry.now });
          break;
        case "mint":
          for (const [i, decision] of entry.decisions.entries()) {
            const result = entry.results[i];
            if (result === undefined || result.scheduleId !== decision.scheduleId) fail("mint", `${client}: mint result ${i} does not answer for ${decision.scheduleId}`);
            else index.mints.push({ client, decision, stale: entry.stale[i] ?? false, result, now: entry.now });
          }
          break;
        case "removeSchedule":
          index.removals.push({ scheduleId: entry.scheduleId, status: entry.status, ack: entry.ack });
          break;
        case "upsertSchedule":
          index.upserts.push({ scheduleId: entry.scheduleId, result: entry.result });
          break;
      }
    }
  }
  return index;
}

/**
 * Paused queues are never claimed: a claim whose whole call (from its `now` to its answer) lies
 * where one of its queues was certainly paused — after some pause of it was acknowledged, with no
 * resume that could have committed between that pause and the claim's answer — returned no job
 * of that queue. Instants are whole milliseconds read in different processes, so "after" is
 * strict: calls whose instants are equal are not ordered. On `raced` every client toggles, so such windows come by chance; each client's
 * pause probe makes one on its own queue every time.
 */
export function checkPausedClaims(index: JournalIndex, violations: Violation[]): number {
  const toggles = new Map<string, { pauses: JournalIndex["queueActions"]; resumes: JournalIndex["queueActions"] }>();
  for (const action of index.queueActions) {
    if (action.action === "setConcurrencyLimit") continue;
    const entry = toggles.get(action.queue) ?? toggles.set(action.queue, { pauses: [], resumes: [] }).get(action.queue)!;
    (action.action === "pauseQueue" ? entry.pauses : entry.resumes).push(action);
  }
  let checked = 0;
  for (const claim of index.claims) {
    for (const queue of claim.queues) {
      const toggled = toggles.get(queue);
      if (toggled === undefined) continue;
      const certainlyPaused = toggled.pauses.some((p) => p.ack < claim.now && toggled.resumes.every((r) => r.ack < p.now || r.now > claim.ack));
      if (!certainlyPaused) continue;
      checked++;
      const taken = claim.jobs.filter((j) => j.queue === queue);
      if (taken.length > 0) {
        violations.push({ check: "pausedQueue", message: `${claim.workerId} claimed ${taken.map((j) => j.id).join(", ")} from ${queue} while it was paused (claim ${claim.now}–${claim.ack})` });
      }
    }
  }
  return checked;
}

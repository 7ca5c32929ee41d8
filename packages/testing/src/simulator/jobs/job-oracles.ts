import { type AuditRecord, type ClaimedJob, type HeartbeatResult, type HeldLease, type Instant, type JobState, isTerminalState } from "@belay/contract";
import type { LoggedTransition } from "@belay/memory";
import type { ViolationLog } from "../violations.js";

/** What the oracles know of a job, from the store's transition log and the writes they saw. */
interface ShadowJob {
  readonly id: string;
  readonly queue: string;
  state: JobState | null;
  attempt: number;
  releases: number;
  /** The lease of the last claim: who, which attempt, until when (in the holder's clock). */
  lease: { owner: string; attempt: number; expiresAt: Instant } | null;
  /** Attempts whose lease has been disposed of (outcome, release or expiry). */
  readonly disposed: Set<number>;
  readonly scheduleId: string | null;
  readonly maxAttempts: number;
  transitions: number;
}

/** Facts about a job the log does not carry, registered when the job is asked for. */
export interface JobMeta {
  readonly maxAttempts: number;
  readonly scheduleId: string | null;
}

/** An operator action that committed, with what it did (from the store's own answer). */
export interface CommittedAction {
  readonly action: AuditRecord["action"];
  readonly target: string;
  readonly now: Instant;
  /** Whether the store's answer says it had an effect, hence an audit record. */
  readonly audited: boolean;
}

/** Legal edges: `from>to` → the causes that may take a job along it. */
const EDGES: ReadonlyMap<string, readonly string[]> = new Map([
  ["awaitingParents>scheduled", ["parentsResolved"]],
  ["awaitingParents>cancelled", ["parentFailed", "operatorCancelled"]],
  ["scheduled>leased", ["claimed"]],
  ["scheduled>cancelled", ["operatorCancelled"]],
  ["leased>succeeded", ["succeeded"]],
  ["leased>cancelled", ["cancelled", "leaseExpired"]],
  ["leased>quarantined", ["unroutable"]],
  ["leased>scheduled", ["retryScheduled", "leaseExpired", "released"]],
  ["leased>deadLettered", ["failed", "leaseExpired"]],
  ["deadLettered>scheduled", ["requeued"]],
  ["quarantined>scheduled", ["requeued"]],
]);

const INITIAL: ReadonlyMap<string, readonly string[]> = new Map([
  ["scheduled", ["enqueued", "minted", "triggered"]],
  ["awaitingParents", ["enqueued"]],
  ["cancelled", ["parentFailed"]],
]);

/** Causes that end a lease (and free its concurrency slot). */
const LEASE_ENDING = new Set(["succeeded", "retryScheduled", "failed", "unroutable", "released", "cancelled", "leaseExpired"]);

/** Causes of writes a worker makes under its fence. */
const WORKER_CAUSES = new Set(["succeeded", "retryScheduled", "failed", "unroutable", "released"]);

/**
 * The job half's oracles over the store's record: transitions (legal, initial, attempts,
 * ceiling), fences (effect-once, exclusive execution), slots, paused queues, limits, quarantine,
 * terminal stability, audit, schedule ticks and no-overlap. Fed after every step with the log
 * entries the step committed and the writes the simulated shells performed in it.
 */
export class JobOracles {
  readonly #log: ViolationLog;
  readonly #leaseMs: number;
  readonly #skewOf: (workerId: string) => number;
  readonly #meta: (jobId: string) => JobMeta;
  readonly #noOverlap: ReadonlySet<string>;
  readonly jobs = new Map<string, ShadowJob>();
  /** Queue settings as the operator set them (committed). */
  readonly #paused = new Set<string>();
  readonly #limits = new Map<string, number>();
  /** Worker writes performed in this step: `jobId|workerId|attempt` → the write's `now`. */
  #stepWrites = new Map<string, Instant>();
  #stepRequeues = new Set<string>();
  #claimedQueues = new Set<string>();
  #expectedAudits: CommittedAction[] = [];
  readonly #mintedTicks = new Map<string, Set<number>>();
  /** Per schedule, its instances not yet terminal. */
  readonly #liveInstances = new Map<string, Set<string>>();
  /** Jobs not yet terminal (liveness). */
  live = 0;

  constructor(options: {
    log: ViolationLog;
    leaseMs: number;
    skewOf: (workerId: string) => number;
    meta: (jobId: string) => JobMeta;
    noOverlapSchedules: ReadonlySet<string>;
  }) {
    this.#log = options.log;
    this.#leaseMs = options.leaseMs;
    this.#skewOf = options.skewOf;
    this.#meta = options.meta;
    this.#noOverlap = options.noOverlapSchedules;
  }

  // ---- what the shells and the operator report during a step --------------------------------

  /** A worker's outcome or release rows reached the store at `now` (its clock). */
  recordWrites(workerId: string, rows: readonly HeldLease[], now: Instant): void {
    for (const row of rows) this.#stepWrites.set(`${row.jobId}|${workerId}|${row.attempt}`, now);
  }

  /** A heartbeat's answer as the store gave it: renewed leases run to their new expiry. */
  recordHeartbeat(workerId: string, leases: readonly HeldLease[], results: readonly HeartbeatResult[]): void {
    for (const [i, result] of results.entries()) {
      if (result.status !== "renewed") continue;
      const job = this.jobs.get(result.jobId);
      const sent = leases[i];
      if (job?.lease && sent && job.lease.owner === workerId && job.lease.attempt === sent.attempt) job.lease.expiresAt = result.leaseExpiresAt;
    }
  }

  /** An operator action committed (whether or not its answer reached the operator). */
  recordOperator(action: CommittedAction & { readonly limit?: number | null }): void {
    if (action.audited) this.#expectedAudits.push(action);
    if (action.action === "pauseQueue") this.#paused.add(action.target);
    if (action.action === "resumeQueue") this.#paused.delete(action.target);
    if (action.action === "setConcurrencyLimit") {
      if (action.limit == null) this.#limits.delete(action.target);
      else this.#limits.set(action.target, action.limit);
    }
    if (action.action === "requeue" && action.audited) this.#stepRequeues.add(action.target);
  }

  /** The queue is paused as the operator left it. */
  paused(queue: string): boolean {
    return this.#paused.has(queue);
  }

  // ---- executions ---------------------------------------------------------------------------

  /** A shell is about to run a handler for `job` (true time `now`). */
  onExecute(workerId: string, job: ClaimedJob, now: Instant): void {
    const shadow = this.jobs.get(job.id);
    if (shadow === undefined) return;
    if (shadow.state === "quarantined") {
      this.#log.report("quarantineFinal", `${workerId} was handed quarantined job ${job.id} (attempt ${job.attempt})`);
    }
    const lease = shadow.lease;
    if (shadow.state === "leased" && lease !== null && (lease.owner !== workerId || lease.attempt !== job.attempt)) {
      const holderNow = now + this.#skewOf(lease.owner);
      if (lease.expiresAt > holderNow) {
        this.#log.report(
          "exclusiveExecution",
          `${workerId} started job ${job.id} (attempt ${job.attempt}) while ${lease.owner} holds a live lease (attempt ${lease.attempt}, ${lease.expiresAt - holderNow} ms left)`,
        );
      }
    }
  }

  // ---- the log ------------------------------------------------------------------------------

  /** The transitions one step committed, in commit order. */
  onTransitions(entries: readonly LoggedTransition[]): void {
    for (const entry of entries) this.#apply(entry);
  }

  #apply(e: LoggedTransition): void {
    let job = this.jobs.get(e.jobId);
    const cause = e.cause ?? "";
    if (job === undefined) {
      const meta = this.#meta(e.jobId);
      job = {
        id: e.jobId,
        queue: e.queue,
        state: null,
        attempt: 0,
        releases: 0,
        lease: null,
        disposed: new Set(),
        scheduleId: meta.scheduleId,
        maxAttempts: meta.maxAttempts,
        transitions: 0,
      };
      this.jobs.set(e.jobId, job);
    }
    const from = job.state;
    job.transitions++;
    // The specific findings first: a re-minted tick or a second disposal of one lease is also an
    // illegal edge, but its own oracle names what went wrong.
    if (cause === "minted") this.#onMinted(job, e);
    if (from !== null && LEASE_ENDING.has(cause) && job.disposed.has(e.attempt)) {
      this.#log.report("slotReleasedOnce", `the lease of job ${e.jobId} at attempt ${e.attempt} was released twice (again by ${cause})`);
    }
    if (from === null) {
      if (!(INITIAL.get(e.state) ?? []).includes(cause)) {
        this.#log.report("legalInitialState", `job ${e.jobId} was born ${e.state} (${cause}) at position ${e.position}`);
      }
    } else {
      if (!(EDGES.get(`${from}>${e.state}`) ?? []).includes(cause)) {
        this.#log.report("legalTransition", `job ${e.jobId}: ${from} → ${e.state} (${cause}) at position ${e.position}`);
      }
      if (isTerminalState(from) && !(cause === "requeued" && this.#stepRequeues.has(e.jobId))) {
        this.#log.report("terminalStable", `terminal job ${e.jobId} (${from}) became ${e.state} (${cause}) without an operator requeue`);
      }
    }
    this.#checkAttempt(job, e, cause);
    if (e.state === "leased") this.#onClaimed(job, e);
    if (from === "leased" && e.state !== "leased") this.#onLeaseEnded(job, e, cause);
    if (cause === "requeued") {
      // A requeue starts the attempts again from 0: attempt numbers are reused from here on.
      job.releases = 0;
      job.disposed.clear();
    }
    const wasLive = from !== null && !isTerminalState(from);
    const isLive = !isTerminalState(e.state);
    if (wasLive !== isLive) {
      const delta = isLive ? 1 : -1;
      this.live += delta;
      if (job.scheduleId !== null) {
        const live = this.#liveInstances.get(job.scheduleId) ?? new Set<string>();
        if (isLive) live.add(job.id);
        else live.delete(job.id);
        this.#liveInstances.set(job.scheduleId, live);
      }
    }
    job.state = e.state;
    job.attempt = e.attempt;
  }

  #checkAttempt(job: ShadowJob, e: LoggedTransition, cause: string): void {
    if (job.state === null) {
      if (e.attempt !== 0) this.#log.report("attemptMonotonic", `job ${e.jobId} was born at attempt ${e.attempt}`);
      return;
    }
    const expected = cause === "requeued" ? 0 : cause === "claimed" ? job.attempt + 1 : job.attempt;
    if (e.attempt === expected) return;
    const how = e.attempt < job.attempt && cause !== "requeued" ? "fell" : "moved";
    this.#log.report(
      "attemptMonotonic",
      `job ${e.jobId}: the attempt ${how} from ${job.attempt} to ${e.attempt} on ${e.state} (${cause}) at position ${e.position}`,
    );
  }

  #onClaimed(job: ShadowJob, e: LoggedTransition): void {
    const counted = e.attempt - job.releases;
    if (counted > job.maxAttempts) {
      this.#log.report("attemptCeiling", `job ${e.jobId} was claimed at counted attempt ${counted}; its policy allows ${job.maxAttempts}`);
    }
    if (this.#paused.has(job.queue)) this.#log.report("pausedQueue", `job ${e.jobId} was claimed from paused queue ${job.queue} by ${e.workerId}`);
    this.#claimedQueues.add(job.queue);
    job.lease = { owner: e.workerId ?? "", attempt: e.attempt, expiresAt: e.at + this.#leaseMs };
  }

  #onLeaseEnded(job: ShadowJob, e: LoggedTransition, cause: string): void {
    const lease = job.lease;
    job.disposed.add(e.attempt);
    const workerWrite = WORKER_CAUSES.has(cause) || (cause === "cancelled" && e.workerId !== null);
    if (workerWrite) {
      const writer = e.workerId ?? "(nobody)";
      const now = this.#stepWrites.get(`${e.jobId}|${writer}|${e.attempt}`);
      if (lease === null || lease.owner !== writer || lease.attempt !== e.attempt) {
        this.#log.report("effectOnce", `job ${e.jobId}: ${cause} recorded for ${writer} at attempt ${e.attempt}, but the lease is ${lease ? `${lease.owner}'s at attempt ${lease.attempt}` : "nobody's"}`);
      } else if (now === undefined) {
        this.#log.report("effectOnce", `job ${e.jobId}: ${cause} recorded for ${writer} at attempt ${e.attempt}, who sent no such write`);
      } else if (now >= lease.expiresAt) {
        this.#log.report("effectOnce", `job ${e.jobId}: ${cause} by ${writer} applied ${now - lease.expiresAt} ms after its lease expired`);
      }
    }
    if (cause === "released") job.releases++;
    job.lease = null;
  }

  #onMinted(job: ShadowJob, e: LoggedTransition): void {
    const at = e.jobId.lastIndexOf("@");
    const scheduleId = e.jobId.slice(0, at);
    const tick = Date.parse(e.jobId.slice(at + 1));
    const ticks = this.#mintedTicks.get(scheduleId) ?? new Set<number>();
    if (ticks.has(tick)) this.#log.report("tickOnce", `schedule ${scheduleId} minted tick ${new Date(tick).toISOString()} twice`);
    ticks.add(tick);
    this.#mintedTicks.set(scheduleId, ticks);
    if (!this.#noOverlap.has(scheduleId)) return;
    // Every live instance counts, also one that became live after the minting pump read the
    // schedules (a trigger, a requeue): the store refuses such a mint (mintsOverLiveInstance).
    const live = [...(this.#liveInstances.get(scheduleId) ?? [])];
    if (live.length > 0) {
      this.#log.report("noOverlap", `no-overlap schedule ${scheduleId} minted ${e.jobId} while ${live.length} earlier instance(s) are live: ${live.slice(0, 3).join(", ")}`);
    }
  }

  // ---- the end of a step --------------------------------------------------------------------

  /** The operator-action audit records the step committed (oldest first). */
  onAudit(records: readonly AuditRecord[], actor: string): void {
    const expected = this.#expectedAudits;
    for (const record of records) {
      if (record.actor !== actor) continue;
      const i = expected.findIndex((a) => a.action === record.action && a.target === record.target && a.now === record.at);
      if (i < 0) this.#log.report("auditComplete", `audit record ${record.action} ${record.target} at ${record.at} matches no operator action`);
      else expected.splice(i, 1);
    }
    for (const missing of expected) {
      this.#log.report("auditComplete", `operator action ${missing.action} ${missing.target} (at ${missing.now}) committed without its audit record`);
    }
    this.#expectedAudits = [];
  }

  /** Whether the step committed operator actions whose audit records are still to be checked. */
  get auditPending(): boolean {
    return this.#expectedAudits.length > 0;
  }

  /** Checks what spans the whole step, then forgets the step. */
  endStep(): void {
    for (const queue of this.#claimedQueues) {
      const limit = this.#limits.get(queue);
      if (limit === undefined) continue;
      let leased = 0;
      for (const job of this.jobs.values()) if (job.queue === queue && job.state === "leased") leased++;
      if (leased > limit) this.#log.report("concurrencyLimit", `queue ${queue} has ${leased} jobs leased after a claim; its limit is ${limit}`);
    }
    this.#claimedQueues.clear();
    this.#stepWrites.clear();
    this.#stepRequeues.clear();
  }

  /** Jobs not terminal, for the liveness report. */
  liveJobs(): string[] {
    const out: string[] = [];
    for (const job of this.jobs.values()) if (job.state !== null && !isTerminalState(job.state)) out.push(`${job.id} (${job.state})`);
    return out;
  }

  /** Jobs in a state, as the operator sees them (in log order). */
  jobsIn(states: readonly JobState[]): string[] {
    const out: string[] = [];
    for (const job of this.jobs.values()) if (job.state !== null && states.includes(job.state)) out.push(job.id);
    return out;
  }
}

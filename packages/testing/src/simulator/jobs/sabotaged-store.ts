import {
  type AuditPage, type ClaimObserverDeliveriesRequest, type ClaimObserverDeliveriesResult, type ClaimRequest, type ClaimResult,
  type ClaimedJob, type ExpireLeasesRequest, type ExpireLeasesResult, type JobRecord, type ListAuditRequest, type MintDueRequest,
  type MintResult, type OutcomeResult, type ReportObserverDeliveriesRequest, type ReportObserverDeliveriesResult,
  type ReportOutcomesRequest, type ScheduleDefinition, type ScheduleRecord, type ScheduleWithPayload, scheduledJobId,
} from "@belay/contract";
import type { LoggedTransition, MemoryStore } from "@belay/memory";
import type { SabotageName } from "../sabotage.js";

/** The actor a sabotage's own operator calls are audited under (the oracles ignore it). */
export const SABOTAGE_ACTOR = "sabotage";

const claimedOf = (job: JobRecord): ClaimedJob => ({
  id: job.id,
  seq: job.seq,
  jobName: job.jobName,
  queue: job.queue,
  payload: job.payload,
  attempt: job.attempt,
  releases: job.releases,
  dueAt: job.dueAt,
  enqueuedAt: job.enqueuedAt,
  leaseExpiresAt: job.leaseExpiresAt ?? job.dueAt,
  tags: job.tags,
  parentIds: job.parentIds,
  dependencyMode: job.dependencyMode,
  traceContext: job.traceContext,
  scheduleId: job.scheduleId,
  workflowId: job.workflowId,
  retry: job.retry,
});

/**
 * The store every node, the client, the operator and the oracles talk to: the memory store,
 * and — under a sabotage switch — a deliberate bug around one of its operations. Without a
 * switch every method passes straight through. Store bugs that cannot be made through the
 * contract's operations (a transition the log leaves out) are made in the views the oracles
 * read (`transitionsAfter`, `listAuditRecords`): those views are the store's record.
 */
export class SabotagedJobStore {
  readonly raw: MemoryStore;
  readonly #sabotage: SabotageName | null;
  /** Jobs some worker claimed, by id, with the claimer (for a claim that hands them out again). */
  readonly #claimedBy = new Map<string, string>();
  /** Ticks minted per schedule (for a mint that re-mints them). */
  readonly #minted = new Map<string, Set<number>>();

  constructor(raw: MemoryStore, sabotage: SabotageName | null) {
    this.raw = raw;
    this.#sabotage = sabotage;
  }

  get capabilities() {
    return this.raw.capabilities;
  }

  // ---- the views the oracles read -----------------------------------------------------------

  async transitionsAfter(position: number): Promise<readonly LoggedTransition[]> {
    const entries = await this.raw.transitionsAfter(position);
    switch (this.#sabotage) {
      case "unloggedClaim":
        return entries.filter((e) => !(e.cause === "claimed" && e.position % 3 === 0));
      case "initialLeased":
        return entries.map((e) => (e.ordinal === 1 && e.position % 4 === 1 ? { ...e, state: "leased" as const, cause: "claimed" as const } : e));
      case "attemptRewind":
        return entries.map((e) => (e.cause === "retryScheduled" || e.cause === "leaseExpired" ? { ...e, attempt: e.attempt - 1 } : e));
      case "doubleDisposal":
        return entries.flatMap((e) => (e.cause === "leaseExpired" ? [e, e] : [e]));
      default:
        return entries;
    }
  }

  async listAuditRecords(request: ListAuditRequest): Promise<AuditPage> {
    const page = await this.raw.listAuditRecords(request);
    if (this.#sabotage !== "unauditedResume") return page;
    return { ...page, records: page.records.filter((r) => r.action !== "resumeQueue") };
  }

  // ---- execution ----------------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    const sabotage = this.#sabotage;
    let lifted: { queue: string; paused: boolean; limit: number | null }[] = [];
    if (sabotage === "claimIgnoresLimit" || sabotage === "claimIgnoresPause") {
      const settings = await this.raw.listQueueSettings();
      lifted = settings
        .filter((s) => request.queues.includes(s.queue))
        .filter((s) => (sabotage === "claimIgnoresLimit" ? s.concurrencyLimit !== null : s.paused))
        .map((s) => ({ queue: s.queue, paused: s.paused, limit: s.concurrencyLimit }));
      for (const { queue } of lifted) {
        const action = { queue, actor: SABOTAGE_ACTOR, now: request.now };
        if (sabotage === "claimIgnoresLimit") await this.raw.setConcurrencyLimit({ ...action, limit: null });
        else await this.raw.resumeQueue(action);
      }
    }
    const result = await this.raw.claim(request);
    for (const { queue, limit } of lifted) {
      const action = { queue, actor: SABOTAGE_ACTOR, now: request.now };
      if (sabotage === "claimIgnoresLimit") await this.raw.setConcurrencyLimit({ ...action, limit });
      else await this.raw.pauseQueue(action);
    }
    for (const job of result.jobs) this.#claimedBy.set(job.id, request.workerId);
    if (sabotage === "claimIgnoresLease") {
      for (const [id, owner] of this.#claimedBy) {
        if (owner === request.workerId) continue;
        const job = await this.raw.getJob(id);
        if (job?.state !== "leased" || job.leaseOwner === request.workerId || job.leaseExpiresAt! <= request.now) continue;
        return { ...result, jobs: [...result.jobs, claimedOf(job)] };
      }
    }
    if (sabotage === "claimQuarantined") {
      const { jobs } = await this.raw.listJobs({ states: ["quarantined"], queues: request.queues, limit: 1 });
      const job = jobs[0] === undefined ? null : await this.raw.getJob(jobs[0].id);
      if (job !== null) return { ...result, jobs: [...result.jobs, claimedOf(job)] };
    }
    return result;
  }

  async reportOutcomes(request: ReportOutcomesRequest): Promise<readonly OutcomeResult[]> {
    const results = await this.raw.reportOutcomes(request);
    if (this.#sabotage !== "unfencedReport") return results;
    const out = [...results];
    for (const [i, result] of results.entries()) {
      if (result.status !== "stale") continue;
      const job = await this.raw.getJob(result.jobId);
      if (job?.state !== "leased" || job.leaseOwner === null) continue;
      const report = { ...request.reports[i]!, workerId: job.leaseOwner, attempt: job.attempt };
      const [again] = await this.raw.reportOutcomes({ reports: [report], now: request.now });
      if (again?.status === "applied") out[i] = { ...again, attempt: result.attempt };
    }
    return out;
  }

  async expireLeases(request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
    const result = await this.raw.expireLeases(request);
    if (this.#sabotage === "sweepRequeuesDead") {
      const { jobs } = await this.raw.listJobs({ states: ["deadLettered"], limit: 1 });
      if (jobs[0] !== undefined) await this.raw.requeueJob({ jobId: jobs[0].id, actor: "system:sweeper", now: request.now });
    }
    return result;
  }

  // ---- schedules ----------------------------------------------------------------------------

  async listSchedules(): Promise<readonly ScheduleRecord[]> {
    const schedules = await this.raw.listSchedules();
    return this.#sabotage === "plannerBlind" ? schedules.map((s) => ({ ...s, hasLiveInstance: false })) : schedules;
  }

  async mintDue(request: MintDueRequest): Promise<readonly MintResult[]> {
    let decisions = request.decisions;
    if (this.#sabotage === "cursorRewind") {
      const rewound: MintDueRequest["decisions"][number][] = [];
      for (const decision of request.decisions) {
        const gone: number[] = [];
        for (const tick of this.#minted.get(decision.scheduleId) ?? []) {
          if ((await this.raw.getJob(scheduledJobId(decision.scheduleId, tick))) === null) gone.push(tick);
        }
        rewound.push({ ...decision, mint: [...gone, ...decision.mint] });
      }
      decisions = rewound;
    }
    if (this.#sabotage === "plannerBlind") return this.#mintBlind({ ...request, decisions });
    const results = await this.raw.mintDue({ ...request, decisions });
    for (const [i, result] of results.entries()) {
      if (result.status !== "minted") continue;
      const ticks = this.#minted.get(result.scheduleId) ?? new Set<number>();
      for (const tick of decisions[i]!.mint) ticks.add(tick);
      this.#minted.set(result.scheduleId, ticks);
    }
    return results;
  }

  /**
   * plannerBlind's store side: a store that forgets no-overlap at mint time too (the store's own
   * check would refuse the blind planner's mint otherwise). Each schedule is stored without
   * no-overlap for the length of its mint, then as it was (a redefinition keeps cursor and ticks).
   */
  async #mintBlind(request: MintDueRequest): Promise<readonly MintResult[]> {
    const results: MintResult[] = [];
    for (const decision of request.decisions) {
      const stored = await this.raw.getSchedule(decision.scheduleId);
      const definition = stored === null ? null : { ...definitionOf(stored), noOverlap: false };
      if (stored?.noOverlap && definition !== null) await this.raw.upsertSchedule({ schedule: definition, now: request.now });
      try {
        results.push(...(await this.raw.mintDue({ ...request, decisions: [decision] })));
      } finally {
        if (stored?.noOverlap && definition !== null) await this.raw.upsertSchedule({ schedule: { ...definition, noOverlap: true }, now: request.now });
      }
    }
    return results;
  }

  // ---- observers ----------------------------------------------------------------------------

  async claimObserverDeliveries(request: ClaimObserverDeliveriesRequest): Promise<ClaimObserverDeliveriesResult> {
    const result = await this.raw.claimObserverDeliveries(request);
    if (result.status !== "acquired") return result;
    switch (this.#sabotage) {
      case "deliveriesReordered":
        return { ...result, deliveries: [...result.deliveries].reverse() };
      case "observerSkips":
        return { ...result, deliveries: result.deliveries.filter((d) => d.position % 4 !== 1) };
      case "inflatedDeliveryAttempts":
        return { ...result, deliveries: result.deliveries.map((d) => ({ ...d, deliveryAttempt: d.deliveryAttempt + 5 })) };
      default:
        return result;
    }
  }

  async reportObserverDeliveries(request: ReportObserverDeliveriesRequest): Promise<ReportObserverDeliveriesResult> {
    if (this.#sabotage !== "deadLetterDelivered") return this.raw.reportObserverDeliveries(request);
    const outcomes = request.outcomes.map((o) =>
      o.outcome === "delivered" && o.position % 3 === 0 ? { position: o.position, outcome: "deadLettered" as const, error: SABOTAGE_ACTOR } : o,
    );
    return this.raw.reportObserverDeliveries({ ...request, outcomes });
  }
}

/** The definition a stored schedule was upserted with. */
function definitionOf(stored: ScheduleWithPayload): ScheduleDefinition {
  const { id, cron, timeZone, jobName, queue, payload, tags, catchUp, noOverlap, retry } = stored;
  return { id, cron, timeZone, jobName, queue, payload, tags, catchUp, noOverlap, retry };
}

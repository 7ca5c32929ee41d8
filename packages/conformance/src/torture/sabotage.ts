import { type JobStore, TransientStoreError } from "@belay/contract";

/**
 * Ways to make a torture client's store break the contract on purpose, each imitating a store bug
 * from outside the store, to prove the audit notices it: a run with sabotaged clients must report
 * the check named in {@link SABOTAGE_CHECKS}. Each client's probe of its own queue (see
 * `client-operator.ts`) gives every one of them something certain to break in every run, so
 * none is noticed only by luck of timing; the racing lanes give them more.
 */
export type TortureSabotage =
  | "staleOutcome"
  | "lostEnqueue"
  | "pausedClaim"
  | "limitBreach"
  | "droppedTags"
  | "committedTransient"
  | "wrongOutput"
  | "extraAudit";

/** The audit check each sabotage must trip. */
export const SABOTAGE_CHECKS: Readonly<Record<TortureSabotage, string>> = Object.freeze({
  // Applies outcomes whose lease had died: the fence ignores expiry.
  staleOutcome: "staleFence",
  // Answers `created` for a job it never wrote.
  lostEnqueue: "lostJob",
  // Acknowledges a pause that never takes effect: claims from a queue its operator paused.
  pausedClaim: "pausedQueue",
  // Leases more jobs of a limited queue than its limit.
  limitBreach: "limitReplay",
  // Drops the tags a handler added.
  droppedTags: "tags",
  // Throws a transient error after committing.
  committedTransient: "duplicate",
  // Stores another output than the handler returned.
  wrongOutput: "output",
  // Audits an action twice.
  extraAudit: "auditExtra",
});

const SABOTEUR = "saboteur";

/** `store` with one deliberate contract violation (see {@link TortureSabotage}). */
export function sabotaged(store: JobStore, sabotage: TortureSabotage): JobStore {
  let tripped = false;
  const table: Record<TortureSabotage, Partial<JobStore>> = {
    staleOutcome: {
      reportOutcomes: (request) => store.reportOutcomes({ ...request, now: request.now - 60_000 }),
    },
    lostEnqueue: {
      enqueue: async (request) => {
        const last = request.jobs.at(-1);
        const plain = request.jobs.length > 1 && last !== undefined && request.jobs.filter((j) => j.id === last.id).length === 1;
        if (!plain) return store.enqueue(request);
        const results = await store.enqueue({ ...request, jobs: request.jobs.slice(0, -1) });
        if (results.some((r) => r.status === "rejected" || r.status === "notWritten")) return store.enqueue(request);
        return [...results, { id: last.id, status: "created", state: "scheduled", seq: 0 }];
      },
    },
    pausedClaim: {
      // The pause is acknowledged and never happens: claims go on taking the queue's jobs (the
      // client's pause probe then claims its own job between its pause and its resume).
      pauseQueue: async () => ({ status: "applied" }),
    },
    limitBreach: {
      // A claim of a limited queue ignores the limit (lifted for the claim, then put back).
      claim: async (request) => {
        const limited = (await store.listQueueSettings()).find((s) => request.queues.includes(s.queue) && s.concurrencyLimit !== null);
        if (limited === undefined) return store.claim(request);
        const { queue, concurrencyLimit: limit } = limited;
        await store.setConcurrencyLimit({ queue, limit: 50, actor: SABOTEUR, now: request.now });
        try {
          return await store.claim({ ...request, queues: [queue], max: 16 });
        } finally {
          await store.setConcurrencyLimit({ queue, limit, actor: SABOTEUR, now: request.now });
        }
      },
    },
    droppedTags: {
      reportOutcomes: (request) => store.reportOutcomes({ ...request, reports: request.reports.map((r) => ({ ...r, addTags: [] })) }),
    },
    committedTransient: {
      enqueue: async (request) => {
        const results = await store.enqueue(request);
        if (!tripped && results.every((r) => r.status === "created")) {
          tripped = true;
          throw new TransientStoreError("sabotage: a transient error after the commit");
        }
        return results;
      },
    },
    wrongOutput: {
      reportOutcomes: (request) =>
        store.reportOutcomes({
          ...request,
          reports: request.reports.map((r) => (r.outcome.type === "succeeded" && r.outcome.output != null ? { ...r, outcome: { type: "succeeded", output: '{"tampered":true}' } } : r)),
        }),
    },
    extraAudit: {
      // Both are audited again: a cancel still pending, and every resume.
      cancelJob: async (request) => {
        const result = await store.cancelJob(request);
        if (result.status === "cancelRequested") await store.cancelJob(request);
        return result;
      },
      resumeQueue: async (request) => {
        const result = await store.resumeQueue(request);
        await store.resumeQueue(request);
        return result;
      },
    },
  };
  const overrides = table[sabotage];
  return new Proxy(store, {
    get(target, property) {
      const override = (overrides as Record<PropertyKey, unknown>)[property];
      if (override !== undefined) return override;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

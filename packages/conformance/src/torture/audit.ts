import type { AuditRecord, JobStore, JobSummary, QueueSettings, WorkflowRecord } from "@belay/contract";
import { type StoredJob, checkHistories, checkLimitReplay } from "./audit-history.js";
import { type Violation, checkPausedClaims, indexJournals } from "./audit-journals.js";
import { checkAuditTrail, checkCreations, checkSchedules, checkSettingsAfterRace, checkWorkflows } from "./audit-operators.js";
import type { Journal } from "./journal.js";
import type { LimitSamples } from "./sampler.js";

/** What the audit found, and what it looked at. */
export interface TortureAudit {
  readonly violations: readonly Violation[];
  readonly stats: Readonly<Record<string, number>>;
}

/** The audit's input: the store after the drain, every journal, and what was read during the run. */
export interface TortureAuditInput {
  readonly store: JobStore;
  /** The clients', the drain's and the setup's journals. */
  readonly journals: readonly Journal[];
  readonly samples: LimitSamples;
  /** Queue settings and audit trail read right after the race, before the drain. */
  readonly afterRace: { readonly settings: readonly QueueSettings[]; readonly audit: readonly AuditRecord[] };
  /** Jobs the drain could not end. */
  readonly stuck: readonly JobSummary[];
  /** How many clients raced (each had a probe queue). */
  readonly clients: number;
}

async function pages<T>(read: (after: string | undefined) => Promise<{ items: readonly T[]; next: string | null }>): Promise<T[]> {
  const all: T[] = [];
  let after: string | undefined;
  do {
    const page = await read(after);
    all.push(...page.items);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return all;
}

/** Every audit record, oldest first. */
export function allAuditRecords(store: JobStore): Promise<AuditRecord[]> {
  return pages(async (after) => {
    const page = await store.listAuditRecords(after === undefined ? {} : { after });
    return { items: page.records, next: page.nextCursor };
  });
}

/** Every job with its payload, output and history, read `concurrency` at a time. */
export async function readStoredJobs(store: JobStore, concurrency = 8): Promise<Map<string, StoredJob>> {
  const summaries = await pages(async (after) => {
    const page = await store.listJobs(after === undefined ? {} : { after });
    return { items: page.jobs, next: page.nextCursor };
  });
  const jobs = new Map<string, StoredJob>();
  let next = 0;
  const reader = async () => {
    while (next < summaries.length) {
      const summary = summaries[next++]!;
      const [record, output, history] = await Promise.all([store.getJob(summary.id), store.getJobOutput(summary.id), store.getJobHistory(summary.id)]);
      jobs.set(summary.id, { summary, payload: record?.payload ?? "<absent>", output, history });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, reader));
  return jobs;
}

/**
 * Audits a torture run's end state against every journal. Returns every violation found (an
 * empty list is a pass) and counts of what was checked.
 */
export async function auditTorture(input: TortureAuditInput): Promise<TortureAudit> {
  const { store } = input;
  const violations: Violation[] = [...input.samples.violations.map((message) => ({ check: "limitSample", message }))];
  for (const job of input.stuck) {
    violations.push({ check: "drain", message: `${job.id} stuck ${job.state} (parents ${job.parentIds.join(", ") || "none"}, due ${job.dueAt}, queue ${job.queue})` });
  }
  const index = indexJournals(input.journals, violations);
  const jobs = await readStoredJobs(store);
  const history = checkHistories(jobs, index, violations);
  const peaks = checkLimitReplay(jobs, input.clients, violations);
  const pausedClaims = checkPausedClaims(index, violations);
  checkCreations(index, jobs, violations);
  checkAuditTrail(index, jobs, await allAuditRecords(store), violations);
  checkSettingsAfterRace(input.afterRace.settings, input.afterRace.audit, violations);
  const mints = checkSchedules(index, jobs, await store.listSchedules(), violations);
  const workflows = new Map<string, WorkflowRecord | null>();
  for (const workflowId of index.workflows.keys()) workflows.set(workflowId, await store.getWorkflow(workflowId));
  const createdWorkflows = checkWorkflows(index, jobs, workflows, violations);

  const states: Record<string, number> = {};
  for (const job of jobs.values()) states[`final.${job.summary.state}`] = (states[`final.${job.summary.state}`] ?? 0) + 1;
  const calls: Record<string, number> = {};
  const transient: Record<string, number> = {};
  const millis: Record<string, number> = {};
  const slowest: Record<string, number> = {};
  for (const journal of input.journals) {
    for (const [op, n] of Object.entries(journal.calls)) calls[`calls.${op}`] = (calls[`calls.${op}`] ?? 0) + n;
    for (const [op, n] of Object.entries(journal.transient)) transient[`transient.${op}`] = (transient[`transient.${op}`] ?? 0) + n;
    for (const [op, ms] of Object.entries(journal.millis)) millis[op] = (millis[op] ?? 0) + ms;
    for (const [op, ms] of Object.entries(journal.slowest)) slowest[`slowestMs.${op}`] = Math.max(slowest[`slowestMs.${op}`] ?? 0, ms);
  }
  const staleOnPurpose = input.journals.flatMap((j) => j.entries).reduce((n, e) => n + (e.kind === "report" ? e.reports.filter((r) => r.expect === "stale").length : 0), 0);
  return {
    violations,
    stats: {
      jobs: jobs.size,
      transitions: history.transitions,
      truncatedHistories: history.truncated,
      leases: index.leases.size,
      appliedWrites: index.applied.size,
      expiredLeases: [...index.expiries.values()].reduce((a, b) => a + b, 0),
      staleOnPurpose,
      claimsWhilePaused: pausedClaims,
      appliedMints: mints,
      workflows: createdWorkflows,
      sampledLimitReads: input.samples.samples,
      ...Object.fromEntries(Object.entries(input.samples.maxLeased).map(([q, n]) => [`sampledPeak.${q}`, n])),
      ...Object.fromEntries(Object.entries(peaks).map(([q, n]) => [`replayedPeak.${q}`, n])),
      ...states,
      ...calls,
      ...transient,
      ...Object.fromEntries(Object.entries(millis).map(([op, ms]) => [`meanMs.${op}`, Math.round((ms / (calls[`calls.${op}`] ?? 1)) * 10) / 10])),
      ...slowest,
    },
  };
}

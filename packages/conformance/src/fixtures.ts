import {
  type AuditRecord, type ClaimedJob, type EnqueueResult, type Instant, type JobState, type JobStore, type NewJob, type Outcome,
  type OutcomeReport, type OutcomeResult, type ScheduleDefinition, type Tag, isBelayError,
} from "@belay/contract";
import { expect } from "vitest";

/** The suite's epoch: 2026-01-01T00:00:00Z. Every clause runs on explicit instants from here. */
export const T0: Instant = Date.UTC(2026, 0, 1);
export const SECOND = 1_000;
export const MINUTE = 60_000;
/** The lease the suite claims with unless a clause says otherwise. */
export const LEASE = MINUTE;
export const DEFAULT_RETRY = { maxAttempts: 3, delaysMs: [10 * SECOND, 20 * SECOND, 40 * SECOND] } as const;

/** A job with sensible defaults: name `test.job`, queue `default`, payload `{}`, due at T0. */
export function newJob(id: string, fields: Partial<NewJob> = {}): NewJob {
  return { id, jobName: "test.job", queue: "default", payload: "{}", dueAt: T0, ...fields };
}

/** A line of descent: each job a child (`onSuccess`) of the one before it, the first without parents. */
export function lineage(...ids: string[]): NewJob[] {
  return ids.map((id, i) => newJob(id, i === 0 ? {} : { parentIds: [ids[i - 1]!] }));
}

/** A label: a tag with the empty key. */
export const label = (value: string): Tag => ({ key: "", value });

/** A keyed tag. */
export const tag = (key: string, value: string): Tag => ({ key, value });

/** Tags in a canonical order, so a comparison does not depend on the order a store returns them in. */
export function sortedTags(tags: readonly Tag[]): Tag[] {
  const text = (t: Tag) => `${t.key}\u0000${t.value}`;
  return [...tags].sort((a, b) => (text(a) < text(b) ? -1 : text(a) > text(b) ? 1 : 0));
}

/** A schedule every minute in UTC, skipping missed ticks, of jobs `test.job` on queue `default` with payload `{}`. */
export function newSchedule(id: string, fields: Partial<ScheduleDefinition> = {}): ScheduleDefinition {
  return { id, cron: "* * * * *", timeZone: "UTC", jobName: "test.job", queue: "default", payload: "{}", catchUp: "skip", noOverlap: false, ...fields };
}

/** Enqueues and asserts every job was created. */
export async function enqueueJobs(store: JobStore, jobs: readonly NewJob[], now: Instant = T0): Promise<EnqueueResult[]> {
  const results = await store.enqueue({ jobs, now });
  for (const result of results) expect(result, `enqueue of ${result.id}`).toMatchObject({ status: "created" });
  return [...results];
}

export interface ClaimOptions {
  readonly workerId?: string;
  readonly queues?: readonly string[];
  readonly max?: number;
  readonly leaseMs?: number;
  readonly now?: Instant;
}

/** Claims with the suite's defaults (worker `w1`, queue `default`, 32 jobs, 1-minute lease, at T0). */
export async function claimJobs(store: JobStore, options: ClaimOptions = {}): Promise<ClaimedJob[]> {
  const { jobs } = await store.claim({
    workerId: options.workerId ?? "w1",
    queues: options.queues ?? ["default"],
    max: options.max ?? 32,
    leaseMs: options.leaseMs ?? LEASE,
    now: options.now ?? T0,
  });
  return [...jobs];
}

/** Enqueues one job and claims it; asserts the claim returned exactly that job. */
export async function leaseJob(
  store: JobStore,
  id: string,
  fields: Partial<NewJob> = {},
  options: ClaimOptions = {},
): Promise<ClaimedJob> {
  await enqueueJobs(store, [newJob(id, fields)], options.now ?? T0);
  const claimed = await claimJobs(store, { queues: [fields.queue ?? "default"], ...options });
  expect(claimed.map((j) => j.id)).toEqual([id]);
  return claimed[0]!;
}

/** A report row for `job` as its claimer (`w1`, the claimed attempt) unless overridden. */
export function reportRow(job: ClaimedJob, outcome: Outcome, fields: Partial<OutcomeReport> = {}): OutcomeReport {
  return { jobId: job.id, workerId: "w1", attempt: job.attempt, outcome, ...fields };
}

/** Reports one outcome for a claimed job, as its claimer. */
export async function report(
  store: JobStore,
  job: ClaimedJob,
  outcome: Outcome,
  now: Instant = T0,
  workerId = "w1",
): Promise<OutcomeResult> {
  const [result] = await store.reportOutcomes({ reports: [{ jobId: job.id, workerId, attempt: job.attempt, outcome }], now });
  return result!;
}

/** The current state of a job (fails the test when it does not exist). */
export async function stateOf(store: JobStore, id: string): Promise<JobState> {
  const job = await store.getJob(id);
  expect(job, `job ${id}`).not.toBeNull();
  return job!.state;
}

/** Asserts `action` throws a Belay error with `code` (and, if given, naming `field`). */
export async function expectBelayError(
  action: () => Promise<unknown>,
  code: string,
  facts: Record<string, unknown> = {},
  what = "",
): Promise<void> {
  let caught: unknown;
  try {
    await action();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a ${code} error${what ? ` from ${what}` : ""}`).toBeDefined();
  expect(isBelayError(caught), `expected a Belay error, got ${String(caught)}`).toBe(true);
  expect(caught).toMatchObject({ code, ...facts });
}

/** Every job of a store, oldest first, following the listing's cursor. */
export async function allJobIds(store: JobStore): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  do {
    const page = await store.listJobs(after === undefined ? {} : { after });
    ids.push(...page.jobs.map((j) => j.id));
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return ids;
}

/** Runs `action` again on retriable conflicts (which commit nothing), as a worker would; gives up after 20 tries. */
export async function retryTransient<T>(action: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await action();
    } catch (error) {
      if (tries >= 20 || !isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
    }
  }
}

/** Every audit record about `target`, oldest first, following the cursor. */
export async function auditOf(store: JobStore, target: string): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  let after: string | undefined;
  do {
    const page = await store.listAuditRecords(after === undefined ? { target } : { target, after });
    records.push(...page.records);
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return records;
}

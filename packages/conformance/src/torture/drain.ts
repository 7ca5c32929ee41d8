import { type JobStore, type JobSummary, isBelayError } from "@belay/contract";
import { type Journal, newJournal } from "./journal.js";
import { TORTURE_RETRY } from "./plan.js";

/** How far ahead of the wall clock the drain's clock runs: past every lease and due time of the run. */
export const DRAIN_AHEAD_MS = 10 * 60_000;

/** The drain's result: its journal, and the jobs it could not bring to a terminal state. */
export interface DrainResult {
  readonly journal: Journal;
  readonly stuck: readonly JobSummary[];
  readonly rounds: number;
}

async function retrying<T>(journal: Journal, op: string, action: () => Promise<T>): Promise<T> {
  journal.calls[op] = (journal.calls[op] ?? 0) + 1;
  const started = Date.now();
  for (;;) {
    try {
      const value = await action();
      const ms = Date.now() - started;
      journal.millis[op] = (journal.millis[op] ?? 0) + ms;
      journal.slowest[op] = Math.max(journal.slowest[op] ?? 0, ms);
      return value;
    } catch (error) {
      if (!isBelayError(error, "BELAY_TRANSIENT_STORE")) throw error;
      journal.transient[op] = (journal.transient[op] ?? 0) + 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
}

/**
 * The final worker, alone on the store once the clients have stopped: resumes paused queues,
 * sweeps every lease (its clock runs past them all), and claims and succeeds everything of
 * `queues` (every queue of the run) until no job is live. Journals its calls like a client, so
 * the audit holds it to the same fences.
 * A job that stays live with nothing left to claim or expire is stuck (e.g. a child whose
 * parents all ended but which still awaits them).
 */
export async function drainTorture(store: JobStore, queues: readonly string[], timeoutMs = 60_000): Promise<DrainResult> {
  const journal = newJournal("drain");
  const lane = "drain";
  const deadline = Date.now() + timeoutMs;
  let last = 0;
  const clock = () => (last = Math.max(last + 1, Date.now() + DRAIN_AHEAD_MS));

  for (const settings of await retrying(journal, "listQueueSettings", () => store.listQueueSettings())) {
    if (!settings.paused) continue;
    const now = clock();
    await retrying(journal, "resumeQueue", () => store.resumeQueue({ queue: settings.queue, actor: "drain", now }));
    journal.entries.push({ kind: "queue", lane, now, ack: Date.now(), actor: "drain", action: "resumeQueue", queue: settings.queue, limit: null });
  }

  let idle = 0;
  let rounds = 0;
  for (; Date.now() < deadline; rounds++) {
    let now = clock();
    const { expired } = await retrying(journal, "expireLeases", () => store.expireLeases({ now, max: 128, retry: TORTURE_RETRY }));
    journal.entries.push({ kind: "expire", lane, now, ack: Date.now(), queues: null, max: 128, results: expired });
    now = clock();
    const workerId = `drain.${rounds}`;
    const leaseMs = 60_000;
    const { jobs } = await retrying(journal, "claim", () => store.claim({ workerId, queues, max: 128, leaseMs, now }));
    journal.entries.push({
      kind: "claim",
      lane,
      workerId,
      queues,
      leaseMs,
      now,
      ack: Date.now(),
      jobs: jobs.map((j) => ({ id: j.id, attempt: j.attempt, queue: j.queue, releases: j.releases, leaseExpiresAt: j.leaseExpiresAt })),
    });
    if (jobs.length > 0) {
      now = clock();
      const reports = jobs.map((j) => ({ jobId: j.id, workerId, attempt: j.attempt, outcome: { type: "succeeded" as const }, addTags: [] }));
      const results = await retrying(journal, "reportOutcomes", () => store.reportOutcomes({ reports, now }));
      journal.entries.push({
        kind: "report",
        lane,
        now,
        ack: Date.now(),
        reports: reports.map((r) => ({ ...r, type: "succeeded", retryAt: null, output: null, outputBytes: 0, failureDetail: null, expect: null, why: null })),
        results,
      });
    }
    if (jobs.length > 0 || expired.length > 0) {
      idle = 0;
      continue;
    }
    const counts = await retrying(journal, "countJobs", () => store.countJobs());
    const live = counts.filter((c) => c.state === "scheduled" || c.state === "awaitingParents" || c.state === "leased");
    if (live.length === 0) return { journal, stuck: [], rounds };
    // Parents resolved by the last report make children due at once; give that a few rounds.
    if (++idle > 5) break;
  }
  const stuck: JobSummary[] = [];
  let after: string | undefined;
  do {
    const page = await store.listJobs({ states: ["scheduled", "awaitingParents", "leased"], ...(after === undefined ? {} : { after }) });
    stuck.push(...page.jobs);
    after = page.nextCursor ?? undefined;
  } while (after !== undefined);
  return { journal, stuck, rounds };
}

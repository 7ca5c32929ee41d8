import { type JobState, type JobSummary, type Tag, type TransitionCause, type TransitionRecord, isTerminalState, utf8ByteLength } from "@belay/contract";
import { type JournalIndex, type Violation, leaseKey } from "./audit-journals.js";
import { FIXED_LIMIT, PROBE_LIMIT, RACED_LIMITS, TORTURE_QUEUES, TORTURE_RETRY, probeQueue, tortureSchedule } from "./plan.js";

// Each job's end state against its history and the journals: one creation, only legal steps,
// attempts rising by one per claim and falling only on requeue, every claim and every applied
// write in the history exactly as some client was acknowledged it, expiries only of dead leases
// and disposed by the retry rule, parents terminal before a child was released, tags stored once,
// output and payload as written. Then the limited queues, replayed in commit order.

/** A job as the store reads at the end. */
export interface StoredJob {
  readonly summary: JobSummary;
  readonly payload: string;
  readonly output: string | null;
  readonly history: readonly TransitionRecord[];
}

type Step = `${JobState}>${JobState}:${TransitionCause}`;

/** Every legal (from, to, cause), DESIGN.md §3; creation steps start from `new`. */
const LEGAL = new Set<string>([
  "new>scheduled:enqueued",
  "new>scheduled:minted",
  "new>scheduled:triggered",
  "new>awaitingParents:enqueued",
  "new>cancelled:parentFailed",
  "awaitingParents>scheduled:parentsResolved",
  "awaitingParents>cancelled:parentFailed",
  "awaitingParents>cancelled:operatorCancelled",
  "scheduled>leased:claimed",
  "scheduled>cancelled:operatorCancelled",
  "leased>succeeded:succeeded",
  "leased>cancelled:cancelled",
  "leased>cancelled:leaseExpired",
  "leased>quarantined:unroutable",
  "leased>scheduled:retryScheduled",
  "leased>scheduled:released",
  "leased>scheduled:leaseExpired",
  "leased>deadLettered:failed",
  "leased>deadLettered:leaseExpired",
  "deadLettered>scheduled:requeued",
  "quarantined>scheduled:requeued",
] satisfies (Step | `new>${JobState}:${TransitionCause}`)[]);

const OUTCOME_CAUSES = new Set<TransitionCause | null>(["succeeded", "retryScheduled", "failed", "cancelled", "unroutable"]);
const tagKey = (tag: Tag) => `${tag.key}=${tag.value}`;

/** The parent's state just before `position` (its transitions in the same transaction as the child's count, by `at`). */
function stateAt(parent: StoredJob | undefined, position: number, at: number): JobState | null {
  if (parent === undefined) return null;
  let state: JobState | null = null;
  for (const t of parent.history) if (t.position < position || (t.at === at && isTerminalState(t.state))) state = t.state;
  return state;
}

export interface HistoryStats {
  truncated: number;
  transitions: number;
}

/** Checks every stored job; returns counts for the report. */
export function checkHistories(jobs: ReadonlyMap<string, StoredJob>, index: JournalIndex, violations: Violation[]): HistoryStats {
  const fail = (check: string, jobId: string, message: string) => violations.push({ check, message: `${jobId}: ${message}` });
  const stats: HistoryStats = { truncated: 0, transitions: 0 };
  const claimsSeen = new Set<string>();
  const appliedSeen = new Set<string>();
  const cancelRequested = new Set([...index.cancels].filter(([, calls]) => calls.some((c) => c.status === "cancelRequested")).map(([id]) => id));

  for (const [jobId, job] of jobs) {
    const { summary, history } = job;
    stats.transitions += history.length;
    if (history.length === 0) {
      fail("history", jobId, "no history");
      continue;
    }
    const truncated = history[0]!.ordinal !== 1;
    if (truncated) stats.truncated++;
    const creations = index.creations.get(jobId) ?? [];
    if (creations.length > 1) fail("doubleCreation", jobId, `created ${creations.length} times (${creations.map((c) => c.client).join(", ")})`);
    const creation = creations[0];

    // Payload, queue, name and tags as created; output as the one applied success wrote it.
    const successes = [...index.applied.values()].filter((a) => a.jobId === jobId && a.state === "succeeded" && a.report !== null);
    const minted = summary.scheduleId !== null;
    if (creation !== undefined) {
      if (job.payload !== creation.job.payload) fail("overwritten", jobId, `payload ${job.payload}, created with ${creation.job.payload}`);
      if (summary.queue !== creation.job.queue || summary.jobName !== creation.job.jobName) fail("overwritten", jobId, `queue/name ${summary.queue}/${summary.jobName}, created ${creation.job.queue}/${creation.job.jobName}`);
      if (summary.workflowId !== creation.workflowId) fail("workflow", jobId, `workflow ${summary.workflowId}, created in ${creation.workflowId}`);
      if ([...summary.parentIds].sort().join() !== [...new Set(creation.job.parentIds)].sort().join()) fail("edges", jobId, `parents ${summary.parentIds.join()} , created with ${creation.job.parentIds.join()}`);
    } else if (minted) {
      const schedule = tortureSchedule(summary.scheduleId!);
      if (job.payload !== schedule.payload || summary.queue !== schedule.queue || summary.jobName !== schedule.jobName) fail("schedule", jobId, "minted with other than the schedule's payload, queue or name");
    } else fail("lostCreation", jobId, "exists, but no client was acknowledged its creation");
    const expectedTags = new Set<string>((creation?.job.tags ?? (minted ? tortureSchedule(summary.scheduleId!).tags ?? [] : [])).map(tagKey));
    for (const exit of index.applied.values()) if (exit.jobId === jobId && exit.report !== null) for (const tag of exit.report.addTags) expectedTags.add(tagKey(tag));
    const storedTags = summary.tags.map(tagKey);
    if (new Set(storedTags).size !== storedTags.length) fail("tagsOnce", jobId, `a tag stored twice: ${storedTags.join(", ")}`);
    if ([...new Set(storedTags)].sort().join() !== [...expectedTags].sort().join()) fail("tags", jobId, `tags ${storedTags.sort().join(", ")}, expected ${[...expectedTags].sort().join(", ")}`);
    const expectedOutput = successes.length === 1 ? (successes[0]!.report!.output ?? null) : null;
    if (successes.length > 1) fail("effectOnce", jobId, `${successes.length} successes applied`);
    if (job.output !== expectedOutput) fail("output", jobId, `output ${job.output?.slice(0, 80)}, the applied success wrote ${expectedOutput?.slice(0, 80)}`);

    // The history, step by step.
    let from: JobState | "new" = "new";
    let attempt = 0;
    let lease: { key: string; releases: number } | null = null;
    let expiries = 0;
    let operatorCancels = 0;
    let requeues = 0;
    for (const [i, t] of history.entries()) {
      const prev = history[i - 1];
      if (prev !== undefined && (t.ordinal !== prev.ordinal + 1 || t.position <= prev.position)) fail("history", jobId, `transition ${t.ordinal} out of order after ${prev.ordinal}`);
      if (i === 0 && truncated) {
        from = t.state;
        attempt = t.attempt;
        continue;
      }
      const step = `${from}>${t.state}:${t.cause}`;
      if (!LEGAL.has(step)) fail("illegalTransition", jobId, `${step} (ordinal ${t.ordinal})`);
      const expectedAttempt = t.cause === "claimed" ? attempt + 1 : t.cause === "requeued" ? 0 : attempt;
      if (t.attempt !== expectedAttempt) fail("attempts", jobId, `${t.cause} at attempt ${t.attempt}, after attempt ${attempt}`);
      if (t.cause === "claimed") {
        const key = leaseKey(t.workerId ?? "", jobId, t.attempt);
        const record = index.leases.get(key);
        if (record === undefined) fail("claimProvenance", jobId, `claimed by ${t.workerId} at attempt ${t.attempt}, a claim no client was answered`);
        claimsSeen.add(key);
        lease = { key, releases: record?.releases ?? 0 };
      } else if (from === "leased") {
        const key = lease?.key ?? "?";
        if (leaseKey(t.workerId ?? "", jobId, t.attempt) !== key) fail("outcomeProvenance", jobId, `${t.cause} written by ${t.workerId} at attempt ${t.attempt}, the lease was ${key}`);
        if (t.cause === "leaseExpired") {
          expiries++;
          const record = index.leases.get(key);
          if (record !== undefined && t.at < record.expires) fail("expiry", jobId, `lease ${key} expired at ${t.at}, its worker had it renewed to ${record.expires}`);
          const policy = creation?.job.retry ?? TORTURE_RETRY;
          const counted = t.attempt - (lease?.releases ?? 0);
          if (t.state === "scheduled" && counted >= policy.maxAttempts) fail("expiry", jobId, `expired at counted attempt ${counted} of ${policy.maxAttempts}, rescheduled instead of dead-lettered`);
          if (t.state === "deadLettered" && counted < policy.maxAttempts) fail("expiry", jobId, `expired at counted attempt ${counted} of ${policy.maxAttempts}, dead-lettered`);
          if (t.state === "cancelled" && !cancelRequested.has(jobId)) fail("expiry", jobId, "expired into cancelled, but no operator asked to cancel it");
        } else {
          const applied = index.applied.get(key);
          const via = t.cause === "released" ? "release" : "report";
          if (applied === undefined || applied.via !== via || applied.state !== t.state || !(via === "release" || OUTCOME_CAUSES.has(t.cause))) {
            fail("outcomeProvenance", jobId, `${t.cause} → ${t.state} of lease ${key}, no client was answered such a write (${applied ? `${applied.via} → ${applied.state}` : "none"})`);
          } else {
            appliedSeen.add(key);
            const sent = applied.report?.failureDetail ?? null;
            if (t.failureDetail !== null && (sent === null || !sent.startsWith(t.failureDetail) || utf8ByteLength(t.failureDetail) > 8_192)) {
              fail("failureDetail", jobId, `failure detail of ${utf8ByteLength(t.failureDetail)} bytes is not a bounded prefix of what was sent`);
            }
          }
        }
        lease = null;
      }
      if (t.cause === "operatorCancelled") {
        operatorCancels++;
        const actor = summary.terminalCause?.replace(/^cancelled by /, "");
        if (!(index.cancels.get(jobId) ?? []).some((c) => c.status === "cancelled" && c.actor === actor)) fail("cancelProvenance", jobId, `cancelled by "${actor}", who was not answered cancelled`);
      }
      if (t.cause === "requeued") requeues++;
      if (t.cause === "parentsResolved" || (from === "new" && t.cause === "enqueued" && t.state === "scheduled") || t.cause === "parentFailed") {
        checkParents(jobs, summary, t, fail);
      }
      from = t.state;
      attempt = t.attempt;
    }
    const last = history[history.length - 1]!;
    if (!isTerminalState(summary.state)) fail("drain", jobId, `still ${summary.state} after the drain`);
    if (summary.state !== last.state || summary.attempt !== last.attempt) fail("history", jobId, `reads ${summary.state} at attempt ${summary.attempt}, its history ends ${last.state} at ${last.attempt}`);
    if (isTerminalState(summary.state) && (summary.terminalAt === null || summary.leaseOwner !== null || summary.leaseExpiresAt !== null || summary.cancelRequested)) {
      fail("terminal", jobId, `terminal with terminalAt ${summary.terminalAt}, lease ${summary.leaseOwner}/${summary.leaseExpiresAt}, cancelRequested ${summary.cancelRequested}`);
    }
    if (!truncated) {
      if (expiries !== (index.expiries.get(jobId) ?? 0)) fail("expiry", jobId, `${expiries} expiries in its history, sweepers were told of ${index.expiries.get(jobId) ?? 0}`);
      const cancelled = (index.cancels.get(jobId) ?? []).filter((c) => c.status === "cancelled").length;
      if (operatorCancels !== cancelled) fail("cancel", jobId, `${operatorCancels} operator cancels in its history, ${cancelled} answered cancelled`);
      const answered = index.requeues.get(jobId)?.length ?? 0;
      if (requeues !== answered) fail("requeue", jobId, `${requeues} requeues in its history, ${answered} answered requeued`);
    }
  }

  // Every acknowledged claim and applied write is in some history (jobs with full histories).
  for (const [key, lease] of index.leases) {
    const job = jobs.get(lease.jobId);
    if (job === undefined || job.history[0]?.ordinal !== 1) continue;
    if (!claimsSeen.has(key)) fail("lostClaim", lease.jobId, `claim ${key} was answered, its history has no such claim`);
  }
  for (const [key, applied] of index.applied) {
    const job = jobs.get(applied.jobId);
    if (job === undefined || job.history[0]?.ordinal !== 1) continue;
    if (!appliedSeen.has(key)) fail("lostOutcome", applied.jobId, `${applied.via} of ${key} → ${applied.state} was answered applied, its history does not show it`);
  }
  return stats;
}

/** A child released (or cancelled) by its parents: they were terminal, and succeeded where it needs that. */
function checkParents(jobs: ReadonlyMap<string, StoredJob>, child: JobSummary, t: TransitionRecord, fail: (check: string, jobId: string, message: string) => void): void {
  if (child.parentIds.length === 0) {
    if (t.cause !== "enqueued") fail("parents", child.id, `${t.cause} without parents`);
    return;
  }
  const states = child.parentIds.map((id) => stateAt(jobs.get(id), t.position, t.at));
  const shown = child.parentIds.map((id, i) => `${id}=${states[i]}`).join(", ");
  if (t.cause === "parentFailed") {
    if (child.dependencyMode !== "onSuccess" || !states.some((s) => s !== null && isTerminalState(s) && s !== "succeeded")) fail("parents", child.id, `cancelled for a failed parent, parents ${shown}`);
    return;
  }
  if (!states.every((s) => s !== null && isTerminalState(s))) fail("parents", child.id, `${t.cause} → ${t.state} while a parent was live: ${shown}`);
  else if (child.dependencyMode === "onSuccess" && !states.every((s) => s === "succeeded")) fail("parents", child.id, `${t.cause} → ${t.state} (onSuccess) though a parent did not succeed: ${shown}`);
}

/**
 * The limited queues replayed in commit order (store-wide positions): a job is leased from its
 * claim's transition to its next one. `fixed` never has more than its limit leased; `raced` never
 * more than the largest limit ever set on it; no probe queue (of `clients` clients) more than
 * its limit. The peaks are per queue, the probe queues' as one (`probe`).
 */
export function checkLimitReplay(jobs: ReadonlyMap<string, StoredJob>, clients: number, violations: Violation[]): Record<string, number> {
  const bounds: [string, string, number][] = [
    [TORTURE_QUEUES.fixed, TORTURE_QUEUES.fixed, FIXED_LIMIT],
    [TORTURE_QUEUES.raced, TORTURE_QUEUES.raced, Math.max(...RACED_LIMITS)],
    ...Array.from({ length: clients }, (_, i): [string, string, number] => ["probe", probeQueue(i), PROBE_LIMIT]),
  ];
  const peaks: Record<string, number> = {};
  for (const [label, queue, bound] of bounds) {
    const events: [number, number, string][] = [];
    for (const job of jobs.values()) {
      if (job.summary.queue !== queue) continue;
      for (const [i, t] of job.history.entries()) {
        if (t.state !== "leased") continue;
        events.push([t.position, 1, job.summary.id]);
        const next = job.history[i + 1];
        if (next !== undefined) events.push([next.position, -1, job.summary.id]);
      }
    }
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let peak = 0;
    let reported = 0;
    for (const [position, delta, jobId] of events) {
      open += delta;
      peak = Math.max(peak, open);
      if (open > bound && reported++ < 3) violations.push({ check: "limitReplay", message: `${queue}: ${open} jobs leased at position ${position} (claim of ${jobId}), over its limit ${bound}` });
    }
    peaks[label] = Math.max(peaks[label] ?? 0, peak);
  }
  return peaks;
}

import { type AuditRecord, type QueueSettings, type ScheduleRecord, type WorkflowRecord, scheduledJobId, workflowStatus } from "@belay/contract";
import type { StoredJob } from "./audit-history.js";
import type { JournalIndex, Violation } from "./audit-journals.js";
import { TORTURE_QUEUES } from "./plan.js";

// Operator actions, schedules and workflows against the journals: every action with an effect
// audited once and nothing else audited; the raced queue's settings are what its last audited
// change made them; each schedule's cursor moved by one unbroken chain of compare-and-sets, each
// tick minted once; every workflow whole and its status derived from its members.

const tuple = (r: { actor: string; action: string; targetKind: string; target: string; detail: string | null }) =>
  `${r.actor} ${r.action} ${r.targetKind}:${r.target} ${r.detail ?? "-"}`;

/** The audit trail holds exactly the operator actions some caller was answered with an effect. */
export function checkAuditTrail(index: JournalIndex, jobs: ReadonlyMap<string, StoredJob>, records: readonly AuditRecord[], violations: Violation[]): void {
  const expected: string[] = [];
  for (const [jobId, calls] of index.cancels) {
    for (const call of calls) {
      if (call.status === "cancelled" || call.status === "cancelRequested") expected.push(tuple({ actor: call.actor, action: "cancel", targetKind: "job", target: jobId, detail: call.status }));
    }
  }
  for (const [jobId, actors] of index.requeues) {
    for (const actor of actors) expected.push(tuple({ actor, action: "requeue", targetKind: "job", target: jobId, detail: null }));
  }
  for (const action of index.queueActions) {
    const detail = action.action === "setConcurrencyLimit" ? (action.limit === null ? "limit=none" : `limit=${action.limit}`) : action.action === "pauseQueue" ? "paused" : "resumed";
    expected.push(tuple({ actor: action.actor, action: action.action, targetKind: "queue", target: action.queue, detail }));
  }
  const triggered = new Set<string>();
  for (const trigger of index.triggers) {
    if (trigger.status !== "triggered" || triggered.has(trigger.jobId)) continue;
    const job = jobs.get(trigger.jobId);
    if (job === undefined) {
      violations.push({ check: "trigger", message: `${trigger.actor} was answered triggered for ${trigger.jobId}, which does not exist` });
      continue;
    }
    if (job.history[0]?.cause !== "triggered" || job.summary.scheduleId !== trigger.scheduleId) {
      violations.push({ check: "trigger", message: `${trigger.jobId} (triggered from ${trigger.scheduleId}) exists as ${job.history[0]?.cause} of ${job.summary.scheduleId}` });
      continue;
    }
    triggered.add(trigger.jobId);
    expected.push(tuple({ actor: trigger.actor, action: "triggerSchedule", targetKind: "schedule", target: trigger.scheduleId, detail: trigger.jobId }));
  }
  const found = records.map(tuple);
  const remaining = new Map<string, number>();
  for (const key of found) remaining.set(key, (remaining.get(key) ?? 0) + 1);
  const missing: string[] = [];
  for (const key of expected) {
    const n = remaining.get(key) ?? 0;
    if (n === 0) missing.push(key);
    else remaining.set(key, n - 1);
  }
  const extra = [...remaining].flatMap(([key, n]) => Array.from({ length: n }, () => key));
  for (const key of missing.slice(0, 10)) violations.push({ check: "auditMissing", message: `an action with an effect has no audit record: ${key}` });
  if (missing.length > 10) violations.push({ check: "auditMissing", message: `… and ${missing.length - 10} more` });
  for (const key of extra.slice(0, 10)) violations.push({ check: "auditExtra", message: `an audit record without an action that had an effect: ${key}` });
  if (extra.length > 10) violations.push({ check: "auditExtra", message: `… and ${extra.length - 10} more` });
  const seqs = records.map((r) => r.seq);
  if (seqs.some((s, i) => i > 0 && s <= seqs[i - 1]!)) violations.push({ check: "audit", message: "audit records are not in increasing seq order" });
}

/**
 * Right after the race (before the drain touches anything): the raced queue is paused exactly
 * when its last audited pause/resume was a pause, and has the limit its last audited limit set.
 */
export function checkSettingsAfterRace(settings: readonly QueueSettings[], records: readonly AuditRecord[], violations: Violation[]): void {
  const queue = TORTURE_QUEUES.raced;
  const raced = settings.find((s) => s.queue === queue) ?? { queue, paused: false, concurrencyLimit: null };
  const mine = records.filter((r) => r.targetKind === "queue" && r.target === queue);
  const lastToggle = mine.filter((r) => r.action === "pauseQueue" || r.action === "resumeQueue").at(-1);
  const lastLimit = mine.filter((r) => r.action === "setConcurrencyLimit").at(-1);
  const paused = lastToggle?.action === "pauseQueue";
  if (raced.paused !== paused) violations.push({ check: "settings", message: `${queue} reads paused=${raced.paused}, its last audited toggle (seq ${lastToggle?.seq}) was ${lastToggle?.action}` });
  const limit = lastLimit === undefined || lastLimit.detail === "limit=none" ? null : Number(lastLimit.detail?.replace("limit=", ""));
  if (raced.concurrencyLimit !== limit) violations.push({ check: "settings", message: `${queue} reads limit ${raced.concurrencyLimit}, its last audited limit (seq ${lastLimit?.seq}) was ${limit}` });
}

/** Schedules: one compare-and-set chain per cursor, each tick minted once, nothing minted after removal. */
export function checkSchedules(index: JournalIndex, jobs: ReadonlyMap<string, StoredJob>, schedules: readonly ScheduleRecord[], violations: Violation[]): number {
  const fail = (message: string) => violations.push({ check: "schedule", message });
  const ids = new Set([...index.upserts.map((u) => u.scheduleId), ...index.mints.map((m) => m.decision.scheduleId)]);
  let applied = 0;
  for (const scheduleId of ids) {
    const created = index.upserts.filter((u) => u.scheduleId === scheduleId && u.result.status === "created");
    if (created.length > 1) fail(`${scheduleId} was created ${created.length} times`);
    const removed = index.removals.find((r) => r.scheduleId === scheduleId && r.status === "removed");
    const mints = index.mints.filter((m) => m.decision.scheduleId === scheduleId);
    for (const m of mints) {
      if (m.stale && m.result.status === "minted") fail(`${m.client}: a mint of ${scheduleId} from a wrong cursor on purpose was applied`);
      if (removed !== undefined && m.now > removed.ack && m.result.status !== "notFound") fail(`${m.client}: ${scheduleId} answered ${m.result.status} after it was removed`);
    }
    for (const t of index.triggers) {
      if (t.scheduleId === scheduleId && removed !== undefined && t.now > removed.ack && t.status !== "notFound") fail(`${t.actor}: trigger of ${scheduleId} answered ${t.status} after it was removed`);
    }
    const chain = mints.filter((m) => m.result.status === "minted").sort((a, b) => a.decision.expectedCursor - b.decision.expectedCursor);
    applied += chain.length;
    let cursor = created[0]?.result.cursor;
    const listed = new Set<string>();
    for (const m of chain) {
      if (cursor !== undefined && m.decision.expectedCursor !== cursor) fail(`${scheduleId}: a mint applied from cursor ${m.decision.expectedCursor}, the cursor was ${cursor} (two decisions from one cursor, or a gap)`);
      cursor = m.decision.newCursor;
      const ticks = new Map(m.decision.mint.map((tick) => [scheduledJobId(scheduleId, tick), tick]));
      for (const jobId of (m.result as { jobIds: readonly string[] }).jobIds) {
        if (!ticks.has(jobId)) fail(`${scheduleId}: minted ${jobId}, not a tick of its decision`);
        if (listed.has(jobId)) fail(`${scheduleId}: tick ${jobId} minted twice`);
        listed.add(jobId);
        const job = jobs.get(jobId);
        if (job === undefined) fail(`${scheduleId}: minted ${jobId}, which does not exist`);
        else if (job.summary.scheduleId !== scheduleId || job.history[0]?.cause !== "minted") fail(`${jobId} exists as ${job.history[0]?.cause} of ${job.summary.scheduleId}`);
      }
      for (const jobId of ticks.keys()) if (!listed.has(jobId)) fail(`${scheduleId}: tick ${jobId} of an applied decision was neither minted by it nor before it`);
    }
    for (const job of jobs.values()) {
      if (job.summary.scheduleId === scheduleId && job.history[0]?.cause === "minted" && !listed.has(job.summary.id)) fail(`${job.summary.id} was minted, but no applied decision listed it`);
    }
    const stored = schedules.find((s) => s.id === scheduleId);
    if (removed !== undefined) {
      if (stored !== undefined) fail(`${scheduleId} was removed, but is still listed`);
      continue;
    }
    if (stored === undefined) {
      if (created.length > 0) fail(`${scheduleId} was created and never removed, but is not listed`);
      continue;
    }
    if (cursor !== undefined && stored.cursor !== cursor) fail(`${scheduleId}: cursor ${stored.cursor}, the chain of applied mints ends at ${cursor}`);
    const skipped = new Set(chain.flatMap((m) => m.decision.skip));
    for (const tick of stored.skippedTicks) if (!skipped.has(tick)) fail(`${scheduleId}: skipped tick ${tick} was in no applied decision's skip list`);
  }
  return applied;
}

/** Workflows: created once, every member present, the status derived from the members. */
export function checkWorkflows(index: JournalIndex, jobs: ReadonlyMap<string, StoredJob>, stored: ReadonlyMap<string, WorkflowRecord | null>, violations: Violation[]): number {
  const fail = (message: string) => violations.push({ check: "workflow", message });
  let created = 0;
  for (const [workflowId, calls] of index.workflows) {
    const creators = calls.filter((c) => c.status === "created");
    if (creators.length > 1) fail(`${workflowId} created ${creators.length} times (${creators.map((c) => c.client).join(", ")})`);
    if (creators.length === 0) {
      if (calls.some((c) => c.status === "duplicate")) fail(`${workflowId} answered duplicate, but nobody was answered created`);
      continue;
    }
    created++;
    const record = stored.get(workflowId) ?? null;
    if (record === null) {
      fail(`${workflowId} was created, but reads as absent`);
      continue;
    }
    const members = creators[0]!.jobIds;
    if (record.jobCount !== members.length) fail(`${workflowId} has ${record.jobCount} members, created with ${members.length}`);
    const counts: Record<string, number> = {};
    for (const id of members) {
      const job = jobs.get(id);
      if (job === undefined) fail(`${workflowId}: member ${id} is missing`);
      else counts[job.summary.state] = (counts[job.summary.state] ?? 0) + 1;
    }
    if (JSON.stringify(Object.entries(record.counts).sort()) !== JSON.stringify(Object.entries(counts).sort())) {
      fail(`${workflowId} counts ${JSON.stringify(record.counts)}, its members are ${JSON.stringify(counts)}`);
    }
    if (record.status !== workflowStatus(record.counts)) fail(`${workflowId} status ${record.status}, its counts make it ${workflowStatus(record.counts)}`);
  }
  return created;
}

/** Every acknowledged creation exists; duplicates only of jobs someone created; refused batches left nothing. */
export function checkCreations(index: JournalIndex, jobs: ReadonlyMap<string, StoredJob>, violations: Violation[]): void {
  for (const jobId of index.creations.keys()) {
    if (!jobs.has(jobId)) violations.push({ check: "lostJob", message: `${jobId} was acknowledged as created, and is gone` });
  }
  for (const jobId of index.duplicates) {
    if (!jobs.has(jobId)) violations.push({ check: "duplicate", message: `${jobId} was answered duplicate, and does not exist` });
    else if (!index.creations.has(jobId)) violations.push({ check: "duplicate", message: `${jobId} was answered duplicate, but no client was acknowledged its creation` });
  }
  for (const jobId of index.refused) {
    if (jobs.has(jobId) && !index.creations.has(jobId)) violations.push({ check: "refusedBatch", message: `${jobId} was in a refused batch, and exists` });
  }
}

import {
  type AuditRecord,
  type CancelResult,
  type JobActionRequest,
  type QueueSettings,
  type RequeueResult,
  jobStateFromCode,
} from "@belay/contract";
import type { Statements } from "../connection.js";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { appendAudit } from "./audit.js";
import { moveToScheduled, moveToTerminal, resolveChildren } from "./jobs.js";

const JOB_FOR_ACTION = (t: Tables) => `SELECT seq, state FROM ${t.jobs} WHERE id = ?`;

/** A cancel request on a leased job: a flag (with who asked) the next heartbeat reports. */
const REQUEST_CANCEL = (t: Tables) => `UPDATE ${t.jobs} SET cancel_requested_by = ? WHERE seq = ?`;

const PAUSE = (t: Tables) => `INSERT INTO ${t.queues} (queue, paused) VALUES (?, ?)
  ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused`;

const LIMIT = (t: Tables) => `INSERT INTO ${t.queues} (queue, concurrency_limit) VALUES (?, ?)
  ON CONFLICT (queue) DO UPDATE SET concurrency_limit = excluded.concurrency_limit`;

const LIST_QUEUES = (t: Tables) => `SELECT queue, paused, concurrency_limit FROM ${t.queues} ORDER BY queue`;

/** See `JobStore.cancelJob`. */
export function* cancelJob(ctx: OpContext, request: JobActionRequest): Steps<CancelResult> {
  const { jobId, actor, now } = request;
  const job = ctx.q.get(JOB_FOR_ACTION).get(jobId) as { seq: number; state: number } | undefined;
  if (job === undefined) return { status: "notFound" };
  if (job.state >= S.succeeded) return { status: "notCancellable", state: jobStateFromCode(job.state) };
  let result: CancelResult;
  if (job.state === S.leased) {
    ctx.q.get(REQUEST_CANCEL).run(actor, job.seq);
    result = { status: "cancelRequested" };
  } else {
    const moved = moveToTerminal(ctx, job.seq, "cancelled", `cancelled by ${actor}`, now);
    yield "job cancelled";
    resolveChildren(ctx, [moved], now);
    result = { status: "cancelled" };
  }
  yield "effect applied";
  appendAudit(ctx, { actor, action: "cancel", targetKind: "job", target: jobId, detail: result.status, at: now });
  return result;
}

const REGATE_CHILDREN = (t: Tables) => `UPDATE ${t.jobs} SET parents_remaining = parents_remaining + 1
  WHERE state = ${S.awaitingParents} AND seq IN (SELECT child_seq FROM ${t.edges} WHERE parent_seq = ?)`;

/** See `JobStore.requeueJob`. */
export function* requeueJob(ctx: OpContext, request: JobActionRequest): Steps<RequeueResult> {
  const { jobId, actor, now } = request;
  const job = ctx.q.get(JOB_FOR_ACTION).get(jobId) as { seq: number; state: number } | undefined;
  if (job === undefined) return { status: "notFound" };
  if (job.state !== S.deadLettered && job.state !== S.quarantined) {
    return { status: "notRequeueable", state: jobStateFromCode(job.state) };
  }
  moveToScheduled(ctx, job.seq, { dueAt: now, attempt: 0, releases: 0 }, now);
  yield "job requeued";
  // Live again: children still waiting for their parents wait for it again (one latch per gating).
  ctx.q.get(REGATE_CHILDREN).run(job.seq);
  appendAudit(ctx, { actor, action: "requeue", targetKind: "job", target: jobId, detail: null, at: now });
  return { status: "requeued" };
}

/** Writes one setting of a queue (its row created on first use), audited in the same transaction. */
export function* changeQueue(
  ctx: OpContext,
  queue: string,
  change: { paused: boolean } | { concurrencyLimit: number | null },
  audit: Pick<AuditRecord, "actor" | "action" | "detail" | "at">,
): Steps<{ status: "applied" }> {
  if ("paused" in change) ctx.q.get(PAUSE).run(queue, change.paused ? 1 : 0);
  else ctx.q.get(LIMIT).run(queue, change.concurrencyLimit);
  yield "queue settings written";
  appendAudit(ctx, { ...audit, targetKind: "queue", target: queue });
  return { status: "applied" };
}

/** See `JobStore.listQueueSettings`: by queue name, by code point. */
export function listQueueSettings(q: Statements): QueueSettings[] {
  return (q.get(LIST_QUEUES).all() as { queue: string; paused: number; concurrency_limit: number | null }[]).map((row) => ({
    queue: row.queue,
    paused: row.paused === 1,
    concurrencyLimit: row.concurrency_limit,
  }));
}

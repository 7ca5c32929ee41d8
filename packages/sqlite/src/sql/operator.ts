import {
  type AuditRecord, type CancelResult, type JobActionRequest, type QueueActionRequest, type QueueActionResult,
  type QueueSettings, type RequeueResult, type SetConcurrencyLimitRequest, jobStateFromCode, terminalCauseText,
} from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { OpContext, ReadContext, Steps } from "../transaction.js";
import { appendAudit } from "./audit.js";
import { regateChildren, resolveChildren } from "./children.js";
import { byStore, moveToScheduled, moveToTerminal } from "./jobs.js";

// Every operator action appends its audit record in the same transaction as its effect.

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
    const moved = moveToTerminal(ctx, job.seq, "cancelled", terminalCauseText("cancelledBy", { actor }), now, byStore("operatorCancelled"));
    yield "job cancelled";
    resolveChildren(ctx, [moved], now);
    result = { status: "cancelled" };
  }
  yield "effect applied";
  appendAudit(ctx, { actor, action: "cancel", targetKind: "job", target: jobId, detail: result.status, at: now });
  return result;
}

/** See `JobStore.requeueJob`. */
export function* requeueJob(ctx: OpContext, request: JobActionRequest): Steps<RequeueResult> {
  const { jobId, actor, now } = request;
  const job = ctx.q.get(JOB_FOR_ACTION).get(jobId) as { seq: number; state: number } | undefined;
  if (job === undefined) return { status: "notFound" };
  if (job.state !== S.deadLettered && job.state !== S.quarantined) {
    return { status: "notRequeueable", state: jobStateFromCode(job.state) };
  }
  moveToScheduled(ctx, job.seq, { dueAt: now, attempt: 0, releases: 0 }, now, byStore("requeued"));
  yield "job requeued";
  regateChildren(ctx, job.seq);
  appendAudit(ctx, { actor, action: "requeue", targetKind: "job", target: jobId, detail: null, at: now });
  return { status: "requeued" };
}

/** Writes one setting of a queue (its row created on first use), audited in the same transaction. */
function* changeQueue(
  ctx: OpContext,
  request: QueueActionRequest,
  change: { paused: boolean } | { concurrencyLimit: number | null },
  audit: Pick<AuditRecord, "action" | "detail">,
): Steps<QueueActionResult> {
  const { queue, actor, now } = request;
  if ("paused" in change) ctx.q.get(PAUSE).run(queue, change.paused ? 1 : 0);
  else ctx.q.get(LIMIT).run(queue, change.concurrencyLimit);
  yield "queue settings written";
  appendAudit(ctx, { ...audit, actor, targetKind: "queue", target: queue, at: now });
  return { status: "applied" };
}

/** See `JobStore.pauseQueue`. */
export function pauseQueue(ctx: OpContext, request: QueueActionRequest): Steps<QueueActionResult> {
  return changeQueue(ctx, request, { paused: true }, { action: "pauseQueue", detail: "paused" });
}

/** See `JobStore.resumeQueue`. */
export function resumeQueue(ctx: OpContext, request: QueueActionRequest): Steps<QueueActionResult> {
  return changeQueue(ctx, request, { paused: false }, { action: "resumeQueue", detail: "resumed" });
}

/** See `JobStore.setConcurrencyLimit`; `null` removes the limit. */
export function setConcurrencyLimit(ctx: OpContext, request: SetConcurrencyLimitRequest): Steps<QueueActionResult> {
  const detail = request.limit === null ? "limit=none" : `limit=${request.limit}`;
  return changeQueue(ctx, request, { concurrencyLimit: request.limit }, { action: "setConcurrencyLimit", detail });
}

/** See `JobStore.listQueueSettings`: by queue name, by code point. */
export function listQueueSettings(ctx: ReadContext): QueueSettings[] {
  return (ctx.q.get(LIST_QUEUES).all() as { queue: string; paused: number; concurrency_limit: number | null }[]).map((row) => ({
    queue: row.queue,
    paused: row.paused === 1,
    concurrencyLimit: row.concurrency_limit,
  }));
}

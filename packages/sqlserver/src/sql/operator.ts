import {
  type CancelResult, type JobActionRequest, type QueueActionRequest, type QueueActionResult, type QueueChange, type QueueSettings,
  type RequeueResult, JOB_STATE_CODES, isTerminalState, queueActions, terminalCauseText,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { key, textOfKey, toBool, toIntOrNull } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { appendAudit } from "./audit.js";
import { resolveChildren } from "./children.js";
import { ended, lockJobs, stateOf, writeJobs } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** See `JobStore.cancelJob`. */
export async function cancelJob(ctx: StoreContext, request: JobActionRequest): Promise<CancelResult> {
  const { jobId, actor, now } = request;
  return ctx.executor.transaction("cancelJob", async (session): Promise<CancelResult> => {
    const job = (await lockJobs(session, [jobId])).get(jobId);
    if (job === undefined) return { status: "notFound" };
    const state = stateOf(job.state);
    if (isTerminalState(state)) return { status: "notCancellable", state };
    let result: CancelResult;
    if (state === "leased") {
      await writeJobs(session, ctx, [{ row: { ...job, cancelRequestedBy: actor }, transition: null }], now);
      result = { status: "cancelRequested" };
    } else {
      await writeJobs(session, ctx, [{ row: ended(job, STATE.cancelled, terminalCauseText("cancelledBy", { actor }), now), transition: { cause: "operatorCancelled" } }], now);
      await session.step("job cancelled");
      if (job.hasChildren) await resolveChildren(session, ctx, [{ seq: job.seq, id: jobId, state: STATE.cancelled }], now);
      result = { status: "cancelled" };
    }
    await session.step("effect applied");
    await appendAudit(session, { at: now, actor, action: "cancel", targetKind: "job", target: jobId, detail: result.status });
    return result;
  });
}

// Live again: children still waiting for their parents wait for it again (one latch per gating).
const REGATE_CHILDREN = statement(
  "regateChildren",
  { parent: "bigint" },
  (S) => `UPDATE c SET parents_remaining = c.parents_remaining + 1
FROM ${S}.jobs AS c INNER JOIN ${S}.job_edges AS e ON e.child_seq = c.seq
WHERE e.parent_seq = @parent AND c.state = ${STATE.awaitingParents}`,
);

/** See `JobStore.requeueJob`. */
export async function requeueJob(ctx: StoreContext, request: JobActionRequest): Promise<RequeueResult> {
  const { jobId, actor, now } = request;
  return ctx.executor.transaction("requeueJob", async (session): Promise<RequeueResult> => {
    const job = (await lockJobs(session, [jobId])).get(jobId);
    if (job === undefined) return { status: "notFound" };
    if (job.state !== STATE.deadLettered && job.state !== STATE.quarantined) return { status: "notRequeueable", state: stateOf(job.state) };
    const row = { ...job, state: STATE.scheduled, dueAt: now, attempt: 0, releases: 0, terminalAt: null, terminalCause: null, transitionCount: job.transitionCount + 1 };
    await writeJobs(session, ctx, [{ row, transition: { cause: "requeued" } }], now);
    await session.step("job requeued");
    await session.query(REGATE_CHILDREN, { parent: job.seq });
    await appendAudit(session, { at: now, actor, action: "requeue", targetKind: "job", target: jobId, detail: null });
    return { status: "requeued" };
  });
}

/**
 * The settings row is updated in place (or created), under an update lock on its key (range):
 * it waits for every claim holding the row (or its key range) shared, so a change commits
 * either before a claim reads the queue or after it has finished.
 */
const CHANGE_QUEUE = statement(
  "changeQueue",
  { queue: `varbinary(${COLUMN_BYTES.queue})`, paused: "bit", limit: "int", setLimit: "bit" },
  (S) => `UPDATE q SET paused = ISNULL(@paused, q.paused), concurrency_limit = CASE WHEN @setLimit = 1 THEN @limit ELSE q.concurrency_limit END
FROM ${S}.queues AS q WITH (UPDLOCK, HOLDLOCK) WHERE q.queue = @queue;
IF @@ROWCOUNT = 0
  INSERT INTO ${S}.queues (queue, paused, concurrency_limit) VALUES (@queue, ISNULL(@paused, 0), CASE WHEN @setLimit = 1 THEN @limit END)`,
);

async function changeQueue(ctx: StoreContext, request: QueueActionRequest, change: QueueChange): Promise<QueueActionResult> {
  const { queue, actor, now } = request;
  const { action, detail } = change;
  await ctx.executor.transaction(action, async (session) => {
    await session.query(CHANGE_QUEUE, { queue: key(queue), paused: change.paused ?? null, limit: change.limit ?? null, setLimit: change.limit !== undefined });
    await session.step("queue settings written");
    await appendAudit(session, { at: now, actor, action, targetKind: "queue", target: queue, detail });
  }, { rerunOnUnique: true });
  return { status: "applied" };
}

/** See `JobStore.pauseQueue`, `JobStore.resumeQueue` and `JobStore.setConcurrencyLimit`. */
export const { pauseQueue, resumeQueue, setConcurrencyLimit } = queueActions(changeQueue);

const QUEUE_SETTINGS = statement("queueSettings", {}, (S) => `SELECT q.queue, q.paused, q.concurrency_limit FROM ${S}.queues AS q ORDER BY q.queue`);

/** See `JobStore.listQueueSettings`: only queues an operator configured have a row. */
export async function listQueueSettings(ctx: StoreContext): Promise<QueueSettings[]> {
  const rows = await ctx.executor.read("listQueueSettings", (s) => s.rows(QUEUE_SETTINGS));
  return rows.map((row) => ({ queue: textOfKey(row["queue"]), paused: toBool(row["paused"]), concurrencyLimit: toIntOrNull(row["concurrency_limit"]) }));
}

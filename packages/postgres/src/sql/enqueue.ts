import {
  type EnqueueRequest,
  type EnqueueResult,
  type InitialJobState,
  type NormalizedNewJob,
  boundRejection,
  planEnqueue,
  refusedEnqueue,
  validateNewJob,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import type { PostgresQueryExecutor, Session } from "../session.js";
import { type PlannedInsert, insertJobs, notifyQueues, parentsAndExisting } from "./insert-jobs.js";
import { CANCELLED, SCHEDULED, stateOf, toInt } from "./rows.js";

const STATE_NAMES = ["scheduled", "awaitingParents", "leased", "succeeded", "cancelled", "deadLettered", "quarantined"];

/**
 * The initial state of a new job from its parents' states: cancelled at once when an
 * `onSuccess` parent already ended otherwise than succeeded, awaiting while any parent is live.
 */
export function initialState(
  job: NormalizedNewJob,
  stateOfParent: (id: string) => number,
): { state: number; parentsRemaining: number; terminalCause: string | null } {
  let live = 0;
  for (const parentId of job.parentIds) {
    const state = stateOfParent(parentId);
    if (state < 3) live++;
    else if (job.dependencyMode === "onSuccess" && state !== 3) {
      return { state: CANCELLED, parentsRemaining: 0, terminalCause: `parent ${parentId} ${STATE_NAMES[state]}` };
    }
  }
  return live > 0 ? { state: 1, parentsRemaining: live, terminalCause: null } : { state: SCHEDULED, parentsRemaining: 0, terminalCause: null };
}

const STATE_BY_ID = (S: string) => `SELECT id, state FROM ${S}.jobs WHERE id = ANY($1::text[])`;

/**
 * See `JobStore.enqueue`: one statement without parents, a transaction with them. With `caller`,
 * inside the caller's transaction instead (its hints ride that transaction as NOTIFY).
 */
export async function enqueue(
  ctx: StoreContext,
  request: EnqueueRequest,
  caller?: PostgresQueryExecutor,
  /** The jobs' field checks, when the caller has run them already. */
  prechecked?: readonly ReturnType<typeof validateNewJob>[],
): Promise<EnqueueResult[]> {
  const { jobs, now } = request;
  if (jobs.length === 0) return [];
  if (jobs.length > ctx.bounds.enqueueBatch) {
    const rejection = boundRejection("BELAY_BATCH_TOO_LARGE", "jobs", ctx.bounds.enqueueBatch, jobs.length);
    return jobs.map((job) => ({ id: String(job?.id), status: "rejected", rejection }));
  }
  const checked = prechecked ?? jobs.map((job) => validateNewJob(job, ctx.bounds));
  const parentIds = [...new Set(checked.flatMap((c) => (c.ok ? c.job.parentIds : [])))];
  const fieldRejected = checked.some((c) => !c.ok);
  const due = new DueQueues(now);

  const body = async (session: Session): Promise<EnqueueResult[]> => {
    let parents = new Map<string, number>();
    let existing = new Map<string, number>();
    if (parentIds.length > 0) {
      const ids = checked.flatMap((c) => (c.ok ? [c.job.id] : []));
      ({ parents, existing } = await parentsAndExisting(session, ctx.sql, parentIds, ids, !fieldRejected));
    }
    const plans = planEnqueue(jobs, ctx.bounds, (id) => parents.has(id) || existing.has(id), checked);
    if (plans.some((p) => p.kind === "rejected")) return refusedEnqueue(plans);
    if (parentIds.length > 0) await session.step("parents locked");

    const created = new Map<string, number>();
    const inserts: PlannedInsert[] = [];
    for (const p of plans) {
      if (p.kind !== "create") continue;
      const initial = initialState(p.job, (id) => created.get(id) ?? parents.get(id)!);
      created.set(p.job.id, initial.state);
      inserts.push({ job: p.job, ...initial, scheduleId: null, workflowId: null });
    }
    const outcomes = await insertJobs(session, ctx.sql, inserts, now, ctx.history);
    await session.step("jobs inserted");

    const byId = new Map(inserts.map((insert, i) => [insert.job.id, { insert, outcome: outcomes[i]! }]));
    const unknown = [...byId.values()].filter((e) => e.outcome.seq === null && e.outcome.existingState === null).map((e) => e.insert.job.id);
    const raced = new Map<string, number>();
    if (unknown.length > 0) {
      for (const row of await session.query(ctx.sql.get("stateById", STATE_BY_ID), [unknown])) raced.set(row["id"] as string, toInt(row["state"]));
    }
    const results: EnqueueResult[] = plans.map((p) => {
      if (p.kind === "rejected") throw new Error("unreachable: rejected plans return early");
      if (p.kind === "duplicate") {
        const state = existing.get(p.id) ?? created.get(p.id) ?? raced.get(p.id) ?? SCHEDULED;
        return { id: p.id, status: "duplicate", state: stateOf(state) };
      }
      const { insert, outcome } = byId.get(p.job.id)!;
      if (outcome.seq === null) {
        const state = outcome.existingState ?? raced.get(p.job.id) ?? SCHEDULED;
        return { id: p.job.id, status: "duplicate", state: stateOf(state) };
      }
      due.add(insert.job.queue, insert.state, insert.job.dueAt);
      return { id: p.job.id, status: "created", state: stateOf(insert.state) as InitialJobState, seq: outcome.seq };
    });
    if (session.callerTransaction && ctx.channel !== null) await notifyQueues(session, ctx.sql, ctx.channel, [...due.queues]);
    return results;
  };

  if (caller !== undefined) {
    return ctx.executor.runInCallerTransaction(caller, "enqueue", (r) => !r.some((x) => x.status === "rejected"), body);
  }
  const results = await ctx.executor.run("enqueue", parentIds.length > 0 ? "transaction" : "autocommit", body);
  ctx.hint(due.queues);
  return results;
}

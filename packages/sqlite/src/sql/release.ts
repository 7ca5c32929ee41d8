import type { ReleaseRequest, ReleaseResult } from "@belay/contract";
import { S, type Tables } from "../tables.js";
import { type OpContext, type Steps, noteDue } from "../transaction.js";
import { type MovedJob, recordTransition } from "./jobs.js";

/** A fenced release in one statement: back to scheduled, due now, the attempt not counted. */
const RELEASE = (t: Tables) => `UPDATE ${t.jobs} SET state = ${S.scheduled}, due_at = ?, releases = releases + 1,
  lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL, transition_count = transition_count + ?
  WHERE id = ? AND state = ${S.leased} AND lease_owner = ? AND attempt = ? AND lease_expires_at > ?
  RETURNING seq, id, queue, state, attempt, transition_count, has_children`;

/** See `JobStore.release`. */
export function* release(ctx: OpContext, request: ReleaseRequest): Steps<ReleaseResult[]> {
  const { workerId, now } = request;
  const results: ReleaseResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const moved = ctx.q.get(RELEASE).get(now, ctx.history === "off" ? 0 : 1, jobId, workerId, attempt, now) as MovedJob | undefined;
    if (moved === undefined) {
      results.push({ jobId, status: "stale" });
      continue;
    }
    recordTransition(ctx, moved, now);
    noteDue(ctx, moved.queue, now, now);
    results.push({ jobId, status: "released" });
    yield `job ${jobId} released`;
  }
  return results;
}

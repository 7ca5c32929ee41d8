import type { HeartbeatRequest, HeartbeatResult } from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";

/** A fenced renewal in one statement: it applies only to the caller's live lease at that attempt. */
const RENEW = (t: Tables) => `UPDATE ${t.jobs} SET lease_expires_at = ?
  WHERE id = ? AND state = ${S.leased} AND lease_owner = ? AND attempt = ? AND lease_expires_at > ?
  RETURNING cancel_requested_by IS NOT NULL AS cancel_requested`;

/** See `JobStore.heartbeat`. */
export function* heartbeat(ctx: OpContext, request: HeartbeatRequest): Steps<HeartbeatResult[]> {
  const { workerId, leaseMs, now } = request;
  const leaseExpiresAt = now + leaseMs;
  const results: HeartbeatResult[] = [];
  for (const { jobId, attempt } of request.leases) {
    const renewed = ctx.q.get(RENEW).get(leaseExpiresAt, jobId, workerId, attempt, now) as { cancel_requested: number } | undefined;
    if (renewed === undefined) {
      results.push({ jobId, status: "lost" });
      continue;
    }
    results.push({ jobId, status: "renewed", leaseExpiresAt, cancelRequested: renewed.cancel_requested === 1 });
    yield `lease of ${jobId} renewed`;
  }
  return results;
}

import { type ClaimRequest, type ClaimResult, type ClaimedJob, type Instant, clampToBound } from "@belay/contract";
import type { MemoryState } from "../state.js";
import type { UndoLog } from "../undo-log.js";
import { moveJob, toClaimed } from "./jobs.js";

/** See `JobStore.claim`. */
export async function claim(state: MemoryState, undo: UndoLog, request: ClaimRequest): Promise<ClaimResult> {
  const { workerId, leaseMs, now } = request;
  const max = clampToBound(request.max, state.bounds.claimBatch);
  const queues = [...new Set(request.queues)];
  const claimed: ClaimedJob[] = [];
  let nextDueAt: Instant | null = null;
  for (const queue of queues) {
    const settings = state.queues.get(queue);
    await undo.step(`queue ${queue} settings read`);
    if (settings?.paused) continue;
    const due = state.due.get(queue);
    if (due === undefined) continue;
    // Usage is the queue's leased jobs, so a limit holds across every worker of the store.
    let free = settings?.concurrencyLimit == null ? Infinity : settings.concurrencyLimit - (state.leases.get(queue)?.size ?? 0);
    while (claimed.length < max && free > 0) {
      const first = due.first();
      if (first === undefined || first.at > now) break;
      const row = state.jobs.get(first.id)!;
      const lease = { attempt: row.attempt + 1, leaseOwner: workerId, leaseExpiresAt: now + leaseMs };
      moveJob(state, undo, row, "leased", lease, now, { cause: "claimed", workerId });
      claimed.push(toClaimed(row));
      free--;
      await undo.step(`job ${row.id} claimed`);
    }
    const next = due.first();
    if (next !== undefined) nextDueAt = nextDueAt === null ? next.at : Math.min(nextDueAt, next.at);
  }
  if (nextDueAt !== null && nextDueAt < now) nextDueAt = now;
  return { jobs: claimed, nextDueAt };
}

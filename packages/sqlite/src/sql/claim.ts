import { type ClaimRequest, type ClaimResult, type ClaimedJob, type Instant, clampToBound, dependencyModeFromCode } from "@belay/contract";
import { S, type Tables } from "../tables.js";
import type { OpContext, Steps } from "../transaction.js";
import { parseRetry, parseTags, recordTransition, recorded } from "./jobs.js";

const QUEUE_SETTINGS = (t: Tables) => `SELECT paused, concurrency_limit FROM ${t.queues} WHERE queue = ?`;

const LEASED_IN_QUEUE = (t: Tables) => `SELECT count(*) AS leased FROM ${t.jobs} WHERE state = ${S.leased} AND queue = ?`;

/**
 * One statement claims a queue's batch: the oldest due jobs (ties: enqueue order) read from the
 * partial index of scheduled jobs, moved to leased, returned with payload, tags and parents. Two
 * claimers can never take the same job: the statement runs under the write lock.
 */
const CLAIM = (t: Tables) => `UPDATE ${t.jobs}
  SET state = ${S.leased}, attempt = attempt + 1, lease_owner = ?, lease_expires_at = ?, transition_count = transition_count + ?
  WHERE seq IN (
    SELECT seq FROM ${t.jobs} WHERE state = ${S.scheduled} AND queue = ? AND due_at <= ? ORDER BY due_at, seq LIMIT ?
  )
  RETURNING seq, id, job_name, queue, state, attempt, releases, due_at, enqueued_at, lease_expires_at,
    dependency_mode, trace_context, schedule_id, workflow_id, transition_count, has_children,
    (SELECT p.payload FROM ${t.payloads} p WHERE p.job_seq = ${t.jobs}.seq) AS payload,
    (SELECT p.retry FROM ${t.payloads} p WHERE p.job_seq = ${t.jobs}.seq) AS retry,
    (SELECT json_group_array(json_array(g.key, g.value) ORDER BY g.ordinal) FROM ${t.tags} g WHERE g.job_seq = ${t.jobs}.seq) AS tags,
    (SELECT json_group_array(e.parent_id ORDER BY e.ordinal) FROM ${t.edges} e WHERE e.child_seq = ${t.jobs}.seq) AS parents`;

const NEXT_DUE = (t: Tables) => `SELECT min(due_at) AS next FROM ${t.jobs} WHERE state = ${S.scheduled} AND queue = ?`;

interface ClaimedRow {
  seq: number;
  id: string;
  job_name: string;
  queue: string;
  state: number;
  attempt: number;
  releases: number;
  due_at: number;
  enqueued_at: number;
  lease_expires_at: number;
  dependency_mode: number;
  trace_context: string | null;
  schedule_id: string | null;
  workflow_id: string | null;
  transition_count: number;
  has_children: number;
  payload: string;
  retry: string | null;
  tags: string;
  parents: string;
}

function toClaimed(row: ClaimedRow): ClaimedJob {
  return {
    id: row.id,
    seq: row.seq,
    jobName: row.job_name,
    queue: row.queue,
    payload: row.payload,
    attempt: row.attempt,
    releases: row.releases,
    dueAt: row.due_at,
    enqueuedAt: row.enqueued_at,
    leaseExpiresAt: row.lease_expires_at,
    tags: parseTags(row.tags),
    parentIds: JSON.parse(row.parents) as string[],
    dependencyMode: dependencyModeFromCode(row.dependency_mode),
    traceContext: row.trace_context,
    scheduleId: row.schedule_id,
    workflowId: row.workflow_id,
    retry: parseRetry(row.retry),
  };
}

/** See `JobStore.claim`. */
export function* claim(ctx: OpContext, request: ClaimRequest): Steps<ClaimResult> {
  const { workerId, leaseMs, now } = request;
  const { q } = ctx;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const claimed: ClaimedJob[] = [];
  let nextDueAt: Instant | null = null;
  for (const queue of new Set(request.queues)) {
    const settings = q.get(QUEUE_SETTINGS).get(queue) as { paused: number; concurrency_limit: number | null } | undefined;
    yield `queue ${queue} settings read`;
    if (settings?.paused) continue;
    let room = max - claimed.length;
    if (settings?.concurrency_limit != null) {
      const { leased } = q.get(LEASED_IN_QUEUE).get(queue) as { leased: number };
      room = Math.min(room, settings.concurrency_limit - leased);
    }
    if (room > 0) {
      const rows = q.get(CLAIM).all(workerId, now + leaseMs, recorded(ctx), queue, now, room) as ClaimedRow[];
      rows.sort((a, b) => a.due_at - b.due_at || a.seq - b.seq);
      for (const row of rows) {
        recordTransition(ctx, row, now, { cause: "claimed", workerId });
        claimed.push(toClaimed(row));
      }
      if (rows.length > 0) yield `queue ${queue} claimed`;
    }
    const { next } = q.get(NEXT_DUE).get(queue) as { next: number | null };
    if (next !== null) nextDueAt = nextDueAt === null ? next : Math.min(nextDueAt, next);
  }
  if (nextDueAt !== null && nextDueAt < now) nextDueAt = now;
  return { jobs: claimed, nextDueAt };
}

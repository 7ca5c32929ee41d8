import { type ClaimRequest, type ClaimResult, type ClaimedJob, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, clampToBound } from "@belay/contract";
import type { StoreContext } from "../context.js";
import type { Session } from "../session.js";
import { feedCtes, toClaimed, transitionAssignments } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/**
 * A claim is one statement. It locks the settings rows of the served queues FOR SHARE — a pause
 * or limit change is an UPDATE of that row, so it waits for claims in flight, and a claim that
 * meets a change in flight waits for it and re-reads the row's committed version — then takes
 * due jobs queue by queue (the nested loop stops pulling rows once `max` is reached, so later
 * queues are only touched when earlier ones run dry), marks them leased, logs the transitions
 * and works out the next due time, all from arrays of parameters.
 *
 * A queue with a concurrency limit must count its leased jobs with a snapshot taken after every
 * other claimer of that queue has committed: that count runs only when the caller holds the
 * queue's advisory transaction lock (`$2`), taken by an earlier statement of the same
 * transaction. Meeting a limited queue without that lock, the statement claims nothing at all
 * and says so; the store remembers the queue as limited and claims again under the lock.
 *
 * Planned once per connection. Every parameter that would steer the planner's estimates (the
 * number of queues, `max`, the instant, the history switch) is read through a scalar subquery
 * (`(SELECT $n)`), whose value the planner cannot see: a custom plan then costs the same as the
 * generic one, and PostgreSQL keeps the generic plan after its five trial custom plans instead
 * of planning every call (planning cost more than executing). The plan is index-driven whatever
 * the estimates: each queue's due jobs come from the due index in order under a LIMIT, and the
 * picked rows are updated through the primary key (`= ANY(ARRAY(…))`), never by a join whose
 * shape depends on row estimates (a generic plan once chose a hash join over the whole table).
 *
 * The job's own retry policy comes back from the row the update returns (no join, no extra read);
 * the transitions record the claim as their cause and the claiming worker (`$5`). The jobs come
 * back in claim order: queue by queue as requested, oldest due first, ties in enqueue order.
 */
export const CLAIM = (S: string) => `
WITH settings AS MATERIALIZED (
  SELECT q.queue, q.paused, q.concurrency_limit, r.ord
  FROM unnest((SELECT $1::text[])) WITH ORDINALITY AS r(queue, ord)
  JOIN ${S}.queues q ON q.queue = r.queue
  ORDER BY r.ord
  FOR SHARE OF q
),
blocked AS (
  SELECT count(*) > 0 AS yes FROM settings
  WHERE NOT paused AND concurrency_limit IS NOT NULL AND NOT (queue = ANY((SELECT $2::text[])::text[]))
),
quota AS MATERIALIZED (
  SELECT s.queue, s.ord,
    CASE WHEN s.concurrency_limit IS NULL THEN (SELECT $3::int)
         ELSE least((SELECT $3::int), greatest(0, s.concurrency_limit - (
           SELECT count(*) FROM ${S}.jobs l WHERE l.queue = s.queue AND l.state = ${STATE.leased})))::int
    END AS n
  FROM settings s
  WHERE NOT s.paused AND NOT (SELECT yes FROM blocked)
  ORDER BY s.ord
),
picked AS MATERIALIZED (
  SELECT c.seq FROM quota q CROSS JOIN LATERAL (
    SELECT j.seq FROM ${S}.jobs j
    WHERE j.queue = q.queue AND j.state = ${STATE.scheduled} AND j.due_at <= (SELECT $4::bigint)
    ORDER BY j.due_at, j.seq
    LIMIT q.n
    FOR UPDATE SKIP LOCKED
  ) c
  LIMIT (SELECT $3::int)
),
claimed AS (
  UPDATE ${S}.jobs j
  SET state = ${STATE.leased}, attempt = j.attempt + 1, lease_owner = $5, lease_expires_at = $4 + $6::bigint,
      ${transitionAssignments(S, {
        row: "j", cause: `${TRANSITION_CAUSE_CODES.claimed}`, worker: "$5",
        history: "(SELECT $7::boolean)", cap: "$8",
      })}
  WHERE j.seq = ANY(ARRAY(SELECT p.seq FROM picked p))
  RETURNING j.seq, j.id, j.job_name, j.queue, j.payload, j.state, j.attempt, j.releases, j.due_at, j.enqueued_at,
            j.lease_expires_at, j.tags, j.parent_ids, j.dependency_mode, j.trace_context, j.schedule_id,
            j.workflow_id, j.transition_count, j.retry, j.history
),
${feedCtes(S, "claimed", "$4", "(SELECT $7::boolean)", "$8")},
next_due AS (
  SELECT min(n.due_at) AS due_at FROM settings s CROSS JOIN LATERAL (
    SELECT j.due_at FROM ${S}.jobs j
    WHERE j.queue = s.queue AND j.state = ${STATE.scheduled} AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.seq = j.seq)
    ORDER BY j.due_at, j.seq LIMIT 1
  ) n
  WHERE NOT s.paused
)
SELECT
  (SELECT coalesce(json_agg(json_build_array(c.seq, c.id, c.job_name, c.queue, c.payload, c.attempt, c.releases, c.due_at,
     c.enqueued_at, c.lease_expires_at, c.tags, c.parent_ids, c.dependency_mode, c.trace_context, c.schedule_id,
     c.workflow_id, c.retry::json) ORDER BY s.ord, c.due_at, c.seq), '[]')::text
   FROM claimed c JOIN settings s ON s.queue = c.queue) AS jobs,
  (SELECT due_at FROM next_due) AS next_due_at,
  (SELECT yes FROM blocked) AS blocked,
  (SELECT coalesce(json_agg(queue), '[]')::text FROM settings WHERE concurrency_limit IS NOT NULL) AS limited`;

/**
 * Advisory transaction locks on limited queues, always in key order so two claimers of the
 * same queues cannot deadlock.
 */
export const LOCK_QUEUES = () => `
SELECT count(pg_advisory_xact_lock(k)) FROM (
  SELECT DISTINCT hashtextextended($1 || ':' || q, 0) AS k FROM unnest($2::text[]) AS q ORDER BY 1
) AS keys`;

interface ClaimRound {
  readonly jobs: ClaimedJob[];
  readonly nextDueAt: number | null;
  readonly blocked: boolean;
  readonly limited: string[];
}

async function claimOnce(session: Session, ctx: StoreContext, request: ClaimRequest, queues: string[], locked: string[], max: number): Promise<ClaimRound> {
  const [row] = await session.query(ctx.sql.get("claim", CLAIM), [
    queues,
    locked,
    max,
    request.now,
    request.workerId,
    request.leaseMs,
    ctx.history,
    ctx.bounds.transitionsPerJob,
  ]);
  return {
    jobs: (JSON.parse(row!["jobs"] as string) as unknown[][]).map(toClaimed),
    nextDueAt: (row!["next_due_at"] as number | null) ?? null,
    blocked: row!["blocked"] === true,
    limited: JSON.parse(row!["limited"] as string) as string[],
  };
}

/**
 * See `JobStore.claim`. `ctx.limitedQueues` is the store's memory of queues seen with a limit: a
 * claim of such a queue takes its lock first instead of finding out by a wasted statement.
 */
export async function claim(ctx: StoreContext, request: ClaimRequest): Promise<ClaimResult> {
  const { limitedQueues } = ctx;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const queues = [...new Set(request.queues)];
  if (queues.length === 0) return { jobs: [], nextDueAt: null };

  let round: ClaimRound | null = null;
  for (let attempt = 0; attempt < 5 && round === null; attempt++) {
    const locked = queues.filter((q) => limitedQueues.has(q));
    const result = await ctx.executor.run("claim", locked.length > 0 ? "transaction" : "autocommit", async (session) => {
      if (locked.length > 0) await session.query(ctx.sql.get("lockQueues", LOCK_QUEUES), [ctx.schemaName, locked]);
      const once = await claimOnce(session, ctx, request, queues, locked, max);
      if (!once.blocked) await session.step("jobs claimed");
      return once;
    });
    for (const q of queues) {
      if (result.limited.includes(q)) limitedQueues.add(q);
      else limitedQueues.delete(q);
    }
    if (!result.blocked) round = result;
  }
  if (round === null) return { jobs: [], nextDueAt: request.now };
  const { jobs, nextDueAt } = round;
  return { jobs, nextDueAt: nextDueAt === null ? null : Math.max(nextDueAt, request.now) };
}

import { JOB_STATE_CODES, type PurgeTerminalRequest, type PurgeTerminalResult, clampToBound } from "@belay/contract";
import type { StoreContext } from "../context.js";
import { adHoc } from "../session.js";
import { feedRowOf } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const NO_JIT = adHoc("SET LOCAL jit = off");

/**
 * One bounded batch: the oldest terminal jobs of one class that ended before `$1`, read from
 * the class's partial index on terminal_at. A workflow member waits until its whole workflow
 * has drained, and then goes by the drain instant (its last member's terminal time). The jobs
 * leave with their tags, failure details, output and edges, a feed row with the last of its jobs,
 * and a workflow with its last member.
 */
export const PURGE = (S: string, states: string) => `
WITH victims AS MATERIALIZED (
  SELECT j.ctid, j.seq, j.workflow_id, j.history FROM ${S}.jobs j
  WHERE j.state IN (${states}) AND j.terminal_at < $1
    AND (j.workflow_id IS NULL OR (
      SELECT bool_and(m.state >= ${STATE.succeeded} AND m.terminal_at < $1) FROM ${S}.jobs m WHERE m.workflow_id = j.workflow_id))
  ORDER BY j.terminal_at, j.seq
  LIMIT $2
  FOR UPDATE SKIP LOCKED
),
gone_jobs AS (DELETE FROM ${S}.jobs j WHERE j.ctid = ANY(ARRAY(SELECT ctid FROM victims))),
gone_tags AS (DELETE FROM ${S}.job_tags t WHERE t.job_seq = ANY(ARRAY(SELECT seq FROM victims))),
gone_details AS (DELETE FROM ${S}.failure_details f WHERE f.job_seq = ANY(ARRAY(SELECT seq FROM victims))),
-- A feed row goes with the last of its jobs: the rows the victims' history entries name. (Rows
-- this cannot see, whose jobs are all gone, are left to SWEEP_FEED.)
gone_feed AS (
  DELETE FROM ${S}.feed f
  WHERE (f.xid, f.first_position) IN (
      SELECT r.xid, r.first_position FROM victims v
      CROSS JOIN LATERAL json_array_elements(v.history::json) AS e(value)
      CROSS JOIN LATERAL (${feedRowOf(S, "(e.value->>2)::xid8", "(e.value->>0)::bigint")}) AS r
      WHERE v.history IS NOT NULL)
    AND NOT EXISTS (
      SELECT 1 FROM unnest(f.job_seqs) AS m(seq) JOIN ${S}.jobs j ON j.seq = m.seq
      WHERE NOT (m.seq = ANY(ARRAY(SELECT seq FROM victims))))
),
gone_output AS (DELETE FROM ${S}.job_outputs o WHERE o.job_seq = ANY(ARRAY(SELECT seq FROM victims))),
gone_edges AS (
  DELETE FROM ${S}.job_edges e
  WHERE e.parent_seq = ANY(ARRAY(SELECT seq FROM victims)) OR e.child_seq = ANY(ARRAY(SELECT seq FROM victims))
),
gone_workflows AS (
  DELETE FROM ${S}.workflows w
  WHERE w.id = ANY(ARRAY(SELECT DISTINCT workflow_id FROM victims WHERE workflow_id IS NOT NULL))
    AND NOT EXISTS (
      SELECT 1 FROM ${S}.jobs m WHERE m.workflow_id = w.id AND NOT (m.seq = ANY(ARRAY(SELECT seq FROM victims))))
)
SELECT count(*) AS purged FROM victims`;

/**
 * The feed's backstop: the next batch of feed rows after the sweep's cursor, each deleted when
 * none of its jobs exists any more (a job's seq is never reused, so such a row stays so). The
 * purge deletes the rows its victims' histories name; this finds the others — those of entries
 * a history dropped beyond the cap, and rows whose jobs two concurrent purges shared out. The
 * cursor wraps to the start when a batch comes back short.
 */
export const SWEEP_FEED = (S: string) => `
WITH c AS MATERIALIZED (SELECT xid, first_position FROM ${S}.feed_sweep FOR UPDATE),
batch AS MATERIALIZED (
  SELECT f.xid, f.first_position, f.job_seqs FROM ${S}.feed f
  WHERE (f.xid, f.first_position) > ((SELECT xid FROM c), (SELECT first_position FROM c))
  ORDER BY f.xid, f.first_position
  LIMIT $1
),
gone AS (
  DELETE FROM ${S}.feed f USING batch b
  WHERE f.xid = b.xid AND f.first_position = b.first_position
    AND NOT EXISTS (SELECT 1 FROM ${S}.jobs j WHERE j.seq = ANY(b.job_seqs))
  RETURNING 1
),
last AS (SELECT xid, first_position FROM batch ORDER BY xid DESC, first_position DESC LIMIT 1),
moved AS (
  UPDATE ${S}.feed_sweep SET
    xid = CASE WHEN (SELECT count(*) FROM batch) < $1 THEN '0'::xid8 ELSE (SELECT xid FROM last) END,
    first_position = CASE WHEN (SELECT count(*) FROM batch) < $1 THEN -1 ELSE (SELECT first_position FROM last) END
)
SELECT count(*)::int AS swept FROM gone`;

/** See `JobStore.purgeTerminal`. */
export async function purgeTerminal(ctx: StoreContext, request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
  const max = clampToBound(request.max, ctx.bounds.purgeBatch);
  const statement =
    request.retentionClass === "succeededOrCancelled"
      ? ctx.sql.get("purgeSucceededCancelled", (S) => PURGE(S, `${STATE.succeeded}, ${STATE.cancelled}`))
      : ctx.sql.get("purgeDeadQuarantined", (S) => PURGE(S, `${STATE.deadLettered}, ${STATE.quarantined}`));
  return ctx.executor.run("purgeTerminal", "transaction", async (session) => {
    // Its estimates (a victim's history as ~100 entries, each feed row's jobs probed) price it
    // past jit_above_cost, and compiling it took seconds for a purge that runs in milliseconds.
    await session.query(NO_JIT);
    const [row] = await session.query(statement, [request.before, max]);
    await session.step("jobs purged");
    await session.query(ctx.sql.get("sweepFeed", SWEEP_FEED), [ctx.bounds.purgeBatch]);
    await session.step("feed swept");
    return { purged: row!["purged"] as number };
  });
}

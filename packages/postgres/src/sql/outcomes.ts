import {
  type Outcome, type OutcomeReport, type OutcomeResult, type Rejection, type ReportOutcomesRequest, type JobState,
  JOB_STATE_CODES, TRANSITION_CAUSE_CODES, boundRejection, failureDetailText, normalizeTags, outcomeCause, terminalCauseSql,
  utf8ByteLength,
} from "@belay/contract";
import { DueQueues, type StoreContext } from "../context.js";
import { sqlState } from "../pg-errors.js";
import { type EndedParent, resolveChildren } from "./children.js";
import { encodeTags, feedCtes, stateOf, transitionAssignments } from "./jobs.js";

const STATE = JOB_STATE_CODES;

/** Outcome types as the statement receives them: each type's position in this list. */
const OUTCOME_TYPES = ["succeeded", "failed", "cancelled", "unroutable"] as const;
const KINDS = Object.fromEntries(OUTCOME_TYPES.map((type, code) => [type, code])) as Readonly<Record<Outcome["type"], number>>;

/**
 * The transition cause of an applied outcome as an SQL expression over its kind and the state the
 * job entered: the contract's `outcomeCause`, tabulated (per kind, the cause of each state that
 * differs from the kind's most common one).
 */
function outcomeCauseSql(kind: string, state: string): string {
  const states = Object.keys(STATE) as JobState[];
  const branches = OUTCOME_TYPES.map((type) => {
    const causes = states.map((s) => [s, TRANSITION_CAUSE_CODES[outcomeCause(type, s)]] as const);
    const counts = new Map<number, number>();
    for (const [, code] of causes) counts.set(code, (counts.get(code) ?? 0) + 1);
    const usual = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
    const special = causes.filter(([, code]) => code !== usual);
    const value = special.length === 0 ? `${usual}` : `CASE ${state} ${special.map(([s, code]) => `WHEN ${STATE[s]} THEN ${code}`).join(" ")} ELSE ${usual} END`;
    return `WHEN ${KINDS[type]} THEN ${value}`;
  });
  return `CASE ${kind} ${branches.join(" ")} END`;
}

/** The state an applied outcome moves its job to, over the report (`c`) and the job's row as locked (`j`). */
const ENDED_STATE = `CASE c.kind
      WHEN ${KINDS.succeeded} THEN ${STATE.succeeded}
      WHEN ${KINDS.failed} THEN CASE WHEN c.retry_at IS NULL THEN ${STATE.deadLettered} WHEN j.cancel_requested_by IS NOT NULL THEN ${STATE.cancelled} ELSE ${STATE.scheduled} END
      WHEN ${KINDS.cancelled} THEN ${STATE.cancelled}
      ELSE ${STATE.quarantined} END`;

/**
 * A batch of outcomes is one statement: each row is fenced (leased by that worker, at that
 * attempt, lease alive at now) by the UPDATE itself, so a concurrent expiry or report is
 * re-checked under the row lock; output, added tags and transitions (with their cause and the
 * reporting worker) ride the same statement.
 *
 * Children: a job that ends and has children must resolve their latches in the same
 * transaction. Called in autocommit (`$14` true), the statement aborts itself (SQLSTATE BLY01)
 * when any ending job has children, committing nothing, and the store re-runs the batch in a
 * transaction followed by the latch statements — so batches without dependencies, the common
 * case, cost one round trip.
 *
 * Planned once per connection, like the claim: the arrays are read through scalar subqueries so
 * that their lengths do not steer the estimates (a custom plan then costs what the generic plan
 * costs, and PostgreSQL keeps the generic one), and every access is an index probe whatever the
 * estimates — each report finds its job by id, the update reaches the fenced rows by primary key
 * (`= ANY(ARRAY(…))`; with statistics taken while no job was leased, a join here became a walk
 * of the whole leased-jobs index per report), and tags are merged only for the reports that add
 * some.
 */
export const REPORT_OUTCOMES = (S: string) => `
WITH r AS (
  SELECT * FROM unnest((SELECT $1::text[]), (SELECT $2::text[]), (SELECT $3::int[]), (SELECT $4::int2[]),
                       (SELECT $5::bigint[]), (SELECT $6::text[]), (SELECT $7::text[]), (SELECT $8::text[]),
                       (SELECT $9::text[]), (SELECT $10::bool[]))
    WITH ORDINALITY AS r(job_id, worker_id, attempt, kind, retry_at, detail, output, add_tags, reason, valid, ord)
),
cur AS MATERIALIZED (
  SELECT r.*, j.seq, j.state, m.merged, coalesce(m.n, 0)::int AS tag_count
  FROM r
  -- One probe of the id index per report (OFFSET 0 keeps the planner from turning it into a
  -- scan of every leased job).
  CROSS JOIN LATERAL (
    SELECT j.seq, j.tags, j.state, j.lease_owner, j.attempt, j.lease_expires_at FROM ${S}.jobs j WHERE j.id = r.job_id OFFSET 0
  ) j
  LEFT JOIN LATERAL (
    SELECT json_agg(u.pair ORDER BY u.o)::text AS merged, count(*) AS n FROM (
      SELECT e.pair, e.o FROM json_array_elements(coalesce(j.tags, '[]')::json) WITH ORDINALITY AS e(pair, o)
      UNION ALL
      SELECT a.pair, 1000000 + a.o FROM json_array_elements(r.add_tags::json) WITH ORDINALITY AS a(pair, o)
      WHERE NOT EXISTS (
        SELECT 1 FROM json_array_elements(coalesce(j.tags, '[]')::json) AS x(pair) WHERE x.pair::text = a.pair::text)
    ) u
    WHERE r.add_tags IS NOT NULL
  ) m ON r.add_tags IS NOT NULL
  WHERE j.state = ${STATE.leased} AND j.lease_owner = r.worker_id AND j.attempt = r.attempt AND j.lease_expires_at > $11
),
-- The rows to update, locked in seq order whatever the order of the reports: the one order every
-- writer of several jobs takes its locks in, so a batch and an enqueue naming its jobs as parents
-- (or another batch) wait for each other instead of deadlocking.
locked AS MATERIALIZED (
  SELECT j.seq FROM ${S}.jobs j
  WHERE j.seq = ANY(ARRAY(SELECT x.seq FROM cur x WHERE x.valid AND (x.add_tags IS NULL OR x.tag_count <= $15)))
  ORDER BY j.seq
  FOR NO KEY UPDATE
),
ended AS (
  UPDATE ${S}.jobs j SET
    state = ${ENDED_STATE},
    due_at = CASE WHEN c.kind = ${KINDS.failed} AND c.retry_at IS NOT NULL AND j.cancel_requested_by IS NULL THEN c.retry_at ELSE j.due_at END,
    terminal_at = CASE WHEN c.kind = ${KINDS.failed} AND c.retry_at IS NOT NULL AND j.cancel_requested_by IS NULL THEN NULL ELSE $11::bigint END,
    terminal_cause = CASE c.kind
      WHEN ${KINDS.succeeded} THEN ${terminalCauseSql("succeeded", {})}
      WHEN ${KINDS.failed} THEN CASE WHEN c.retry_at IS NULL THEN ${terminalCauseSql("failed", { attempt: "j.attempt - j.releases" })}
                       WHEN j.cancel_requested_by IS NOT NULL THEN ${terminalCauseSql("cancelledBy", { actor: "j.cancel_requested_by" })} END
      WHEN ${KINDS.cancelled} THEN coalesce(${terminalCauseSql("cancelledBy", { actor: "j.cancel_requested_by" })}, ${terminalCauseSql("cancelledByHandler", {})})
      ELSE ${terminalCauseSql("unroutable", { reason: "c.reason" })} END,
    lease_owner = NULL, lease_expires_at = NULL, cancel_requested_by = NULL,
    tags = coalesce(c.merged, j.tags),
    ${transitionAssignments(S, {
      row: "j", cause: outcomeCauseSql("c.kind", ENDED_STATE), worker: "c.worker_id",
      history: "(SELECT $12::boolean)", cap: "$13",
    })}
  FROM cur c
  WHERE j.seq = ANY(ARRAY(SELECT l.seq FROM locked l))
    AND j.seq = c.seq
    -- The fence again, on the row's latest version. The leased state is compared with the copy
    -- read by cur (always leased), not with a literal: no partial index then matches this update, and
    -- the planner cannot trade the primary-key probes for a walk of the leased-jobs index.
    AND j.state = c.state AND j.lease_owner = c.worker_id AND j.attempt = c.attempt AND j.lease_expires_at > $11
  RETURNING j.seq, j.id, j.queue, j.state, j.due_at, j.attempt, j.has_children, j.transition_count, j.history,
            c.ord, c.kind, c.detail, c.output, c.add_tags, c.worker_id
),
outputs AS (
  INSERT INTO ${S}.job_outputs (job_seq, output)
  SELECT seq, output FROM ended WHERE kind = ${KINDS.succeeded} AND output IS NOT NULL
  ON CONFLICT (job_seq) DO UPDATE SET output = EXCLUDED.output
),
added_tags AS (
  INSERT INTO ${S}.job_tags (job_seq, key, value)
  SELECT e.seq, a.pair->>0, a.pair->>1
  FROM ended e CROSS JOIN LATERAL json_array_elements(e.add_tags::json) AS a(pair)
  WHERE e.add_tags IS NOT NULL
  ON CONFLICT DO NOTHING
),
${feedCtes(S, "ended", "$11", "(SELECT $12::boolean)", "$13", `CASE WHEN s.kind = ${KINDS.failed} THEN s.detail END`)}
SELECT r.ord, e.state, e.queue, e.due_at, e.seq, e.id, e.has_children, (c.seq IS NOT NULL) AS fenced, c.tag_count,
       ${S}.retry_in_transaction($14 AND EXISTS (SELECT 1 FROM ended x WHERE x.has_children AND x.state >= ${STATE.succeeded})) AS handover
FROM r LEFT JOIN cur c ON c.ord = r.ord LEFT JOIN ended e ON e.ord = r.ord
ORDER BY r.ord`;

interface PreparedReport {
  readonly index: number;
  readonly report: OutcomeReport;
  readonly rejection: Rejection | null;
  readonly tags: string | null;
}

function prepare(ctx: StoreContext, report: OutcomeReport, index: number): PreparedReport {
  const { outcome } = report;
  let rejection: Rejection | null = null;
  if (outcome.type === "succeeded" && outcome.output != null) {
    const bytes = utf8ByteLength(outcome.output);
    if (bytes > ctx.bounds.outputBytes) rejection = boundRejection("BELAY_OUTPUT_TOO_LARGE", "output", ctx.bounds.outputBytes, bytes);
  }
  let tags: string | null = null;
  if (rejection === null) {
    const normalized = normalizeTags(report.addTags ?? [], "addTags", ctx.bounds);
    if (!normalized.ok) rejection = normalized.rejection;
    else tags = encodeTags(normalized.tags);
  }
  return { index, report, rejection, tags };
}

/** Splits a batch so that no job appears twice in one statement; later rows see earlier ones. */
function rounds(prepared: readonly PreparedReport[]): PreparedReport[][] {
  const result: PreparedReport[][] = [];
  const seen = new Map<string, number>();
  for (const p of prepared) {
    const round = seen.get(p.report.jobId) ?? 0;
    seen.set(p.report.jobId, round + 1);
    (result[round] ??= []).push(p);
  }
  return result;
}

/** See `JobStore.reportOutcomes`. */
export async function reportOutcomes(ctx: StoreContext, request: ReportOutcomesRequest): Promise<OutcomeResult[]> {
  const { reports, now } = request;
  if (reports.length === 0) return [];
  const batches = rounds(reports.map((report, i) => prepare(ctx, report, i)));
  const detailOf = (report: OutcomeReport): string | null =>
    ctx.detail && report.outcome.type === "failed" && report.outcome.failureDetail != null
      ? failureDetailText(report.outcome.failureDetail, ctx.bounds.failureDetailBytes)
      : null;

  const applyBatch = (mode: "autocommit" | "transaction") =>
    ctx.executor.run("reportOutcomes", mode, async (session) => {
      const due = new DueQueues(now);
      const results: OutcomeResult[] = new Array(reports.length);
      const ended: EndedParent[] = [];
      for (const batch of batches) {
        const rows = await session.query(ctx.sql.get("reportOutcomes", REPORT_OUTCOMES), [
          batch.map((p) => p.report.jobId),
          batch.map((p) => p.report.workerId),
          batch.map((p) => p.report.attempt),
          batch.map((p) => KINDS[p.report.outcome.type]),
          batch.map((p) => (p.report.outcome.type === "failed" ? p.report.outcome.retryAt : null)),
          batch.map((p) => detailOf(p.report)),
          batch.map((p) => (p.report.outcome.type === "succeeded" ? (p.report.outcome.output ?? null) : null)),
          batch.map((p) => p.tags),
          batch.map((p) => (p.report.outcome.type === "unroutable" ? p.report.outcome.reason : null)),
          batch.map((p) => p.rejection === null),
          now,
          ctx.history,
          ctx.bounds.transitionsPerJob,
          !session.transactional,
          ctx.bounds.tagsPerJob,
        ]);
        for (const [i, row] of rows.entries()) {
          const { index, report, rejection } = batch[i]!;
          const { jobId, attempt } = report;
          if (row["state"] !== null) {
            const state = row["state"] as number;
            results[index] = { jobId, attempt, status: "applied", state: stateOf(state) };
            due.add(row["queue"] as string, state, row["due_at"] as number);
            if (state >= STATE.succeeded && row["has_children"] === true) ended.push({ seq: row["seq"] as number, id: jobId, state });
          } else if (row["fenced"] === true && rejection !== null) {
            results[index] = { jobId, attempt, status: "rejected", rejection };
          } else if (row["fenced"] === true && (row["tag_count"] as number) > ctx.bounds.tagsPerJob) {
            const rejected = boundRejection("BELAY_TOO_MANY_TAGS", "addTags", ctx.bounds.tagsPerJob, row["tag_count"] as number);
            results[index] = { jobId, attempt, status: "rejected", rejection: rejected };
          } else {
            results[index] = { jobId, attempt, status: "stale" };
          }
        }
      }
      await session.step("outcomes applied");
      await resolveChildren(session, ctx, ended, now, due);
      return { results, due };
    });

  let outcome: Awaited<ReturnType<typeof applyBatch>>;
  try {
    outcome = await applyBatch(batches.length > 1 ? "transaction" : "autocommit");
  } catch (error) {
    if (sqlState(error) !== "BLY01") throw error;
    outcome = await applyBatch("transaction");
  }
  ctx.hint(outcome.due.queues);
  return outcome.results;
}

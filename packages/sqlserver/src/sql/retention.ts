import { JOB_STATE_CODES, type PurgeTerminalRequest, type PurgeTerminalResult, clampToBound } from "@belay/contract";
import type { StoreContext } from "../context.js";
import { toInt } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";

const STATE = JOB_STATE_CODES;

/**
 * One bounded batch: the oldest terminal jobs of one class that ended before `@before`, read from
 * the class's filtered index on terminal_at (rows another purger holds are skipped). A workflow
 * member waits until its whole workflow has drained, and then goes by the drain instant. The jobs
 * leave with their tags, transitions, output and edges, and a workflow with its last member.
 */
const purge = (name: string, states: readonly number[]) =>
  statement(name, { before: "bigint", max: "int" }, (S) => `DECLARE @victims TABLE (seq bigint NOT NULL PRIMARY KEY, workflow_id varbinary(${COLUMN_BYTES.id}) NULL);
INSERT INTO @victims (seq, workflow_id)
SELECT TOP (@max) j.seq, j.workflow_id FROM ${S}.jobs AS j WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE j.state IN (${states.join(", ")}) AND j.terminal_at < @before
  AND (j.workflow_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM ${S}.jobs AS m WHERE m.workflow_id = j.workflow_id AND (m.state < ${STATE.succeeded} OR m.terminal_at >= @before)))
ORDER BY j.terminal_at, j.seq;
DELETE j FROM ${S}.jobs AS j INNER JOIN @victims AS v ON v.seq = j.seq;
DELETE t FROM ${S}.job_tags AS t INNER JOIN @victims AS v ON v.seq = t.job_seq;
DELETE t FROM ${S}.transitions AS t INNER JOIN @victims AS v ON v.seq = t.job_seq;
DELETE o FROM ${S}.job_outputs AS o INNER JOIN @victims AS v ON v.seq = o.job_seq;
DELETE e FROM ${S}.job_edges AS e INNER JOIN @victims AS v ON v.seq = e.parent_seq;
DELETE e FROM ${S}.job_edges AS e INNER JOIN @victims AS v ON v.seq = e.child_seq;
DELETE w FROM ${S}.workflows AS w
WHERE w.id IN (SELECT v.workflow_id FROM @victims AS v WHERE v.workflow_id IS NOT NULL)
  AND NOT EXISTS (SELECT 1 FROM ${S}.jobs AS m WHERE m.workflow_id = w.id);
SELECT COUNT(*) AS purged FROM @victims`);

const PURGE_SUCCEEDED_CANCELLED = purge("purgeSucceededCancelled", [STATE.succeeded, STATE.cancelled]);
const PURGE_DEAD_QUARANTINED = purge("purgeDeadQuarantined", [STATE.deadLettered, STATE.quarantined]);

/** See `JobStore.purgeTerminal`. */
export async function purgeTerminal(ctx: StoreContext, request: PurgeTerminalRequest): Promise<PurgeTerminalResult> {
  const max = clampToBound(request.max, ctx.bounds.purgeBatch);
  const st = request.retentionClass === "succeededOrCancelled" ? PURGE_SUCCEEDED_CANCELLED : PURGE_DEAD_QUARANTINED;
  return ctx.executor.transaction("purgeTerminal", async (session) => {
    const [row] = await session.rows(st, { before: request.before, max });
    await session.step("jobs purged");
    return { purged: toInt(row!["purged"]) };
  });
}

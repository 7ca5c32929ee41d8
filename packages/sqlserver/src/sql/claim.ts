import { type ClaimRequest, type ClaimResult, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, clampToBound } from "@belay/contract";
import type { StoreContext } from "../context.js";
import { hex, toIntOrNull } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { ID_HEX, idOf, toClaimed, workerTransitions } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const QUEUE = `varbinary(${COLUMN_BYTES.queue})`;

/**
 * A claim is one statement batch in one transaction:
 *
 * 1. The settings of the served queues are read under shared locks held to commit
 *    (`HOLDLOCK, READCOMMITTEDLOCK`: the committed row, locked, or the key range where there is
 *    none), so a pause or limit change — an update or insert of that row — waits for the claims in
 *    flight, and a claim that meets a change in flight waits for it and reads what it committed.
 * 2. Each served queue with a concurrency limit is serialized with `sp_getapplock` (exclusive,
 *    transaction-owned, taken in resource order so two claimers never deadlock on them): its
 *    leased jobs are counted only after every earlier claimer of the queue has committed.
 * 3. Queue by queue in the given order, due jobs are picked from the due index (oldest due first,
 *    ties by seq) with `UPDLOCK, READPAST, ROWLOCK`: rows another claimer holds are skipped,
 *    never waited for, so two claimers never get the same job. Later queues are read only while
 *    the batch has room.
 * 4. The picked jobs become leased (`OUTPUT` of the update returns them), their transitions are
 *    appended, and the earliest due time left in the served, unpaused queues is read.
 */
export const CLAIM = statement(
  "claim",
  { queues: "nvarchar(max)", max: "int", now: "bigint", worker: `varbinary(${COLUMN_BYTES.id})`, leaseMs: "bigint", history: "bit", cap: "int", lockPrefix: "nvarchar(160)" },
  (S) => `DECLARE @served TABLE (ord int NOT NULL PRIMARY KEY, queue ${QUEUE} NOT NULL, paused bit NOT NULL, lim int NULL);
INSERT INTO @served (ord, queue, paused, lim)
SELECT q.ord, ${idOf("q.queue")}, ISNULL(s.paused, 0), s.concurrency_limit
FROM OPENJSON(@queues) WITH (ord int '$[0]', queue ${ID_HEX} '$[1]') AS q
LEFT JOIN ${S}.queues AS s WITH (HOLDLOCK, READCOMMITTEDLOCK) ON s.queue = ${idOf("q.queue")};
DECLARE @locks TABLE (i int IDENTITY(0, 1) NOT NULL PRIMARY KEY, res nvarchar(255) NOT NULL);
INSERT INTO @locks (res)
SELECT x.res FROM (
  SELECT CONCAT(@lockPrefix, CONVERT(varchar(64), HASHBYTES('SHA2_256', s.queue), 2)) AS res FROM @served AS s WHERE s.paused = 0 AND s.lim IS NOT NULL
) AS x ORDER BY x.res;
DECLARE @i int = 0, @n int = (SELECT COUNT(*) FROM @locks), @res nvarchar(255);
WHILE @i < @n
BEGIN
  SET @res = (SELECT l.res FROM @locks AS l WHERE l.i = @i);
  EXEC sp_getapplock @res, N'Exclusive', N'Transaction', -1;
  SET @i = @i + 1;
END;
DECLARE @picked TABLE (n int IDENTITY(1, 1) NOT NULL PRIMARY KEY, seq bigint NOT NULL);
DECLARE @ord int = -1, @q ${QUEUE}, @lim int, @room int, @left int = @max, @found int = 1;
WHILE @left > 0 AND @found = 1
BEGIN
  SET @found = 0;
  SELECT TOP (1) @ord = s.ord, @q = s.queue, @lim = s.lim, @found = 1 FROM @served AS s WHERE s.ord > @ord AND s.paused = 0 ORDER BY s.ord;
  SET @room = CASE WHEN @found = 1 THEN @left ELSE 0 END;
  IF @found = 1 AND @lim IS NOT NULL
    SET @room = (SELECT CASE WHEN @lim - COUNT(*) < @left THEN @lim - COUNT(*) ELSE @left END FROM ${S}.jobs AS l WHERE l.queue = @q AND l.state = ${STATE.leased});
  IF @room > 0
  BEGIN
    INSERT INTO @picked (seq)
    SELECT TOP (@room) j.seq FROM ${S}.jobs AS j WITH (UPDLOCK, READPAST, ROWLOCK)
    WHERE j.queue = @q AND j.state = ${STATE.scheduled} AND j.due_at <= @now
    ORDER BY j.due_at, j.seq;
    SET @left = @left - @@ROWCOUNT;
  END;
END;
DECLARE @claimed TABLE (n int NOT NULL, seq bigint NOT NULL PRIMARY KEY, id varbinary(${COLUMN_BYTES.id}) NOT NULL, job_name varbinary(${COLUMN_BYTES.jobName}) NOT NULL,
  queue ${QUEUE} NOT NULL, payload nvarchar(max) NOT NULL, attempt int NOT NULL, releases int NOT NULL, due_at bigint NOT NULL, enqueued_at bigint NOT NULL,
  lease_expires_at bigint NOT NULL, tags nvarchar(max) NULL, parent_ids nvarchar(max) NULL, dependency_mode tinyint NOT NULL, trace_context nvarchar(1024) NULL,
  schedule_id varbinary(${COLUMN_BYTES.id}) NULL, workflow_id varbinary(${COLUMN_BYTES.id}) NULL, retry nvarchar(max) NULL, transition_count int NOT NULL);
UPDATE j SET state = ${STATE.leased}, attempt = j.attempt + 1, lease_owner = @worker, lease_expires_at = @now + @leaseMs, transition_count = j.transition_count + 1
OUTPUT p.n, inserted.seq, inserted.id, inserted.job_name, inserted.queue, inserted.payload, inserted.attempt, inserted.releases, inserted.due_at,
  inserted.enqueued_at, inserted.lease_expires_at, inserted.tags, inserted.parent_ids, inserted.dependency_mode, inserted.trace_context,
  inserted.schedule_id, inserted.workflow_id, inserted.retry, inserted.transition_count INTO @claimed
FROM ${S}.jobs AS j INNER JOIN @picked AS p ON p.seq = j.seq;
${workerTransitions(S, "@claimed", "c", STATE.leased, TRANSITION_CAUSE_CODES.claimed)}
SELECT c.seq, c.id, c.job_name, c.queue, c.payload, c.attempt, c.releases, c.due_at, c.enqueued_at, c.lease_expires_at, c.tags, c.parent_ids,
  c.dependency_mode, c.trace_context, c.schedule_id, c.workflow_id, c.retry
FROM @claimed AS c ORDER BY c.n;
SELECT MIN(x.due_at) AS next_due_at FROM @served AS s
CROSS APPLY (SELECT TOP (1) j.due_at FROM ${S}.jobs AS j WHERE j.queue = s.queue AND j.state = ${STATE.scheduled} ORDER BY j.due_at, j.seq) AS x
WHERE s.paused = 0`,
);

/** The prefix of the per-queue claim locks of a schema (the queue's SHA-256 follows). */
export const queueLockPrefix = (schemaName: string) => `belay.queue:${schemaName}:`;

/** See `JobStore.claim`. */
export async function claim(ctx: StoreContext, request: ClaimRequest): Promise<ClaimResult> {
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const queues = [...new Set(request.queues)];
  if (queues.length === 0) return { jobs: [], nextDueAt: null };
  const [claimed, next] = await ctx.executor.transaction("claim", async (session) => {
    const sets = await session.query(CLAIM, {
      queues: JSON.stringify(queues.map((q, i) => [i, hex(q)])),
      max,
      now: request.now,
      worker: Buffer.from(request.workerId, "utf8"),
      leaseMs: request.leaseMs,
      history: ctx.history,
      cap: ctx.bounds.transitionsPerJob,
      lockPrefix: queueLockPrefix(ctx.schemaName),
    });
    await session.step("jobs claimed");
    return [sets.at(-2) ?? [], sets.at(-1) ?? []] as const;
  });
  const nextDueAt = toIntOrNull(next[0]?.["next_due_at"]);
  return { jobs: claimed.map(toClaimed), nextDueAt: nextDueAt === null ? null : Math.max(nextDueAt, request.now) };
}

import {
  type ExpireLeasesRequest, type ExpireLeasesResult, type HeartbeatRequest, type HeartbeatResult, type ReleaseRequest,
  type ReleaseResult, JOB_STATE_CODES, TRANSITION_CAUSE_CODES, clampToBound, leaseExpiryDisposition,
} from "@belay/contract";
import type { StoreContext } from "../context.js";
import { hex, key, textOfKey, toInt } from "../keys.js";
import { COLUMN_BYTES } from "../sqlserver-store-config.js";
import { statement } from "../statements.js";
import { type EndedParent, resolveChildren } from "./children.js";
import { ID_HEX, type JobRow, type JobWrite, decodeRetry, ended, idOf, lockJobs, rescheduled, workerTransitions, writeJobs } from "./jobs.js";

const STATE = JOB_STATE_CODES;
const WORKER = `varbinary(${COLUMN_BYTES.id})`;

/**
 * Heartbeats renew every fenced lease of one worker in one statement: the fence (leased by this
 * worker, at this attempt, alive at now) is the update's own condition, checked on the row it
 * updates, and `OUTPUT` answers which leases it renewed with their cancel requests.
 */
export const HEARTBEAT = statement(
  "heartbeat",
  { leases: "nvarchar(max)", worker: WORKER, now: "bigint", leaseMs: "bigint" },
  (S) => `UPDATE j SET lease_expires_at = @now + @leaseMs
OUTPUT inserted.id, inserted.attempt, CASE WHEN inserted.cancel_requested_by IS NULL THEN 0 ELSE 1 END AS cancel_requested
FROM ${S}.jobs AS j INNER JOIN OPENJSON(@leases) WITH (id ${ID_HEX} '$[0]', attempt int '$[1]') AS r ON j.id = ${idOf("r.id")}
WHERE j.state = ${STATE.leased} AND j.lease_owner = @worker AND j.attempt = r.attempt AND j.lease_expires_at > @now`,
);

/** See `JobStore.heartbeat`. */
export async function heartbeat(ctx: StoreContext, request: HeartbeatRequest): Promise<HeartbeatResult[]> {
  const { workerId, leases, leaseMs, now } = request;
  if (leases.length === 0) return [];
  const rows = await ctx.executor.transaction("heartbeat", async (session) => {
    const out = await session.rows(HEARTBEAT, { leases: JSON.stringify(leases.map((l) => [hex(l.jobId), l.attempt])), worker: key(workerId), now, leaseMs });
    await session.step("leases renewed");
    return out;
  });
  const renewed = new Map(rows.map((row) => [`${textOfKey(row["id"])}\u0000${toInt(row["attempt"])}`, toInt(row["cancel_requested"]) === 1]));
  return leases.map(({ jobId, attempt }): HeartbeatResult => {
    const cancel = renewed.get(`${jobId}\u0000${attempt}`);
    return cancel === undefined ? { jobId, status: "lost" } : { jobId, status: "renewed", leaseExpiresAt: now + leaseMs, cancelRequested: cancel };
  });
}

/** Graceful release of fenced leases: scheduled, due now, the attempt not counted, one transition each. */
export const RELEASE = statement(
  "release",
  { leases: "nvarchar(max)", worker: WORKER, now: "bigint", history: "bit", cap: "int" },
  (S) => `DECLARE @released TABLE (n int NOT NULL, seq bigint NOT NULL PRIMARY KEY, id varbinary(${COLUMN_BYTES.id}) NOT NULL, attempt int NOT NULL, transition_count int NOT NULL);
UPDATE j SET state = ${STATE.scheduled}, due_at = @now, releases = j.releases + 1, lease_owner = NULL, lease_expires_at = NULL,
  cancel_requested_by = NULL, transition_count = j.transition_count + 1
OUTPUT r.n, inserted.seq, inserted.id, inserted.attempt, inserted.transition_count INTO @released
FROM ${S}.jobs AS j INNER JOIN OPENJSON(@leases) WITH (n int '$[0]', id ${ID_HEX} '$[1]', attempt int '$[2]') AS r ON j.id = ${idOf("r.id")}
WHERE j.state = ${STATE.leased} AND j.lease_owner = @worker AND j.attempt = r.attempt AND j.lease_expires_at > @now;
${workerTransitions(S, "@released", "r", STATE.scheduled, TRANSITION_CAUSE_CODES.released)}
SELECT r.id FROM @released AS r ORDER BY r.n`,
);

/** See `JobStore.release`. A job named twice is released by the first row; the second is stale. */
export async function release(ctx: StoreContext, request: ReleaseRequest): Promise<ReleaseResult[]> {
  const { workerId, leases, now } = request;
  if (leases.length === 0) return [];
  const seen = new Set<string>();
  const firsts = leases.filter((l) => (seen.has(l.jobId) ? false : (seen.add(l.jobId), true)));
  const rows = await ctx.executor.transaction("release", async (session) => {
    const out = await session.rows(RELEASE, {
      leases: JSON.stringify(firsts.map((l, n) => [n, hex(l.jobId), l.attempt])),
      worker: key(workerId),
      now,
      history: ctx.history,
      cap: ctx.bounds.transitionsPerJob,
    });
    await session.step("jobs released");
    return out;
  });
  const released = new Set(rows.map((row) => textOfKey(row["id"])));
  const answered = new Set<string>();
  return leases.map(({ jobId }) => {
    const first = !answered.has(jobId);
    answered.add(jobId);
    return { jobId, status: first && released.has(jobId) ? "released" : "stale" };
  });
}

const EXPIRED_COLUMNS = `j.seq, j.id`;

/**
 * The expired leases (all queues: by the expiry index), oldest expiry first, locked with
 * `UPDLOCK, READPAST`: a concurrent sweeper skips them (and this one skips its), so each lease is
 * disposed of exactly once, and no heartbeat, outcome or release changes them before this
 * transaction ends.
 */
export const EXPIRED_LEASES = statement(
  "expiredLeases",
  { now: "bigint", max: "int" },
  (S) => `SELECT TOP (@max) ${EXPIRED_COLUMNS} FROM ${S}.jobs AS j WITH (UPDLOCK, READPAST, ROWLOCK)
WHERE j.state = ${STATE.leased} AND j.lease_expires_at <= @now ORDER BY j.lease_expires_at, j.seq`,
);

/** The same, for the served queues only: each queue's leases from the per-queue leased index. */
export const EXPIRED_LEASES_IN = statement(
  "expiredLeasesIn",
  { now: "bigint", max: "int", queues: "nvarchar(max)" },
  (S) => `SELECT TOP (@max) c.seq, c.id FROM OPENJSON(@queues) AS q
CROSS APPLY (
  SELECT TOP (@max) j.seq, j.id, j.lease_expires_at FROM ${S}.jobs AS j WITH (UPDLOCK, READPAST, ROWLOCK)
  WHERE j.queue = ${idOf("q.value")} AND j.state = ${STATE.leased} AND j.lease_expires_at <= @now ORDER BY j.lease_expires_at, j.seq
) AS c
ORDER BY c.lease_expires_at, c.seq`,
);

/** See `JobStore.expireLeases`: the contract's rule (`leaseExpiryDisposition`) decides each locked lease. */
export async function expireLeases(ctx: StoreContext, request: ExpireLeasesRequest): Promise<ExpireLeasesResult> {
  const { now, retry } = request;
  const max = clampToBound(request.max, ctx.bounds.claimBatch);
  const queues = request.queues === undefined ? null : [...new Set(request.queues)];
  if (queues !== null && queues.length === 0) return { expired: [] };
  const expired = await ctx.executor.transaction("expireLeases", async (session) => {
    const candidates =
      queues === null
        ? await session.rows(EXPIRED_LEASES, { now, max })
        : await session.rows(EXPIRED_LEASES_IN, { now, max, queues: JSON.stringify(queues.map(hex)) });
    if (candidates.length === 0) return [];
    const order = candidates.map((row) => textOfKey(row["id"]));
    const locked = await lockJobs(session, order);
    await session.step("leases locked");
    const writes: JobWrite[] = [];
    const endedParents: EndedParent[] = [];
    const out: { jobId: string; state: ReturnType<typeof leaseExpiryDisposition>["state"] }[] = [];
    for (const id of order) {
      const row = locked.get(id);
      // Re-checked on the locked row: a lease renewed or ended since the scan is no longer a candidate.
      if (row === undefined || row.state !== STATE.leased || row.leaseExpiresAt === null || row.leaseExpiresAt > now) continue;
      const disposition = leaseExpiryDisposition(
        { attempt: row.attempt, releases: row.releases, cancelRequestedBy: row.cancelRequestedBy, retry: decodeRetry(row.retry) },
        retry,
        now,
      );
      const next: JobRow =
        disposition.state === "scheduled" ? rescheduled(row, disposition.dueAt) : ended(row, STATE[disposition.state], disposition.terminalCause, now);
      writes.push({ row: next, transition: { cause: "leaseExpired", workerId: row.leaseOwner } });
      if (disposition.state !== "scheduled" && row.hasChildren) endedParents.push({ seq: row.seq, id: row.id, state: next.state });
      out.push({ jobId: row.id, state: disposition.state });
    }
    await writeJobs(session, ctx, writes, now);
    await session.step("leases expired");
    await resolveChildren(session, ctx, endedParents, now);
    return out;
  });
  return { expired };
}

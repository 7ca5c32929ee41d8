/**
 * Migration 2 (issue 13): a job's own retry policy, a schedule's retry policy, and the cause and
 * writing worker of each transition. Additive — nullable columns only, no index, `requires`
 * unchanged — so a store still at version 1 keeps running against the file, and everything written
 * before reads `retry: null` and `cause: null`, `workerId: null`.
 *
 * - A job's retry policy sits beside its payload, not on the hot `jobs` row: like the payload it is
 *   written once at enqueue (in the same INSERT) and never updated, the claim already reads that
 *   row, and the frequent updates of a claim, heartbeat or outcome keep rewriting a small record
 *   however long the policy's list of delays is. Both are JSON text.
 * - The transition columns go into the one INSERT every transition already is: `cause` as
 *   `TRANSITION_CAUSE_CODES`, `worker_id` the worker whose write it was.
 */
export const MIGRATION_000002 = `
ALTER TABLE "{prefix}job_payloads" ADD COLUMN retry TEXT;
ALTER TABLE "{prefix}schedules" ADD COLUMN retry TEXT;
ALTER TABLE "{prefix}transitions" ADD COLUMN cause INTEGER;
ALTER TABLE "{prefix}transitions" ADD COLUMN worker_id TEXT;
`;

/**
 * Migration 2 (issue 13), additive: nullable columns only, so a store of version 1 keeps running
 * beside it (`requires` stays 1). Adding a nullable column without a default rewrites nothing.
 *
 * - `jobs.retry`: the job's own retry policy, as compact JSON text `[maxAttempts, delay, …]`,
 *   `NULL` for none (every job stored before this migration). Written once by the insert, never
 *   updated and in no index: every later update of the row carries it along unchanged (a long
 *   list is TOASTed, and an unchanged TOAST pointer is all an update copies).
 * - `schedules.retry`: the policy every job of the schedule carries, in the same form.
 * - `transitions.cause` (the contract's `TRANSITION_CAUSE_CODES`) and `transitions.worker_id`:
 *   why the job entered the state and which worker wrote it. `NULL` cause: a transition stored
 *   before causes were recorded. Transitions are a hot insert: no index on either column.
 */
export const migration000002 = (S: string): string => `
ALTER TABLE ${S}.jobs ADD COLUMN retry text;
ALTER TABLE ${S}.schedules ADD COLUMN retry text;
ALTER TABLE ${S}.transitions ADD COLUMN cause smallint, ADD COLUMN worker_id text;
`;

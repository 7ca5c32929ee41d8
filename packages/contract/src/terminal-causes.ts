import type { Outcome } from "./execution.js";
import { countedAttempts, type Instant, JOB_STATES, JOB_STATE_CODES, type JobState, type RetryDisposition, retryDelayMs } from "./job.js";

// Why a job is terminal, written once. A store that builds the text in JavaScript calls
// `terminalCauseText`; a store that builds it inside a SQL statement renders the same template
// with `terminalCauseSql`, binding each fact to a column expression. Either way the words come
// from `TERMINAL_CAUSES`, so every store reads the same.

/** The templates of every terminal cause; `{fact}` stands for a fact of the cause. */
export const TERMINAL_CAUSES = Object.freeze({
  /** The handler returned. */
  succeeded: "succeeded",
  /** The handler failed at the attempt ceiling (`attempt` counts towards it: claims minus releases). */
  failed: "failed at attempt {attempt}",
  /** An operator cancelled the job, or a handler ended cancelled after an operator asked. */
  cancelledBy: "cancelled by {actor}",
  /** The handler ended cancelled on its own. */
  cancelledByHandler: "cancelled by handler",
  /** An operator asked to cancel a leased job and its lease expired before the handler ended. */
  cancelledOnExpiry: "cancelled by {actor} (lease expired)",
  /** The lease expired and the expiry reached the attempt ceiling. */
  expiredAtCeiling: "lease expired at attempt ceiling {maxAttempts}",
  /** The job could not be routed (unknown job name, undecodable payload). */
  unroutable: "unroutable: {reason}",
  /** An `onSuccess` parent ended other than succeeded. */
  parentEnded: "parent {parentId} {parentState}",
});

/** The kinds of terminal cause. */
export type TerminalCauseKind = keyof typeof TERMINAL_CAUSES;

/** The facts each kind of cause names. */
export interface TerminalCauseFacts {
  readonly succeeded: Record<never, never>;
  readonly failed: { readonly attempt: number };
  readonly cancelledBy: { readonly actor: string };
  readonly cancelledByHandler: Record<never, never>;
  readonly cancelledOnExpiry: { readonly actor: string };
  readonly expiredAtCeiling: { readonly maxAttempts: number };
  readonly unroutable: { readonly reason: string };
  readonly parentEnded: { readonly parentId: string; readonly parentState: JobState };
}

const PLACEHOLDER = /\{(\w+)\}/g;

/** The text of a terminal cause, e.g. `terminalCauseText("failed", { attempt: 3 })` → `failed at attempt 3`. */
export function terminalCauseText<K extends TerminalCauseKind>(kind: K, facts: TerminalCauseFacts[K]): string {
  const values = facts as Record<string, string | number>;
  return TERMINAL_CAUSES[kind].replace(PLACEHOLDER, (_, fact: string) => String(values[fact]));
}

/**
 * The same text as a SQL expression (standard `||` concatenation, for PostgreSQL and SQLite),
 * each fact bound to a SQL expression, e.g. `terminalCauseSql("failed", { attempt: "(j.attempt - j.releases)" })`.
 */
export function terminalCauseSql<K extends TerminalCauseKind>(kind: K, facts: { readonly [F in keyof TerminalCauseFacts[K]]: string }): string {
  const exprs = facts as Record<string, string>;
  const parts: string[] = [];
  let last = 0;
  const template = TERMINAL_CAUSES[kind];
  for (const match of template.matchAll(PLACEHOLDER)) {
    if (match.index > last) parts.push(sqlLiteral(template.slice(last, match.index)));
    const expr = exprs[match[1]!];
    if (expr === undefined) throw new RangeError(`terminal cause ${kind} needs a SQL expression for ${match[1]}`);
    parts.push(`(${expr})`);
    last = match.index + match[0].length;
  }
  if (last < template.length) parts.push(sqlLiteral(template.slice(last)));
  return parts.length === 1 ? parts[0]! : `(${parts.join(" || ")})`;
}

/** A SQL expression naming the state whose stored code is `expr` (`CASE`, portable). */
export function jobStateNameSql(expr: string): string {
  const cases = JOB_STATES.map((state) => `WHEN ${JOB_STATE_CODES[state]} THEN ${sqlLiteral(state)}`).join(" ");
  return `(CASE ${expr} ${cases} END)`;
}

function sqlLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

// ---- lease expiry ----------------------------------------------------------------------------

/** What an expired lease becomes. */
export type ExpiryDisposition =
  | { readonly state: "scheduled"; readonly dueAt: Instant }
  | { readonly state: "cancelled" | "deadLettered"; readonly terminalCause: string };

/**
 * The rule every store applies to a lease that expired at `now`: a pending cancel request wins
 * (cancelled); otherwise the expiry counts as an attempt, so at the ceiling the job is
 * dead-lettered, below it rescheduled after the retry delay of its counted attempts — under the
 * job's own policy when it has one, else `fallback` (the sweeper's).
 */
export function leaseExpiryDisposition(
  job: {
    readonly attempt: number;
    readonly releases: number;
    readonly cancelRequestedBy: string | null;
    readonly retry: RetryDisposition | null;
  },
  fallback: RetryDisposition,
  now: Instant,
): ExpiryDisposition {
  const retry = job.retry ?? fallback;
  if (job.cancelRequestedBy !== null) {
    return { state: "cancelled", terminalCause: terminalCauseText("cancelledOnExpiry", { actor: job.cancelRequestedBy }) };
  }
  const counted = countedAttempts(job);
  if (counted >= retry.maxAttempts) {
    return { state: "deadLettered", terminalCause: terminalCauseText("expiredAtCeiling", { maxAttempts: retry.maxAttempts }) };
  }
  return { state: "scheduled", dueAt: now + retryDelayMs(retry, counted) };
}

// ---- outcomes --------------------------------------------------------------------------------

/** What a fenced outcome does to its job. */
export type OutcomeDisposition =
  | { readonly state: "scheduled"; readonly dueAt: Instant }
  | { readonly state: "succeeded" | "cancelled" | "deadLettered" | "quarantined"; readonly terminalCause: string };

/**
 * The rule every store applies to an outcome that passed its fence: `succeeded` succeeds;
 * `failed` dead-letters when the Core gave no retry time, is cancelled instead of rescheduled
 * when an operator asked to cancel, else is rescheduled at `retryAt`; `cancelled` cancels
 * (naming the operator who asked, if one did); `unroutable` quarantines.
 */
export function outcomeDisposition(
  job: { readonly attempt: number; readonly releases: number; readonly cancelRequestedBy: string | null },
  outcome: Outcome,
): OutcomeDisposition {
  const cancelledBy = job.cancelRequestedBy === null ? null : terminalCauseText("cancelledBy", { actor: job.cancelRequestedBy });
  switch (outcome.type) {
    case "succeeded":
      return { state: "succeeded", terminalCause: terminalCauseText("succeeded", {}) };
    case "failed":
      if (outcome.retryAt === null) {
        return { state: "deadLettered", terminalCause: terminalCauseText("failed", { attempt: countedAttempts(job) }) };
      }
      if (cancelledBy !== null) return { state: "cancelled", terminalCause: cancelledBy };
      return { state: "scheduled", dueAt: outcome.retryAt };
    case "cancelled":
      return { state: "cancelled", terminalCause: cancelledBy ?? terminalCauseText("cancelledByHandler", {}) };
    case "unroutable":
      return { state: "quarantined", terminalCause: terminalCauseText("unroutable", { reason: outcome.reason }) };
  }
}

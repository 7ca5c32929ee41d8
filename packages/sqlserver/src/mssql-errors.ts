import { TransientStoreError, isBelayError } from "@belay/contract";

// Which driver errors are retriable. A retriable fault surfaces as `TransientStoreError`: the
// operation committed nothing (except a COMMIT lost in flight, which no client can tell apart),
// and the caller backs off and retries. Anything else propagates unchanged.

/**
 * SQL Server error numbers that mean "try again": a conflict, a timeout, or a database that is
 * moving (Azure SQL reconfiguration, failover, throttling). Each with what it is.
 */
export const TRANSIENT_ERROR_NUMBERS: ReadonlyMap<number, string> = new Map([
  [-2, "timeout expired (the client's request timeout)"],
  [1205, "deadlock victim"],
  [1222, "lock request time out (LOCK_TIMEOUT)"],
  [1204, "out of lock resources"],
  [3960, "snapshot isolation update conflict"],
  [40001, "serialization failure"],
  [40197, "Azure SQL: the service encountered an error processing the request (reconfiguration)"],
  [40501, "Azure SQL: the service is busy (throttling)"],
  [40613, "Azure SQL: database not currently available (failover)"],
  [40143, "Azure SQL: the service encountered an error processing the request"],
  [49918, "Azure SQL: not enough resources to process the request"],
  [49919, "Azure SQL: too many create or update operations in progress"],
  [49920, "Azure SQL: too many operations in progress"],
  [10928, "Azure SQL: resource limit reached"],
  [10929, "Azure SQL: resource limit reached (minimum guarantee)"],
  [4060, "cannot open the database requested by the login (it is restoring, moving or starting)"],
  [4221, "login to a read-secondary failed: the replica is not ready yet"],
  [233, "no process is on the other end of the pipe (connection dropped)"],
  [64, "the specified network name is no longer available"],
  [10053, "transport-level error: connection aborted"],
  [10054, "transport-level error: connection reset by peer"],
  [10060, "transport-level error: connection timed out"],
]);

/**
 * Error numbers that look like connection trouble but are not retriable: retrying cannot fix them,
 * so they propagate for someone to read. 18456 (login failed) means wrong credentials or a login
 * that does not exist; a store that retried it would hide a misconfiguration behind backoff.
 */
export const PERMANENT_ERROR_NUMBERS: ReadonlyMap<number, string> = new Map([
  [18456, "login failed (wrong credentials or no such login)"],
  [18452, "login failed (untrusted domain)"],
  [229, "permission denied"],
  [2627, "unique constraint violation"],
  [2601, "duplicate key in a unique index"],
]);

/** Driver error codes (mssql / tedious) of a connection that broke or never answered in time. */
const CONNECTION_CODES = new Set([
  "ESOCKET",
  "ECONNCLOSED",
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEOUT",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENOCONN",
  "EINSTLOOKUP",
  // mssql TransactionError: the server rolled the transaction back (a deadlock, a broken connection).
  "EABORT",
  "ECANCEL",
]);

const CONNECTION_MESSAGES = [/connection (is )?closed/i, /connection lost/i, /failed to connect/i, /socket hang up/i, /connection.*reset/i, /No connection is specified/i];

interface ErrorLike {
  readonly number?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
  readonly originalError?: unknown;
  readonly info?: unknown;
  readonly errors?: unknown;
  readonly precedingErrors?: unknown;
  readonly cause?: unknown;
}

function asErrorLike(error: unknown): ErrorLike | null {
  return typeof error === "object" && error !== null ? (error as ErrorLike) : null;
}

/** Every SQL Server error number an error carries (its own, its driver's original, preceding ones, an aggregate's). */
export function errorNumbers(error: unknown, depth = 0): number[] {
  const e = asErrorLike(error);
  if (e === null || depth > 4) return [];
  const out: number[] = [];
  if (typeof e.number === "number") out.push(e.number);
  const info = asErrorLike(e.info);
  if (info !== null && typeof info.number === "number") out.push(info.number);
  for (const nested of [e.originalError, e.cause]) out.push(...errorNumbers(nested, depth + 1));
  for (const list of [e.errors, e.precedingErrors]) if (Array.isArray(list)) for (const item of list) out.push(...errorNumbers(item, depth + 1));
  return [...new Set(out)];
}

/** Every driver code an error carries (`ESOCKET`, `ETIMEOUT`, …), its own and its original's. */
export function errorCodes(error: unknown, depth = 0): string[] {
  const e = asErrorLike(error);
  if (e === null || depth > 4) return [];
  const out: string[] = [];
  if (typeof e.code === "string") out.push(e.code);
  for (const nested of [e.originalError, e.cause]) out.push(...errorCodes(nested, depth + 1));
  if (Array.isArray(e.errors)) for (const item of e.errors) out.push(...errorCodes(item, depth + 1));
  return [...new Set(out)];
}

/** The first SQL Server error number of `error`, if any. */
export function errorNumber(error: unknown): number | undefined {
  return errorNumbers(error)[0];
}

/** What the store makes of a driver error. */
export type ErrorClass = "transient" | "permanent";

/**
 * Classifies a driver error: `transient` for the retriable numbers above, a timeout, or a
 * connection that broke (or could not be opened for a reason that may pass); `permanent` for
 * everything else — including a login that failed (18456) and every error of the statement itself.
 */
export function classifyError(error: unknown): ErrorClass {
  const numbers = errorNumbers(error);
  if (numbers.some((n) => PERMANENT_ERROR_NUMBERS.has(n))) return "permanent";
  if (numbers.some((n) => TRANSIENT_ERROR_NUMBERS.has(n))) return "transient";
  const codes = errorCodes(error);
  // ELOGIN carries no retriable number here (else it was classified above): a failed login stays permanent.
  if (codes.includes("ELOGIN")) return "permanent";
  if (codes.some((c) => CONNECTION_CODES.has(c))) return "transient";
  const message = asErrorLike(error)?.message;
  if (numbers.length === 0 && typeof message === "string" && CONNECTION_MESSAGES.some((p) => p.test(message))) return "transient";
  return "permanent";
}

/** Whether `error` means the connection itself may be unusable. */
export function isConnectionError(error: unknown): boolean {
  const codes = errorCodes(error);
  return codes.some((c) => CONNECTION_CODES.has(c) && c !== "EABORT" && c !== "ETIMEOUT");
}

/** Whether `error` is a unique-key violation (2627 constraint, 2601 index): a concurrent creator won. */
export function isUniqueViolation(error: unknown): boolean {
  const numbers = errorNumbers(error);
  return numbers.includes(2627) || numbers.includes(2601);
}

/** Maps a driver error to what the store throws: `TransientStoreError` or the error itself. */
export function toStoreError(error: unknown, operation: string): unknown {
  if (isBelayError(error)) return error;
  if (classifyError(error) === "transient") {
    const reason = error instanceof Error ? error.message : String(error);
    return new TransientStoreError(`${operation}: ${reason}`, { cause: error });
  }
  return error;
}

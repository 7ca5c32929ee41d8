import { TransientStoreError, isBelayError } from "@belay/contract";

// Which driver errors are retriable. A retriable fault surfaces as TransientStoreError: the
// operation committed nothing (except a COMMIT lost in flight, which no client can tell apart),
// and the caller backs off and retries. Anything else propagates unchanged.

const TRANSIENT_SQLSTATES = new Set([
  "40001", // serialization_failure
  "40P01", // deadlock_detected
  "55P03", // lock_not_available (lock_timeout)
  "57014", // query_canceled (statement_timeout, pg_cancel_backend)
  "57P01", // admin_shutdown (pg_terminate_backend)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
  "25P03", // idle_in_transaction_session_timeout
]);

const NETWORK_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

const CONNECTION_MESSAGES = [
  /connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /connection timeout/i,
  /client has encountered a connection error/i,
  /not queryable/i,
  /server closed the connection/i,
];

/** The SQLSTATE of a driver error, if it carries one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Whether `error` means the connection itself is unusable (it must not go back to the pool). */
export function isConnectionError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (NETWORK_CODES.has(code)) return true;
    if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return true;
  }
  const message = (error as { message?: unknown }).message;
  return typeof message === "string" && CONNECTION_MESSAGES.some((pattern) => pattern.test(message));
}

/** Whether `error` is retriable: a conflict, a timeout or a lost connection. */
export function isTransient(error: unknown): boolean {
  const state = sqlState(error);
  if (state !== undefined && (TRANSIENT_SQLSTATES.has(state) || state.startsWith("08"))) return true;
  return isConnectionError(error);
}

/** Maps a driver error to what the store throws: `TransientStoreError` or the error itself. */
export function toStoreError(error: unknown, operation: string): unknown {
  if (isBelayError(error)) return error;
  if (isTransient(error)) {
    const reason = error instanceof Error ? error.message : String(error);
    return new TransientStoreError(`${operation}: ${reason}`, { cause: error });
  }
  return error;
}

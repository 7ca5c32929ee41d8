import { type ContractErrorCode, isBelayError } from "@belay/contract";
import type { CoreErrorCode } from "@belay/core";
import type { Bounds } from "@belay/contract";

/** Codes the server adds to the store's own (`ContractErrorCode`) and the core's (`CoreErrorCode`). */
export type ServerErrorCode =
  | "BELAY_UNKNOWN_JOB_NAME"
  | "BELAY_NOT_FOUND"
  | "BELAY_UNAUTHENTICATED"
  | "BELAY_FORBIDDEN"
  | "BELAY_CSRF"
  | "BELAY_NOT_CANCELLABLE"
  | "BELAY_NOT_REQUEUEABLE"
  | "BELAY_BODY_TOO_LARGE"
  | "BELAY_BODY_TOO_DEEP"
  | "BELAY_UNSUPPORTED_MEDIA_TYPE"
  | "BELAY_METHOD_NOT_ALLOWED"
  | "BELAY_PAGE_TOO_LARGE"
  | "BELAY_INTERNAL";

/** The JSON body of every error answer: `{ error: { code, field, message, … } }`. */
export interface ErrorBody {
  readonly error: {
    readonly code: ContractErrorCode | CoreErrorCode | ServerErrorCode;
    /** The request field at fault (`jobs[2].payload`, `cron`, `after`), or `null`. */
    readonly field: string | null;
    readonly message: string;
    /** For bound violations: the bound, its limit and the actual size. */
    readonly bound?: keyof Bounds | string;
    readonly limit?: number;
    readonly actual?: number;
    /** For state conflicts: the state the target is in. */
    readonly state?: string;
  };
}

/** An error with its HTTP answer decided; route handlers throw it, the error handler renders it. */
export class HttpError extends Error {
  readonly status: number;
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, error: ErrorBody["error"], headers: Record<string, string> = {}) {
    super(error.message);
    this.status = status;
    this.body = { error };
    this.headers = headers;
  }
}

/** 400 naming the field. */
export function badRequest(field: string | null, message: string): HttpError {
  return new HttpError(400, { code: "BELAY_INVALID_INPUT", field, message });
}

/** 404 for an unknown target. */
export function notFound(kind: string, id: string, field: string | null = "id"): HttpError {
  return new HttpError(404, { code: "BELAY_NOT_FOUND", field, message: `unknown ${kind} ${id}` });
}

/** `value`, or the 404 naming the unknown `kind` when the store found none. */
export function found<T>(kind: string, id: string, value: T | null): T {
  if (value === null) throw notFound(kind, id);
  return value;
}

/** Seconds a client should wait after a transient store fault. */
const RETRY_AFTER_SECONDS = "1";

/**
 * The HTTP answer for any error a route raised. Every Belay code a client can cause maps to a
 * 4xx; a retriable store fault to 503 with `Retry-After`; anything else is a server bug (500).
 * `mapField` turns a store's field name into the request's (`payload` → `jobs[3].payload`).
 */
export function toHttpError(error: unknown, mapField: (field: string) => string = (f) => f): HttpError {
  if (error instanceof HttpError) return error;
  if (!isBelayError(error)) {
    return new HttpError(500, { code: "BELAY_INTERNAL", field: null, message: "internal server error" });
  }
  const facts = error as unknown as {
    field?: string;
    bound?: keyof Bounds;
    limit?: number;
    actual?: number;
    reason?: string;
    parentId?: string;
    issues?: readonly { path?: readonly (PropertyKey | { key: PropertyKey })[]; message: string }[];
  };
  const field = (name: string | undefined) => (name === undefined ? null : mapField(name));
  const code = error.code;
  switch (code) {
    case "BELAY_TRANSIENT_STORE":
      return new HttpError(503, { code, field: null, message: "the store is busy; retry shortly" }, { "retry-after": RETRY_AFTER_SECONDS });
    case "BELAY_STORE_CLOSED":
      return new HttpError(503, { code, field: null, message: "the server is shutting down" }, { "retry-after": RETRY_AFTER_SECONDS });
    case "BELAY_INVALID_INPUT":
      return new HttpError(400, { code, field: field(facts.field), message: facts.reason ?? error.message });
    case "BELAY_PAYLOAD_INVALID": {
      const issue = facts.issues?.[0];
      const path = issue?.path?.map((p) => String(typeof p === "object" ? p.key : p)).join(".");
      return new HttpError(400, { code, field: field(path ? `payload.${path}` : "payload"), message: error.message });
    }
    case "BELAY_PAYLOAD_TOO_LARGE":
      return new HttpError(413, boundBody(code, field(facts.field), error.message, facts));
    case "BELAY_OUTPUT_TOO_LARGE":
    case "BELAY_JOB_NAME_TOO_LONG":
    case "BELAY_ID_TOO_LONG":
    case "BELAY_QUEUE_NAME_TOO_LONG":
    case "BELAY_TOO_MANY_PARENTS":
    case "BELAY_TOO_MANY_TAGS":
    case "BELAY_TAG_KEY_TOO_LONG":
    case "BELAY_TAG_TOO_LONG":
    case "BELAY_TRACE_CONTEXT_TOO_LONG":
    case "BELAY_WORKFLOW_TOO_LARGE":
    case "BELAY_BATCH_TOO_LARGE":
      return new HttpError(422, boundBody(code, field(facts.field), error.message, facts));
    case "BELAY_UNKNOWN_PARENT":
    case "BELAY_WORKFLOW_CONTAINMENT":
      return new HttpError(422, { code, field: field("parents"), message: error.message });
    case "BELAY_UNKNOWN_JOB_NAME":
      return new HttpError(422, { code, field: field("jobName"), message: error.message });
    case "BELAY_JOB_EXISTS":
      return new HttpError(409, { code, field: field("id"), message: error.message });
    case "BELAY_SCHEMA_NOT_MIGRATED":
    case "BELAY_SCHEMA_VERSION_UNKNOWN":
      return new HttpError(503, { code, field: null, message: error.message });
    case "BELAY_TRANSACTION_NOT_SUPPORTED":
    case "BELAY_INVALID_TRANSACTION":
    case "BELAY_INJECTED_FAULT":
      return new HttpError(500, { code: "BELAY_INTERNAL", field: null, message: "internal server error" });
  }
  // A code this server version does not know: not the client's fault by construction.
  return new HttpError(500, { code: "BELAY_INTERNAL", field: null, message: "internal server error" });
}

function boundBody(
  code: ContractErrorCode | CoreErrorCode | ServerErrorCode,
  field: string | null,
  message: string,
  facts: { bound?: keyof Bounds; limit?: number; actual?: number },
): ErrorBody["error"] {
  return {
    code,
    field,
    message,
    ...(facts.bound === undefined ? {} : { bound: facts.bound }),
    ...(facts.limit === undefined ? {} : { limit: facts.limit }),
    ...(facts.actual === undefined ? {} : { actual: facts.actual }),
  };
}

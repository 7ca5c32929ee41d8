import type { Bounds } from "./bounds.js";

/**
 * The code of any Belay error: `BELAY_` and an upper-case name. Each package declares the codes
 * it throws (this one: {@link ContractErrorCode}); recognise errors by `code`, not by
 * `instanceof`: two installed copies of a package have two copies of each class.
 */
export type BelayErrorCode = `BELAY_${string}`;

/** The codes of the errors and rejections the Storage Contract defines (every store throws these). */
export type ContractErrorCode =
  | "BELAY_TRANSIENT_STORE"
  | "BELAY_INVALID_INPUT"
  | BoundErrorCode
  | "BELAY_UNKNOWN_PARENT"
  | "BELAY_WORKFLOW_CONTAINMENT"
  | "BELAY_JOB_EXISTS"
  | "BELAY_TRANSACTION_NOT_SUPPORTED"
  | "BELAY_INVALID_TRANSACTION"
  | "BELAY_CAPABILITY_NOT_SUPPORTED"
  | "BELAY_SCHEMA_VERSION_UNKNOWN"
  | "BELAY_SCHEMA_NOT_MIGRATED"
  | "BELAY_STORE_CLOSED";

/** Codes of the bound violations, one per enforced (never truncated) bound. */
export type BoundErrorCode =
  | "BELAY_PAYLOAD_TOO_LARGE"
  | "BELAY_OUTPUT_TOO_LARGE"
  | "BELAY_JOB_NAME_TOO_LONG"
  | "BELAY_ID_TOO_LONG"
  | "BELAY_QUEUE_NAME_TOO_LONG"
  | "BELAY_TOO_MANY_PARENTS"
  | "BELAY_TOO_MANY_TAGS"
  | "BELAY_TAG_KEY_TOO_LONG"
  | "BELAY_TAG_TOO_LONG"
  | "BELAY_TRACE_CONTEXT_TOO_LONG"
  | "BELAY_WORKFLOW_TOO_LARGE"
  | "BELAY_BATCH_TOO_LARGE";

/** The bound each bound error code reports on. */
export const BOUND_OF_CODE: Readonly<Record<BoundErrorCode, keyof Bounds>> = Object.freeze({
  BELAY_PAYLOAD_TOO_LARGE: "payloadBytes",
  BELAY_OUTPUT_TOO_LARGE: "outputBytes",
  BELAY_JOB_NAME_TOO_LONG: "jobNameLength",
  BELAY_ID_TOO_LONG: "idLength",
  BELAY_QUEUE_NAME_TOO_LONG: "queueNameLength",
  BELAY_TOO_MANY_PARENTS: "parents",
  BELAY_TOO_MANY_TAGS: "tagsPerJob",
  BELAY_TAG_KEY_TOO_LONG: "tagKeyLength",
  BELAY_TAG_TOO_LONG: "tagValueLength",
  BELAY_TRACE_CONTEXT_TOO_LONG: "traceContextLength",
  BELAY_WORKFLOW_TOO_LARGE: "workflowJobs",
  BELAY_BATCH_TOO_LARGE: "enqueueBatch",
});

/**
 * Why a store refused one job (or one outcome). Plain data, so it crosses process and HTTP
 * boundaries; {@link errorFromRejection} turns it into a throwable error.
 */
export type Rejection =
  | {
      readonly code: BoundErrorCode;
      /** The input field at fault, e.g. `payload`, `tags[3].value`. */
      readonly field: string;
      readonly bound: keyof Bounds;
      readonly limit: number;
      readonly actual: number;
      readonly message: string;
    }
  | {
      readonly code: "BELAY_UNKNOWN_PARENT" | "BELAY_WORKFLOW_CONTAINMENT";
      readonly field: "parentIds";
      readonly parentId: string;
      readonly message: string;
    }
  | {
      /** `BELAY_JOB_EXISTS`: a workflow member's id is taken (plain enqueue answers `duplicate` instead). */
      readonly code: "BELAY_INVALID_INPUT" | "BELAY_JOB_EXISTS";
      readonly field: string;
      readonly message: string;
    };

/** Base class of every Belay error: a stable `code` and the facts as fields. */
export class BelayError extends Error {
  readonly code: BelayErrorCode;

  constructor(code: BelayErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Whether `error` is a Belay error, optionally with the given code. Works across package copies. */
export function isBelayError(error: unknown, code?: BelayErrorCode): error is BelayError {
  if (typeof error !== "object" || error === null) return false;
  const actual = (error as { code?: unknown }).code;
  if (typeof actual !== "string" || !actual.startsWith("BELAY_")) return false;
  return code === undefined || actual === code;
}

/**
 * A retriable store fault: a serialization failure, deadlock, busy database, lost connection
 * or timeout. Nothing was committed. Callers back off and retry; the HTTP API answers 503.
 */
export class TransientStoreError extends BelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("BELAY_TRANSIENT_STORE", message, options);
  }
}

/** An argument is malformed (wrong type, empty, out of range, unparseable). Names the field. */
export class InvalidInputError extends BelayError {
  readonly field: string;
  readonly reason: string;

  constructor(field: string, reason: string) {
    super("BELAY_INVALID_INPUT", `invalid ${field}: ${reason}`);
    this.field = field;
    this.reason = reason;
  }
}

/** An input exceeds a bound. Names the bound, its limit and the actual size; nothing was written. */
export class BoundExceededError extends BelayError {
  readonly field: string;
  readonly bound: keyof Bounds;
  readonly limit: number;
  readonly actual: number;
  readonly jobId: string | null;

  constructor(
    code: BoundErrorCode,
    facts: { field: string; limit: number; actual: number; jobId?: string | null },
  ) {
    const bound = BOUND_OF_CODE[code];
    const subject = facts.jobId ? ` (job ${facts.jobId})` : "";
    super(code, `${facts.field} exceeds ${bound}: ${facts.actual} > ${facts.limit}${subject}`);
    this.field = facts.field;
    this.bound = bound;
    this.limit = facts.limit;
    this.actual = facts.actual;
    this.jobId = facts.jobId ?? null;
  }
}

/** A job names a parent the store does not hold (or, in a workflow, one outside the workflow). */
export class UnknownParentError extends BelayError {
  readonly jobId: string;
  readonly parentId: string;

  constructor(
    jobId: string,
    parentId: string,
    code: "BELAY_UNKNOWN_PARENT" | "BELAY_WORKFLOW_CONTAINMENT" = "BELAY_UNKNOWN_PARENT",
  ) {
    super(
      code,
      code === "BELAY_UNKNOWN_PARENT"
        ? `job ${jobId} names unknown parent ${parentId}`
        : `job ${jobId} names parent ${parentId}, which is not a member of its workflow`,
    );
    this.jobId = jobId;
    this.parentId = parentId;
  }
}

/** A workflow member's id is already taken by another job. */
export class JobExistsError extends BelayError {
  readonly jobId: string;

  constructor(jobId: string) {
    super("BELAY_JOB_EXISTS", `job ${jobId} already exists`);
    this.jobId = jobId;
  }
}

/** A transaction handle was passed to a store that cannot enlist in one. */
export class TransactionNotSupportedError extends BelayError {
  constructor(storeName: string) {
    super("BELAY_TRANSACTION_NOT_SUPPORTED", `${storeName} cannot enqueue inside a caller's transaction`);
  }
}

/** An optional capability (`capabilities.stepHook`, `wakeUpHints`, `enqueueThrough`) was used on a store without it. */
export class CapabilityNotSupportedError extends BelayError {
  readonly capability: string;

  constructor(storeName: string, capability: string) {
    super("BELAY_CAPABILITY_NOT_SUPPORTED", `${storeName} does not support ${capability}`);
    this.capability = capability;
  }
}

/** A transaction handle is finished, of the wrong kind, or on a different database than the store. */
export class InvalidTransactionError extends BelayError {
  constructor(reason: string) {
    super("BELAY_INVALID_TRANSACTION", `invalid transaction: ${reason}`);
  }
}

/** The database holds a schema version this store does not know (newer than it, or damaged). */
export class SchemaVersionError extends BelayError {
  readonly found: number;
  readonly supported: number;

  constructor(found: number, supported: number) {
    super(
      "BELAY_SCHEMA_VERSION_UNKNOWN",
      `the database schema is at version ${found}; this store knows versions up to ${supported}`,
    );
    this.found = found;
    this.supported = supported;
  }
}

/** The store was used before `migrate()` created its schema. */
export class SchemaNotMigratedError extends BelayError {
  constructor(where: string) {
    super("BELAY_SCHEMA_NOT_MIGRATED", `no Belay schema at ${where}: call migrate() first`);
  }
}

/** The store was used after `close()`. */
export class StoreClosedError extends BelayError {
  constructor() {
    super("BELAY_STORE_CLOSED", "the store is closed");
  }
}

/** A named internal step of a store operation, where a test hook may fault or park it. */
export interface StepPoint {
  readonly operation: string;
  readonly step: string;
}

/** The error a rejection stands for, ready to throw. */
export function errorFromRejection(rejection: Rejection, jobId: string | null = null): BelayError {
  switch (rejection.code) {
    case "BELAY_INVALID_INPUT":
      return new InvalidInputError(rejection.field, rejection.message);
    case "BELAY_JOB_EXISTS":
      return new JobExistsError(jobId ?? "?");
    case "BELAY_UNKNOWN_PARENT":
    case "BELAY_WORKFLOW_CONTAINMENT":
      return new UnknownParentError(jobId ?? "?", rejection.parentId, rejection.code);
    default:
      return new BoundExceededError(rejection.code, {
        field: rejection.field,
        limit: rejection.limit,
        actual: rejection.actual,
        jobId,
      });
  }
}

/** A bound rejection with a uniform message. */
export function boundRejection(
  code: BoundErrorCode,
  field: string,
  limit: number,
  actual: number,
): Rejection {
  const bound = BOUND_OF_CODE[code];
  return { code, field, bound, limit, actual, message: `${field} exceeds ${bound}: ${actual} > ${limit}` };
}

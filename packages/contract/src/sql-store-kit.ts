import { type Bounds, clampToBound } from "./bounds.js";
import type { NormalizedNewJob } from "./enqueue.js";
import { InvalidInputError, InvalidTransactionError, StoreClosedError } from "./errors.js";
import { type HistoryPolicy, type Instant, JOB_STATE_CODES, jobStateFromCode } from "./job.js";
import type { StepHook } from "./job-store.js";
import { decodeSeqCursor } from "./monitoring.js";
import type { AuditAction, QueueActionRequest, QueueActionResult, SetConcurrencyLimitRequest } from "./operator.js";
import type { OutboxFilter, RowKey } from "./promises/rows.js";
import { terminalCauseText } from "./terminal-causes.js";
import type { QueryExecutor } from "./through.js";

// What the SQL stores (PostgreSQL, SQL Server) do the same way around their SQL: the open/closed
// lifecycle, the step hook's call, the checks of their connection options, and the planning of
// the job rows they insert. Their SQL, and how they bind and decode it, stays in each store.

const STATE = JOB_STATE_CODES;

// ---- lifecycle ------------------------------------------------------------------------------

/**
 * A promise made on first need and kept; a rejected one is forgotten, so that the next need
 * (a schema checked once the database is back, say) tries again instead of failing for good.
 */
export class KeptPromise<T> {
  readonly #make: () => Promise<T>;
  #kept: Promise<T> | null = null;

  constructor(make: () => Promise<T>) {
    this.#make = make;
  }

  get(): Promise<T> {
    this.#kept ??= this.#make().catch((error: unknown) => {
      this.#kept = null;
      throw error;
    });
    return this.#kept;
  }

  /** Keeps `value` from now on (what a migration just established needs no check). */
  keep(value: T): void {
    this.#kept = Promise.resolve(value);
  }

  /** Forgets what is kept: the next `get` makes it again. */
  forget(): void {
    this.#kept = null;
  }
}

/**
 * A store's lifecycle: open until `close()`, and usable once its schema check (run once, on the
 * first operation, again after a failure) has passed or its own `migrate()` has run.
 */
export class StoreGate {
  readonly #schema: KeptPromise<void>;
  #closed = false;

  constructor(checkSchema: () => Promise<void>) {
    this.#schema = new KeptPromise(checkSchema);
  }

  /** Throws `StoreClosedError` once the store is closed. */
  assertOpen(): void {
    if (this.#closed) throw new StoreClosedError();
  }

  /** Refuses a closed store and, once per store, a schema it cannot run against. */
  async open(): Promise<void> {
    this.assertOpen();
    await this.#schema.get();
  }

  /** Runs the store's own migration (on an open store): afterwards the schema is the one it runs against. */
  async migrate<T>(migration: () => Promise<T>): Promise<T> {
    this.assertOpen();
    const result = await migration();
    this.#schema.keep(undefined);
    return result;
  }

  /** Closes the gate; `false` when it was closed already (a second `close()` does nothing). */
  close(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    return true;
  }
}

/** The `step` of a session of `operation`: the test hook's call at a named step, when one is installed. */
export function hookedStep(hook: StepHook | null, operation: string): (step: string) => Promise<void> {
  return async (step) => {
    if (hook !== null) await hook({ operation, step });
  };
}

/** A caller's executor with the check of where its transaction is, which the store runs before it writes. */
export interface VerifiedExecutor extends QueryExecutor {
  readonly verify: () => Promise<void>;
}

/**
 * `executor` with `check` attached as its `verify`. Throws `InvalidTransactionError` for
 * something that cannot run SQL at all.
 */
export function verifiedExecutor(
  executor: QueryExecutor,
  check: { check(caller: QueryExecutor, operation: string): Promise<void> },
  operation: string,
): VerifiedExecutor {
  if (typeof executor?.query !== "function") {
    throw new InvalidTransactionError("expected an executor with query(sql, values) running in your transaction");
  }
  return { query: (sql, values) => executor.query(sql, values), verify: () => check.check(executor, operation) };
}

// ---- options ----------------------------------------------------------------------------------

/** Where a SQL store connects and which schema it works in: the options every such store shares. */
export interface ConnectionOptions<Pool> {
  readonly pool?: Pool;
  readonly connectionString?: string;
  readonly maxConnections?: number;
  readonly schema?: string;
}

/**
 * Checks the choice of connection (exactly one of `pool` and `connectionString`, a pool that
 * `poolProblem` finds nothing wrong with, a non-empty string, the pool size); the schema's name
 * is the store's to check. Throws `InvalidInputError` naming the field.
 */
export function checkConnectionOptions<Pool>(
  config: ConnectionOptions<Pool>,
  poolProblem: (pool: Pool | undefined) => string | null,
  connectionStringIs: string,
): void {
  if (typeof config !== "object" || config === null) throw new InvalidInputError("config", "must be an object");
  const hasPool = config.pool !== undefined;
  const hasUrl = config.connectionString !== undefined;
  if (hasPool === hasUrl) throw new InvalidInputError("pool", "give exactly one of pool and connectionString");
  const problem = hasPool ? poolProblem(config.pool) : null;
  if (problem !== null) throw new InvalidInputError("pool", problem);
  if (hasUrl && (typeof config.connectionString !== "string" || config.connectionString.length === 0)) {
    throw new InvalidInputError("connectionString", `must be ${connectionStringIs}`);
  }
  if (config.maxConnections !== undefined && (!Number.isSafeInteger(config.maxConnections) || config.maxConnections < 1)) {
    throw new InvalidInputError("maxConnections", "must be an integer ≥ 1");
  }
}

/** The `historyPolicy` option, checked (`transitionsAndFailureDetail` by default). */
export function resolveHistoryPolicy(value: HistoryPolicy | undefined): HistoryPolicy {
  const historyPolicy = value ?? "transitionsAndFailureDetail";
  if (!["off", "transitions", "transitionsAndFailureDetail"].includes(historyPolicy)) {
    throw new InvalidInputError("historyPolicy", "must be off, transitions or transitionsAndFailureDetail");
  }
  return historyPolicy;
}

/** What every SQL promise store resolves of its options. */
export interface ResolvedSqlPromiseOptions {
  readonly schemaName: string;
  /** The schema as a quoted identifier, ready to splice into SQL. */
  readonly schema: string;
  /** How often an operation runs in all, at most, while it meets retriable conflicts. */
  readonly attempts: number;
}

/** The connection (checked by the store's `resolveConnection`) and the `attempts` option (4 by default) of a SQL promise store. */
export function resolveSqlPromiseOptions<C extends { readonly attempts?: number }>(
  config: C,
  resolveConnection: (config: C) => { readonly schemaName: string; readonly schema: string },
): ResolvedSqlPromiseOptions {
  const { schemaName, schema } = resolveConnection(config);
  const attempts = config.attempts ?? 4;
  if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > 100) throw new InvalidInputError("attempts", "must be an integer from 1 to 100");
  return { schemaName, schema, attempts };
}

// ---- reads ------------------------------------------------------------------------------------

/** A keyset page request over `seq`: its row limit (the monitoring bound, at most) and its cursor's seq (`null`: from the start). */
export function seqPageRequest(request: { readonly limit?: number; readonly after?: string }, bounds: Bounds): { readonly limit: number; readonly after: number | null } {
  return { limit: clampToBound(request.limit ?? bounds.monitorPage, bounds.monitorPage), after: request.after === undefined ? null : decodeSeqCursor(request.after) };
}

// ---- operator actions -------------------------------------------------------------------------

/** What a queue action changes, and the detail of its audit record. */
export interface QueueChange {
  readonly action: Extract<AuditAction, "pauseQueue" | "resumeQueue" | "setConcurrencyLimit">;
  readonly paused?: boolean;
  readonly limit?: number | null;
  readonly detail: string;
}

/**
 * `pauseQueue`, `resumeQueue` and `setConcurrencyLimit` as functions of a store's context, from
 * the one function that writes a queue's settings and audits the change in one transaction.
 */
export function queueActions<Ctx>(changeQueue: (ctx: Ctx, request: QueueActionRequest, change: QueueChange) => Promise<QueueActionResult>): {
  readonly pauseQueue: (ctx: Ctx, request: QueueActionRequest) => Promise<QueueActionResult>;
  readonly resumeQueue: (ctx: Ctx, request: QueueActionRequest) => Promise<QueueActionResult>;
  readonly setConcurrencyLimit: (ctx: Ctx, request: SetConcurrencyLimitRequest) => Promise<QueueActionResult>;
} {
  return {
    pauseQueue: (ctx, request) => changeQueue(ctx, request, { action: "pauseQueue", paused: true, detail: "paused" }),
    resumeQueue: (ctx, request) => changeQueue(ctx, request, { action: "resumeQueue", paused: false, detail: "resumed" }),
    setConcurrencyLimit: (ctx, request) =>
      changeQueue(ctx, request, { action: "setConcurrencyLimit", limit: request.limit, detail: request.limit === null ? "limit=none" : `limit=${request.limit}` }),
  };
}

// ---- planned inserts --------------------------------------------------------------------------

/** A job ready to insert: validated, with its initial state (a state code) decided. */
export interface PlannedInsert {
  readonly job: NormalizedNewJob;
  readonly state: number;
  readonly parentsRemaining: number;
  readonly terminalCause: string | null;
  readonly scheduleId: string | null;
  readonly workflowId: string | null;
}

/**
 * The initial state of a new job from its parents' state codes: cancelled at once when an
 * `onSuccess` parent already ended otherwise than succeeded, awaiting while any parent is live.
 */
export function initialJobState(
  job: NormalizedNewJob,
  stateOfParent: (id: string) => number,
): { state: number; parentsRemaining: number; terminalCause: string | null } {
  let live = 0;
  for (const parentId of job.parentIds) {
    const state = stateOfParent(parentId);
    if (state < STATE.succeeded) live++;
    else if (job.dependencyMode === "onSuccess" && state !== STATE.succeeded) {
      const terminalCause = terminalCauseText("parentEnded", { parentId, parentState: jobStateFromCode(state) });
      return { state: STATE.cancelled, parentsRemaining: 0, terminalCause };
    }
  }
  return live > 0
    ? { state: STATE.awaitingParents, parentsRemaining: live, terminalCause: null }
    : { state: STATE.scheduled, parentsRemaining: 0, terminalCause: null };
}

/**
 * New jobs in plan order (parents first), each with its initial state: a parent is one of them
 * or an existing job, whose state code `stateOfExisting` gives (locked by the caller).
 */
export function plannedInserts(
  jobs: readonly NormalizedNewJob[],
  stateOfExisting: (id: string) => number | undefined,
  workflowId: string | null = null,
): PlannedInsert[] {
  const created = new Map<string, number>();
  return jobs.map((job) => {
    const initial = initialJobState(job, (id) => created.get(id) ?? stateOfExisting(id)!);
    created.set(job.id, initial.state);
    return { job, ...initial, scheduleId: null, workflowId };
  });
}

/** What a schedule's instances are made of, as its row holds it. */
export interface ScheduleTemplate {
  readonly scheduleId: string;
  readonly jobName: string;
  readonly queue: string;
  readonly payload: string;
  readonly tags: NormalizedNewJob["tags"];
  readonly retry: NormalizedNewJob["retry"];
}

/** The instance `id` of a schedule, due at `dueAt` (a tick, or a trigger's now). */
export function scheduleInstance(schedule: ScheduleTemplate, id: string, dueAt: Instant): PlannedInsert {
  const { scheduleId, jobName, queue, payload, tags, retry } = schedule;
  const job: NormalizedNewJob = { id, jobName, queue, payload, dueAt, parentIds: [], dependencyMode: "onSuccess", tags, traceContext: null, retry };
  return { job, state: STATE.scheduled, parentsRemaining: 0, terminalCause: null, scheduleId, workflowId: null };
}

// ---- promise stores ---------------------------------------------------------------------------

/** The keys of one load by kind: each kind's ids (promise ids, branch names) in the order the keys name them. */
export type KeysByKind = { readonly [K in RowKey["kind"]]: Set<string> };

/** Sorts a load's keys by kind. */
export function keysByKind(keys: readonly RowKey[]): KeysByKind {
  const byKind: KeysByKind = { promise: new Set(), awaiters: new Set(), listeners: new Set(), branch: new Set(), branchOf: new Set(), schedule: new Set() };
  for (const key of keys) byKind[key.kind].add("promiseId" in key ? key.promiseId : "branch" in key ? key.branch : key.id);
  return byKind;
}

/** Whether an outbox take with `filter` takes nothing at all (a filter that lists nothing). */
export function takesNothing(filter: OutboxFilter | null): boolean {
  return filter !== null && filter.addresses.length === 0 && filter.prefixes.length === 0;
}

/**
 * # The Promise Store Contract
 *
 * The second storage surface of a Belay store, beside `JobStore`: the storage of a Distributed
 * Async Await server (the Resonate protocol, version "2026-04-01"). A `PromiseStore` answers every
 * request kind of the protocol and runs its background steps; `apps/server` wraps it in the
 * protocol's HTTP/JSON envelope.
 *
 * ## Glossary
 * - **promise** — a write-once result with a deadline. Pending until settled, once: by a client
 *   (resolved, rejected, rejected_canceled) or by its deadline (rejected_timedout; resolved for a
 *   timer). Its id is the only idempotency key.
 * - **task** — the execution of a promise that names a `resonate:target`. Its **version** is the
 *   fencing token: it rises only when a worker acquires the task.
 * - **lease** — an acquired task belongs to one process (`pid`) until `now + ttl`, renewed by
 *   heartbeats; when it lapses the task is pending again at the same version.
 * - **callback** — a task waiting on another promise; when that promise settles the task resumes.
 * - **listener** — a client waiting on a promise at an address; it gets an `unblock` message.
 * - **outbox** — the messages to deliver: one `execute` per task (the newest version), one
 *   `unblock` per (promise, address). It is the truth; notifications only say "look".
 * - **schedule** — a cron that creates a promise per firing, with an id from a template.
 * - **timers** — a pending promise's deadline, a pending task's retry, an acquired task's lease,
 *   a schedule's next run: each a column with a time-ordered index, scanned in bounded batches.
 *
 * ## Rules every operation follows (as for jobs)
 * 1. Time comes from the caller (`now`), and so does calendar maths (cron occurrences).
 * 2. One request is one atomic step: its rows, timers and outbox messages commit together.
 * 3. Durable before acknowledged.
 * 4. Every decision is taken on rows locked (or serialized) for the operation: no read-then-write gap.
 * 5. The rules are the contract's (`PromiseMachine`), written once; a store supplies atomicity,
 *    locking and indexes (`PromiseBackend`) and never re-derives them in its own SQL.
 * 6. Bad input throws `InvalidInputError` naming the field (the protocol's 400), writing nothing.
 * 7. Retriable conflicts throw `TransientStoreError` with nothing committed (the protocol's 503).
 */
import type { MigrateResult, StepHook } from "../job-store.js";
import type { Instant } from "../job.js";
import type { PromiseBounds } from "./checks.js";
import type { PromiseSettings } from "./machine.js";
import type { PromiseMessage, PromiseRecord, PromiseScheduleRecord, PromiseState, TaskRecord, TaskState } from "./records.js";
import type { PromiseRequest, PromiseResponse } from "./requests.js";
import type {
  CallbackRow, ListenerRow, LoadedRows, OutboxFilter, OutboxRow, PromiseEffects, PromiseRow, PromiseScheduleRow, RowKey, TaskRow,
} from "./rows.js";

/** What a promise store is and the limits it enforces. */
export interface PromiseStoreCapabilities {
  /** A short name for messages and metrics. */
  readonly name: string;
  readonly bounds: Readonly<PromiseBounds>;
  readonly settings: Readonly<PromiseSettings>;
  /** `setStepHook` is implemented (the atomicity clauses of the conformance suite need it). */
  readonly stepHook: boolean;
}

/** A firing the caller planned: the schedule's timer moves from `expectedNextRunAt` (compare-and-set) to `nextRunAt`. */
export interface ScheduleFiring {
  readonly id: string;
  readonly expectedNextRunAt: Instant;
  readonly nextRunAt: Instant;
}

/** A message taken from the outbox for delivery: its row's address, `createdAt` and `takes` (this take included). */
export interface OutboxDelivery extends Pick<OutboxRow, "address" | "createdAt" | "takes"> {
  /** `execute:<task id>` or `unblock:<promise id>`; with `address`, the message's key. */
  readonly key: string;
  readonly message: PromiseMessage;
  /** Acknowledge (or release) with this token: an older take's token never touches a newer message. */
  readonly token: number;
}

/** Everything a promise store holds (the protocol's `debug.snap`). */
export interface PromiseSnapshot {
  readonly promises: readonly PromiseRecord[];
  readonly tasks: readonly TaskRecord[];
  readonly callbacks: readonly CallbackRow[];
  readonly listeners: readonly ListenerRow[];
  readonly schedules: readonly PromiseScheduleRecord[];
  readonly outbox: readonly { readonly kind: "execute" | "unblock"; readonly id: string; readonly address: string; readonly version: number; readonly availableAt: Instant }[];
  /** Pending promises' deadlines and tasks' timers, by id. */
  readonly timers: { readonly promises: readonly { readonly id: string; readonly at: Instant }[]; readonly tasks: readonly { readonly id: string; readonly at: Instant }[] };
}

/** A promise with everything around it, for an operator (`describePromise`). */
export interface PromiseDetail {
  readonly promise: PromiseRecord;
  readonly task: TaskRecord | null;
  /** The task's one timer: its lease's end while acquired, its next dispatch while pending; else `null`. */
  readonly taskTimerAt: Instant | null;
  /** Tasks waiting on this promise. */
  readonly awaiters: readonly string[];
  /** Promises this promise's task waits on. */
  readonly awaiting: readonly string[];
  readonly listeners: readonly string[];
  /** Messages about it still in the outbox: its task's `execute`, its `unblock`s. */
  readonly messages: readonly { readonly kind: "execute" | "unblock"; readonly address: string; readonly version: number; readonly availableAt: Instant; readonly createdAt: Instant; readonly takes: number }[];
}

/** What one timeout scan did. */
export interface TimerScanResult {
  /** Pending promises settled by their deadline. */
  readonly promisesTimedOut: number;
  /** Pending tasks dispatched again by their retry timer. */
  readonly tasksRetried: number;
  /** Acquired tasks whose lease lapsed, pending again. */
  readonly leasesExpired: number;
  /** The scan found `max` due timers of a kind: more may be due; scan again. */
  readonly more: boolean;
}

/**
 * The Promise Store Contract. See the glossary and rules above. Every method checks its request
 * first (`assertPromiseRequest`), identically on every store.
 */
export interface PromiseStore {
  readonly capabilities: PromiseStoreCapabilities;

  /**
   * Creates or upgrades the promise tables: their own numbered migrations, in the job tables'
   * schema or prefix, under the store's migration lock, with `JobStore.migrate`'s guarantees.
   */
  migrate(): Promise<MigrateResult>;
  /** Releases the store's connections; every later call throws `StoreClosedError`. A second call does nothing. */
  close(): Promise<void>;

  /** Runs one protocol request at `now` and answers with the protocol's status and data. */
  handle<R extends PromiseRequest>(request: R, now: Instant): Promise<PromiseResponse<R>>;

  /**
   * The timeout scan: up to `max` due pending deadlines (settled by them, with their chains), due
   * retry timers (dispatched again) and lapsed leases (pending again, dispatched), oldest first,
   * each re-checked under its lock, so concurrent or repeated scans are harmless.
   */
  expireTimers(request: { readonly now: Instant; readonly max: number }): Promise<TimerScanResult>;

  /** Up to `max` schedules due at `now` (timer ≤ now), oldest first: the caller plans their next runs. */
  dueSchedules(request: { readonly now: Instant; readonly max: number }): Promise<readonly PromiseScheduleRecord[]>;

  /** Applies planned firings: per firing, create the occurrence's promise and move the timer, or `stale`. */
  fireSchedules(request: { readonly firings: readonly ScheduleFiring[]; readonly now: Instant }): Promise<readonly ({ readonly id: string; readonly status: "fired"; readonly promiseId: string } | { readonly id: string; readonly status: "stale" })[]>;

  /**
   * Takes up to `max` messages available at `now` (oldest first) for delivery: each becomes
   * invisible until `now + leaseMs`, when it is taken again unless acknowledged. Concurrent takers
   * never get the same message at once.
   */
  takeOutbox(request: { readonly now: Instant; readonly max: number; readonly leaseMs: number; readonly filter?: OutboxFilter | null }): Promise<readonly OutboxDelivery[]>;

  /** Deletes delivered messages (each only if still at the token of its take). */
  acknowledgeOutbox(request: { readonly deliveries: readonly Pick<OutboxDelivery, "key" | "address" | "token">[] }): Promise<void>;

  /**
   * Hands taken messages back undelivered (each only if still at the token of its take): they are
   * available again at `now`, for a taker that can deliver them.
   */
  releaseOutbox(request: { readonly deliveries: readonly Pick<OutboxDelivery, "key" | "address" | "token">[]; readonly now: Instant }): Promise<void>;

  /**
   * Calls `listener` after every commit that wrote outbox messages — in this process, and on a
   * store shared by processes (PostgreSQL) in the others too. Lossy, like job wake-up hints: a
   * deliverer still drains on a timer; hints only make it drain sooner. Returns the unsubscribe.
   */
  subscribeOutbox(listener: () => void): () => void;

  /** Resolves when the store answers (a connection works, the schema is there); else throws. */
  ping(): Promise<void>;

  /** Deletes every promise, task, callback, listener, schedule and message (the protocol's `debug.reset`). */
  reset(): Promise<void>;

  /** Everything stored, as of `now` (the protocol's `debug.snap`). */
  snapshot(now: Instant): Promise<PromiseSnapshot>;

  /** One promise with its task, callbacks both ways, listeners and waiting messages, as of `now` (a read: nothing is touched); `null` when unknown. */
  describePromise(id: string, now: Instant): Promise<PromiseDetail | null>;

  /** Test hook (only with `capabilities.stepHook`); see `StepHook`. */
  setStepHook?(hook: StepHook | null): void;
}

// ---- what a store implements ----------------------------------------------------------------

/** A page query of promises: `id > after`, every tag matching, stored state in `states` or pending with a deadline ≤ `expiredBy`. */
export interface PromisePageQuery {
  readonly after: string | null;
  /** Only ids starting with this text (`null`: any). */
  readonly prefix: string | null;
  readonly tags: Readonly<Record<string, string>>;
  /** `null`: any state. */
  readonly states: readonly PromiseState[] | null;
  /** Also pending promises whose deadline is ≤ this (they read as timed out). */
  readonly expiredBy: Instant | null;
  readonly limit: number;
}

/** A page query of tasks (each with its promise, which decides its timed-out view). */
export interface TaskPageQuery {
  readonly after: string | null;
  /** `null`: any state. Tasks whose promise is pending past `now` are included for `fulfilled`. */
  readonly states: readonly TaskState[] | null;
  readonly now: Instant;
  readonly limit: number;
}

/** An outbox row at the revision a take gave it. */
export interface OutboxRef {
  readonly kind: "execute" | "unblock";
  readonly id: string;
  readonly address: string;
  readonly revision: number;
}

/** One transaction of a promise store: the machine's loads and writes, inside it. */
export interface PromiseTransaction {
  /** Loads (and, on a store with concurrent writers, locks for update) the rows of `keys`. */
  load(keys: readonly RowKey[]): Promise<LoadedRows>;
  /** Writes an operation's effects. A unique violation on an `insert` means a concurrent creator won: throw, so the operation runs again. */
  apply(effects: PromiseEffects): Promise<void>;
  /** Calls the step hook (if installed) at a named point of the operation. */
  step(name: string): Promise<void>;
  /** Due timers at `now`, oldest first, up to `max` each, skipping rows another transaction holds. */
  dueTimers(now: Instant, max: number): Promise<{ readonly promises: readonly string[]; readonly tasks: readonly string[] }>;
  /**
   * Takes outbox rows available at `now` that pass `filter` (skipping rows another transaction
   * holds), marking them until `until` with `takes` + 1; returns them at their new revision. An
   * `unblock` may come with its (settled, immutable) promise, which spares the front a load.
   */
  takeOutbox(now: Instant, max: number, until: Instant, filter: OutboxFilter | null): Promise<readonly (OutboxRow & { readonly promise?: PromiseRow | null })[]>;
  /** Deletes outbox rows still at `revision`. */
  acknowledgeOutbox(rows: readonly OutboxRef[]): Promise<void>;
  /** Makes outbox rows still at `revision` available at `at` (a new revision). */
  releaseOutbox(rows: readonly OutboxRef[], at: Instant): Promise<void>;
  /** Deletes every row of the promise surface. */
  reset(): Promise<void>;
}

/** Read-only queries of a promise store (pages, snapshots), on one consistent read. */
export interface PromiseReader {
  promisePage(query: PromisePageQuery): Promise<readonly PromiseRow[]>;
  taskPage(query: TaskPageQuery): Promise<readonly { readonly task: TaskRow; readonly promise: PromiseRow | null }[]>;
  schedulePage(query: { readonly after: string | null; readonly tags: Readonly<Record<string, string>>; readonly limit: number }): Promise<readonly PromiseScheduleRow[]>;
  dueSchedules(now: Instant, max: number): Promise<readonly PromiseScheduleRow[]>;
  /** One promise's rows, for `describePromise`; `null` when unknown. */
  describe(id: string): Promise<{
    readonly promise: PromiseRow;
    readonly task: TaskRow | null;
    readonly awaiters: readonly string[];
    readonly awaiting: readonly string[];
    readonly listeners: readonly string[];
    readonly outbox: readonly OutboxRow[];
  } | null>;
  /** Every row, for `snapshot`. */
  everything(): Promise<{
    readonly promises: readonly PromiseRow[];
    readonly tasks: readonly TaskRow[];
    readonly callbacks: readonly CallbackRow[];
    readonly listeners: readonly ListenerRow[];
    readonly schedules: readonly PromiseScheduleRow[];
    readonly outbox: readonly OutboxRow[];
  }>;
}

/**
 * What a store supplies for the promise surface: transactions, loads, writes and scans by index.
 * The front (`checkedPromiseStore`) runs every rule over it.
 */
export interface PromiseBackend {
  readonly name: string;
  readonly stepHook: boolean;
  migrate(): Promise<MigrateResult>;
  close(): Promise<void>;
  /**
   * Runs `work` atomically and commits it (durably) before resolving: in a transaction of its
   * own, or from a savepoint inside one it shares with other operations that commit together
   * (group commit), as long as each sees the others' writes as if they had committed before it
   * and none resolves before that commit. On a retriable conflict (serialization failure,
   * deadlock, busy, a unique violation of an insert) it rolls back (to its savepoint) and runs
   * `work` again, a few times, then throws `TransientStoreError`.
   */
  transact<T>(operation: string, work: (tx: PromiseTransaction) => Promise<T>): Promise<T>;
  /** Runs `work` on one consistent read. */
  read<T>(work: (reader: PromiseReader) => Promise<T>): Promise<T>;
  /** Resolves when the database answers and the promise schema is there. */
  ping(): Promise<void>;
  /** See `PromiseStore.subscribeOutbox`: called after commits that wrote outbox rows (here, and across processes where the store can tell). */
  subscribeOutbox(listener: () => void): () => void;
  setStepHook?(hook: StepHook | null): void;
}
